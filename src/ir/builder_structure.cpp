// Builder: data movement, reductions, contractions, control flow, collectives and Shardy ops.
#include <numeric>

#include "ir/builder.h"
#include "ir/builder_window.h"
#include "ir/element_traits.h"
#include "ir/shape_rules.h"
#include "support/strings.h"

namespace tessera::ir {
namespace {

AttrMap ints_attr(const std::string& name, std::vector<int64_t> v) {
  AttrMap a;
  a.set(name, std::move(v));
  return a;
}

std::vector<Tensor> as_tensors(Builder& b, const Block& block) {
  std::vector<Tensor> out;
  for (const auto& a : block.arguments()) out.push_back(b.wrap(a.get()));
  return out;
}

void finish(Block& block, const std::vector<Tensor>& results) {
  std::vector<Value*> values;
  for (const Tensor& t : results) values.push_back(t.value());
  block.append(std::make_unique<Op>(OpKind::Return, values, std::vector<Type>{}));
}

// A region computing combiner(lhs, rhs) on scalars of `e` (Return: the rhs, i.e. "replace").
void fill_combiner(Module& m, Block& region, ElementType e, OpKind combiner) {
  Builder b(m, region);
  Tensor lhs = b.wrap(region.add_argument(Type(e, {})));
  Tensor rhs = b.wrap(region.add_argument(Type(e, {})));
  finish(region, {combiner == OpKind::Return ? rhs : b.emit1(combiner, {lhs, rhs})});
}

AttrMap groups_attr(const Groups& groups) {
  AttrMap a;
  a.set("replica_groups", IntMatrix::from_rows(groups));
  return a;
}

void set_channel(Builder& b, AttrMap& a) {
  a.set("channel_handle", ChannelHandle{b.next_channel_id(), 1});
  a.set("use_global_device_ids", true);
}

Tensor reducing_collective(OpKind kind, const Tensor& x, AttrMap attrs, OpKind combiner) {
  Builder& b = x.builder();
  return b.emit_with_regions(kind, {x}, std::move(attrs), {}, [&](Op& op) {
    fill_combiner(b.module(), op.add_region(), x.element(), combiner);
  })[0];
}

// Product of the sizes of the manual axes that shard dimension d.
int64_t manual_factor(const Sharding& s, size_t d, const std::vector<std::string>& manual_axes,
                      const Mesh& mesh) {
  int64_t f = 1;
  if (d >= s.dims.size()) return f;
  for (const AxisRef& r : s.dims[d].axes)
    if (std::find(manual_axes.begin(), manual_axes.end(), r.name) != manual_axes.end())
      f *= axis_ref_size(r, mesh);
  return f;
}

}  // namespace

Tensor broadcast_in_dim(const Tensor& x, const std::vector<int64_t>& shape,
                        const std::vector<int64_t>& dims) {
  return x.builder().emit1(OpKind::BroadcastInDim, {x}, ints_attr("broadcast_dimensions", dims),
                           {x.type().with_shape(shape)});
}

Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape) {
  return x.builder().emit1(OpKind::Reshape, {x}, {}, {x.type().with_shape(shape)});
}

Tensor transpose(const Tensor& x, const std::vector<int64_t>& permutation) {
  return x.builder().emit1(OpKind::Transpose, {x}, ints_attr("permutation", permutation));
}

Tensor slice(const Tensor& x, const std::vector<int64_t>& start, const std::vector<int64_t>& limit,
             std::vector<int64_t> strides) {
  if (strides.empty()) strides.assign(start.size(), 1);
  AttrMap a;
  a.set("start_indices", start);
  a.set("limit_indices", limit);
  a.set("strides", std::move(strides));
  return x.builder().emit1(OpKind::Slice, {x}, std::move(a));
}

Tensor dynamic_slice(const Tensor& x, const std::vector<Tensor>& start,
                     const std::vector<int64_t>& sizes) {
  std::vector<Tensor> operands{x};
  operands.insert(operands.end(), start.begin(), start.end());
  return x.builder().emit1(OpKind::DynamicSlice, operands, ints_attr("slice_sizes", sizes));
}

Tensor dynamic_update_slice(const Tensor& x, const Tensor& update, const std::vector<Tensor>& start) {
  std::vector<Tensor> operands{x, update};
  operands.insert(operands.end(), start.begin(), start.end());
  return x.builder().emit1(OpKind::DynamicUpdateSlice, operands);
}

