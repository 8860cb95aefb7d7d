// An Executable: a function compiled once into a flat list of steps, then run many times.
//
// interp::evaluate walks the IR on every call: per op it looks operands up in hash maps, builds an
// operand vector, finds the kernel, checks the result types, and it plans fusion and liveness
// again for every block it enters (every call, every while iteration). An Executable does that
// work once, when it is compiled:
//   - every value of the function (of its nested while bodies too) gets a slot, an index into the
//     array of values a run holds; a slot has the value's static type (where a buffer plan will
//     put an offset), and a step names its operands and results by slot;
//   - each op becomes a step with its kernel resolved: the block's fused loop (the fusion plan is
//     made at compile time), else the fast kernel (exec::accelerate) before the reference kernel
//     (interp::kernel); an op the fast kernel declines once goes straight to the reference kernel
//     from then on (fast kernels decide by types, never by values);
//   - liveness is computed per block: after its last reader's step a value's slot is freed, and a
//     fused loop may write its result over an operand that dies there;
//   - the buffer plan (buffer_plan.h): every value the function's own block computes gets an
//     offset in one arena from its live range, so a run in a RunContext (the arena and the values'
//     views of it, made once and reused by every run) allocates no array: kernels write their
//     results into the arena (nothing fully written is zero-filled; an element-wise kernel may
//     write over an operand that dies there), and each result is copied out into the caller's
//     destination (run_into), else the buffer of a parameter of its type that is not itself
//     returned (a donated input: the optimizer's parameters and moments come back in their own
//     buffers), else a fresh one. Callees run in planned frames of their own in the context: their
//     arguments are views of the caller's values (kept per call site) and they write their
//     results straight into the caller's slots; values of while bodies are still allocated per
//     run;
//   - `while` bodies and conditions are compiled inline (their values are slots of the same run,
//     the loop state moves from body to condition without copies), `func.call` callees are
//     compiled once into their own Executables; the scalar bodies of reduce, scatter and the
//     reducing collectives stay with their kernels, as do sdy.manual_computation's bodies.
//
// Running gives the results of interp::evaluate with the same kernels, bit for bit: the same
// kernels see the same values in the same order (tests/exec/executable_test.cpp). Arguments are
// checked like interp::evaluate's (a UserError naming the function, the argument and both types);
// results of fast kernels and fused loops are not checked again (their types are the op's by
// construction), those of reference kernels are. Collectives go to Options.collectives, as in the
// interpreter. An Executable is immutable once compiled: several threads may run it at once. It
// points into the function and module it was compiled from, which must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "exec/accelerate.h"
#include "exec/buffer_plan.h"
#include "interp/interpreter.h"
#include "ir/literal.h"
#include "ir/module.h"

namespace tessera::exec {

namespace detail {
struct Code;
struct Access;
struct Frame;
}

// The state of runs of one Executable on one device: the arena of its buffer plan and its values'
// views of it. Made once (Executable::make_context) and reused by runs one at a time; the Session
// keeps one per device and program in its executable cache (runtime/executables.h).
class RunContext {
 public:
  ~RunContext();
  RunContext(const RunContext&) = delete;
  RunContext& operator=(const RunContext&) = delete;
  int64_t arena_bytes() const;

 private:
  RunContext();
  std::unique_ptr<detail::Frame> frame_;
  friend struct detail::Access;
};

struct CompileOptions {
  // Resolves func.call (callees are compiled too) and gives sdy.manual_computation its meshes
  // when a run's Options.module is null.
  const ir::Module* module = nullptr;
  // The fast kernels tried before each reference kernel; null: the reference kernels only.
  bool (*accelerate)(const ir::Op& op, std::span<const ir::Literal* const> operands,
                     std::vector<ir::Literal>& results) = &exec::accelerate;
  // Plans element-wise fusion for blocks of interp::kMinPlannedBlockOps ops or more, with fast
  // kernels only (as the interpreter does); by default the planner registered with the interpreter
  // when the options are made.
  interp::FusionPlanner planner = interp::current_fusion_planner();
};

class Executable {
 public:
  static std::shared_ptr<const Executable> compile(const ir::Function& fn, const CompileOptions& options = {});
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  // Runs the function on `args` (moved into the run: an argument's buffer is freed after its last
  // reader, or reused by a fused loop). Options as for interp::evaluate, except `accelerate`, which
  // the executable fixed when it was compiled.
  std::vector<ir::Literal> run(std::vector<ir::Literal> args, const interp::Options& options = {}) const;
  // The same, with the values in `context`'s arena (made by this executable's make_context). An
  // argument that is a view (Literal::view) is read and never written, so a caller may lend its
  // buffers; the others may take results.
  std::vector<ir::Literal> run(std::vector<ir::Literal> args, const interp::Options& options, RunContext& context) const;
  // The steady-state form of the run in a context, which allocates nothing once warm. Arguments
  // that are views, or that `lent` marks (per argument; shorter: the rest unmarked), are borrowed:
  // read in place, never written, and handed back in `args` after the run, also when it fails (a
  // caller may lend its own buffers, views of them kept from run to run). The others are moved into
  // the run (their buffers may carry results). `results` is refilled: an entry that already holds
  // a buffer of its result's type (owned, or a view the caller lends as the destination) receives
  // the result, copied into it; the others get the buffer of an unlent argument of the result's
  // type (a donated input), else a fresh one. `args` and `results` are distinct vectors.
  void run_into(std::vector<ir::Literal>& args, std::span<const uint8_t> lent, std::vector<ir::Literal>& results,
                const interp::Options& options, RunContext& context) const;
  std::unique_ptr<RunContext> make_context() const;

  // The buffer plan: the arena's bytes, and the peak of a run in a context: the arenas (this
  // function's and its callees'), the arguments, and the results that go to fresh buffers (no
  // parameter of their type to take; callees write theirs into the caller's arena). Exact when
  // planned(): values of while bodies are not planned.
  int64_t arena_bytes() const;
  int64_t peak_bytes() const;
  // What a run context holds for good: this function's arena and its callees'.
  int64_t context_bytes() const;
  bool planned() const;

  const ir::Function& function() const;
  struct Stats {
    size_t steps = 0;     // in every block, nested ones included
    size_t slots = 0;     // values a run holds
    size_t inlined = 0;   // ops computed inside fused loops, with no step of their own
    size_t fused = 0;     // steps that run a fused loop
    size_t nested = 0;    // while loops compiled inline, and calls of compiled callees
    size_t in_donor = 0;  // results computed in a donated argument's buffer (when one is there)
    size_t row_groups = 0;  // steps of the function's block run tile by tile over rows (fusion_rows.h)
    size_t row_steps = 0;   // the members of those groups
    size_t views = 0;       // reshapes and contiguous slices whose results lie in their operand's buffer
  };
  const Stats& stats() const;
  // How many executables were compiled in this process (callees included): tests check that a
  // program is compiled once, not per call.
  static int64_t compilations();

 private:
  Executable();
  std::unique_ptr<detail::Code> code_;
  friend struct detail::Access;
};

}  // namespace tessera::exec
