// Local gather over split indexed dimensions and the halo exchanges of slices, reverses and
// shifted windows (pad, concatenate), see split_reads.h; the ops' use of them is halo_ops.cpp.
#include "spmd/split_reads.h"

#include <algorithm>
#include <limits>

#include "spmd/identities.h"
#include "spmd/mesh_math.h"
#include "support/error.h"
#include "support/memory.h"

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

Tensor zero_outside(const Op& op, Tensor result, const Tensor& in_piece, ir::OpKind combiner) {
  const auto& dn = op.attrs().get<ir::GatherDims>("dimension_numbers");
  const std::vector<int64_t> shape = result.shape();
  std::vector<int64_t> batch;  // the result's dimensions that index the indices, in order
  for (size_t d = 0; d < shape.size(); ++d)
    if (!contains(dn.offset_dims, static_cast<int64_t>(d))) batch.push_back(static_cast<int64_t>(d));
  Tensor mask = ir::broadcast_in_dim(in_piece, shape, batch);
  // (select, not a product: a NaN or infinity in a row this device does not own must not leak)
  return ir::select(mask, result, ir::broadcast_to(identity_of(combiner, result, result.builder()), shape));
}

namespace {

// The exchange that brings receiving shard i operand elements [lo[i], hi[i]) (where needs[i]) of
// a dimension in pieces of p, for windows of `window` elements (see plan_halo, plan_reverse).
std::optional<HaloPlan> plan_ranges(HaloPlan plan, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi,
                                    const std::vector<bool>& needs, int64_t window);
// plan_ranges for windows of plan.window elements from plan.first_index (receiver i needs operand
// elements [lo[i], hi[i]) of its window, where needs[i]), each window placed where it starts in
// the received run (`lead` elements put in front where one starts before it).
std::optional<HaloPlan> place_windows(const HaloPlan& plan, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi,
                                      const std::vector<bool>& needs);

}  // namespace

std::optional<HaloPlan> plan_halo(int64_t size, int64_t start, int64_t limit, int64_t stride, int64_t shards) {
  const int64_t n = shards, p = piece_size(size, n);
  const int64_t length = limit <= start ? 0 : support::ceil_div(limit - start, stride);
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
  for (int64_t i = 0; i < n; ++i) {
    int64_t count = std::clamp<int64_t>(length - i * q, 0, q);
    auto u = static_cast<size_t>(i);
    needs[u] = count > 0;
    if (!needs[u]) continue;
    lo[u] = start + i * q * stride;
    hi[u] = start + (i * q + count - 1) * stride + 1;
  }
  return plan_ranges(plan, lo, hi, needs, (q - 1) * stride + 1);
}

std::optional<HaloPlan> plan_reverse(int64_t size, int64_t shards) {
  const int64_t n = shards, p = piece_size(size, n);
  if (p <= 0) return std::nullopt;
  HaloPlan plan;
  plan.shards = n;
  plan.piece = plan.result_piece = p;
  plan.reversed = true;
  // Result elements [ip, ip + count) are operand elements [size - ip - count, size - ip), backwards.
  std::vector<int64_t> lo(static_cast<size_t>(n)), hi(static_cast<size_t>(n));
  std::vector<bool> needs(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t count = std::clamp<int64_t>(size - i * p, 0, p);
    auto u = static_cast<size_t>(i);
    needs[u] = count > 0;
    lo[u] = size - i * p - count;
    hi[u] = size - i * p;
  }
  return plan_ranges(plan, lo, hi, needs, p);
}

std::optional<HaloPlan> plan_shift(int64_t size, int64_t low, int64_t length, int64_t shards) {
  std::optional<HaloPlan> plan = plan_window(size, -low, 1, 1, length, shards);
  if (plan) plan->window = 0;  // (the result piece: a pad's window is its result)
  return plan;
}