Tensor concatenate(const std::vector<Tensor>& xs, int64_t dimension) {
  if (xs.empty()) support::fail("concatenate needs at least one operand");
  AttrMap a;
  a.set("dimension", dimension);
  return xs[0].builder().emit1(OpKind::Concatenate, xs, std::move(a));
}

Tensor pad(const Tensor& x, const Tensor& value, const std::vector<int64_t>& low,
           const std::vector<int64_t>& high, std::vector<int64_t> interior) {
  if (interior.empty()) interior.assign(low.size(), 0);
  AttrMap a;
  a.set("edge_padding_low", low);
  a.set("edge_padding_high", high);
  a.set("interior_padding", std::move(interior));
  return x.builder().emit1(OpKind::Pad, {x, value}, std::move(a));
}

Tensor reverse(const Tensor& x, const std::vector<int64_t>& dims) {
  return x.builder().emit1(OpKind::Reverse, {x}, ints_attr("dimensions", dims));
}

Tensor gather(const Tensor& x, const Tensor& indices, const GatherDims& dims,
              const std::vector<int64_t>& slice_sizes) {
  AttrMap a;
  a.set("dimension_numbers", dims);
  a.set("slice_sizes", slice_sizes);
  return x.builder().emit1(OpKind::Gather, {x, indices}, std::move(a));
}

Tensor scatter(const Tensor& x, const Tensor& indices, const Tensor& updates,
               const ScatterDims& dims, OpKind combiner) {
  Builder& b = x.builder();
  AttrMap a;
  a.set("scatter_dimension_numbers", dims);
  return b.emit_with_regions(OpKind::Scatter, {x, indices, updates}, std::move(a), {}, [&](Op& op) {
    fill_combiner(b.module(), op.add_region(), x.element(), combiner);
  })[0];
}

Tensor reduce(const Tensor& x, const Tensor& init, const std::vector<int64_t>& dims, OpKind combiner) {
  Builder& b = x.builder();
  return b.emit_with_regions(OpKind::Reduce, {x, init}, ints_attr("dimensions", dims), {},
                             [&](Op& op) {
                               fill_combiner(b.module(), op.add_region(), x.element(), combiner);
                             })[0];
}

Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& dims) {
  return reduce(x, x.builder().scalar(x.element(), 0), dims, OpKind::Add);
}
// The identity of maximum (lowest = true) or minimum for x's element type: -inf/inf for floats,
// the type's extreme values for integers, false/true for booleans.
Tensor extreme(const Tensor& x, bool lowest) {
  Literal l(Type(x.element(), {}));
  visit_element(x.element(), [&]<typename E>() {
    using C = typename E::compute;
    if constexpr (is_complex_v<C>) {
      support::fail("maximum and minimum are not defined on {}", spelling(x.element()));
    } else if constexpr (std::is_floating_point_v<C>) {
      l.set_double(0, lowest ? -INFINITY : INFINITY);
    } else if constexpr (std::is_same_v<C, bool>) {
      l.set_int(0, lowest ? 0 : 1);
    } else {
      // Sub-byte integers: the extremes of their width, not of the byte that holds them.
      int bits = info(x.element()).bits;
      bool is_signed = std::is_signed_v<C>;
      __int128 lo = is_signed ? -(static_cast<__int128>(1) << (bits - 1)) : 0;
      __int128 hi = (static_cast<__int128>(1) << (bits - (is_signed ? 1 : 0))) - 1;
      l.set_int(0, static_cast<int64_t>(lowest ? lo : hi));
    }
  });
  return x.builder().constant(std::move(l));
}

Tensor reduce_max(const Tensor& x, const std::vector<int64_t>& dims) {
  return reduce(x, extreme(x, true), dims, OpKind::Maximum);
}
Tensor reduce_min(const Tensor& x, const std::vector<int64_t>& dims) {
  return reduce(x, extreme(x, false), dims, OpKind::Minimum);
}
Tensor sum(const Tensor& x) {
  std::vector<int64_t> all(static_cast<size_t>(x.rank()));
  std::iota(all.begin(), all.end(), 0);
  return reduce_sum(x, all);
}

Tensor dot_general(const Tensor& a, const Tensor& b, const DotDims& dims) {
  AttrMap attrs;
  attrs.set("dot_dimension_numbers", dims);
  return a.builder().emit1(OpKind::DotGeneral, {a, b}, std::move(attrs));
}

