// The layers of layers.h. Forward code only: each gradient comes from the primitives' VJP rules
// (src/autodiff), and tests/nn/layers_test.cpp checks each against finite differences.
#include "nn/layers.h"

#include <cmath>

#include "support/error.h"

namespace tessera::nn {

using ir::ComparisonDirection;
using ir::Literal;
using ir::Type;

namespace {

// dims [0, r) of a rank-r tensor as a list.
std::vector<int64_t> leading(int64_t r) {
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < r; ++i) dims.push_back(i);
  return dims;
}

}  // namespace

Tensor expand_last(const Tensor& y, int64_t n) {
  std::vector<int64_t> shape = y.shape();
  shape.push_back(n);
  return ir::broadcast_in_dim(y, shape, leading(y.rank()));
}

Tensor cast(const Tensor& x, ir::ElementType t) { return x.element() == t ? x : ir::convert(x, t); }

ir::ElementType reduction_type(ir::ElementType t) {
  return t == ir::ElementType::bf16 || t == ir::ElementType::f16 ? ir::ElementType::f32 : t;
}

Tensor embedding(const Tensor& table, const Tensor& tokens) {
  if (table.rank() != 2 || tokens.rank() != 2)
    support::fail("nn::embedding: table must be [vocab, d] and tokens [b, s], got {} and {}",
                  to_string(table.type()), to_string(tokens.type()));
  ir::GatherDims dims;
  dims.offset_dims = {2};           // the row's features become the last result dimension
  dims.collapsed_slice_dims = {0};  // one row per token, its vocab dimension dropped
  dims.start_index_map = {0};       // a token indexes the vocab dimension
  dims.index_vector_dim = 2;        // each token is a whole (one-component) start index
  return ir::gather(table, tokens, dims, {1, table.shape()[1]});
}

Tensor rms_norm(const Tensor& x, const Tensor& gain, double eps) {
  int64_t d = x.shape().back();
  ir::ElementType wide = reduction_type(x.element());
  Tensor xw = cast(x, wide);
  Tensor mean_square = ir::reduce_sum(xw * xw, {x.rank() - 1}) / double(d);
  Tensor scale = ir::rsqrt(mean_square + eps);
  return cast(xw * expand_last(scale, d) * cast(gain, wide), x.element());
}

std::pair<Literal, Literal> rope_tables(ir::ElementType t, const std::vector<int64_t>& positions, int64_t n, int64_t hd,
                                        double theta) {
  if (!positions.empty()) n = static_cast<int64_t>(positions.size());
  int64_t half = hd / 2;
  // Computed here in double: constants of the program.
  Literal cos_table(Type(t, {n, 2, half})), sin_table(Type(t, {n, 2, half}));  // row-major: [n, hd]
  for (int64_t p = 0; p < n; ++p)
    for (int64_t i = 0; i < hd; ++i) {
      double angle = double(positions.empty() ? p : positions[size_t(p)]) * std::pow(theta, -2.0 * double(i % half) / double(hd));
      cos_table.set_double(p * hd + i, std::cos(angle));
      sin_table.set_double(p * hd + i, i < half ? -std::sin(angle) : std::sin(angle));
    }
  return {std::move(cos_table), std::move(sin_table)};
}

// rotate_half(x) = [-x2, x1] for x = [x1, x2], the halves of the features. Over x viewed as
// [..., 2, half], rotate_half(x) * sin is reverse(x) * [-sin1, sin2]: the minus moved from x2 to
// the table gives the same products, bit for bit. Element-wise ops, broadcasts and a reverse are
// what fused loops read in place: the forward is one loop and the backward two, where slices, a
// negation and a concatenation (and pads in the backward) were kernels of their own.
Tensor rope_rotate(const Tensor& x, const Tensor& cos, const Tensor& signed_sin, std::vector<int64_t> table_dims) {
  std::vector<int64_t> halves = x.shape();
  halves.back() /= 2;
  halves.insert(halves.end() - 1, 2);
  auto r = static_cast<int64_t>(halves.size());
  table_dims.push_back(r - 2);
  table_dims.push_back(r - 1);
  Tensor xr = ir::reshape(x, halves);
  Tensor c = ir::broadcast_in_dim(cos, halves, table_dims);
  Tensor s = ir::broadcast_in_dim(signed_sin, halves, table_dims);
  return ir::reshape(xr * c + ir::reverse(xr, {r - 2}) * s, x.shape());
}

Tensor rope(const Tensor& x, double theta, const std::vector<int64_t>& positions) {
  int64_t s = x.shape()[1], hd = x.shape().back();
  if (hd % 2 != 0) support::fail("nn::rope: head dimension {} of {} is odd", hd, to_string(x.type()));
  if (!positions.empty() && int64_t(positions.size()) != s)
    support::fail("nn::rope: {} positions for the {} indices of dim 1 of {}", positions.size(), s, to_string(x.type()));
  auto [cos_table, sin_table] = rope_tables(x.element(), positions, s, hd, theta);
  ir::Builder& b = x.builder();
  return rope_rotate(x, b.constant(cos_table), b.constant(sin_table), {1});  // the position
}

