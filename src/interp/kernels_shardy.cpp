// Kernels of the Shardy ops. sharding_constraint and reshard only say how a value is laid out, so
// they are identities on whole arrays. So are Shardy's explicit collectives (all_gather, all_slice,
// all_reduce, reduce_scatter, all_to_all, collective_permute): on the global value they only move
// the layout from the operand's to out_sharding (all_reduce and reduce_scatter sum partial values
// that exist only per device); the partitioner gives them their local, per-device meaning.
// sdy.constant is its value, like stablehlo.constant. The propagation ops (propagation_barrier,
// data_flow_edge) are identities, and sharding_group computes nothing.
//
// manual_computation runs its body once per device of the manual axes (the sub-mesh they span, in
// mesh order, last axis fastest). Each run gets that device's local pieces of the inputs (split by
// in_shardings along the manual axes only) and its local results are put back at that device's
// place by out_shardings; where several devices hold the same piece of a result (it is replicated
// along some manual axis) the lowest device's piece is kept. Collectives in the body keep the run's
// meaning (single-process by default: every device of a group holds the same value). So a body
// without collectives gives exactly the global result, and a body ending in psum gives device 0's
// local value times the group size, as all_reduce does in a single process.
#include <algorithm>
#include <set>

#include "interp/kernels.h"
#include "ir/manual_mesh.h"

namespace tessera::interp {

using ir::Literal;

Results eval_ShardingConstraint(const EvalContext& ctx) { return one(ctx.operand(0)); }
Results eval_Reshard(const EvalContext& ctx) { return one(ctx.operand(0)); }
Results eval_SdyAllGather(const EvalContext& ctx) { return one(ctx.operand(0)); }
Results eval_SdyAllSlice(const EvalContext& ctx) { return one(ctx.operand(0)); }
Results eval_SdyAllReduce(const EvalContext& ctx) { return one(ctx.operand(0)); }
Results eval_SdyReduceScatter(const EvalContext& ctx) { return one(ctx.operand(0)); }
Results eval_SdyAllToAll(const EvalContext& ctx) { return one(ctx.operand(0)); }
Results eval_SdyCollectivePermute(const EvalContext& ctx) { return one(ctx.operand(0)); }
Results eval_SdyConstant(const EvalContext& ctx) { return one(ctx.op.attrs().get<Literal>("value")); }
Results eval_PropagationBarrier(const EvalContext& ctx) { return one(ctx.operand(0)); }
Results eval_DataFlowEdge(const EvalContext& ctx) { return one(ctx.operand(0)); }
Results eval_ShardingGroup(const EvalContext&) { return {}; }

namespace {

struct ManualAxes {
  const ir::Mesh* mesh = nullptr;
  std::vector<std::string> names;  // the manual axes, in mesh order
  std::vector<int64_t> sizes;

  int64_t coordinate(const std::string& axis, const std::vector<int64_t>& device) const {
    auto it = std::find(names.begin(), names.end(), axis);
    return it == names.end() ? -1 : device[static_cast<size_t>(it - names.begin())];
  }

  // The piece of each dimension that `device` holds under sharding s (axes major to minor; a
  // sub-axis "x":(pre)size is digit (c / (|x| / (pre*size))) % size of x's coordinate c).
  std::vector<int64_t> piece(const ir::Sharding& s, size_t rank, const std::vector<int64_t>& device) const {
    std::vector<int64_t> index(rank, 0);
    for (size_t d = 0; d < rank && d < s.dims.size(); ++d) {
      for (const ir::AxisRef& ref : s.dims[d].axes) {
        int64_t c = coordinate(ref.name, device);
        if (c < 0) continue;  // a free axis: the body sees that dimension whole
        int64_t size = ir::axis_ref_size(ref, *mesh);
        if (ref.sub) c = (c / (mesh->find_axis(ref.name)->size / (ref.sub->pre_size * size))) % size;
        index[d] = index[d] * size + c;
      }
    }
    return index;
  }
};

ManualAxes manual_axes(const EvalContext& ctx) {
  const auto& names = ctx.op.attrs().get<ir::AxisNames>("manual_axes");
  if (ctx.state.module == nullptr)
    ctx.fail("needs the module's meshes: evaluate it with evaluate(module, name, ...) or Options.module");
  ManualAxes m;
  m.mesh = ir::manual_mesh(*ctx.state.module, ctx.op);
  if (m.mesh == nullptr) {  // nothing in or out: the body runs once, on nothing
    if (!names.empty()) ctx.fail("names manual axes but has no operands or results, whose layouts say the mesh");
    return m;
  }
  for (const ir::MeshAxis& axis : m.mesh->axes)
    if (std::find(names.begin(), names.end(), axis.name) != names.end()) {
      m.names.push_back(axis.name);
      m.sizes.push_back(axis.size);
    }
  if (m.names.size() != names.size()) ctx.fail("names manual axes that mesh @{} does not have", m.mesh->name);
  return m;
}

std::vector<int64_t> times(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = a[i] * b[i];
  return r;
}

}  // namespace

Results eval_ManualComputation(const EvalContext& ctx) {
  ManualAxes m = manual_axes(ctx);
  const auto& in = ctx.op.attrs().get<ir::ShardingList>("in_shardings");
  const auto& out_shardings = ctx.op.attrs().get<ir::ShardingList>("out_shardings");
  const ir::Block& body = ctx.op.region(0);
  Results results;
  for (size_t k = 0; k < ctx.op.num_results(); ++k) results.emplace_back(ctx.result_type(k));
  std::vector<std::set<std::vector<int64_t>>> written(results.size());
  for_each_index(m.sizes, [&](const std::vector<int64_t>& device) {
    std::vector<Literal> locals;
    for (size_t i = 0; i < ctx.num_operands(); ++i) {
      const std::vector<int64_t>& local = body.argument(i)->type().shape;
      std::vector<int64_t> start = times(m.piece(in[i], local.size(), device), local);
      std::vector<int64_t> limit(start.size());
      for (size_t d = 0; d < start.size(); ++d) limit[d] = start[d] + local[d];
      // (ir::verify refuses a body that does not take its pieces; a module built in C++ and
      // never verified must still not read past its operand)
      const std::vector<int64_t>& whole = ctx.operand(i).shape();
      for (size_t d = 0; d < start.size(); ++d)
        if (local.size() != whole.size() || limit[d] > whole[d])
          ctx.fail("body argument {} is {}, which is no piece of operand {} ({}) along the manual axes", i,
                   to_string(body.argument(i)->type()), i, to_string(ctx.operand(i).type()));
      locals.push_back(slice_literal(ctx.operand(i), start, limit));
    }
    Results pieces = ctx.run_region(0, std::move(locals));
    for (size_t k = 0; k < results.size(); ++k) {
      std::vector<int64_t> piece = m.piece(out_shardings[k], pieces[k].shape().size(), device);
      std::vector<int64_t> at = times(piece, pieces[k].shape());
      const std::vector<int64_t>& whole = results[k].shape();
      bool fits = pieces[k].shape().size() == whole.size() && pieces[k].element() == results[k].element();
      for (size_t d = 0; fits && d < at.size(); ++d) fits = at[d] + pieces[k].shape()[d] <= whole[d];
      if (!fits)
        ctx.fail("body result {} is {}, which is no piece of result {} ({}) along the manual axes", k,
                 to_string(pieces[k].type()), k, to_string(results[k].type()));
      if (written[k].insert(piece).second) write_block(pieces[k], results[k], at);
    }
  });
  return results;
}

}  // namespace tessera::interp