std::optional<HaloPlan> plan_window(int64_t size, int64_t start, int64_t stride, int64_t extent, int64_t length,
                                    int64_t shards, int64_t dilation) {
  const int64_t n = shards, p = piece_size(size, n), b = dilation;
  if (length <= 0 || p <= 0 || b < 1) return std::nullopt;
  HaloPlan plan;
  plan.shards = n;
  plan.piece = p;
  plan.result_piece = piece_size(length, n);
  plan.size = size;
  plan.dilation = b;
  const int64_t q = plan.result_piece;
  plan.dilated_window = (q - 1) * stride + extent;
  // Receiving shard i makes result elements [iq, iq + count), which read dilated positions
  // [first, end) from first = start + iq * stride on: operand elements [ceil(first / b),
  // floor((end - 1) / b)] (all of them for b = 1), of which it needs those in [0, size).
  auto floor_div = [](int64_t a, int64_t d) { return a >= 0 ? a / d : -((-a + d - 1) / d); };
  std::vector<int64_t> lo(static_cast<size_t>(n)), hi(static_cast<size_t>(n));
  std::vector<bool> needs(static_cast<size_t>(n));
  plan.first_index.assign(static_cast<size_t>(n), 0);
  plan.phase.assign(static_cast<size_t>(n), 0);
  int64_t window = 1;
  for (int64_t i = 0; i < n; ++i) {
    auto u = static_cast<size_t>(i);
    int64_t count = std::clamp<int64_t>(length - i * q, 0, q), first = start + i * q * stride;
    int64_t a = -floor_div(-first, b), e = floor_div(first + (count - 1) * stride + extent - 1, b) + 1;
    plan.first_index[u] = a;
    plan.phase[u] = a * b - first;
    lo[u] = std::max<int64_t>(0, a);
    hi[u] = count > 0 ? std::min(size, e) : 0;
    needs[u] = count > 0 && lo[u] < hi[u];
    if (count > 0) window = std::max(window, e - a);
  }
  plan.window = window;
  return place_windows(plan, lo, hi, needs);
}

std::optional<HaloPlan> plan_runs(int64_t size, int64_t shards, const std::vector<int64_t>& first, int64_t window,
                                  const std::vector<std::pair<int64_t, int64_t>>& needed) {
  const int64_t p = piece_size(size, shards);
  if (p <= 0 || window <= 0) return std::nullopt;
  HaloPlan plan;
  plan.shards = shards;
  plan.piece = p;
  plan.result_piece = window;
  plan.size = size;
  plan.window = window;
  plan.first_index = first;
  const auto n = static_cast<size_t>(shards);
  std::vector<int64_t> lo(n), hi(n);
  std::vector<bool> needs(n);
  for (size_t u = 0; u < n; ++u) {
    lo[u] = std::max<int64_t>(0, first[u]);
    hi[u] = std::min(size, first[u] + window);
    if (!needed.empty()) {
      lo[u] = std::max(lo[u], needed[u].first);
      hi[u] = std::min(hi[u], needed[u].second);
    }
    needs[u] = lo[u] < hi[u];
  }
  return place_windows(plan, lo, hi, needs);
}

