// Local gather over split indexed dimensions and halo exchange for slices (see split_reads.h).
#include "spmd/split_reads.h"

#include <algorithm>
#include <limits>

#include "spmd/mesh_math.h"
#include "support/error.h"

namespace tessera::spmd {

using ir::ElementType;
using ir::Op;
using ir::Tensor;

namespace {

bool contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

Tensor splat(ir::Builder& b, ElementType e, double v, const std::vector<int64_t>& shape) {
  return ir::broadcast_to(b.scalar(e, v), shape);
}

}  // namespace

std::vector<IndexedDim> add_indexed_factors(const Op& op, FactorRule& rule) {
  std::vector<IndexedDim> out;
  if (op.operand(1)->type().element == ElementType::ui64) return out;
  const auto& dn = op.attrs().get<ir::GatherDims>("dimension_numbers");
  const auto& sizes = op.attrs().get<std::vector<int64_t>>("slice_sizes");
  const auto& shape = op.operand(0)->type().shape;
  for (size_t c = 0; c < dn.start_index_map.size(); ++c) {
    auto d = static_cast<size_t>(dn.start_index_map[c]);
    if (d >= shape.size() || sizes[d] != 1 || shape[d] == 1 || !rule.operands[0][d].empty() ||
        contains(dn.operand_batching_dims, static_cast<int64_t>(d)))
      continue;
    int f = rule.add(shape[d], FactorKind::kReduction);
    rule.operands[0][d] = {f};
    out.push_back({d, c, f});
  }
  return out;
}

LocalIndices local_indices(LocalContext& ctx, ir::Builder& b, const Op& op, Tensor indices,
                           const std::vector<IndexedDim>& dims, const FactorAxes& assign,
                           const std::vector<int64_t>& piece, const ir::Mesh& mesh) {
  const auto& dn = op.attrs().get<ir::GatherDims>("dimension_numbers");
  const std::vector<int64_t> shape = indices.shape();
  const auto ivd = static_cast<size_t>(dn.index_vector_dim);
  bool explicit_vector = ivd < shape.size();
  std::vector<int64_t> one = shape;  // one component's shape
  if (explicit_vector) one[ivd] = 1;
  ElementType type = indices.element();
  Tensor out = indices;
  std::optional<Tensor> mask;
  for (const IndexedDim& id : dims) {
    const auto& axes = assign[static_cast<size_t>(id.factor)];
    if (axes.empty()) continue;
    Tensor comp = indices;
    if (explicit_vector) {
      std::vector<int64_t> start(shape.size(), 0), limit = shape;
      start[ivd] = static_cast<int64_t>(id.component);
      limit[ivd] = start[ivd] + 1;
      comp = ir::slice(indices, start, limit);
    }
    // Clamped to the whole dimension (gather's own clamp for a slice of 1), then to this piece.
    int64_t whole = op.operand(0)->type().shape[id.dim], p = piece[id.dim];
    Tensor g = ir::convert(comp, ElementType::i64);
    g = ir::minimum(ir::maximum(g, splat(b, ElementType::i64, 0, one)), splat(b, ElementType::i64, double(whole - 1), one));
    Tensor offset = ir::convert(piece_offset(ctx, b, mesh, axes, p), ElementType::i64);
    Tensor local = g - ir::broadcast_to(offset, one);
    Tensor ok = ir::compare(local, splat(b, ElementType::i64, 0, one), ir::ComparisonDirection::GE) &
                ir::compare(local, splat(b, ElementType::i64, double(p), one), ir::ComparisonDirection::LT);
    mask = mask ? (*mask & ok) : ok;
    local = ir::minimum(ir::maximum(local, splat(b, ElementType::i64, 0, one)), splat(b, ElementType::i64, double(p - 1), one));
    Tensor back = ir::convert(local, type);
    if (!explicit_vector) {
      out = back;
      continue;
    }
    std::vector<int64_t> all(shape.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
    Tensor which = ir::compare(b.iota(ir::Type(ElementType::i32, shape), static_cast<int64_t>(ivd)),
                               splat(b, ElementType::i32, double(id.component), shape), ir::ComparisonDirection::EQ);
    out = ir::select(which, ir::broadcast_in_dim(back, shape, all), out);
  }
  TESSERA_CHECK(mask.has_value(), "{}: local indices without a split indexed dimension", op.name());
  Tensor in_piece = *mask;
  if (explicit_vector) {
    std::vector<int64_t> batch = shape;
    batch.erase(batch.begin() + static_cast<ptrdiff_t>(ivd));
    in_piece = ir::reshape(in_piece, batch);
  }
  return {out, in_piece};
}

Tensor zero_outside(const Op& op, Tensor result, const Tensor& in_piece) {
  const auto& dn = op.attrs().get<ir::GatherDims>("dimension_numbers");
  const std::vector<int64_t> shape = result.shape();
  std::vector<int64_t> batch;  // the result's dimensions that index the indices, in order
  for (size_t d = 0; d < shape.size(); ++d)
    if (!contains(dn.offset_dims, static_cast<int64_t>(d))) batch.push_back(static_cast<int64_t>(d));
  Tensor mask = ir::broadcast_in_dim(in_piece, shape, batch);
  // (select, not a product: a NaN or infinity in a row this device does not own must not leak)
  return ir::select(mask, result, splat(result.builder(), result.element(), 0, shape));
}

std::optional<HaloPlan> plan_halo(int64_t size, int64_t start, int64_t limit, int64_t stride, int64_t shards) {
  const int64_t n = shards, p = piece_size(size, n);
  const int64_t length = (limit - start + stride - 1) / stride;
  if (length <= 0 || p <= 0) return std::nullopt;
  HaloPlan plan;
  plan.shards = n;
  plan.piece = p;
  plan.result_piece = piece_size(length, n);
  plan.stride = stride;
  const int64_t q = plan.result_piece;
  // Receiving shard i makes result elements [iq, iq + count) from operand elements [lo, hi).
  std::vector<int64_t> lo(static_cast<size_t>(n)), hi(static_cast<size_t>(n));
  std::vector<bool> needs(static_cast<size_t>(n));
  int64_t kmin = std::numeric_limits<int64_t>::max(), kmax = std::numeric_limits<int64_t>::min();
  for (int64_t i = 0; i < n; ++i) {
    int64_t count = std::clamp<int64_t>(length - i * q, 0, q);
    auto u = static_cast<size_t>(i);
    needs[u] = count > 0;
    if (!needs[u]) continue;
    lo[u] = start + i * q * stride;
    hi[u] = start + (i * q + count - 1) * stride + 1;
    kmin = std::min(kmin, lo[u] / p - i);
    kmax = std::max(kmax, (hi[u] - 1) / p - i);
  }
  if (kmin > kmax) return std::nullopt;
  // Source s sends chunk k to receiver s - k only, so each chunk's offset is set per receiver:
  // the part of the piece it needs when that is all it needs; else the suffix of its first piece,
  // the whole of those between and the prefix of its last, which then join into one run.
  auto first = [&](int64_t i) { return lo[static_cast<size_t>(i)] / p - i; };
  auto last = [&](int64_t i) { return (hi[static_cast<size_t>(i)] - 1) / p - i; };
  for (int64_t k = kmin; k <= kmax; ++k) {
    HaloChunk c;
    c.shift = k;
    c.offset.assign(static_cast<size_t>(n), 0);
    c.receives.assign(static_cast<size_t>(n), false);
    for (int64_t i = 0; i < n; ++i) {
      auto u = static_cast<size_t>(i);
      if (!needs[u] || k < first(i) || k > last(i)) continue;
      c.receives[u] = true;
      int64_t s = i + k;
      int64_t w = first(i) == last(i) ? hi[u] - lo[u]
                : k == first(i)       ? (s + 1) * p - lo[u]
                : k == last(i)        ? hi[u] - s * p
                                      : p;
      c.width = std::max(c.width, w);
    }
    for (int64_t i = 0; i < n; ++i) {
      auto u = static_cast<size_t>(i);
      if (!c.receives[u]) continue;
      int64_t s = i + k;
      c.offset[static_cast<size_t>(s)] = first(i) == last(i) ? std::clamp<int64_t>(lo[u] - s * p, 0, p - c.width)
                                         : k == first(i)       ? p - c.width
                                                               : 0;
    }
    plan.chunks.push_back(std::move(c));
  }
  std::vector<int64_t> at;  // each chunk's place in the received run
  int64_t total = 0;
  for (const HaloChunk& c : plan.chunks) {
    at.push_back(total);
    total += c.width;
  }
  const int64_t window = (q - 1) * stride + 1;
  plan.start.assign(static_cast<size_t>(n), 0);
  int64_t end = window;
  for (int64_t i = 0; i < n; ++i) {
    auto u = static_cast<size_t>(i);
    if (!needs[u]) continue;
    auto k = static_cast<size_t>(first(i) - kmin);
    int64_t s = i + first(i);
    plan.start[u] = at[k] + lo[u] - (s * p + plan.chunks[k].offset[static_cast<size_t>(s)]);
    end = std::max(end, plan.start[u] + window);
  }
  plan.pad = std::max<int64_t>(0, end - total);
  return plan;
}

int64_t halo_bytes(const HaloPlan& plan, int64_t other, int64_t element_bytes) {
  int64_t bytes = 0;
  for (const HaloChunk& c : plan.chunks)
    if (c.shift != 0 && std::find(c.receives.begin(), c.receives.end(), true) != c.receives.end())
      bytes += c.width * other * element_bytes;
  return bytes;
}

Tensor halo_slice(LocalContext& ctx, Tensor x, int64_t dim, const HaloPlan& plan, const ir::Mesh& mesh,
                  const std::vector<ir::AxisRef>& axes) {
  ir::Builder& b = x.builder();
  const auto d = static_cast<size_t>(dim);
  const std::vector<int64_t> shape = x.shape();
  TESSERA_CHECK(shape[d] == plan.piece, "halo: a piece of {} along dimension {}, planned for {}", shape[d], dim, plan.piece);
  // Start indices along every dimension, `at` along `dim`.
  auto starts = [&](const Tensor& at) {
    std::vector<Tensor> s(shape.size(), b.scalar(ElementType::i32, 0));
    s[d] = at;
    return s;
  };
  const Groups groups = groups_over(mesh, axes);
  std::vector<Tensor> parts;
  for (const HaloChunk& c : plan.chunks) {
    bool any = std::find(c.receives.begin(), c.receives.end(), true) != c.receives.end();
    std::vector<int64_t> sizes = shape;
    sizes[d] = c.width;
    Tensor chunk = c.width == plan.piece ? x : ir::dynamic_slice(x, starts(per_shard(ctx, b, mesh, axes, c.offset)), sizes);
    if (c.shift != 0 && any) {
      std::vector<std::pair<int64_t, int64_t>> pairs;
      for (const auto& g : groups)
        for (int64_t i = 0; i < plan.shards; ++i)
          if (c.receives[static_cast<size_t>(i)])
            pairs.push_back({g[static_cast<size_t>(i + c.shift)], g[static_cast<size_t>(i)]});
      std::sort(pairs.begin(), pairs.end());
      chunk = ir::collective_permute(chunk, pairs);
      if (ctx.devices_are_replicas) chunk.value()->defining_op()->attrs().erase("channel_handle");
      std::string forced = fmt::format("dimension {} halo (shift {})", dim, c.shift);
      ctx.report.collectives.push_back({"collective_permute", ctx.origin, 2, byte_size(chunk.type()), chunk.value()->defining_op(),
                                        ctx.forced_by.empty() ? forced : ctx.forced_by + " " + forced, ""});
    }
    parts.push_back(chunk);
  }
  Tensor run = parts.size() == 1 ? parts[0] : ir::concatenate(parts, dim);
  if (plan.pad > 0) {
    std::vector<int64_t> lo(shape.size(), 0), hi(shape.size(), 0);
    hi[d] = plan.pad;
    run = ir::pad(run, b.scalar(run.element(), 0), lo, hi);
  }
  const int64_t window = (plan.result_piece - 1) * plan.stride + 1;
  std::vector<int64_t> sizes = run.shape();
  sizes[d] = window;
  Tensor out = ir::dynamic_slice(run, starts(per_shard(ctx, b, mesh, axes, plan.start)), sizes);
  if (plan.stride > 1) {
    std::vector<int64_t> start(shape.size(), 0), limit = out.shape(), strides(shape.size(), 1);
    strides[d] = plan.stride;
    out = ir::slice(out, start, limit, strides);
  }
  return out;
}

std::vector<HaloDim> halo_dims(const Op& op, const FactorRule& rule, const FactorAxes& assign,
                               const ir::Sharding& have, const ir::Mesh& mesh) {
  const auto& shape = op.operand(0)->type().shape;
  if (have.mesh != mesh.name || !have.unreduced.empty()) return {};
  const auto& start = op.attrs().get<std::vector<int64_t>>("start_indices");
  const auto& limit = op.attrs().get<std::vector<int64_t>>("limit_indices");
  const auto* strides = op.attrs().find<std::vector<int64_t>>("strides");
  std::vector<HaloDim> halo;
  for (size_t d = 0; d < shape.size(); ++d) {
    const std::vector<ir::AxisRef>& axes = have.dims[d].axes;
    if (!rule.operands[0][d].empty() || axes.empty()) continue;
    int64_t stride = strides && d < strides->size() ? (*strides)[d] : 1;
    if (start[d] == 0 && limit[d] == shape[d] && stride == 1) continue;  // (a dimension of 1, read whole)
    bool free = std::none_of(assign.begin(), assign.end(), [&](const std::vector<ir::AxisRef>& fa) {
      return std::any_of(fa.begin(), fa.end(), [&](const ir::AxisRef& u) {
        return std::any_of(axes.begin(), axes.end(), [&](const ir::AxisRef& a) { return overlaps(u, a, mesh); });
      });
    });
    auto plan = free ? plan_halo(shape[d], start[d], limit[d], stride, shard_count(mesh, axes)) : std::nullopt;
    if (plan) halo.push_back({d, axes, *plan});
  }
  return halo;
}

int64_t halo_bytes(const std::vector<HaloDim>& halo, std::vector<int64_t> local, int64_t element_bytes) {
  int64_t bytes = 0;
  for (const HaloDim& h : halo) {
    int64_t other = 1;
    for (size_t d = 0; d < local.size(); ++d) other *= d == h.dim ? 1 : local[d];
    bytes += halo_bytes(h.plan, other, element_bytes);
    local[h.dim] = h.plan.result_piece;
  }
  return bytes;
}

Tensor slice_rest(const Op& op, Tensor x, const std::vector<size_t>& done) {
  const auto& global = op.operand(0)->type().shape;
  std::vector<int64_t> start = op.attrs().get<std::vector<int64_t>>("start_indices");
  std::vector<int64_t> limit = op.attrs().get<std::vector<int64_t>>("limit_indices");
  std::vector<int64_t> strides;
  if (const auto* given = op.attrs().find<std::vector<int64_t>>("strides")) strides = *given;
  strides.resize(global.size(), 1);
  const std::vector<int64_t> shape = x.shape();
  for (size_t d = 0; d < global.size(); ++d) {
    bool whole = start[d] == 0 && limit[d] == global[d] && strides[d] == 1;
    if (whole || std::find(done.begin(), done.end(), d) != done.end()) {
      start[d] = 0;
      limit[d] = shape[d];
      strides[d] = 1;
    }
  }
  if (start == std::vector<int64_t>(shape.size(), 0) && limit == shape) return x;
  return ir::slice(x, start, limit, strides);
}

}  // namespace tessera::spmd