Tensor matmul(const Tensor& x, const Tensor& w) {
  if (x.rank() < 1 || w.rank() < 1)
    support::fail("matmul needs operands of rank >= 1, got {} and {}", to_string(x.type()),
                  to_string(w.type()));
  DotDims d;
  d.lhs_contracting = {x.rank() - 1};
  d.rhs_contracting = {w.rank() == 1 ? 0 : w.rank() - 2};
  for (int64_t i = 0; i + 2 < w.rank(); ++i) {
    d.lhs_batch.push_back(i);
    d.rhs_batch.push_back(i);
  }
  return dot_general(x, w, d);
}

std::vector<Tensor> while_loop(
    const std::vector<Tensor>& init,
    const std::function<Tensor(Builder&, const std::vector<Tensor>&)>& cond,
    const std::function<std::vector<Tensor>(Builder&, const std::vector<Tensor>&)>& body) {
  if (init.empty()) support::fail("while_loop needs at least one loop-carried value");
  Builder& b = init[0].builder();
  return b.emit_with_regions(OpKind::While, init, {}, {}, [&](Op& op) {
    Block& c = op.add_region();
    Block& s = op.add_region();
    for (const Tensor& t : init) {
      c.add_argument(t.type());
      s.add_argument(t.type());
    }
    Builder cb(b.module(), c), sb(b.module(), s);
    Tensor p = cond(cb, as_tensors(cb, c));
    if (p.type() != Type(ElementType::i1, {}))
      support::fail("while_loop condition returns {}, must be tensor<i1>", to_string(p.type()));
    finish(c, {p});
    std::vector<Tensor> next = body(sb, as_tensors(sb, s));
    for (size_t i = 0; i < next.size() && i < init.size(); ++i)
      if (next[i].type() != init[i].type())
        support::fail("while_loop body returns {} for loop value {} of type {}",
                      to_string(next[i].type()), i, to_string(init[i].type()));
    if (next.size() != init.size())
      support::fail("while_loop body returns {} values for {} loop values", next.size(), init.size());
    finish(s, next);
  });
}

std::vector<Tensor> call(Builder& b, const Function& callee, const std::vector<Tensor>& args) {
  AttrMap a;
  a.set("callee", callee.name());
  if (args.size() != callee.num_parameters())
    support::fail("@{} takes {} arguments, the call passes {}", callee.name(), callee.num_parameters(),
                  args.size());
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].type() != callee.parameter(i)->type())
      support::fail("argument {} of the call to @{} has type {}, the parameter {}", i, callee.name(),
                    to_string(args[i].type()), to_string(callee.parameter(i)->type()));
  return b.emit(OpKind::Call, args, std::move(a), callee.result_types);
}

namespace {

std::vector<Tensor> branching(OpKind kind, const Tensor& selector, const std::vector<Branch>& branches) {
  Builder& b = selector.builder();
  // The branches are built first: their return types are the op's result types.
  std::vector<std::unique_ptr<Block>> regions;
  std::vector<Type> types;
  for (size_t r = 0; r < branches.size(); ++r) {
    regions.push_back(std::make_unique<Block>());
    Builder rb(b.module(), *regions.back());
    std::vector<Tensor> out = branches[r](rb);
    std::vector<Type> these;
    for (const Tensor& t : out) these.push_back(t.type());
    if (r == 0) types = these;
    if (these != types)
      support::fail("{}: branch {} returns ({}), branch 0 returns ({})", spelling(kind), r,
                    shape_rules::types_string(these), shape_rules::types_string(types));
    finish(*regions.back(), out);
  }
  return b.emit_with_regions(kind, {selector}, {}, types, [&](Op& op) {
    for (auto& region : regions) op.adopt_region(std::move(region));
  });
}

}  // namespace

std::vector<Tensor> if_op(const Tensor& pred, const Branch& on_true, const Branch& on_false) {
  return branching(OpKind::If, pred, {on_true, on_false});
}

std::vector<Tensor> case_op(const Tensor& index, const std::vector<Branch>& branches) {
  if (branches.empty()) support::fail("stablehlo.case needs at least one branch (C1)");
  return branching(OpKind::Case, index, branches);
}

std::vector<Tensor> optimization_barrier(const std::vector<Tensor>& xs) {
  if (xs.empty()) return {};
  return xs[0].builder().emit(OpKind::OptimizationBarrier, xs);
}