namespace {

std::optional<HaloPlan> place_windows(const HaloPlan& plan, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi,
                                      const std::vector<bool>& needs) {
  const int64_t n = plan.shards, window = plan.window;
  std::optional<HaloPlan> out = plan_ranges(plan, lo, hi, needs, window);
  if (!out) return out;
  // plan_ranges put each window where its operand range starts; it starts lo - first earlier
  // (before the run where that is negative: `lead` elements are put in front).
  int64_t total = 0, lowest = 0, end = 0;
  for (const HaloChunk& c : out->chunks) total += c.width;
  for (int64_t i = 0; i < n; ++i) {
    auto u = static_cast<size_t>(i);
    out->start[u] = needs[u] ? out->start[u] - (lo[u] - plan.first_index[u]) : 0;
    lowest = std::min(lowest, out->start[u]);
  }
  out->lead = -lowest;
  for (int64_t& s : out->start) {
    s += out->lead;
    end = std::max(end, s + window);
  }
  out->pad = std::max<int64_t>(0, end - total - out->lead);
  return out;
}

std::optional<HaloPlan> plan_ranges(HaloPlan plan, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi,
                                    const std::vector<bool>& needs, int64_t window) {
  const int64_t n = plan.shards, p = plan.piece;
  const auto un = static_cast<size_t>(n);
  auto first = [&](int64_t i) { return lo[static_cast<size_t>(i)] / p; };  // the pieces a range lies in
  auto last = [&](int64_t i) { return (hi[static_cast<size_t>(i)] - 1) / p; };
  // Chunk c brings each receiver the c-th piece of its range, when no source then serves two
  // receivers (a reverse's mirrored ranges); otherwise chunk c brings the piece at shift
  // kmin + c from the receiver (a slice's ranges, which move together).
  int64_t kmin = std::numeric_limits<int64_t>::max(), kmax = std::numeric_limits<int64_t>::min(), most = 0;
  for (int64_t i = 0; i < n; ++i)
    if (needs[static_cast<size_t>(i)]) {
      kmin = std::min(kmin, first(i) - i);
      kmax = std::max(kmax, last(i) - i);
      most = std::max(most, last(i) - first(i) + 1);
    }
  if (most == 0) return std::nullopt;
  // (ordered from the first piece of each range, or from the last, joined in reverse)
  auto from_first = [&](int64_t c, int64_t i) { return first(i) + c <= last(i) ? first(i) + c : -1; };
  auto from_last = [&](int64_t c, int64_t i) { return last(i) - c >= first(i) ? last(i) - c : -1; };
  auto by_shift = [&](int64_t c, int64_t i) {
    int64_t s = i + kmin + c;
    return s >= first(i) && s <= last(i) ? s : -1;
  };
  auto unique = [&](const auto& source) {
    for (int64_t c = 0; c < most; ++c) {
      std::vector<bool> used(un);
      for (int64_t i = 0; i < n; ++i) {
        int64_t s = needs[static_cast<size_t>(i)] ? source(c, i) : -1;
        if (s < 0) continue;
        if (used[static_cast<size_t>(s)]) return false;
        used[static_cast<size_t>(s)] = true;
      }
    }
    return true;
  };
  int mode = unique(from_first) ? 0 : unique(from_last) ? 1 : 2;
  auto source_of = [&](int64_t c, int64_t i) { return mode == 0 ? from_first(c, i) : mode == 1 ? from_last(c, i) : by_shift(c, i); };
  const int64_t count = mode < 2 ? most : kmax - kmin + 1;
  // Each source sends one chunk to one receiver, so each offset is set for its receiver: the part
  // of the piece it needs when that is all it needs; else the suffix of its first piece, the whole
  // of those between and the prefix of its last, which then join into one run.
  for (int64_t k = 0; k < count; ++k) {
    int64_t c = mode == 1 ? count - 1 - k : k;
    HaloChunk chunk;
    chunk.source.assign(un, -1);
    chunk.offset.assign(un, 0);
    for (int64_t i = 0; i < n; ++i) {
      auto u = static_cast<size_t>(i);
      int64_t s = !needs[u] ? -1 : source_of(c, i);
      if (s < 0) continue;
      chunk.source[u] = s;
      int64_t w = first(i) == last(i) ? hi[u] - lo[u]
                : s == first(i)       ? (s + 1) * p - lo[u]
                : s == last(i)        ? hi[u] - s * p
                                      : p;
      chunk.width = std::max(chunk.width, w);
    }
    for (int64_t i = 0; i < n; ++i) {
      auto u = static_cast<size_t>(i);
      int64_t s = chunk.source[u];
      if (s < 0) continue;
      chunk.offset[static_cast<size_t>(s)] = first(i) == last(i) ? std::clamp<int64_t>(lo[u] - s * p, 0, p - chunk.width)
                                             : s == first(i)       ? p - chunk.width
                                                                   : 0;
    }
    plan.chunks.push_back(std::move(chunk));
  }
  std::vector<int64_t> at;  // each chunk's place in the received run
  int64_t total = 0;
  for (const HaloChunk& c : plan.chunks) {
    at.push_back(total);
    total += c.width;
  }
  plan.start.assign(un, 0);
  int64_t end = window;
  for (int64_t i = 0; i < n; ++i) {
    auto u = static_cast<size_t>(i);
    if (!needs[u]) continue;
    size_t c = 0;  // the chunk of the range's first piece
    while (plan.chunks[c].source[u] != first(i)) ++c;
    int64_t s = first(i);
    plan.start[u] = at[c] + lo[u] - (s * p + plan.chunks[c].offset[static_cast<size_t>(s)]);
    // (reversed: the run is reversed first, so the window ends where the range began)
    if (plan.reversed) plan.start[u] = total - (plan.start[u] + hi[u] - lo[u]);
    end = std::max(end, plan.start[u] + window);
  }
  plan.pad = std::max<int64_t>(0, end - total);
  return plan;
}

}  // namespace

bool HaloChunk::remote() const {
  for (size_t i = 0; i < source.size(); ++i)
    if (source[i] >= 0 && source[i] != static_cast<int64_t>(i)) return true;
  return false;
}

