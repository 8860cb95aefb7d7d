// VJP rules of the data-movement ops (broadcast, reshape, transpose, slices, concatenate, pad,
// reverse), of control flow and calls, and of the check ops. Movement ops are linear, so each rule
// is the transpose of its op: a broadcast sums back, a slice pads back with zeros, a pad slices
// back. Loops and calls are refused by name until they have rules of their own. Gather and scatter
// are in rules_gather.cpp.
#include <algorithm>
#include <numeric>

#include "autodiff/rules.h"
#include "ir/effects.h"

namespace tessera::autodiff {

namespace {

const std::vector<int64_t>& ints(const VjpContext& c, const std::string& name) {
  return c.op.attrs().get<std::vector<int64_t>>(name);
}

std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inv;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

std::vector<Tensor> start_indices(const VjpContext& c, size_t first) {
  std::vector<Tensor> out;
  for (size_t i = first; i < c.num_operands(); ++i) out.push_back(c.x(i));
  return out;
}

Tensor zeros_of(VjpContext& c, const Tensor& t) { return zeros_like(c.b, t.type()); }

}  // namespace

// broadcast_in_dim(x): dx = reshape(transpose(sum of dy over the new and the size-1-expanded
// dimensions)) back to x's shape
void vjp_BroadcastInDim(VjpContext& c) {
  const Tensor& x = c.x();
  const auto& dims = ints(c, "broadcast_dimensions");
  const std::vector<int64_t>& out_shape = c.y().shape();
  // Kept: result dimensions that carry an operand dimension of the same size.
  std::vector<int64_t> reduced;
  std::vector<std::pair<int64_t, int64_t>> kept;  // (result dimension, operand dimension)
  for (int64_t d = 0; d < static_cast<int64_t>(out_shape.size()); ++d) {
    auto it = std::find(dims.begin(), dims.end(), d);
    auto i = static_cast<size_t>(it - dims.begin());
    if (it != dims.end() && x.shape()[i] == out_shape[static_cast<size_t>(d)])
      kept.emplace_back(d, static_cast<int64_t>(i));
    else
      reduced.push_back(d);
  }
  Tensor g = reduced.empty() ? c.dy() : ir::reduce_sum(c.dy(), reduced);
  // g's dimensions follow the kept result dimensions; put them in operand order.
  std::vector<int64_t> order(kept.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return kept[static_cast<size_t>(a)].second < kept[static_cast<size_t>(b)].second; });
  if (!is_identity(order)) g = ir::transpose(g, order);
  if (g.shape() != x.shape()) g = ir::reshape(g, x.shape());
  c.add(0, g);
}

// reshape(x): dx = reshape(dy, shape(x))
void vjp_Reshape(VjpContext& c) { c.add(0, ir::reshape(c.dy(), c.x().shape())); }

// transpose(x, p): dx = transpose(dy, p^-1)
void vjp_Transpose(VjpContext& c) {
  c.add(0, ir::transpose(c.dy(), inverse_permutation(ints(c, "permutation"))));
}

// slice(x, start, limit, stride): dx = pad(dy, 0, low = start, high = the rest,
// interior = stride - 1)
void vjp_Slice(VjpContext& c) {
  const auto& start = ints(c, "start_indices");
  const auto& strides = ints(c, "strides");
  const auto& in = c.x().shape();
  const auto& out = c.y().shape();
  std::vector<int64_t> high, interior;
  for (size_t d = 0; d < in.size(); ++d) {
    interior.push_back(strides[d] - 1);
    high.push_back(in[d] - start[d] - out[d] - std::max<int64_t>(out[d] - 1, 0) * interior[d]);
  }
  Tensor zero = c.b.scalar(c.x().element(), 0);
  c.add(0, ir::pad(c.dy(), zero, start, high, interior));
}

// dynamic_slice(x, s): dx = dynamic_update_slice(zeros, dy, s), which clamps s the same way
void vjp_DynamicSlice(VjpContext& c) {
  c.add(0, ir::dynamic_update_slice(zeros_of(c, c.x()), c.dy(), start_indices(c, 1)));
}