Tensor softmax_last(const Tensor& x) {
  int64_t n = x.shape().back(), last = x.rank() - 1;
  Tensor e = ir::exp(x - expand_last(ir::stop_gradient(ir::reduce_max(x, {last})), n));
  return e / expand_last(ir::reduce_sum(e, {last}), n);
}

Tensor log_softmax_last(const Tensor& x) {
  int64_t n = x.shape().back(), last = x.rank() - 1;
  Tensor shifted = x - expand_last(ir::stop_gradient(ir::reduce_max(x, {last})), n);
  return shifted - expand_last(ir::log(ir::reduce_sum(ir::exp(shifted), {last})), n);
}

Projections project_qkv(const Tensor& x, const AttentionWeights& w, int64_t heads, int64_t kv_heads, double rope_theta,
                        const std::vector<int64_t>& positions) {
  int64_t b = x.shape()[0], s = x.shape()[1];
  int64_t hd = w.q.shape()[1] / heads, groups = heads / kv_heads;
  if (hd * heads != w.q.shape()[1] || groups * kv_heads != heads)
    support::fail("nn::attention: {} query heads and {} key/value heads do not fit q {}", heads, kv_heads,
                  to_string(w.q.type()));
  // Query head h = kv * groups + g: the q columns of key/value head kv are contiguous.
  return {rope(ir::reshape(ir::matmul(x, w.q), {b, s, kv_heads, groups, hd}), rope_theta, positions),
          rope(ir::reshape(ir::matmul(x, w.k), {b, s, kv_heads, hd}), rope_theta, positions),
          ir::reshape(ir::matmul(x, w.v), {b, s, kv_heads, hd})};
}

Tensor attention(const Tensor& x, const AttentionWeights& w, int64_t heads, int64_t kv_heads, double rope_theta) {
  int64_t b = x.shape()[0], s = x.shape()[1], hd = w.q.shape()[1] / heads;
  auto [q, k, v] = project_qkv(x, w, heads, kv_heads, rope_theta);

  // scores[b, kv, s, g, t] = q[b, s, kv, g, :] · k[b, t, kv, :] / sqrt(hd)
  ir::DotDims qk{{0, 2}, {0, 2}, {4}, {3}};
  Tensor scores = ir::dot_general(q, k, qk) / std::sqrt(double(hd));
  // Position s sees positions t <= s: a constant mask, broadcast over batch, heads and groups.
  Literal visible(Type(ir::ElementType::i1, {s, s}));
  for (int64_t i = 0; i < s; ++i)
    for (int64_t j = 0; j <= i; ++j) visible.set_int(i * s + j, 1);
  ir::Builder& bld = x.builder();
  Tensor mask = ir::broadcast_in_dim(bld.constant(visible), scores.shape(), {2, 4});
  // A large finite negative rather than -inf: exp gives exactly 0 either way, and nothing downstream
  // can meet inf - inf.
  Tensor hidden = ir::broadcast_to(bld.scalar(scores.element(), -1e30), scores.shape());
  Tensor masked = ir::select(mask, scores, hidden);
  Tensor probs = cast(softmax_last(cast(masked, reduction_type(masked.element()))), masked.element());

  // out[b, kv, s, g, :] = sum over t of probs[b, kv, s, g, t] * v[b, t, kv, :]
  ir::DotDims pv{{0, 1}, {0, 2}, {4}, {1}};
  Tensor out = ir::transpose(ir::dot_general(probs, v, pv), {0, 2, 1, 3, 4});  // [b, s, kv, g, hd]
  return ir::matmul(ir::reshape(out, {b, s, heads * hd}), w.o);
}

Tensor swiglu(const Tensor& x, const Tensor& gate, const Tensor& up, const Tensor& down) {
  Tensor h = ir::matmul(x, gate);
  return ir::matmul(h * ir::logistic(h) * ir::matmul(x, up), down);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
  if (logits.rank() != 3 || targets.shape() != std::vector<int64_t>{logits.shape()[0], logits.shape()[1]})
    support::fail("nn::cross_entropy: logits must be [b, s, vocab] and targets [b, s], got {} and {}",
                  to_string(logits.type()), to_string(targets.type()));
  ir::Builder& b = logits.builder();
  Tensor wide = cast(logits, reduction_type(logits.element()));
  Tensor vocab_index = b.iota(Type(targets.element(), logits.shape()), 2);
  Tensor target = ir::broadcast_in_dim(targets, logits.shape(), {0, 1});
  Tensor one_hot = ir::convert(ir::compare(vocab_index, target, ComparisonDirection::EQ), wide.element());
  double tokens = double(logits.shape()[0] * logits.shape()[1]);
  return -ir::sum(one_hot * log_softmax_last(wide)) / tokens;
}

}  // namespace tessera::nn
