// JVP rules of the collectives, the Shardy layout ops and sdy.manual_computation.
//
// Every collective here is linear in its operands, so a tangent goes through the same collective
// (same groups, grouping mode and reduction body, a fresh channel id): what the op does to the
// values of all processes together, it does to their tangents. Unlike the VJP rules, which need an
// adjoint that groups alike, forward mode differentiates the channel forms of collective_broadcast
// and collective_reduce too. The layout ops give a tangent its primal's layout.
//
// manual_computation: the tangent is another manual computation over the same manual axes, taking
// (xs, dxs) split like the inputs and returning the result tangents split like the results, whose
// body is the JVP of the forward body on each device's local pieces. This is exact whatever the
// shardings: a tangent is laid out like its primal, so a replicated input has a replicated tangent
// and a result that the body returns alike on every device has a tangent alike on every device.
#include "autodiff/jvp_rules.h"

namespace tessera::autodiff {

// all_reduce(x; +) -> all_reduce(dx; +) over the same groups
void jvp_AllReduce(JvpContext& c) {
  require_combiner(c.op);
  map_tangents(c);
}
// all_gather(x, d) -> all_gather(dx, d)
void jvp_AllGather(JvpContext& c) { map_tangents(c); }
// reduce_scatter(x, d; +) -> reduce_scatter(dx, d; +)
void jvp_ReduceScatter(JvpContext& c) {
  require_combiner(c.op);
  linear(c);
}
// all_to_all(x, s, c) -> all_to_all(dx, s, c)
void jvp_AllToAll(JvpContext& c) { map_tangents(c); }
// collective_permute(x, pairs) -> collective_permute(dx, pairs) (zeros where nothing arrives, as for x)
void jvp_CollectivePermute(JvpContext& c) { linear(c); }
// collective_broadcast(x) -> collective_broadcast(dx)
void jvp_CollectiveBroadcast(JvpContext& c) { map_tangents(c); }
// collective_reduce(x; +) -> collective_reduce(dx; +)
void jvp_CollectiveReduce(JvpContext& c) {
  require_combiner(c.op);
  linear(c);
}

// sharding_constraint(x, s) -> sharding_constraint(dx, s)
void jvp_ShardingConstraint(JvpContext& c) { linear(c); }
// reshard(x, s) -> reshard(dx, s)
void jvp_Reshard(JvpContext& c) { linear(c); }
// propagation_barrier(x, d) -> propagation_barrier(dx, d): the tangent's layouts flow as x's do
void jvp_PropagationBarrier(JvpContext& c) { linear(c); }
// data_flow_edge(x) -> dx (the edge belongs to the forward op's result)
void jvp_DataFlowEdge(JvpContext& c) {
  c.set(0, c.term(0, [](const Tensor& d) { return d; }));
}
// sharding_group(x): no result, no tangent
void jvp_ShardingGroup(JvpContext&) {}
// Shardy's explicit collectives (identities on the global value): op(x) -> op(dx), the tangent
// moved to the primal's layout the same way
void jvp_SdyAllGather(JvpContext& c) { linear(c); }
void jvp_SdyAllSlice(JvpContext& c) { linear(c); }
void jvp_SdyAllReduce(JvpContext& c) { linear(c); }
void jvp_SdyReduceScatter(JvpContext& c) { linear(c); }
void jvp_SdyAllToAll(JvpContext& c) { linear(c); }
void jvp_SdyCollectivePermute(JvpContext& c) { linear(c); }

// manual_computation(xs) { body } -> manual_computation(xs, dxs) { JVP of body on local pieces }
void jvp_ManualComputation(JvpContext& c) {
  const auto& in = c.op.attrs().get<ir::ShardingList>("in_shardings");
  const auto& out = c.op.attrs().get<ir::ShardingList>("out_shardings");
  const auto& axes = c.op.attrs().get<ir::AxisNames>("manual_axes");
  std::vector<size_t> inputs, results;  // the inputs with tangents, the float results
  for (size_t i = 0; i < c.num_operands(); ++i)
    if (c.has_tangent(i)) inputs.push_back(i);
  for (size_t k = 0; k < c.num_results(); ++k)
    if (is_differentiable(c.y(k).type())) results.push_back(k);
  if (results.empty()) return;

  std::vector<Tensor> operands;
  ir::ShardingList in_shardings = in, out_shardings;
  for (size_t i = 0; i < c.num_operands(); ++i) operands.push_back(c.x(i));
  for (size_t i : inputs) {
    operands.push_back(*c.tangent(i));
    in_shardings.push_back(in[i]);
  }
  for (size_t k : results) out_shardings.push_back(out[k]);
  const ir::Block& body = c.op.region(0);
  std::vector<Tensor> dys = ir::manual(
      operands, in_shardings, out_shardings, axes, [&](ir::Builder& rb, const std::vector<Tensor>& locals) {
        std::vector<Tensor> xs(locals.begin(), locals.begin() + static_cast<long>(c.num_operands()));
        std::vector<std::optional<Tensor>> dxs(xs.size());
        for (size_t j = 0; j < inputs.size(); ++j) dxs[inputs[j]] = locals[c.num_operands() + j];
        JvpValues v = jvp_block(rb, body, xs, dxs);
        std::vector<Tensor> tangents;
        for (size_t k : results) tangents.push_back(v.tangents[k] ? *v.tangents[k] : zeros_like(rb, v.primals[k].type()));
        return tangents;
      });
  for (size_t j = 0; j < results.size(); ++j) c.set(results[j], dys[j]);
}

}  // namespace tessera::autodiff
