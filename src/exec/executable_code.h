// Internal to exec::Executable: the compiled form (steps, blocks, slots) that
// executable_compile.cpp builds and executable_run.cpp runs. See executable.h.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "exec/executable.h"
#include "exec/fusion_rows.h"
#include "interp/kernels.h"

namespace tessera::exec::detail {

// An index into a run's array of values. Every slot has one static type (Code::slot_types).
using Slot = uint32_t;

// A stretch of Code::lists (slots) or Code::captured.
struct Range {
  uint32_t begin = 0, size = 0;
};

enum class StepKind : uint8_t {
  kKernel,  // the fast kernel (unless it declined once), else the reference kernel
  kFused,   // the block's fused loop; the kernels if it declines
  kWhile,   // a while loop compiled inline (Code::whiles)
  kCall,    // a func.call of a compiled callee (Code::calls)
};

struct Step {
  StepKind kind = StepKind::kKernel;
  bool try_fast = false;  // exec::accelerate (CompileOptions::accelerate) first
  const ir::Op* op = nullptr;
  interp::Kernel reference = nullptr;
  Range operands, results;  // slots, one per operand and result
  Range frees;              // slots whose last reader is this step: freed after it
  Range captures;           // Code::captured: values of enclosing blocks its regions read
  int32_t nested = -1;      // kWhile: index in Code::whiles; kCall: index in Code::calls
  int32_t profile = -1;     // index in Code::profile_keys; -1: not timed (while, call)
  bool planned = false;     // its results are in the arena: kernels get them as destinations
  bool collective = false;  // planned, and a collective the run's Collectives may compute in place
};

struct BlockCode {
  std::vector<Step> steps;
  std::unique_ptr<interp::FusionPlan> plan;  // null: no fusion in this block
  std::vector<Slot> returns;                 // the return's operands
  std::vector<uint8_t> move_return;          // per return operand: moved out (else copied)
  Range return_frees;                        // slots the return reads last (moved out or dropped)
  // Per step: the fast kernel declined the op once (it decides by types, so it always will).
  std::unique_ptr<std::atomic<bool>[]> declined;
};

// A while loop: the state slots are both the condition's and the body's arguments.
struct WhileCode {
  BlockCode cond, body;
  std::vector<Slot> state;
  std::vector<uint8_t> move_in;  // per operand: moved into the state (it dies at the loop)
};

struct CallCode {
  std::shared_ptr<const Executable> callee;
  std::vector<uint8_t> move_in;  // per operand: moved into the call (it dies there)
};

struct Code {
  const ir::Function* fn = nullptr;
  const ir::Module* module = nullptr;
  bool (*accelerate)(const ir::Op&, std::span<const ir::Literal* const>, std::vector<ir::Literal>&) = nullptr;
  BlockCode body;
  std::vector<Slot> params;  // the function's parameters
  std::vector<Slot> lists;   // the slot lists of every step
  std::vector<std::pair<const ir::Value*, Slot>> captured;
  std::vector<const ir::Type*> slot_types;
  std::unordered_map<const ir::Value*, Slot> slot_of;  // fused loops name their values by Value
  std::vector<std::unique_ptr<WhileCode>> whiles;
  // Row groups of the function's block (fusion_rows.h), run tile by tile in a planned run; per step
  // of the body, the group that starts there, or -1.
  std::vector<RowGroup> row_groups;
  std::vector<int32_t> group_at;
  std::vector<CallCode> calls;
  // Per timed step: the op's name, and its name with its result types (Profile::by_type).
  std::vector<std::pair<std::string, std::string>> profile_keys;
  std::vector<interp::TraceLabel> trace_labels;  // per timed step too (interp/trace.h)
  Executable::Stats stats;
  // The buffer plan (executable_plan.cpp): per slot, its offset in the arena (-1: not planned:
  // parameters, inlined values, values of nested blocks); per return of the body, the parameter
  // whose buffer takes the result (-1: a fresh one, or the value is a parameter itself).
  std::vector<int64_t> slot_offset;
  std::vector<int32_t> return_donor;
  // Per return with a donor: how the donor's buffer takes the result. 0: the result is copied in
  // after the run. 1: it is computed there (the result's slot points into the donor's buffer for
  // the run): no step reads the donor from the result's defining step on, or that step is an
  // element-wise kernel (it reads each element before writing it). 2: the defining step is a
  // fused loop that reads the donor for the last time: it gets no destination and may write over
  // the donor in place (as over any dying value), which it decides by its reads; when it does not,
  // the result is copied in from then on (in_donor_declined).
  std::vector<uint8_t> return_in_donor;
  std::vector<int32_t> step_in_donor;  // per step of the body: the return it computes (kind 2), or -1
  std::unique_ptr<std::atomic<bool>[]> in_donor_declined;  // per return
  int64_t arena_bytes = 0, peak_bytes = 0;
  int64_t context_bytes = 0;  // the arenas of a run context: this one and its callees'
  bool planned = false;
  size_t max_operands = 0, max_results = 0;

  const Slot* list(Range r) const { return lists.data() + r.begin; }
};

struct Access {
  static std::shared_ptr<Executable> make() { return std::shared_ptr<Executable>(new Executable()); }
  static Code& code(Executable& e) { return *e.code_; }
  static const Code& code(const Executable& e) { return *e.code_; }
  static std::unique_ptr<RunContext> context() { return std::unique_ptr<RunContext>(new RunContext()); }
  static std::unique_ptr<Frame>& frame(RunContext& c) { return c.frame_; }
};

// Lays the values of the function's block out in an arena (executable_plan.cpp).
void plan_arena(Code& code);

// Runs compiled code on `args` (one per parameter, already checked) in `state`.
std::vector<ir::Literal> execute(const Code& code, std::vector<ir::Literal> args, const interp::RunState& state);

}  // namespace tessera::exec::detail