Tensor all_reduce(const Tensor& x, const Groups& groups, OpKind combiner) {
  AttrMap a = groups_attr(groups);
  set_channel(x.builder(), a);
  return reducing_collective(OpKind::AllReduce, x, std::move(a), combiner);
}

Tensor all_gather(const Tensor& x, int64_t dim, const Groups& groups) {
  AttrMap a = groups_attr(groups);
  a.set("all_gather_dim", dim);
  set_channel(x.builder(), a);
  return x.builder().emit1(OpKind::AllGather, {x}, std::move(a));
}

Tensor reduce_scatter(const Tensor& x, int64_t dim, const Groups& groups, OpKind combiner) {
  AttrMap a = groups_attr(groups);
  a.set("scatter_dimension", dim);
  set_channel(x.builder(), a);
  return reducing_collective(OpKind::ReduceScatter, x, std::move(a), combiner);
}

Tensor all_to_all(const Tensor& x, int64_t split_dim, int64_t concat_dim, const Groups& groups) {
  AttrMap a = groups_attr(groups);
  a.set("split_dimension", split_dim);
  a.set("concat_dimension", concat_dim);
  a.set("split_count", groups.empty() ? int64_t{1} : static_cast<int64_t>(groups[0].size()));
  // all_to_all has no use_global_device_ids: with a channel its groups are partition ids.
  a.set("channel_handle", ChannelHandle{x.builder().next_channel_id(), 1});
  return x.builder().emit1(OpKind::AllToAll, {x}, std::move(a));
}

Tensor collective_permute(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  Groups rows;
  for (auto [s, t] : pairs) rows.push_back({s, t});
  AttrMap a;
  a.set("source_target_pairs", IntMatrix::from_rows(rows));
  a.set("channel_handle", ChannelHandle{x.builder().next_channel_id(), 1});
  return x.builder().emit1(OpKind::CollectivePermute, {x}, std::move(a));
}

Tensor collective_broadcast(const Tensor& x, const Groups& groups) {
  AttrMap a = groups_attr(groups);
  a.set("channel_handle", ChannelHandle{x.builder().next_channel_id(), 1});
  return x.builder().emit1(OpKind::CollectiveBroadcast, {x}, std::move(a));
}

Tensor collective_reduce(const Tensor& x, const Groups& groups, OpKind combiner) {
  AttrMap a = groups_attr(groups);
  a.set("channel_handle", ChannelHandle{x.builder().next_channel_id(), 1});
  return reducing_collective(OpKind::CollectiveReduce, x, std::move(a), combiner);
}

Tensor stop_gradient(const Tensor& x) {
  Op* def = x.value()->defining_op();
  if (def == nullptr) support::fail("stop_gradient of {}: a parameter, not an op's result", to_string(x.type()));
  def->attrs().set(kStopGradient, true);
  return x;
}

Tensor constrain(const Tensor& x, Sharding sharding) {
  validate(sharding, x.builder().module().mesh(sharding.mesh), x.type(), "a sharding constraint");
  AttrMap a;
  a.set("sharding", std::move(sharding));
  return x.builder().emit1(OpKind::ShardingConstraint, {x}, std::move(a));
}

Tensor propagation_barrier(const Tensor& x, const std::string& allowed) {
  AttrMap a;
  a.set("allowed_direction", allowed);
  return x.builder().emit1(OpKind::PropagationBarrier, {x}, std::move(a));
}

Tensor data_flow_edge(const Tensor& x, std::optional<Sharding> sharding) {
  AttrMap a;
  if (sharding) {
    validate(*sharding, x.builder().module().mesh(sharding->mesh), x.type(), "a data-flow edge");
    a.set("sharding", std::move(*sharding));
  }
  return x.builder().emit1(OpKind::DataFlowEdge, {x}, std::move(a));
}

void sharding_group(const Tensor& x, int64_t id) {
  AttrMap a;
  a.set("group_id", id);
  x.builder().emit(OpKind::ShardingGroup, {x}, std::move(a));
}

Tensor reshard(const Tensor& x, Sharding sharding) {
  validate(sharding, x.builder().module().mesh(sharding.mesh), x.type(), "a reshard");
  AttrMap a;
  a.set("sharding", std::move(sharding));
  return x.builder().emit1(OpKind::Reshard, {x}, std::move(a));
}

