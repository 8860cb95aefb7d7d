// The reference interpreter: evaluates an ir::Function on host Literals, one plain kernel per op.
//
// It is the oracle that fast kernels, partitioned programs and gradients are checked against, so
// every kernel follows the StableHLO spec literally (and XLA where the spec leaves a case open, e.g.
// integer division by zero). Collectives are not computed here: every op with the kCollective
// trait is handed to a Collectives object. SingleProcessCollectives gives the single-process
// meaning of DESIGN.md §2 (every process of the grid is assumed to hold process 0's value); the
// comm layer implements the same interface across threads and MPI ranks.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <mutex>
#include <string_view>
#include <vector>

#include "ir/literal.h"
#include "ir/module.h"
#include "interp/trace.h"

namespace tessera::interp {

// Where in the StableHLO process grid (num_replicas x num_partitions) the program runs.
struct ProcessInfo {
  uint32_t replica_id = 0, partition_id = 0, num_replicas = 1, num_partitions = 1;
};

// Applies a collective's reduction body (two scalars in, one scalar out) elementwise to two arrays
// of one type.
using Combiner = std::function<ir::Literal(const ir::Literal& lhs, const ir::Literal& rhs)>;

class Collectives {
 public:
  virtual ~Collectives() = default;
  // Computes the results of collective `op` on `process` from its operand values. `combine` is the
  // op's body for all_reduce, reduce_scatter and collective_reduce, and empty otherwise.
  virtual std::vector<ir::Literal> run(const ir::Op& op, std::vector<ir::Literal> operands,
                                       const Combiner& combine, const ProcessInfo& process) = 0;
  // The same for a collective of one operand, read where it lies, into `result` (of the op's
  // result type, its contents garbage), when this implementation computes it directly; false:
  // nothing was done (the caller uses run()). Same bits as run().
  virtual bool run_into(const ir::Op& op, const ir::Literal& operand, ir::Literal& result,
                        const ProcessInfo& process) {
    (void)op, (void)operand, (void)result, (void)process;
    return false;
  }
};

// DESIGN.md §2: the meaning of a collective when one process stands for every process of its group,
// all holding the same value. Of a group of n processes:
//   all_reduce           the body folded over n copies (sum: value x n, max: value, product: value^n)
//   all_gather           n copies concatenated along all_gather_dim
//   reduce_scatter       process 0's block (its position in the group) of the fold over n copies
//   all_to_all           n copies of process 0's chunk of split_dimension, along concat_dimension
//   collective_permute   the operand if process 0 is a target, zeros otherwise
//   collective_broadcast the operand
//   collective_reduce    the fold over n copies if process 0 is its group's root (first id), else zeros
// Groups are validated (replica_groups below) and must contain this process; ids may exceed the
// ProcessInfo counts, since the other processes are imagined. "Process 0" above is the process of
// Options.process, (0, 0) by default.
//   send                 its values kept for the recvs of the same channel, when process 0 is a
//                        source of its pairs (or it has none)
//   recv                 the oldest values a send of its channel kept, when process 0 is a target of
//                        its pairs (or it has none); zeros otherwise
class SingleProcessCollectives : public Collectives {
 public:
  std::vector<ir::Literal> run(const ir::Op& op, std::vector<ir::Literal> operands,
                               const Combiner& combine, const ProcessInfo& process) override;

