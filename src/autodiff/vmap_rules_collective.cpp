// vmap rules of control flow, calls, the collectives, the Shardy ops and the check ops.
//
// Collectives: the batch is one more dimension of the operand, carried through the same groups
// (a fresh channel id): all_reduce, collective_permute, collective_broadcast and collective_reduce
// act on each operand alike (elementwise across processes), so they take the operands as they
// are; all_gather, reduce_scatter and all_to_all name dimensions, which shift by one past the
// batch. Layout ops and manual_computation keep their shardings, the batch added as a dimension
// that is not split. while: the loop-carried values that become batched are found by a fixpoint
// over the body; a batched predicate runs the loop while any example's predicate holds, and each
// example keeps its values once its own predicate fails. chlo.scan batches its body, every operand
// batched. func.call batches the callee.
#include "autodiff/vmap.h"
#include "ir/effects.h"
#include "autodiff/vmap_rules.h"
#include "ir/scan.h"

namespace tessera::autodiff {

using ir::OpKind;

namespace {

void finish(ir::Block& block, const std::vector<Tensor>& values) {
  std::vector<ir::Value*> vs;
  for (const Tensor& t : values) vs.push_back(t.value());
  block.append(std::make_unique<ir::Op>(OpKind::Return, vs, std::vector<ir::Type>{}));
}

// A block's arguments of `types`, batched as `flags` says, for vmap_block.
std::vector<BValue> arguments(ir::Builder& b, ir::Block& block, const std::vector<ir::Type>& types,
                              const std::vector<bool>& flags) {
  std::vector<BValue> out;
  for (size_t i = 0; i < types.size(); ++i) out.push_back({b.wrap(block.add_argument(types[i])), flags[i]});
  return out;
}

// Batches every operand and sets every result batched, with dimension attributes `names` + 1.
void shifted_dims(VmapContext& c, std::initializer_list<const char*> names) {
  ir::AttrMap a = c.op.attrs();
  for (const char* name : names) a.set(name, c.op.attrs().get<int64_t>(name) + 1);
  std::vector<Tensor> operands;
  for (size_t i = 0; i < c.num_operands(); ++i) operands.push_back(c.bx(i));
  std::vector<Tensor> ys = c.again(operands, a);
  for (size_t k = 0; k < ys.size(); ++k) c.set(k, ys[k]);
}

}  // namespace

// while(v; cond, body)[b] = while(v[b]; cond[b], body[b]): with a batched predicate, loop while
// any(cond) and keep v[b] = select(cond[b], body(v)[b], v[b])
void vmap_While(VmapContext& c) {
  const ir::Block &cond = c.op.region(0), &body = c.op.region(1);
  size_t n = c.num_operands();
  std::vector<bool> flags(n);
  for (size_t i = 0; i < n; ++i) flags[i] = c.batched(i);
  auto types = [&] {
    std::vector<ir::Type> t;
    for (size_t i = 0; i < n; ++i)
      t.push_back(flags[i] ? c.batched_type(c.result_type(i)) : c.result_type(i));
    return t;
  };
  // Which values the loop carries batched: grow the set until the body keeps it.
  for (bool grew = true; grew;) {
    grew = false;
    ir::Block scratch;
    ir::Builder sb(c.b.module(), scratch);
    std::vector<BValue> outs = vmap_block(sb, body, c.env, arguments(sb, scratch, types(), flags));
    for (size_t i = 0; i < n; ++i)
      if (outs[i].batched && !flags[i]) flags[i] = grew = true;
  }
  bool predicate_batched;
  {
    ir::Block scratch;
    ir::Builder sb(c.b.module(), scratch);
    predicate_batched = vmap_block(sb, cond, c.env, arguments(sb, scratch, types(), flags))[0].batched;
  }
  if (predicate_batched) flags.assign(n, true);  // examples stop at different iterations
  std::vector<Tensor> operands;
  for (size_t i = 0; i < n; ++i) operands.push_back(flags[i] ? c.bx(i) : c.x(i));
  std::vector<ir::Type> ts = types();
  std::vector<Tensor> ys = c.b.emit_with_regions(OpKind::While, operands, c.op.attrs(), ts, [&](ir::Op& op) {
    ir::Block& cb = op.add_region();
    ir::Builder cbb(c.b.module(), cb);
    BValue p = vmap_block(cbb, cond, c.env, arguments(cbb, cb, ts, flags))[0];
    Tensor any =
        p.batched ? ir::reduce(p.value, cbb.scalar(ir::ElementType::i1, 0), {0}, OpKind::Or) : p.value;
    finish(cb, {any});
    ir::Block& bb = op.add_region();
    ir::Builder bbb(c.b.module(), bb);
    std::vector<BValue> args = arguments(bbb, bb, ts, flags);
    std::vector<BValue> outs = vmap_block(bbb, body, c.env, args);
    std::optional<Tensor> go;  // each example's own predicate
    if (predicate_batched) go = vmap_block(bbb, cond, c.env, args)[0].value;
    std::vector<Tensor> next;
    for (size_t i = 0; i < n; ++i) {
      Tensor v = flags[i] && !outs[i].batched ? batch_broadcast(outs[i].value, c.batch()) : outs[i].value;
      if (go) v = ir::select(ir::broadcast_in_dim(*go, v.shape(), {0}), v, args[i].value);
      next.push_back(v);
    }
    finish(bb, next);
  });
  for (size_t k = 0; k < n; ++k) c.set(k, ys[k], flags[k]);
}
// scan(x..., c...; body)[b] = scan(x[b]..., c[b]...; body[b]) along dimension + 1: every operand
// batched at 0 (so each slice and carry is too), the body batched, and an output slice or carry
// the body leaves unbatched broadcast over the batch.
void vmap_Scan(VmapContext& c) {
  std::vector<ir::Type> operand_types;
  for (size_t i = 0; i < c.num_operands(); ++i) operand_types.push_back(c.x(i).type());
  auto layout = ir::scan_layout(c.op.attrs(), operand_types, c.op.num_results());
  if (const auto* why = std::get_if<std::string>(&layout)) c.fail("{}", *why);
  const ir::ScanLayout& l = std::get<ir::ScanLayout>(layout);
  int64_t d = l.dimension + 1;
  std::vector<Tensor> operands;
  std::vector<ir::Type> args, results;
  for (size_t i = 0; i < c.num_operands(); ++i) {
    operands.push_back(c.bx(i));
    args.push_back(i < l.inputs ? ir::erase_dim(operands.back().type(), d) : operands.back().type());
  }
  for (size_t k = 0; k < c.op.num_results(); ++k) results.push_back(c.batched_type(c.result_type(k)));
  ir::AttrMap a = c.op.attrs();
  a.set("dimension", d);
  std::vector<Tensor> ys = c.b.emit_with_regions(OpKind::Scan, operands, a, results, [&](ir::Op& op) {
    ir::Block& bb = op.add_region();
    ir::Builder bbb(c.b.module(), bb);
    std::vector<BValue> outs = vmap_block(bbb, c.op.region(0), c.env, arguments(bbb, bb, args, std::vector<bool>(args.size(), true)));
    std::vector<Tensor> next;
    for (const BValue& v : outs) next.push_back(v.batched ? v.value : batch_broadcast(v.value, c.batch()));
    finish(bb, next);
  });
  for (size_t k = 0; k < ys.size(); ++k) c.set(k, ys[k]);
}
// optimization_barrier(x_0, ...)[b] = optimization_barrier(x_0[b], ...), each operand as it is
void vmap_OptimizationBarrier(VmapContext& c) { each_operand(c); }
// The terminator is read by vmap_block, never batched as an op.
void vmap_Return(VmapContext& c) { TESSERA_CHECK(false, "vmap rule of {} reached", c.op.name()); }

// call @g(x)[b] = call @g_vmap(x[b]): g batched with the caller's batched arguments at 0
void vmap_Call(VmapContext& c) {
  const std::string& name = c.op.attrs().get<std::string>("callee");
  const ir::Function* callee = c.b.module().find_function(name);
  if (callee == nullptr) c.fail("its callee @{} is not in the module", name);
  VmapOptions o;
  o.batch_size = c.batch();
  for (size_t i = 0; i < c.num_operands(); ++i)
    o.in_axes.push_back(c.batched(i) ? std::optional<int64_t>(0) : std::nullopt);
  o.name = name + "_vmap";
  for (int k = 1; c.b.module().find_function(o.name) != nullptr; ++k)
    o.name = fmt::format("{}_vmap{}", name, k);
  const ir::Function& g = vmap(c.b.module(), *callee, o);
  std::vector<Tensor> args;
  for (size_t i = 0; i < c.num_operands(); ++i) args.push_back(c.x(i));
  std::vector<Tensor> ys = ir::call(c.b, g, args);
  for (size_t k = 0; k < ys.size(); ++k) c.set(k, ys[k]);
}
// A custom call's target is opaque: its batched form is unknown. @Sharding (GSPMD's annotation) is
// the identity: the batched value passes through, the annotation dropped (its HloSharding text has
// the per-example rank, and a value of the batched program is free to be laid out anew).
void vmap_CustomCall(VmapContext& c) {
  if (ir::is_identity_call(c.op))
    return c.set(0, c.x(), c.batched());
  c.fail("the batched form of custom call target '{}' is unknown",
         c.op.attrs().get_or<std::string>("call_target_name", "?"));
}
// run_parallel runs whole programs as processes: a test harness op, not a batched computation.
void vmap_RunParallel(VmapContext& c) { c.fail("a parallel run of programs is a test harness op"); }

// all_reduce(x)[b] = all_reduce(x[b]): elementwise across processes, each operand as it is
void vmap_AllReduce(VmapContext& c) { each_operand(c); }
// all_gather(x; d)[b] = all_gather(x[b]; d): d -> d + 1
void vmap_AllGather(VmapContext& c) { shifted_dims(c, {"all_gather_dim"}); }
// reduce_scatter(x; d)[b] = reduce_scatter(x[b]; d): d -> d + 1
void vmap_ReduceScatter(VmapContext& c) { shifted_dims(c, {"scatter_dimension"}); }
// all_to_all(x; s, c)[b] = all_to_all(x[b]; s, c): s -> s + 1, c -> c + 1
void vmap_AllToAll(VmapContext& c) { shifted_dims(c, {"split_dimension", "concat_dimension"}); }
// collective_permute(x)[b] = collective_permute(x[b]) (zeros where nothing arrives, per example too)
void vmap_CollectivePermute(VmapContext& c) { each_operand(c); }
// collective_broadcast(x)[b] = collective_broadcast(x[b]); the roots operand (dynamic root) shared
void vmap_CollectiveBroadcast(VmapContext& c) {
  if (c.op.attrs().get_or<bool>("has_dynamic_root", false)) {
    if (c.batched(c.num_operands() - 1))
      c.fail("its roots operand is batched; each example would broadcast from another root");
    std::vector<Tensor> operands;
    std::vector<ir::Type> types;
    for (size_t i = 0; i < c.num_operands(); ++i) operands.push_back(c.x(i));
    for (size_t i = 0; i + 1 < c.num_operands(); ++i) types.push_back(c.x(i).type());
    std::vector<Tensor> ys = c.again(operands, std::nullopt, types);
    for (size_t k = 0; k < ys.size(); ++k) c.set(k, ys[k], c.batched(k));
    return;
  }
  each_operand(c);
}
// collective_reduce(x)[b] = collective_reduce(x[b])
void vmap_CollectiveReduce(VmapContext& c) { each_operand(c); }

// sharding_constraint(x; s)[b] = sharding_constraint(x[b]; s with an open batch dimension in front)
void vmap_ShardingConstraint(VmapContext& c) {
  ir::AttrMap a = c.op.attrs();
  a.set("sharding", with_batch_dim(c.op.attrs().get<ir::Sharding>("sharding"), 0, true));
  c.set(0, c.again({c.x()}, a)[0]);
}
// reshard(x; s)[b] = reshard(x[b]; s with an open batch dimension in front)
void vmap_Reshard(VmapContext& c) {
  ir::AttrMap a = c.op.attrs();
  a.set("sharding", with_batch_dim(c.op.attrs().get<ir::Sharding>("sharding"), 0, true));
  c.set(0, c.again({c.x()}, a)[0]);
}
// propagation_barrier(x; d)[b] = propagation_barrier(x[b]; d)
void vmap_PropagationBarrier(VmapContext& c) { c.set(0, c.again({c.x()})[0]); }
// data_flow_edge(x; s)[b] = data_flow_edge(x[b]; s with an open batch dimension in front)
void vmap_DataFlowEdge(VmapContext& c) {
  ir::AttrMap a = c.op.attrs();
  if (const auto* s = a.find<ir::Sharding>("sharding")) a.set("sharding", with_batch_dim(*s, 0, true));
  c.set(0, c.again({c.x()}, a)[0]);
}
// sharding_group(x)[b]: dropped. Its members are batched or not one by one, so they no longer
// share a shape to be laid out alike; the group only asked for a layout, and values do not change.
void vmap_ShardingGroup(VmapContext&) {}

// Shardy's explicit collectives: op(x; axes, out)[b] = op(x[b]; axes with an empty list for the
// batch dimension in front, out with an unsplit dimension 0); all_reduce's axes are not per
// dimension and stay; all_to_all's parameter dimensions d -> d + 1
namespace {
void batched_collective(VmapContext& c, std::initializer_list<const char*> per_dim) {
  ir::AttrMap a = c.op.attrs();
  a.set("out_sharding", with_batch_dim(c.op.attrs().get<ir::Sharding>("out_sharding"), 0, false));
  for (const char* name : per_dim) a.set(name, with_batch_dim(c.op.attrs().get<ir::Sharding>(name), 0, false));
  if (const auto* dims = c.op.attrs().find<ir::IntMatrix>("param_dims")) {
    ir::IntMatrix m = *dims;
    for (int64_t& d : m.values) ++d;
    a.set("param_dims", m);
  }
  c.set(0, c.again({c.bx()}, a)[0]);
}
}  // namespace
void vmap_SdyAllGather(VmapContext& c) { batched_collective(c, {"gathering_axes"}); }
void vmap_SdyAllSlice(VmapContext& c) { batched_collective(c, {"slicing_axes"}); }
void vmap_SdyAllReduce(VmapContext& c) { batched_collective(c, {}); }
void vmap_SdyReduceScatter(VmapContext& c) { batched_collective(c, {"reduction_axes"}); }
void vmap_SdyAllToAll(VmapContext& c) { batched_collective(c, {}); }
void vmap_SdyCollectivePermute(VmapContext& c) { batched_collective(c, {}); }

// manual_computation(xs){body}[b] = manual_computation(xs[b]){body batched}: batched inputs and
// every result gain an unsplit dimension 0 in their shardings
void vmap_ManualComputation(VmapContext& c) {
  ir::ShardingList in = c.op.attrs().get<ir::ShardingList>("in_shardings");
  ir::ShardingList out = c.op.attrs().get<ir::ShardingList>("out_shardings");
  std::vector<Tensor> operands;
  for (size_t i = 0; i < c.num_operands(); ++i) {
    operands.push_back(c.x(i));
    if (c.batched(i)) in[i] = with_batch_dim(in[i], 0, false);
  }
  for (auto& s : out) s = with_batch_dim(s, 0, false);
  const ir::Block& body = c.op.region(0);
  std::vector<Tensor> ys =
      ir::manual(operands, in, out, c.op.attrs().get<ir::AxisNames>("manual_axes"),
                 [&](ir::Builder&, const std::vector<Tensor>& locals) {
                   std::vector<BValue> args;
                   for (size_t i = 0; i < locals.size(); ++i) args.push_back({locals[i], c.batched(i)});
                   std::vector<Tensor> results;
                   for (const BValue& v : vmap_block(locals[0].builder(), body, c.env, args))
                     results.push_back(v.batched ? v.value : batch_broadcast(v.value, c.batch()));
                   return results;
                 });
  for (size_t k = 0; k < ys.size(); ++k) c.set(k, ys[k]);
}

// A check compares one value with its expectation; on a batch it would compare every example
// against one expectation. Refused: check the examples one by one.
void vmap_ExpectEqConst(VmapContext& c) {
  c.fail("a check of a batched value is not batched; check each example");
}
void vmap_ExpectAlmostEqConst(VmapContext& c) { vmap_ExpectEqConst(c); }
void vmap_ExpectEq(VmapContext& c) { vmap_ExpectEqConst(c); }
void vmap_ExpectAlmostEq(VmapContext& c) { vmap_ExpectEqConst(c); }
void vmap_ExpectClose(VmapContext& c) { vmap_ExpectEqConst(c); }

}  // namespace tessera::autodiff
