// vmap rules of the data-movement ops, gather and scatter, reduce and dot_general. With the batch
// in front, a movement op's attributes gain a leading entry that leaves dimension 0 alone (start 0,
// size B, stride 1, no padding) and its dimension lists shift by one. Where a per-example index is
// itself batched, the op becomes its batched form: dynamic_slice a gather, dynamic_update_slice a
// scatter, both with the batch as an operand batching dimension. gather and scatter gain the batch
// as one more batching dimension of operand and indices; reduce reduces the shifted dimensions;
// dot_general gains a batch dimension when both operands are batched, and otherwise carries the
// batch as a free dimension, moved back to the front.
#include "autodiff/vmap_rules.h"

namespace tessera::autodiff {

using ir::OpKind;

namespace {

ir::AttrMap with(const ir::Op& op, const std::string& name, ir::Attribute value) {
  ir::AttrMap a = op.attrs();
  a.set(name, std::move(value));
  return a;
}

const std::vector<int64_t>& ints(const ir::Op& op, const std::string& name) {
  return op.attrs().get<std::vector<int64_t>>(name);
}

// The scalar start indices operands [first, first + n) as one [B, n] array of the first one's
// element type, each clamped to [0, limit[i]] first when `limit` is given.
Tensor stacked_indices(VmapContext& c, size_t first, size_t n, const std::vector<int64_t>& limit = {}) {
  ir::ElementType e = c.x(first).element();
  std::vector<Tensor> columns;
  for (size_t i = 0; i < n; ++i) {
    Tensor v = c.x(first + i);
    if (v.element() != e) v = ir::convert(v, e);
    if (!limit.empty()) v = ir::clamp(c.b.scalar(e, 0), v, c.b.scalar(e, static_cast<double>(limit[i])));
    if (!c.batched(first + i)) v = batch_broadcast(v, c.batch());
    columns.push_back(ir::reshape(v, {c.batch(), 1}));
  }
  return ir::concatenate(columns, 1);
}

// v with `front` before its first entry (attributes that are sizes or offsets, not dimensions).
std::vector<int64_t> prepended(std::vector<int64_t> v, int64_t front) {
  v.insert(v.begin(), front);
  return v;
}

std::vector<int64_t> from_one(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d) out.push_back(d);
  return out;
}

// The binary op applied to (lhs, rhs) by a reduce body of add, multiply, maximum or minimum.
Tensor combine(OpKind k, const Tensor& a, const Tensor& b) { return a.builder().emit1(k, {a, b}); }

}  // namespace

