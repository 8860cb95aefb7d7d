// VJP rules of gather and scatter, each the other's transpose. Both go by the kernels' index
// semantics (src/interp/kernels_gather.cpp, after the StableHLO spec): gather clamps each start
// index so that its slice fits, scatter skips the update elements that land out of bounds.
//   gather:  dx = scatter-add of dy at the clamped starts (so every window lands where it was read)
//   scatter: du = dy read at the place each update element lands, zero where it lands nowhere;
//            read with a gather from dy padded by a window on each side, at starts shifted by a
//            window, so that a gather's clamping only ever reads the zero padding.
// Only the add and the replace (update wins) combiners have rules; replace finds which update
// element won each place by scattering element ids, as JAX does for scatter.
#include <algorithm>

#include "autodiff/rules.h"

namespace tessera::autodiff {

namespace {

using ir::ComparisonDirection;

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// An integer vector of one entry per start index component, laid along the index vector dimension
// of `indices` and broadcast over the rest.
Tensor per_component(const Tensor& indices, int64_t index_vector_dim, const std::vector<int64_t>& v) {
  ir::Builder& b = indices.builder();
  auto n = static_cast<int64_t>(v.size());
  if (index_vector_dim == indices.rank()) {  // the implicit trailing vector of one component
    TESSERA_CHECK(n == 1, "{} index components for an implicit index vector", n);
    return ir::broadcast_to(b.constant(ir::Literal::from_ints(ir::Type(indices.element(), {}), v)),
                            indices.shape());
  }
  Tensor c = b.constant(ir::Literal::from_ints(ir::Type(indices.element(), {n}), v));
  return ir::broadcast_in_dim(c, indices.shape(), {index_vector_dim});
}

// The scatter that writes each element of an array shaped like the gather's result back to the
// operand place it was read from, and the window sizes of that correspondence.
struct Correspondence {
  ir::GatherDims gather;
  ir::ScatterDims scatter;
  std::vector<int64_t> window;  // per operand dimension: the slice size (1 for collapsed/batching)
};

// GatherDims and ScatterDims list the same six facts in the same order (offset/update window
// dims, collapsed/inserted dims, operand/input batching dims, index batching dims, the start index
// map, the index vector dimension).
Correspondence from_gather(const ir::GatherDims& g, const std::vector<int64_t>& slice_sizes) {
  return {g,
          {g.offset_dims, g.collapsed_slice_dims, g.operand_batching_dims, g.start_indices_batching_dims,
           g.start_index_map, g.index_vector_dim},
          slice_sizes};
}

Correspondence from_scatter(const ir::ScatterDims& s, int64_t operand_rank,
                            const std::vector<int64_t>& updates_shape) {
  Correspondence k{{s.update_window_dims, s.inserted_window_dims, s.input_batching_dims,
                    s.scatter_indices_batching_dims, s.scatter_dims_to_operand_dims, s.index_vector_dim},
                   s,
                   {}};
  size_t w = 0;
  for (int64_t d = 0; d < operand_rank; ++d) {
    bool dropped = contains(s.inserted_window_dims, d) || contains(s.input_batching_dims, d);
    k.window.push_back(dropped ? 1 : updates_shape[static_cast<size_t>(s.update_window_dims.at(w++))]);
  }
  return k;
}

// t read at the place each update element of `indices` lands, and zero where it lands nowhere: a
// gather from t padded by one window on each side of every indexed dimension, at starts shifted by
// one window, so that the gather's clamping only reaches into the padding.
Tensor read_at_landing(const Tensor& t, const Tensor& indices, const Correspondence& k) {
  ir::Builder& b = t.builder();
  std::vector<int64_t> pad(t.shape().size(), 0), shift;
  for (int64_t d : k.gather.start_index_map) {
    pad[static_cast<size_t>(d)] = k.window[static_cast<size_t>(d)];
    shift.push_back(k.window[static_cast<size_t>(d)]);
  }
  Tensor padded = ir::pad(t, b.scalar(t.element(), 0), pad, pad);
  Tensor shifted = shift.empty() ? indices
                                 : indices + per_component(indices, k.gather.index_vector_dim, shift);
  return ir::gather(padded, shifted, k.gather, k.window);
}

Tensor same(const Tensor& a, const Tensor& b) { return ir::compare(a, b, ComparisonDirection::EQ); }

}  // namespace

// gather(x, i): dx = scatter-add(zeros, clamp(i), dy), clamped to [0, dim - slice size] as gather does
void vjp_Gather(VjpContext& c) {
  const auto& g = c.op.attrs().get<ir::GatherDims>("dimension_numbers");
  const auto& sizes = c.op.attrs().get<std::vector<int64_t>>("slice_sizes");
  Correspondence k = from_gather(g, sizes);
  const Tensor& idx = c.x(1);
  std::vector<int64_t> upper;
  for (int64_t d : g.start_index_map)
    upper.push_back(c.x().shape()[static_cast<size_t>(d)] - sizes[static_cast<size_t>(d)]);
  Tensor zero = ir::broadcast_to(c.b.scalar(idx.element(), 0), idx.shape());
  Tensor clamped = ir::maximum(ir::minimum(idx, per_component(idx, g.index_vector_dim, upper)), zero);
  c.add(0, ir::scatter(zeros_like(c.b, c.x().type()), clamped, c.dy(), k.scatter, ir::OpKind::Add));
}

// scatter(x, i, u) with add:     dx = dy;  du = dy where each update element lands (0 if nowhere)
// scatter(x, i, u) with replace: dx = dy where no update lands; du = dy where that element won
void vjp_Scatter(VjpContext& c) {
  ir::OpKind combiner = require_combiner(c.op);
  const auto& s = c.op.attrs().get<ir::ScatterDims>("scatter_dimension_numbers");
  const Tensor &x = c.x(0), &idx = c.x(1), &u = c.x(2);
  Correspondence k = from_scatter(s, x.rank(), u.shape());
  Tensor dy = c.dy();
  if (combiner == ir::OpKind::Add) {
    c.add(0, dy);
    c.add(2, read_at_landing(dy, idx, k));
    return;
  }
  // Replace: number the update elements 1..n, scatter the numbers, and see whose number stayed.
  ir::Type ids_type(ir::ElementType::i64, u.shape());
  int64_t n = ids_type.num_elements();
  Tensor ids = ir::reshape(c.b.iota(ir::Type(ir::ElementType::i64, {n}), 0) + 1.0, u.shape());
  Tensor placed = ir::scatter(zeros_like(c.b, x.type().with_element(ir::ElementType::i64)), idx, ids,
                              s, ir::OpKind::Return);
  Tensor zero = zeros_like(c.b, x.type());
  c.add(0, ir::select(same(placed, zeros_like(c.b, placed.type())), dy, zero));
  Tensor won = same(read_at_landing(placed, idx, k), ids);
  c.add(2, ir::select(won, read_at_landing(dy, idx, k), zeros_like(c.b, u.type())));
}

}  // namespace tessera::autodiff