 private:
  std::map<int64_t, std::deque<std::vector<ir::Literal>>> mail_;  // by channel: sends not yet received
};

// ---- Process groups (StableHLO spec, "Collective ops"), shared with the comm layer ----

enum class CollectiveMode { CrossReplica, CrossPartition, CrossReplicaAndPartition, FlattenedIds };

// The grouping strategy of a collective op, from its channel_handle and use_global_device_ids.
CollectiveMode collective_mode(const ir::Op& op);

// The op's replica_groups as lists of ids, with the -1 padding of ragged groups removed. Refuses,
// with a UserError naming the op and printing the groups, groups that are empty, contain a negative
// id or are not disjoint. Ragged groups are valid in real runs; SingleProcessCollectives refuses
// them, since its meaning needs equal groups:
//   stablehlo.all_reduce: replica_groups [[0, 1], [2]] are not equal-sized
std::vector<std::vector<int64_t>> replica_groups(const ir::Op& op);

struct ProcessId {
  int64_t replica = 0, partition = 0;
  bool operator==(const ProcessId&) const = default;
};

// The process groups of `op` on the grid of `grid` (its num_replicas and num_partitions), per the
// op's mode; empty replica_groups mean every replica (or partition, or process) in one group.
std::vector<std::vector<ProcessId>> process_groups(const ir::Op& op, const ProcessInfo& grid);

// all_gather and reduce_scatter: each result must be its operand gathered from (scattered over) the
// `group_size` processes of the group running it. A written result type is checked statically
// only as a whole multiple (the group depends on the mode and the grid), so this refuses, with a
// UserError naming the op and both types, a group of another size before any data moves.
void check_group_size(const ir::Op& op, int64_t group_size);

// The source_target_pairs of collective_permute, validated: ids non-negative, no source and no
// target twice.
std::vector<std::pair<int64_t, int64_t>> source_target_pairs(const ir::Op& op);

// send and recv: ids in their source_target_pairs are processes of the flattened grid (replica ·
// num_partitions + partition: replicas when there is one partition, partitions when there is one
// replica). message_pairs gives them validated; none when the op has none or transfers to or from
// the host, and its messages are then matched by channel alone.
int64_t flat_process_id(const ProcessInfo& process);
int64_t flat_process_id(const ProcessId& p, const ProcessInfo& grid);  // process p of grid's grid
std::vector<std::pair<int64_t, int64_t>> message_pairs(const ir::Op& op);

// ---- Checks (check.* ops and the check custom calls of JAX-generated tests) ----

struct CheckResult {
  ir::SourceLoc loc;      // of the check op in its text (line 0: built in C++)
  std::string check;      // "check.expect_eq_const", "stablehlo.custom_call @check.expect_close"
  bool passed = true;
  double max_difference = 0;  // largest |actual - expected| (ULPs for expect_close)
  std::string detail;         // the first mismatch: index, actual and expected values
};

// Collects check results; safe to share between the threads of a parallel run.
class CheckLog {
 public:
  void add(CheckResult r);
  std::vector<CheckResult> take();

