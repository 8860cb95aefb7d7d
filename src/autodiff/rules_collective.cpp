// VJP rules of the collectives and of the Shardy layout ops (DESIGN.md §2: the loss is the sum of
// every process's loss, so each rule is the adjoint of the collective as a linear map on the
// values of all processes together).
//
// An adjoint collective is the forward op's attributes with the dimensions or pairs it swaps and a
// fresh channel id where the forward op has a channel: the same replica_groups, the same
// use_global_device_ids and the same presence of a channel, hence the same grouping mode (the
// StableHLO spec reads replica_groups through the mode). Its result type is written out (the
// operand's), as a gathered size depends on the mode and the process grid.
//   all_reduce(+)       <-> all_reduce(+)
//   all_gather(d)       <-> reduce_scatter(d, +)
//   all_to_all(s, c)    <-> all_to_all(c, s)
//   collective_permute  <-> collective_permute with each (source, target) reversed
//   collective_broadcast (from each group's first process) <-> collective_reduce(+) (to it)
#include <algorithm>

#include "autodiff/rules.h"

namespace tessera::autodiff {

namespace {

using ir::OpKind;

// The forward op's attributes for its adjoint, with a fresh channel id where it had one.
ir::AttrMap adjoint_attrs(VjpContext& c) {
  ir::AttrMap a = c.op.attrs();
  if (const auto* ch = a.find<ir::ChannelHandle>("channel_handle"); ch != nullptr && ch->handle > 0)
    a.set("channel_handle", ir::ChannelHandle{c.b.next_channel_id(), ch->type});
  return a;
}

void rename(ir::AttrMap& a, const std::string& from, const std::string& to) {
  ir::Attribute v = a.get<int64_t>(from);
  a.erase(from);
  a.set(to, std::move(v));
}

// Emits `kind` on t with attributes a, result type `type`, and (sum) a body adding two scalars.
Tensor emit(VjpContext& c, OpKind kind, const Tensor& t, ir::AttrMap a, const ir::Type& type, bool sum) {
  return c.b.emit_with_regions(kind, {t}, std::move(a), {type}, [&](ir::Op& op) {
    if (!sum) return;
    ir::Block& body = op.add_region();
    ir::Builder rb(c.b.module(), body);
    Tensor lhs = rb.wrap(body.add_argument(ir::Type(t.element(), {})));
    Tensor rhs = rb.wrap(body.add_argument(ir::Type(t.element(), {})));
    body.append(std::make_unique<ir::Op>(OpKind::Return, std::vector<ir::Value*>{(lhs + rhs).value()},
                                         std::vector<ir::Type>{}));
  })[0];
}

// Every operand i with a cotangent gets adjoint(dy_i, i).
template <typename F>
void each_operand(VjpContext& c, F adjoint) {
  for (size_t i = 0; i < c.num_operands(); ++i)
    if (c.has_cotangent(i) && is_differentiable(c.x(i).type())) c.add(i, adjoint(c.dy(i), i));
}

bool has_channel(const ir::Op& op) {
  const auto* ch = op.attrs().find<ir::ChannelHandle>("channel_handle");
  return ch != nullptr && ch->handle > 0;
}

// collective_broadcast groups partitions when it has a channel; collective_reduce then groups
// across replicas and partitions (or by flattened ids), so only the channel-less pair, both
// cross_replica, are each other's adjoints.
void require_cross_replica(VjpContext& c, std::string_view adjoint) {
  if (has_channel(c.op))
    c.fail("its adjoint {} would group processes differently when a channel_handle is set; only "
           "the form without a channel (cross_replica) is differentiated", adjoint);
}

// The layout of v where the program states one: a function argument's sdy.sharding, the sharding
// of a sharding_constraint or reshard, the out_sharding of an explicit collective, or an op's
// sdy.sharding per value.
std::optional<ir::Sharding> stated_sharding(const ir::Module& m, const ir::Value* v) {
  if (const ir::Op* def = v->defining_op()) {
    if (def->kind() == OpKind::ShardingConstraint || def->kind() == OpKind::Reshard)
      return def->attrs().get<ir::Sharding>("sharding");
    if (ir::has_trait(def->kind(), ir::kShardy))  // an explicit collective's result
      if (const auto* out = def->attrs().find<ir::Sharding>("out_sharding")) return *out;
    if (const auto* list = def->attrs().find<ir::ShardingList>("sdy.sharding"))
      if (static_cast<size_t>(v->index()) < list->size()) return (*list)[static_cast<size_t>(v->index())];
    return std::nullopt;
  }
  for (const auto& f : m.functions)
    if (&f->body() == v->owner_block()) return f->arg_sharding(static_cast<size_t>(v->index()));
  return std::nullopt;
}

}  // namespace

// all_reduce(x; +) over a group: dx = all_reduce(dy; +) over the same group
void vjp_AllReduce(VjpContext& c) {
  require_combiner(c.op);
  each_operand(c, [&](const Tensor& dy, size_t i) {
    return emit(c, OpKind::AllReduce, dy, adjoint_attrs(c), c.x(i).type(), true);
  });
}

// all_gather(x, d): dx = reduce_scatter(dy, d; +) over the same groups
void vjp_AllGather(VjpContext& c) {
  each_operand(c, [&](const Tensor& dy, size_t i) {
    ir::AttrMap a = adjoint_attrs(c);
    rename(a, "all_gather_dim", "scatter_dimension");
    return emit(c, OpKind::ReduceScatter, dy, std::move(a), c.x(i).type(), true);
  });
}

// reduce_scatter(x, d; +): dx = all_gather(dy, d) over the same groups
void vjp_ReduceScatter(VjpContext& c) {
  require_combiner(c.op);
  ir::AttrMap a = adjoint_attrs(c);
  rename(a, "scatter_dimension", "all_gather_dim");
  c.add(0, emit(c, OpKind::AllGather, c.dy(), std::move(a), c.x().type(), false));
}

// all_to_all(x, split s, concat c): dx = all_to_all(dy, split c, concat s) over the same groups
void vjp_AllToAll(VjpContext& c) {
  each_operand(c, [&](const Tensor& dy, size_t i) {
    ir::AttrMap a = adjoint_attrs(c);
    a.set("split_dimension", c.op.attrs().get<int64_t>("concat_dimension"));
    a.set("concat_dimension", c.op.attrs().get<int64_t>("split_dimension"));
    return emit(c, OpKind::AllToAll, dy, std::move(a), c.x(i).type(), false);
  });
}

// collective_permute(x, pairs): dx = collective_permute(dy, each (source, target) as (target, source))
void vjp_CollectivePermute(VjpContext& c) {
  ir::AttrMap a = adjoint_attrs(c);
  auto rows = c.op.attrs().get<ir::IntMatrix>("source_target_pairs").to_rows();
  for (auto& r : rows) std::reverse(r.begin(), r.end());
  a.set("source_target_pairs", ir::IntMatrix::from_rows(rows));
  c.add(0, emit(c, OpKind::CollectivePermute, c.dy(), std::move(a), c.x().type(), false));
}

// collective_broadcast(x) from each group's first process: dx = collective_reduce(dy; +) to it
void vjp_CollectiveBroadcast(VjpContext& c) {
  if (c.op.attrs().get_or<bool>("has_dynamic_root", false))
    c.fail("a root chosen at run time (has_dynamic_root) is not differentiated yet");
  require_cross_replica(c, "stablehlo.collective_reduce");
  each_operand(c, [&](const Tensor& dy, size_t i) {
    return emit(c, OpKind::CollectiveReduce, dy, adjoint_attrs(c), c.x(i).type(), true);
  });
}

// collective_reduce(x; +) to each group's first process: dx = collective_broadcast(dy) from it
void vjp_CollectiveReduce(VjpContext& c) {
  require_combiner(c.op);
  require_cross_replica(c, "stablehlo.collective_broadcast");
  c.add(0, emit(c, OpKind::CollectiveBroadcast, c.dy(), adjoint_attrs(c), c.x().type(), false));
}

// sharding_constraint(x, s): dx = sharding_constraint(dy, s)
void vjp_ShardingConstraint(VjpContext& c) {
  c.add(0, c.b.emit1(OpKind::ShardingConstraint, {c.dy()}, c.op.attrs()));
}

// propagation_barrier(x, d): dx = propagation_barrier(dy, d reversed), so the cotangents' layouts
// flow between the same neighbours as the values' did (a FORWARD barrier lets x's layout reach y,
// so it lets dy's reach dx)
void vjp_PropagationBarrier(VjpContext& c) {
  ir::AttrMap a = c.op.attrs();
  const auto& dir = a.get<std::string>("allowed_direction");
  a.set("allowed_direction", std::string(dir == "FORWARD" ? "BACKWARD" : dir == "BACKWARD" ? "FORWARD" : dir));
  c.add(0, c.b.emit1(OpKind::PropagationBarrier, {c.dy()}, std::move(a)));
}
// data_flow_edge(x): dx = dy (the edge belongs to the forward op's result, not to its cotangent)
void vjp_DataFlowEdge(VjpContext& c) { c.add(0, c.dy()); }
// sharding_group(x) has no result, so nothing to carry back
void vjp_ShardingGroup(VjpContext&) {}

// reshard(x, s): dx = dy moved back to x's layout where the program states it (the reverse of the
// forward move), else reshard(dy, s), which leaves the layout of dx to propagation.
void vjp_Reshard(VjpContext& c) {
  ir::AttrMap a = c.op.attrs();
  if (auto s = stated_sharding(c.b.module(), c.op.operand(0))) a.set("sharding", *s);
  c.add(0, c.b.emit1(OpKind::Reshard, {c.dy()}, std::move(a)));
}

// ---- Shardy's explicit collectives ----
//
// On the global value each is the identity (it only moves the layout from the operand's to
// out_sharding), so dx = dy; each adjoint moves dy back to the operand's layout, which the op
// determines (Shardy's rules: all_gather drops its axes from the end of each dimension's list,
// all_slice appends them, all_to_all moves them from the source to the target dimension):
//   all_gather(axes) -> all_slice(axes) back to the operand's layout, and the reverse
//   reduce_scatter(axes) -> all_gather(axes): the cotangent of each device's partial value is the
//                           whole cotangent, so it is gathered (not reduced) along the axes
//   all_reduce(axes) -> dy as it is (already whole on every device of the axes)
//   all_to_all(axes: s->t) -> all_to_all(axes: t->s) back to the operand's layout
//   collective_permute -> collective_permute back to the operand's layout where the program states
//                         it, else dy as it is (its layout left to propagation)
// sdy.constant carries no gradient.
namespace {

using Axes = std::vector<ir::AxisRef>;

// `list` without `suffix` at its end, or nullopt when it does not end so.
std::optional<Axes> without_suffix(const Axes& list, const Axes& suffix) {
  if (suffix.size() > list.size() || !std::equal(suffix.begin(), suffix.end(), list.end() - static_cast<long>(suffix.size())))
    return std::nullopt;
  return Axes(list.begin(), list.end() - static_cast<long>(suffix.size()));
}

// out with each dimension's axes[d] appended (append) or removed from its end.
std::optional<ir::Sharding> moved(ir::Sharding out, const ir::Sharding& axes, bool append) {
  if (axes.dims.size() != out.dims.size()) return std::nullopt;
  for (size_t d = 0; d < out.dims.size(); ++d) {
    Axes& list = out.dims[d].axes;
    const Axes& a = axes.dims[d].axes;
    if (append) {
      list.insert(list.end(), a.begin(), a.end());
    } else if (auto rest = without_suffix(list, a)) {
      list = *rest;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

// The adjoint `kind` with its axes under `axes_name` and out_sharding `layout`, or dy itself when
// the operand's layout is unknown.
void move_back(VjpContext& c, OpKind kind, const char* axes_name, const ir::Sharding& axes,
               const std::optional<ir::Sharding>& layout) {
  if (!layout) return c.add(0, c.dy());
  ir::AttrMap a;
  a.set(axes_name, axes);
  a.set("out_sharding", *layout);
  c.add(0, c.b.emit1(kind, {c.dy()}, std::move(a)));
}

const ir::Sharding& out_sharding(const VjpContext& c) { return c.op.attrs().get<ir::Sharding>("out_sharding"); }

}  // namespace

void vjp_SdyAllGather(VjpContext& c) {
  const auto& axes = c.op.attrs().get<ir::Sharding>("gathering_axes");
  move_back(c, OpKind::SdyAllSlice, "slicing_axes", axes, moved(out_sharding(c), axes, true));
}
void vjp_SdyAllSlice(VjpContext& c) {
  const auto& axes = c.op.attrs().get<ir::Sharding>("slicing_axes");
  move_back(c, OpKind::SdyAllGather, "gathering_axes", axes, moved(out_sharding(c), axes, false));
}
void vjp_SdyReduceScatter(VjpContext& c) {
  const auto& axes = c.op.attrs().get<ir::Sharding>("reduction_axes");
  move_back(c, OpKind::SdyAllGather, "gathering_axes", axes, moved(out_sharding(c), axes, false));
}
void vjp_SdyAllReduce(VjpContext& c) { c.add(0, c.dy()); }
void vjp_SdyAllToAll(VjpContext& c) {
  const auto& params = c.op.attrs().get<ir::Sharding>("params");
  auto rows = c.op.attrs().get<ir::IntMatrix>("param_dims").to_rows();
  // The operand's layout: each parameter's axes back from the target's end to the source's.
  std::optional<ir::Sharding> layout = out_sharding(c);
  for (size_t i = 0; i < rows.size() && layout; ++i) {
    auto src = static_cast<size_t>(rows[i][0]), tgt = static_cast<size_t>(rows[i][1]);
    const Axes& a = params.dims[i].axes;
    auto rest = without_suffix(layout->dims[tgt].axes, a);
    if (!rest) {
      layout.reset();
      break;
    }
    layout->dims[tgt].axes = *rest;
    layout->dims[src].axes.insert(layout->dims[src].axes.end(), a.begin(), a.end());
  }
  if (!layout) return c.add(0, c.dy());
  for (auto& r : rows) std::swap(r[0], r[1]);
  ir::AttrMap a;
  a.set("params", params);
  a.set("param_dims", ir::IntMatrix::from_rows(rows));
  a.set("out_sharding", *layout);
  c.add(0, c.b.emit1(OpKind::SdyAllToAll, {c.dy()}, std::move(a)));
}
void vjp_SdyCollectivePermute(VjpContext& c) {
  auto layout = stated_sharding(c.b.module(), c.op.operand(0));
  if (!layout || layout->dims.size() != out_sharding(c).dims.size()) return c.add(0, c.dy());
  ir::AttrMap a;
  a.set("out_sharding", *layout);
  c.add(0, c.b.emit1(OpKind::SdyCollectivePermute, {c.dy()}, std::move(a)));
}

}  // namespace tessera::autodiff
