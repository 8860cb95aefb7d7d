// Kernels of the ops that depend on where the program runs: replica_id and partition_id (answered
// from ProcessInfo) and the collectives, which are handed with their operand values and body to the
// run's Collectives object (single-process meaning by default, threads or MPI ranks in comm).
#include <memory>

#include "interp/kernels.h"

namespace tessera::interp {

using ir::Literal;

namespace {

Literal ui32(uint32_t v) {
  Literal x(ir::Type(ir::ElementType::ui32, {}));
  x.data<ir::Elem<ir::ElementType::ui32>>()[0] = v;
  return x;
}

Results run_collective(const EvalContext& ctx) {
  std::vector<Literal> operands;
  for (size_t i = 0; i < ctx.num_operands(); ++i) operands.push_back(ctx.operand(i));
  Combiner combine;
  if (!ctx.op.regions().empty()) {
    auto body = std::make_shared<ScalarBody>(ctx, 0, 1);
    combine = [body](const Literal& a, const Literal& b) { return body->combine(a, b); };
  }
  return ctx.state.collectives->run(ctx.op, std::move(operands), combine, ctx.state.process);
}

}  // namespace

Results eval_ReplicaId(const EvalContext& ctx) { return one(ui32(ctx.state.process.replica_id)); }
Results eval_PartitionId(const EvalContext& ctx) { return one(ui32(ctx.state.process.partition_id)); }

Results eval_AllReduce(const EvalContext& ctx) { return run_collective(ctx); }
Results eval_AllGather(const EvalContext& ctx) { return run_collective(ctx); }
Results eval_ReduceScatter(const EvalContext& ctx) { return run_collective(ctx); }
Results eval_AllToAll(const EvalContext& ctx) { return run_collective(ctx); }
Results eval_CollectivePermute(const EvalContext& ctx) { return run_collective(ctx); }
Results eval_CollectiveBroadcast(const EvalContext& ctx) { return run_collective(ctx); }
Results eval_CollectiveReduce(const EvalContext& ctx) { return run_collective(ctx); }
// send and recv are one-sided messages of the run's Collectives (SingleProcessCollectives keeps
// them in the evaluation; comm's go through the communicator's post and take).
Results eval_Send(const EvalContext& ctx) { return run_collective(ctx); }
Results eval_Recv(const EvalContext& ctx) { return run_collective(ctx); }

}  // namespace tessera::interp
