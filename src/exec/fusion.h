// Element-wise fusion for the interpreter and exec::Executable (see fusion.cpp): the planner that
// interp::run_block uses, when Options.accelerate is set, to compute chains of element-wise ops in
// one loop.
// accelerate.cpp registers it at start-up; interp::set_fusion_planner(nullptr) turns it off.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "interp/interpreter.h"

namespace tessera::exec {

std::unique_ptr<interp::FusionPlan> plan_fusion(const ir::Block& block);

// The plan plan_fusion makes, as exec::Executable sees it: loops that may store more than their
// root (fusion_riders.h). The interpreter runs one result per op and never enables them.
class MultiResultPlan : public interp::FusionPlan {
 public:
  // Chooses the riders (once, before the plan is used); from then on they are inlined.
  virtual void enable_riders() = 0;
  // The ops whose results `root`'s loop stores after its own (run() takes their destinations, or
  // appends them, in this order); empty for other ops.
  virtual std::span<const ir::Op* const> riders(const ir::Op& root) const = 0;
  // The root whose loop computes rider `op`, else null.
  virtual const ir::Op* rides_with(const ir::Op& op) const = 0;
  // Whether `root`'s loop computes `def` (inlined there), rather than reading its stored value: a
  // rider is computed in its own root's loop only.
  virtual bool computed_in(const ir::Op& def, const ir::Op& root) const = 0;
  // Whether `root`'s loop reads `v` other than element i at element i (fusion_riders.h).
  virtual bool strided_read(const ir::Op& root, const ir::Value* v) const = 0;
  // Whether run(op) computes a contraction (fusion_contraction.h): a dot_general reading through
  // folded transposes, or a transpose of a dot_general's result written in its order.
  virtual bool contracts(const ir::Op& op) const = 0;
};

// Values with fewer elements are never computed inside their readers' loops: they stay in cache
// between passes, and below about this many a loop's setup (compiling its program each run) costs
// more than the passes it saves. It was 16384 until measured on the tiny training step, whose
// AdamW updates of [64, 172] and smaller parameters then ran op by op, every scalar hyperparameter
// broadcast into an array of its own: at 2048 that step runs 8-14 % faster, and
// bench/exec_bench.cpp's [128, 64] MLP step the same (docs/PERFORMANCE.md, session 18).
inline constexpr int64_t kFusionMinElements = 2048;
// The minimum in force: kFusionMinElements, or TESSERA_FUSION_MIN from the environment, until set
// (tests set 0 to fuse small shapes; a negative n restores the default).
void set_fusion_min_elements(int64_t n);
int64_t fusion_min_elements();

// The one-hot index tests (compare(iota, b) as one instruction: fusion_program.h) the fused loops
// have built since start; tests read it to see that the path ran. TESSERA_INDEX_TESTS=0 in the
// environment turns them off (for measuring what they gain, in one build).
bool index_tests_on();
int64_t index_tests_built();
void count_index_test();

// The selects of a compare computed as one instruction (fusion_program.h) since start (for tests).
int64_t select_compares_built();
void count_select_compare();

// The ops of scalars and a one-hot folded into the one-hot's index test (fusion_program.h) since
// start (for tests).
int64_t index_test_folds_built();
void count_index_test_fold();

// The scratch registers of fused loops that took the place of one no longer live
// (fusion_program.h's seal) since start (for tests). TESSERA_SHARED_PLACES=0 in the environment
// gives every register a place of its own, kBlock * 8 bytes apart (for measuring what sharing
// gains, in one build).
bool shared_places_on();
int64_t register_reuses();
void count_register_reuses(int64_t n);

}  // namespace tessera::exec