// broadcast_in_dim(x; dims)[b] = broadcast_in_dim(x[b]; dims): dims -> (0, dims + 1)
void vmap_BroadcastInDim(VmapContext& c) {
  c.set(0, c.again({c.x()},
                   with(c.op, "broadcast_dimensions", shifted(ints(c.op, "broadcast_dimensions"), 0)))[0]);
}
// reshape(x)[b] = reshape(x[b]): [B, ...x] -> [B, ...y]
void vmap_Reshape(VmapContext& c) { c.set(0, c.again({c.x()})[0]); }
// transpose(x; p)[b] = transpose(x[b]; p): p -> (0, p + 1)
void vmap_Transpose(VmapContext& c) {
  c.set(0, c.again({c.x()}, with(c.op, "permutation", shifted(ints(c.op, "permutation"), 0)))[0]);
}
// slice(x)[b] = slice(x[b]): start (0, ...), limit (B, ...), strides (1, ...)
void vmap_Slice(VmapContext& c) {
  ir::AttrMap a = with(c.op, "start_indices", prepended(ints(c.op, "start_indices"), 0));
  a.set("limit_indices", prepended(ints(c.op, "limit_indices"), c.batch()));
  a.set("strides", prepended(ints(c.op, "strides"), 1));
  c.set(0, c.again({c.x()}, a)[0]);
}
// dynamic_slice(x, s)[b] = dynamic_slice(x[b], s[b]): shared s -> start (0, s), sizes (B, ...);
// batched s -> gather(x, s) batched over (x dim 0, s dim 0), clamped alike
void vmap_DynamicSlice(VmapContext& c) {
  std::vector<int64_t> sizes = ints(c.op, "slice_sizes");
  size_t n = c.num_operands() - 1;
  bool indices_batched = false;
  for (size_t i = 1; i <= n; ++i) indices_batched = indices_batched || c.batched(i);
  if (!indices_batched) {
    std::vector<Tensor> operands{c.x()};
    operands.push_back(c.b.scalar(n > 0 ? c.x(1).element() : ir::ElementType::i32, 0));
    for (size_t i = 1; i <= n; ++i) operands.push_back(c.x(i));
    sizes.insert(sizes.begin(), c.batch());
    return c.set(0, c.again(operands, with(c.op, "slice_sizes", sizes))[0]);
  }
  auto r = static_cast<int64_t>(n);
  ir::GatherDims d{.offset_dims = from_one(r),
                   .collapsed_slice_dims = {},
                   .operand_batching_dims = {0},
                   .start_indices_batching_dims = {0},
                   .start_index_map = from_one(r),
                   .index_vector_dim = 1};
  sizes.insert(sizes.begin(), 1);
  c.set(0, ir::gather(c.bx(0), stacked_indices(c, 1, n), d, sizes));
}
// dynamic_update_slice(x, u, s)[b] = dynamic_update_slice(x[b], u[b], s[b]): shared s -> start
// (0, s); batched s -> scatter(x, clamp(s), u; replace) batched over (x dim 0, s dim 0)
void vmap_DynamicUpdateSlice(VmapContext& c) {
  size_t n = c.num_operands() - 2;
  bool indices_batched = false;
  for (size_t i = 2; i < c.num_operands(); ++i) indices_batched = indices_batched || c.batched(i);
  if (!indices_batched) {
    std::vector<Tensor> operands{c.bx(0), c.bx(1)};
    operands.push_back(c.b.scalar(n > 0 ? c.x(2).element() : ir::ElementType::i32, 0));
    for (size_t i = 2; i < c.num_operands(); ++i) operands.push_back(c.x(i));
    return c.set(0, c.again(operands)[0]);
  }
  std::vector<int64_t> limit;  // dynamic_update_slice clamps the start so the update fits; scatter would skip
  const auto& xs = c.op.operand(0)->type().shape;
  const auto& us = c.op.operand(1)->type().shape;
  for (size_t d = 0; d < n; ++d) limit.push_back(xs[d] - us[d]);
  auto r = static_cast<int64_t>(n);
  ir::ScatterDims d{.update_window_dims = from_one(r),
                    .inserted_window_dims = {},
                    .input_batching_dims = {0},
                    .scatter_indices_batching_dims = {0},
                    .scatter_dims_to_operand_dims = from_one(r),
                    .index_vector_dim = 1};
  c.set(0, ir::scatter(c.bx(0), stacked_indices(c, 2, n, limit), c.bx(1), d, OpKind::Return));
}
// concatenate(x_0, ...; d)[b] = concatenate(x_0[b], ...; d): d -> d + 1
void vmap_Concatenate(VmapContext& c) {
  std::vector<Tensor> operands;
  for (size_t i = 0; i < c.num_operands(); ++i) operands.push_back(c.bx(i));
  c.set(0, c.again(operands, with(c.op, "dimension", c.op.attrs().get<int64_t>("dimension") + 1))[0]);
}
// pad(x, v)[b] = pad(x[b], v[b]): edges and interior (0, ...); a batched v ->
// select(pad(ones, false), pad(x, 0), v[b] everywhere)
void vmap_Pad(VmapContext& c) {
  ir::AttrMap a = c.op.attrs();
  for (const char* name : {"edge_padding_low", "edge_padding_high", "interior_padding"})
    a.set(name, prepended(ints(c.op, name), 0));
  if (!c.batched(1)) return c.set(0, c.again({c.bx(0), c.x(1)}, a)[0]);
  const ir::Type& x = c.op.operand(0)->type();
  ir::Type out = c.batched_type(c.result_type());
  Tensor padded = c.again({c.bx(0), c.b.scalar(x.element, 0)}, a)[0];
  Tensor inside = ir::pad(ir::broadcast_to(c.b.scalar(ir::ElementType::i1, 1), x.shape),
                          c.b.scalar(ir::ElementType::i1, 0), ints(c.op, "edge_padding_low"),
                          ints(c.op, "edge_padding_high"), ints(c.op, "interior_padding"));
  Tensor mask = batch_broadcast(inside, c.batch());
  c.set(0, ir::select(mask, padded, ir::broadcast_in_dim(c.x(1), out.shape, {0})));
}
// reverse(x; dims)[b] = reverse(x[b]; dims): dims -> dims + 1
void vmap_Reverse(VmapContext& c) {
  c.set(0, c.again({c.x()}, with(c.op, "dimensions", shifted(ints(c.op, "dimensions"))))[0]);
}