int64_t halo_bytes(const HaloPlan& plan, int64_t other, int64_t element_bytes) {
  int64_t bytes = 0;
  for (const HaloChunk& c : plan.chunks)
    if (c.remote()) bytes += c.width * other * element_bytes;
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
    std::vector<int64_t> sizes = shape;
    sizes[d] = c.width;
    Tensor chunk = c.width == plan.piece ? x : ir::dynamic_slice(x, starts(per_shard(ctx, b, mesh, axes, c.offset)), sizes);
    if (c.remote()) {
      std::vector<std::pair<int64_t, int64_t>> pairs;
      std::vector<int64_t> local(static_cast<size_t>(plan.shards), 0);  // receivers that keep their own
      for (int64_t i = 0; i < plan.shards; ++i) {
        int64_t s = c.source[static_cast<size_t>(i)];
        if (s == i) local[static_cast<size_t>(i)] = 1;
        if (s < 0 || s == i) continue;
        for (const auto& g : groups) pairs.push_back({g[static_cast<size_t>(s)], g[static_cast<size_t>(i)]});
      }
      std::sort(pairs.begin(), pairs.end());
      Tensor moved = ir::collective_permute(chunk, pairs);
      if (ctx.devices_are_replicas) moved.value()->defining_op()->attrs().erase("channel_handle");
      std::string forced = fmt::format("dimension {} halo", dim);
      ctx.report.collectives.push_back({"collective_permute", ctx.origin, 2, byte_size(moved.type()), moved.value()->defining_op(),
                                        ctx.forced_by.empty() ? forced : ctx.forced_by + " " + forced, ""});
      if (std::find(local.begin(), local.end(), 1) != local.end()) {
        Tensor keep = ir::compare(per_shard(ctx, b, mesh, axes, local), b.scalar(ElementType::i32, 0), ir::ComparisonDirection::NE);
        moved = ir::select(ir::broadcast_to(keep, sizes), chunk, moved);
      }
      chunk = moved;
    }
    parts.push_back(chunk);
  }
  Tensor run = parts.size() == 1 ? parts[0] : ir::concatenate(parts, dim);
  if (plan.reversed) run = ir::reverse(run, {dim});
  if (plan.pad > 0 || plan.lead > 0) {
    std::vector<int64_t> lo(shape.size(), 0), hi(shape.size(), 0);
    lo[d] = plan.lead;
    hi[d] = plan.pad;
    run = ir::pad(run, b.scalar(run.element(), 0), lo, hi);
  }
  const int64_t window = plan.window > 0 ? plan.window : (plan.result_piece - 1) * plan.stride + 1;
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

Tensor window_valid(LocalContext& ctx, const Tensor& x, int64_t dim, const HaloPlan& plan, const ir::Mesh& mesh,
                    const std::vector<ir::AxisRef>& axes) {
  ir::Builder& b = x.builder();
  const std::vector<int64_t>& shape = x.shape();
  Tensor index = b.iota(ir::Type(ElementType::i32, shape), dim) +
                 ir::broadcast_to(per_shard(ctx, b, mesh, axes, plan.first_index), shape);
  return ir::compare(index, splat(b, ElementType::i32, 0, shape), ir::ComparisonDirection::GE) &
         ir::compare(index, splat(b, ElementType::i32, static_cast<double>(plan.size), shape), ir::ComparisonDirection::LT);
}

Tensor dilate_window(LocalContext& ctx, Tensor x, int64_t dim, const HaloPlan& plan, const ir::Mesh& mesh,
                     const std::vector<ir::AxisRef>& axes, const Tensor& fill) {
  if (plan.dilation == 1) return x;
  ir::Builder& b = x.builder();
  const auto d = static_cast<size_t>(dim);
  // Dilated as the op dilates, with b - 1 fills on either side so every device's window (which
  // starts `phase` positions before its first element) lies inside.
  const int64_t bd = plan.dilation;
  std::vector<int64_t> lo(x.shape().size(), 0), hi = lo, interior = lo;
  lo[d] = hi[d] = interior[d] = bd - 1;
  std::vector<int64_t> at(plan.phase.size());
  for (size_t i = 0; i < at.size(); ++i) at[i] = bd - 1 - plan.phase[i];
  // A window may reach past the fills after the last element: the last piece of an uneven
  // layout, whose rows beyond the end are padding. More fills keep it inside, since a
  // dynamic_slice that overhangs would be clamped (moved back) rather than filled.
  const int64_t rows = x.shape()[d];
  const int64_t dilated = rows == 0 ? 0 : (rows - 1) * bd + 1;
  for (int64_t a : at) hi[d] = std::max(hi[d], a + plan.dilated_window - lo[d] - dilated);
  x = ir::pad(x, fill, lo, hi, interior);
  std::vector<Tensor> starts(x.shape().size(), b.scalar(ElementType::i32, 0));
  starts[d] = per_shard(ctx, b, mesh, axes, at);
  std::vector<int64_t> sizes = x.shape();
  sizes[d] = plan.dilated_window;
  return ir::dynamic_slice(x, starts, sizes);
}

}  // namespace tessera::spmd
