// Ring attention and the load-balanced sequence layout of context parallelism (ring_attention.h).
#include "nn/ring_attention.h"

#include <cmath>

#include "nn/plan.h"
#include "support/error.h"

namespace tessera::nn {

using ir::ComparisonDirection;
using ir::Literal;
using ir::Type;

namespace {

// Which chunk of the 2N the sequence is cut into sits in each chunk slot of the layout: device i's
// two slots hold chunks i and 2N-1-i.
std::vector<int64_t> chunk_order(int64_t devices) {
  std::vector<int64_t> order;
  for (int64_t i = 0; i < devices; ++i) {
    order.push_back(i);
    order.push_back(2 * devices - 1 - i);
  }
  return order;
}

// The chunks of x along dim, in the order `order` gives (chunk `order[j]` into slot j).
Tensor reorder_chunks(const Tensor& x, int64_t dim, const std::vector<int64_t>& order) {
  int64_t s = x.shape().at(size_t(dim)), n = int64_t(order.size());
  if (s % n != 0)
    support::fail("nn: context parallelism cuts the sequence of {} into {} chunks (2 per device); {} does not divide",
                  to_string(x.type()), n, s);
  int64_t c = s / n;
  std::vector<Tensor> parts;
  for (int64_t chunk : order) {
    std::vector<int64_t> start(x.shape().size(), 0), limit = x.shape();
    start[size_t(dim)] = chunk * c;
    limit[size_t(dim)] = (chunk + 1) * c;
    parts.push_back(ir::slice(x, start, limit));
  }
  return ir::concatenate(parts, dim);
}

// One device's part of ring attention. q [b, l, kv, g, hd], k and v [b, l, kv, hd] are its local
// slots (l = s/N), pos i32 [l] their positions. Returns out [b, l, kv, g, hd].
Tensor ring_body(const Tensor& q, const Tensor& k0, const Tensor& v0, const Tensor& pos,
                 const std::vector<std::pair<int64_t, int64_t>>& next, int64_t steps) {
  ir::Builder& b = q.builder();
  const int64_t hd = q.shape().back();
  const ir::ElementType wide = reduction_type(q.element());
  Tensor k = k0, v = v0, kpos = pos;
  std::optional<Tensor> m, l, acc;  // running row maximum, row sum, and probability-weighted values
  for (int64_t step = 0; step < steps; ++step) {
    if (step > 0) {  // the block the previous device held: device i sees device i-step's keys
      k = ir::collective_permute(k, next);
      v = ir::collective_permute(v, next);
      kpos = ir::collective_permute(kpos, next);
    }
    // scores[b, kv, lq, g, lk] = q[b, lq, kv, g, :] · k[b, lk, kv, :] / sqrt(hd), as nn::attention.
    Tensor scores = ir::dot_general(q, k, ir::DotDims{{0, 2}, {0, 2}, {4}, {3}}) / std::sqrt(double(hd));
    const std::vector<int64_t>& shape = scores.shape();
    Tensor visible = ir::compare(ir::broadcast_in_dim(pos, shape, {2}), ir::broadcast_in_dim(kpos, shape, {4}),
                                 ComparisonDirection::GE);
    // -1e30 as nn::attention: a block with nothing visible to a row gives it exp(-1e30 - m) = 0,
    // and step 0 (the device's own block, holding each query's own position) makes m finite.
    Tensor hidden = ir::broadcast_to(b.scalar(scores.element(), -1e30), shape);
    Tensor masked = cast(ir::select(visible, scores, hidden), wide);
    const int64_t lk = shape.back();
    // The running maximum only shifts exp's argument, which the result does not depend on: a
    // constant to differentiation, as in softmax_last.
    Tensor block_max = ir::stop_gradient(ir::reduce_max(masked, {4}));
    Tensor m_new = m ? ir::maximum(*m, block_max) : block_max;
    Tensor p = ir::exp(masked - expand_last(m_new, lk));
    // pv[b, kv, lq, g, hd] = sum over lk of p[b, kv, lq, g, lk] * v[b, lk, kv, hd]
    Tensor pv = cast(ir::dot_general(cast(p, v.element()), v, ir::DotDims{{0, 1}, {0, 2}, {4}, {1}}), wide);
    Tensor p_sum = ir::reduce_sum(p, {4});
    if (!m) {
      l = p_sum;
      acc = pv;
    } else {
      Tensor rescale = ir::exp(*m - m_new);  // the old terms, re-based on the new maximum
      l = *l * rescale + p_sum;
      acc = *acc * expand_last(rescale, hd) + pv;
    }
    m = m_new;
  }
  Tensor out = *acc / expand_last(*l, hd);                             // [b, kv, l, g, hd]
  return cast(ir::transpose(out, {0, 2, 1, 3, 4}), q.element());      // [b, l, kv, g, hd]
}

// One device's part of split_cache_attention: q [B, S, kv, g, hd] and pos [B, S] whole, k and v
// [B, l, kv, hd] its slice of the cache at positions kpos i32 [l].
Tensor split_cache_body(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pos, const Tensor& kpos,
                        const ir::Groups& all) {
  ir::Builder& b = q.builder();
  const int64_t hd = q.shape().back();
  const ir::ElementType wide = reduction_type(q.element());
  Tensor scores = ir::dot_general(q, k, ir::DotDims{{0, 2}, {0, 2}, {4}, {3}}) / std::sqrt(double(hd));
  const std::vector<int64_t>& shape = scores.shape();  // [B, kv, S, g, l]
  Tensor visible = ir::compare(ir::broadcast_in_dim(kpos, shape, {4}), ir::broadcast_in_dim(pos, shape, {0, 2}),
                               ComparisonDirection::LE);
  Tensor hidden = ir::broadcast_to(b.scalar(scores.element(), -1e30), shape);
  Tensor masked = cast(ir::select(visible, scores, hidden), wide);
  const int64_t l = shape.back();
  Tensor m = ir::reduce_max(masked, {4});
  Tensor p = ir::exp(masked - expand_last(m, l));
  Tensor sum = ir::reduce_sum(p, {4});
  Tensor out = cast(ir::dot_general(cast(p, v.element()), v, ir::DotDims{{0, 1}, {0, 2}, {4}, {1}}), wide) /
               expand_last(sum, hd);
  // A slice with no visible key has m = -1e30 and so lse about -1e30: its weight exp(lse - max) is
  // exactly 0 (position 0, on device 0, is visible to every query, so the maximum is finite).
  Tensor lse = m + ir::log(sum);
  Tensor top = ir::all_reduce(lse, all, ir::OpKind::Maximum);
  Tensor weight = ir::exp(lse - top);
  Tensor merged = ir::all_reduce(out * expand_last(weight, hd), all) / expand_last(ir::all_reduce(weight, all), hd);
  return cast(ir::transpose(merged, {0, 2, 1, 3, 4}), q.element());  // [B, S, kv, g, hd]
}

}  // namespace

int64_t ContextParallel::devices() const {
  const ir::MeshAxis* a = mesh.find_axis(axis);
  if (a == nullptr) support::fail("nn: context parallelism over axis '{}', which mesh '{}' lacks", axis, mesh.name);
  return a->size;
}

std::vector<int64_t> balanced_positions(int64_t seq, int64_t devices) {
  int64_t n = 2 * devices;
  if (devices < 1 || seq % n != 0)
    support::fail("nn: context parallelism over {} devices cuts the sequence into {} chunks; {} does not divide", devices,
                  n, seq);
  std::vector<int64_t> positions;
  for (int64_t chunk : chunk_order(devices))
    for (int64_t i = 0; i < seq / n; ++i) positions.push_back(chunk * (seq / n) + i);
  return positions;
}

Tensor to_balanced(const Tensor& x, int64_t dim, int64_t devices) {
  return devices == 1 ? x : reorder_chunks(x, dim, chunk_order(devices));
}

Tensor from_balanced(const Tensor& x, int64_t dim, int64_t devices) {
  if (devices == 1) return x;
  std::vector<int64_t> order = chunk_order(devices), inverse(order.size());
  for (size_t j = 0; j < order.size(); ++j) inverse[size_t(order[j])] = int64_t(j);
  return reorder_chunks(x, dim, inverse);
}

Tensor ring_attention(const Tensor& x, const AttentionWeights& w, int64_t heads, int64_t kv_heads, double rope_theta,
                      const ContextParallel& cp) {
  const int64_t n = cp.devices(), b = x.shape()[0], s = x.shape()[1];
  if (cp.mesh.axes.size() != 1)
    support::fail("nn::ring_attention: mesh '{}' has {} axes; context parallelism runs on a mesh of its axis '{}' alone",
                  cp.mesh.name, cp.mesh.axes.size(), cp.axis);
  std::vector<int64_t> positions = balanced_positions(s, n);
  Projections p = project_qkv(x, w, heads, kv_heads, rope_theta, positions);
  Literal pos(ir::i32({s}));
  for (int64_t i = 0; i < s; ++i) pos.set_int(i, positions[size_t(i)]);
  // Device at mesh position i sends to position i+1; collective_permute names devices by id.
  auto id = [&](int64_t i) { return cp.mesh.device_ids.empty() ? i : cp.mesh.device_ids[size_t(i)]; };
  std::vector<std::pair<int64_t, int64_t>> next;
  for (int64_t i = 0; i < n; ++i) next.emplace_back(id(i), id((i + 1) % n));
  auto seq_split = [&](int64_t rank, int64_t dim) { return split_dim(cp.mesh, rank, dim, cp.axis); };
  std::vector<Tensor> out = ir::manual(
      {p.q, p.k, p.v, x.builder().constant(pos)}, {seq_split(5, 1), seq_split(4, 1), seq_split(4, 1), seq_split(1, 0)},
      {seq_split(5, 1)}, {cp.axis}, [&](ir::Builder&, const std::vector<Tensor>& in) {
        return std::vector<Tensor>{ring_body(in[0], in[1], in[2], in[3], next, n)};
      });
  return ir::matmul(ir::reshape(out[0], {b, s, w.q.shape()[1]}), w.o);
}

Tensor split_cache_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& pos,
                             const ContextParallel& cp) {
  const int64_t n = cp.devices(), t = k.shape()[1];
  if (cp.mesh.axes.size() != 1 || t % n != 0)
    support::fail("nn::split_cache_attention: a cache of {} positions split over axis '{}' ({} devices) of mesh '{}' "
                  "with {} axes: the axis must be the mesh's only one and divide the positions",
                  t, cp.axis, n, cp.mesh.name, cp.mesh.axes.size());
  Literal kpos(ir::i32({t}));
  for (int64_t i = 0; i < t; ++i) kpos.set_int(i, i);
  ir::Groups all(1);
  for (int64_t i = 0; i < n; ++i) all[0].push_back(cp.mesh.device_ids.empty() ? i : cp.mesh.device_ids[size_t(i)]);
  auto split = [&](int64_t rank, int64_t dim) { return split_dim(cp.mesh, rank, dim, cp.axis); };
  auto whole = [&](int64_t rank) { return split_dim(cp.mesh, rank, 0, ""); };
  std::vector<Tensor> out = ir::manual(
      {q, k, v, pos, q.builder().constant(kpos)}, {whole(5), split(4, 1), split(4, 1), whole(2), split(1, 0)},
      {whole(5)}, {cp.axis}, [&](ir::Builder&, const std::vector<Tensor>& in) {
        return std::vector<Tensor>{split_cache_body(in[0], in[1], in[2], in[3], in[4], all)};
      });
  const std::vector<int64_t>& s = q.shape();
  return ir::reshape(out[0], {s[0], s[1], s[2] * s[3] * s[4]});
}

}  // namespace tessera::nn