// gather(x, i)[b] = gather(x[b], i[b]): x batched -> operand and index batching dimension 0;
// only i batched -> dimension 0 of i is one more batch dimension of the result, in front
void vmap_Gather(VmapContext& c) {
  ir::GatherDims d = c.op.attrs().get<ir::GatherDims>("dimension_numbers");
  d.offset_dims = shifted(d.offset_dims);
  d.index_vector_dim += 1;
  ir::AttrMap a = c.op.attrs();
  if (!c.batched(0)) {
    d.start_indices_batching_dims = shifted(d.start_indices_batching_dims);
    a.set("dimension_numbers", d);
    return c.set(0, c.again({c.x(0), c.x(1)}, a)[0]);
  }
  d.collapsed_slice_dims = shifted(d.collapsed_slice_dims);
  d.operand_batching_dims = shifted(d.operand_batching_dims, 0);
  d.start_indices_batching_dims = shifted(d.start_indices_batching_dims, 0);
  d.start_index_map = shifted(d.start_index_map);
  a.set("dimension_numbers", d);
  std::vector<int64_t> sizes = ints(c.op, "slice_sizes");
  sizes.insert(sizes.begin(), 1);
  a.set("slice_sizes", sizes);
  c.set(0, c.again({c.x(0), c.bx(1)}, a)[0]);
}
// scatter(x, i, u)[b] = scatter(x[b], i[b], u[b]): input and index batching dimension 0, update
// scatter dimension 0
void vmap_Scatter(VmapContext& c) {
  ir::ScatterDims d = c.op.attrs().get<ir::ScatterDims>("scatter_dimension_numbers");
  d.update_window_dims = shifted(d.update_window_dims);
  d.inserted_window_dims = shifted(d.inserted_window_dims);
  d.input_batching_dims = shifted(d.input_batching_dims, 0);
  d.scatter_indices_batching_dims = shifted(d.scatter_indices_batching_dims, 0);
  d.scatter_dims_to_operand_dims = shifted(d.scatter_dims_to_operand_dims);
  d.index_vector_dim += 1;
  std::vector<Tensor> operands;
  for (size_t i = 0; i < c.num_operands(); ++i) operands.push_back(c.bx(i));
  std::vector<Tensor> ys = c.again(operands, with(c.op, "scatter_dimension_numbers", d));
  for (size_t k = 0; k < ys.size(); ++k) c.set(k, ys[k]);
}

// reduce(x, init; dims)[b] = reduce(x[b], init; dims): dims -> dims + 1; a batched init (one
// input, body add, multiply, max or min) -> init[b] (+) reduce(x[b], identity)
void vmap_Reduce(VmapContext& c) {
  size_t n = c.num_operands() / 2;
  std::vector<int64_t> dims = shifted(ints(c.op, "dimensions"));
  bool init_batched = false;
  for (size_t i = n; i < 2 * n; ++i) init_batched = init_batched || c.batched(i);
  if (!init_batched) {
    std::vector<Tensor> operands;
    for (size_t i = 0; i < n; ++i) operands.push_back(c.bx(i));
    for (size_t i = n; i < 2 * n; ++i) operands.push_back(c.x(i));
    std::vector<Tensor> ys = c.again(operands, with(c.op, "dimensions", dims));
    for (size_t k = 0; k < ys.size(); ++k) c.set(k, ys[k]);
    return;
  }
  std::optional<OpKind> k = body_combiner(c.op.region(0));
  if (n != 1 || !(k == OpKind::Add || k == OpKind::Multiply || k == OpKind::Maximum || k == OpKind::Minimum))
    c.fail(
        "a batched init value is batched only for one input and a body of add, multiply, maximum or "
        "minimum; this reduce has {} inputs and a body of {}",
        n, describe_body(c.op.region(0)));
  Tensor x = c.bx(0);
  Tensor reduced = *k == OpKind::Maximum ? ir::reduce_max(x, dims)
                   : *k == OpKind::Minimum
                       ? ir::reduce_min(x, dims)
                       : ir::reduce(x, c.b.scalar(x.element(), *k == OpKind::Add ? 0 : 1), dims, *k);
  c.set(0, combine(*k, reduced, ir::broadcast_in_dim(c.x(1), reduced.shape(), {0})));
}

// dot_general(l, r)[b] = dot_general(l[b], r[b]): both batched -> batch dimension (0, 0) in front;
// one batched -> its dimension 0 is a free dimension of the result, moved to the front
void vmap_DotGeneral(VmapContext& c) {
  ir::DotDims d = c.op.attrs().get<ir::DotDims>("dot_dimension_numbers");
  const ir::Type& y = c.result_type();
  int64_t at = 0;  // where the batch lands in the result
  if (c.batched(0) && c.batched(1)) {
    d = {shifted(d.lhs_batch, 0), shifted(d.rhs_batch, 0), shifted(d.lhs_contracting),
         shifted(d.rhs_contracting)};
  } else if (c.batched(0)) {
    d.lhs_batch = shifted(d.lhs_batch);
    d.lhs_contracting = shifted(d.lhs_contracting);
    at = static_cast<int64_t>(d.lhs_batch.size());
  } else {
    d.rhs_batch = shifted(d.rhs_batch);
    d.rhs_contracting = shifted(d.rhs_contracting);
    at = c.op.operand(0)->type().rank() - static_cast<int64_t>(d.lhs_contracting.size());
  }
  std::vector<int64_t> shape = y.shape;
  shape.insert(shape.begin() + at, c.batch());
  Tensor out = c.again({c.x(0), c.x(1)}, with(c.op, "dot_dimension_numbers", d),
                       std::vector<ir::Type>{y.with_shape(shape)})[0];
  c.set(0, move_axis(out, at, 0));
}

}  // namespace tessera::autodiff