namespace {

Sharding axis_lists(const std::string& mesh, const AxisLists& lists) {
  Sharding s;
  s.mesh = mesh;
  for (const auto& l : lists) {
    DimSharding d;
    d.axes = l;
    s.dims.push_back(std::move(d));
  }
  return s;
}

Tensor explicit_collective(OpKind kind, const Tensor& x, AttrMap a, Sharding out) {
  validate(out, x.builder().module().mesh(out.mesh), x.type(),
           fmt::format("the out_sharding of {}", spelling(kind)));
  a.set("out_sharding", std::move(out));
  return x.builder().emit1(kind, {x}, std::move(a));
}

Tensor per_dim_collective(OpKind kind, const char* name, const Tensor& x, const AxisLists& axes, Sharding out) {
  AttrMap a;
  a.set(name, axis_lists(out.mesh, axes));
  return explicit_collective(kind, x, std::move(a), std::move(out));
}

}  // namespace

Tensor sdy_all_gather(const Tensor& x, const AxisLists& gathering_axes, Sharding out) {
  return per_dim_collective(OpKind::SdyAllGather, "gathering_axes", x, gathering_axes, std::move(out));
}
Tensor sdy_all_slice(const Tensor& x, const AxisLists& slicing_axes, Sharding out) {
  return per_dim_collective(OpKind::SdyAllSlice, "slicing_axes", x, slicing_axes, std::move(out));
}
Tensor sdy_reduce_scatter(const Tensor& x, const AxisLists& reduction_axes, Sharding out) {
  return per_dim_collective(OpKind::SdyReduceScatter, "reduction_axes", x, reduction_axes, std::move(out));
}
Tensor sdy_all_reduce(const Tensor& x, const std::vector<AxisRef>& reduction_axes, Sharding out) {
  AttrMap a;
  a.set("reduction_axes", axis_lists(out.mesh, {reduction_axes}));
  return explicit_collective(OpKind::SdyAllReduce, x, std::move(a), std::move(out));
}
Tensor sdy_all_to_all(const Tensor& x, const std::vector<AllToAllParam>& params, Sharding out) {
  AxisLists axes;
  std::vector<std::vector<int64_t>> dims;
  for (const AllToAllParam& p : params) {
    axes.push_back(p.axes);
    dims.push_back({p.src_dim, p.tgt_dim});
  }
  AttrMap a;
  a.set("params", axis_lists(out.mesh, axes));
  a.set("param_dims", IntMatrix::from_rows(dims));
  return explicit_collective(OpKind::SdyAllToAll, x, std::move(a), std::move(out));
}
Tensor sdy_collective_permute(const Tensor& x, Sharding out) {
  return explicit_collective(OpKind::SdyCollectivePermute, x, {}, std::move(out));
}
Tensor sdy_constant(Builder& b, Literal value, std::optional<Sharding> sharding) {
  AttrMap a;
  if (sharding) {
    validate(*sharding, b.module().mesh(sharding->mesh), value.type(), "the sharding of sdy.constant");
    a.set("sdy.sharding", ShardingList{*sharding});
  }
  a.set("value", std::move(value));
  return b.emit1(OpKind::SdyConstant, {}, std::move(a));
}