 private:
  std::mutex mu_;
  std::vector<CheckResult> results_;
};

// ---- Evaluation ----

// Time spent per op kind (for finding what to speed up); filled when Options.profile is set.
struct Profile {
  std::mutex mutex;
  std::map<std::string, std::pair<int64_t, double>> by_op;  // spelling -> (count, seconds)
  bool by_type = false;  // key by the op's spelling and its result types (for finding which matmul)
  std::string to_string() const;  // a table, slowest first
};

struct Options {
  ProcessInfo process;
  Collectives* collectives = nullptr;  // null: SingleProcessCollectives
  // Where check.* ops report; without a log a failed check is a UserError.
  CheckLog* checks = nullptr;
  // Runs interpreter.run_parallel's grid of programs (comm::run_parallel provides one, with real
  // data exchange between threads); without it the op is refused.
  std::function<std::vector<ir::Literal>(const ir::Op& op, std::vector<ir::Literal> inputs)>
      run_parallel;
  // The module of the function; only sdy.manual_computation needs it (for its mesh).
  const ir::Module* module = nullptr;
  // Faster kernels to try before the reference one (exec::accelerate provides them): computes the
  // op into `results` and returns true, or returns false to leave it to the reference kernel.
  bool (*accelerate)(const ir::Op& op, std::span<const ir::Literal* const> operands,
                     std::vector<ir::Literal>& results) = nullptr;
  Profile* profile = nullptr;
  // Spans of every timed op on this device's track (trace.h); the device is `trace_device`, or
  // when that is -1 the process's flattened id (replica * partitions + partition).
  Trace* trace = nullptr;
  int64_t trace_device = -1;
  // stablehlo.infeed reads its next payload from `infeed` (given the payload's type) and
  // stablehlo.outfeed hands its values to `outfeed`; without them the ops are refused by name.
  std::function<ir::Literal(const ir::Type& type)> infeed;
  std::function<void(std::vector<ir::Literal> values)> outfeed;
  // Where interpreter.probe writes its .npy files and check.expect_serialized_eq reads them.
  std::string probe_dir;
  // A while loop whose body would run more often than this is refused (a UserError naming the
  // loop), so a condition that never turns false cannot hold the caller forever; -1: no limit.
  int64_t max_while_iterations = -1;
};

// The refusal of a while loop that reached Options::max_while_iterations (the interpreter's and
// exec::Executable's, in the same words).
[[noreturn]] void refuse_while_iterations(const ir::Op& op, int64_t limit);

inline int64_t trace_device(const Options& o) {
  if (o.trace_device >= 0) return o.trace_device;
  return static_cast<int64_t>(o.process.replica_id) * o.process.num_partitions + o.process.partition_id;
}

// ---- Element-wise fusion (behind the fast kernels) ----

// How a block's element-wise ops run as fused loops; exec/fusion.cpp plans them. An inlined op is
// never computed on its own: every op that reads its result computes it inside its own loop, so its
// result is never materialized. run_block skips inlined ops and hands every other op to run() first.
class FusionPlan {
 public:
  virtual ~FusionPlan() = default;
  virtual bool inlined(const ir::Op& op) const = 0;
  // Computes `op` (with the inlined ops it reads evaluated in its loop) into `results` and returns
  // true, or returns false to leave `op` to the fast and reference kernels. `value` gives every
  // value the loop reads that is not inlined; `dying` gives, of those, the ones that no op after
  // this one reads (null for the others): the loop may write its result over one of them.
  // `results` comes empty, or holding one destination of the result's type to write into (an
  // executable's arena, as for exec::accelerate).
  virtual bool run(const ir::Op& op, const std::function<const ir::Literal&(const ir::Value*)>& value,
                   const std::function<ir::Literal*(const ir::Value*)>& dying,
                   std::vector<ir::Literal>& results) const = 0;
  // Whether run() may compute `op`; false: run() would return false for it, whatever the values,
  // so a caller that compiles the block ahead of time (exec::Executable) sends the op straight to
  // the kernels. Never true for an inlined op.
  virtual bool runs(const ir::Op& op) const { return !inlined(op); }
};
using FusionPlanner = std::unique_ptr<FusionPlan> (*)(const ir::Block& block);
// Registers the planner that run_block uses for blocks of the programs it runs with
// Options.accelerate set (exec registers its own at start-up); null turns fusion off.
void set_fusion_planner(FusionPlanner planner);
// The planner registered now (null: none).
FusionPlanner current_fusion_planner();
// Blocks of fewer ops (reduction bodies, run once per element) are neither fused nor freed value by
// value: planning would cost more than they hold.
inline constexpr size_t kMinPlannedBlockOps = 16;

// A UserError naming the function, the argument and both types unless `args` match `fn`'s
// parameters in number and type (evaluate's check, and exec::Executable's).
void check_arguments(const ir::Function& fn, const std::vector<ir::Literal>& args);

// Evaluates `fn` on `args`; checks their number and types against its parameters first (a
// UserError naming the function, the argument and both types). Shardings are ignored: the program
// is evaluated on whole arrays (sdy.manual_computation: see kernels_shardy.cpp).
std::vector<ir::Literal> evaluate(const ir::Function& fn, std::vector<ir::Literal> args,
                                  const Options& options = {});
// Evaluates @name of `module` (a UserError when there is none), with options.module set.
std::vector<ir::Literal> evaluate(const ir::Module& module, std::string_view name,
                                  std::vector<ir::Literal> args, Options options = {});

}  // namespace tessera::interp