// dynamic_update_slice(x, u, s): dx = dy with u's window zeroed; du = dynamic_slice(dy, s)
void vjp_DynamicUpdateSlice(VjpContext& c) {
  std::vector<Tensor> start = start_indices(c, 2);
  c.add(0, ir::dynamic_update_slice(c.dy(), zeros_of(c, c.x(1)), start));
  c.add(1, ir::dynamic_slice(c.dy(), start, c.x(1).shape()));
}

// concatenate(x_0, ..., x_n-1; d): dx_i = the slice of dy that x_i fills along d
void vjp_Concatenate(VjpContext& c) {
  auto d = static_cast<size_t>(c.op.attrs().get<int64_t>("dimension"));
  std::vector<int64_t> start(c.y().shape().size(), 0), limit = c.y().shape();
  Tensor dy = c.dy();
  for (size_t i = 0; i < c.num_operands(); ++i) {
    limit[d] = start[d] + c.x(i).shape()[d];
    if (is_differentiable(c.x(i).type())) c.add(i, ir::slice(dy, start, limit));
    start[d] = limit[d];
  }
}

// pad(x, v; lo, hi, interior): dx = dy at x's positions (a strided slice of dy, after undoing
// negative edge padding with zeros); dv = sum(dy) - sum(dx)
void vjp_Pad(VjpContext& c) {
  const auto& lo = ints(c, "edge_padding_low");
  const auto& hi = ints(c, "edge_padding_high");
  const auto& interior = ints(c, "interior_padding");
  const auto& in = c.x().shape();
  std::vector<int64_t> grow_lo, grow_hi, start, limit, strides;
  bool grows = false;
  for (size_t d = 0; d < in.size(); ++d) {
    grow_lo.push_back(std::max<int64_t>(-lo[d], 0));
    grow_hi.push_back(std::max<int64_t>(-hi[d], 0));
    grows = grows || grow_lo[d] > 0 || grow_hi[d] > 0;
    start.push_back(std::max<int64_t>(lo[d], 0));
    strides.push_back(interior[d] + 1);
    limit.push_back(start[d] + (in[d] > 0 ? (in[d] - 1) * strides[d] + 1 : 0));
  }
  Tensor dy = c.dy();
  Tensor full = grows ? ir::pad(dy, c.b.scalar(dy.element(), 0), grow_lo, grow_hi) : dy;
  Tensor dx = ir::slice(full, start, limit, strides);
  c.add(0, dx);
  c.add(1, ir::sum(dy) - ir::sum(dx));
}

// reverse(x, dims): dx = reverse(dy, dims)
void vjp_Reverse(VjpContext& c) { c.add(0, ir::reverse(c.dy(), ints(c, "dimensions"))); }

// while: refused; a loop needs its iterations saved (or a known trip count) to run backwards.
void vjp_While(VjpContext& c) { refuse_outright(c.op); }

// optimization_barrier(x_0, ...): dx_i = dy_i
void vjp_OptimizationBarrier(VjpContext& c) {
  for (size_t i = 0; i < c.num_operands(); ++i)
    if (c.has_cotangent(i)) c.add(i, c.dy(i));
}

// The terminator is not an op of the forward program's dataflow: reverse never applies a rule to it.
void vjp_Return(VjpContext&) {}

// Calls are refused: their callee (or custom target) has no rule here (refusals.cpp).
void vjp_Call(VjpContext& c) { refuse_outright(c.op); }
// custom_call @Sharding (GSPMD's sharding annotation) and the placement annotations are the
// identity: dx = dy.
void vjp_CustomCall(VjpContext& c) {
  if (!ir::is_identity_call(c.op)) refuse_outright(c.op);
  if (c.has_cotangent(0)) c.add(0, c.dy());
}
void vjp_RunParallel(VjpContext& c) { refuse_outright(c.op); }

// The check ops have no results, so nothing flows back through them.
void vjp_ExpectEqConst(VjpContext&) {}
void vjp_ExpectAlmostEqConst(VjpContext&) {}
void vjp_ExpectEq(VjpContext&) {}
void vjp_ExpectAlmostEq(VjpContext&) {}
void vjp_ExpectClose(VjpContext&) {}

}  // namespace tessera::autodiff