std::vector<Tensor> manual(
    const std::vector<Tensor>& inputs, std::vector<Sharding> in_shardings,
    std::vector<Sharding> out_shardings, std::vector<std::string> manual_axes,
    const std::function<std::vector<Tensor>(Builder&, const std::vector<Tensor>&)>& body) {
  if (inputs.empty()) support::fail("manual computation needs at least one input");
  if (in_shardings.size() != inputs.size())
    support::fail("manual computation has {} in_shardings for {} inputs", in_shardings.size(),
                  inputs.size());
  Builder& b = inputs[0].builder();
  // The region decides the result types, so it is built first and then handed to the op.
  auto region = std::make_unique<Block>();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Sharding& s = in_shardings[i];
    const Mesh& mesh = b.module().mesh(s.mesh);
    validate(s, mesh, inputs[i].type(), fmt::format("manual computation input {}", i));
    std::vector<int64_t> local = inputs[i].shape();
    for (size_t d = 0; d < local.size(); ++d) {
      int64_t f = manual_factor(s, d, manual_axes, mesh);
      if (local[d] % f != 0)
        support::fail("manual computation input {}: dimension {} of size {} does not divide by {}",
                      i, d, local[d], f);
      local[d] /= f;
    }
    region->add_argument(inputs[i].type().with_shape(local));
  }
  Builder rb(b.module(), *region);
  finish(*region, body(rb, as_tensors(rb, *region)));
  const Op* ret = region->terminator();
  if (ret->operands().size() != out_shardings.size())
    support::fail("manual computation body returns {} values for {} out_shardings",
                  ret->operands().size(), out_shardings.size());
  std::vector<Type> globals;
  for (size_t i = 0; i < out_shardings.size(); ++i) {
    const Sharding& s = out_shardings[i];
    const Mesh& mesh = b.module().mesh(s.mesh);
    std::vector<int64_t> shape = ret->operand(i)->type().shape;
    for (size_t d = 0; d < shape.size(); ++d) shape[d] *= manual_factor(s, d, manual_axes, mesh);
    globals.push_back(ret->operand(i)->type().with_shape(shape));
    validate(s, mesh, globals.back(), fmt::format("manual computation result {}", i));
  }
  AttrMap a;
  a.set("in_shardings", std::move(in_shardings));
  a.set("out_shardings", std::move(out_shardings));
  a.set("manual_axes", AxisNames(manual_axes));
  return b.emit_with_regions(OpKind::ManualComputation, inputs, std::move(a), globals,
                             [&](Op& op) { op.adopt_region(std::move(region)); });
}

}  // namespace tessera::ir

// ---- Windows and convolution (declared in builder_window.h) ----

namespace tessera::ir {

Tensor convolution(const Tensor& lhs, const Tensor& rhs, const ConvDims& dims, const Window& window,
                   int64_t feature_group_count, int64_t batch_group_count) {
  AttrMap a;
  a.set("dimension_numbers", dims);
  write_window(a, kConvolutionWindow, window);
  a.set("feature_group_count", feature_group_count);
  a.set("batch_group_count", batch_group_count);
  return lhs.builder().emit1(OpKind::Convolution, {lhs, rhs}, std::move(a));
}

Tensor reduce_window(const Tensor& x, const Tensor& init, const Window& window, OpKind combiner) {
  Builder& b = x.builder();
  AttrMap a;
  write_window(a, kReduceWindow, window);
  return b.emit_with_regions(OpKind::ReduceWindow, {x, init}, std::move(a), {}, [&](Op& op) {
    fill_combiner(b.module(), op.add_region(), x.element(), combiner);
  })[0];
}

namespace {
// A region comparing its first two scalar arguments of `types` (others unused) by `direction`.
void fill_comparator(Module& m, Block& region, const std::vector<ElementType>& types,
                     ComparisonDirection direction) {
  Builder b(m, region);
  std::vector<Tensor> args;
  for (ElementType e : types) {
    args.push_back(b.wrap(region.add_argument(Type(e, {}))));
    args.push_back(b.wrap(region.add_argument(Type(e, {}))));
  }
  finish(region, {compare(args[0], args[1], direction)});
}
}  // namespace

Tensor select_and_scatter(const Tensor& operand, const Tensor& source, const Tensor& init,
                          const Window& window, ComparisonDirection select, OpKind scatter) {
  Builder& b = operand.builder();
  AttrMap a;
  write_window(a, kSelectAndScatterWindow, window);
  return b.emit_with_regions(OpKind::SelectAndScatter, {operand, source, init}, std::move(a), {},
                             [&](Op& op) {
                               Block& selector = op.add_region();
                               Builder sb(b.module(), selector);
                               Tensor lhs = sb.wrap(selector.add_argument(Type(operand.element(), {})));
                               Tensor rhs = sb.wrap(selector.add_argument(Type(operand.element(), {})));
                               finish(selector, {compare(lhs, rhs, select)});
                               fill_combiner(b.module(), op.add_region(), operand.element(), scatter);
                             })[0];
}

std::vector<Tensor> sort(const std::vector<Tensor>& xs, int64_t dimension, ComparisonDirection direction,
                         bool is_stable) {
  Builder& b = xs.at(0).builder();
  AttrMap a;
  a.set("dimension", dimension);
  a.set("is_stable", is_stable);
  std::vector<ElementType> types;
  for (const Tensor& x : xs) types.push_back(x.element());
  return b.emit_with_regions(OpKind::Sort, xs, std::move(a), {}, [&](Op& op) {
    fill_comparator(b.module(), op.add_region(), types, direction);
  });
}

}  // namespace tessera::ir
