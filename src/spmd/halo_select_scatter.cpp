// select_and_scatter (a max-pool's gradient) along a split window dimension, kept split by halo
// exchanges (split_reads.h) where the cost model finds that cheaper than gathering: the result
// is split like the operand, and a device's piece of it receives the scatters of every window
// that touches the piece, each of which selects among its own positions only. So each device
// takes those windows whole, the run of the operand they cover and the run of the source they
// scatter (both by collective_permute, several chunks where a run is longer than a piece), does
// the op on the runs and keeps its piece: windows that straddle two pieces are selected on both
// devices, alike. The runs have one length on every device, so at their ends they hold windows
// that do not touch the piece, or lie outside the source: those scatter the scatter's identity
// (-0.0 for a float sum: x + -0.0 is x, bit for bit), or land outside the piece.
// Padding along the dimension: a padding position is never selected (the reference kernel skips
// it), and no value put in a run could stand for it against every input (NaN, equal extremes).
// So the local op keeps the padding attribute, and every run lies inside the operand: a device
// whose windows reach the operand's start has its run start there (the local padding is then
// the operand's), one whose windows reach its end has its run end there, and on the others the
// windows that the local padding truncates must not touch the piece. Each run starts at a
// multiple of the stride, so its windows are the operand's (window j of a run from r is window
// r / stride + j). Runs of one length on every device that meet all that may be longer than
// the windows touching a piece need, but only those windows' rows and windows move: the rest of
// a run is read only by windows that scatter outside the piece. Where no runs shorter than the
// operand meet it, the dimension gathers.
#include <fmt/format.h>

#include <algorithm>

#include "ir/window.h"
#include "spmd/identities.h"
#include "spmd/mesh_math.h"
#include "spmd/split_reads.h"

namespace tessera::spmd {

using ir::Op;
using ir::OpKind;
using ir::Tensor;

namespace {

int64_t floor_div(int64_t a, int64_t d) { return a >= 0 ? a / d : -((-a + d - 1) / d); }

// The scatter's identity, which a window outside the source scatters.
std::optional<OpKind> scatter_combiner(const Op& op) {
  std::optional<OpKind> k = ir::region_combiner(op, 1);
  if (!k) return std::nullopt;
  switch (*k) {
    case OpKind::Add: case OpKind::Multiply: case OpKind::Maximum: case OpKind::Minimum: case OpKind::And: case OpKind::Or:
      return k;
    default:
      return std::nullopt;
  }
}

// Runs along a padded dimension (see the top): where each device's run of `length` operand
// elements starts, and the number of windows on it.
struct PaddedRuns {
  std::vector<int64_t> first;
  int64_t length = 0, windows = 0;
  // what of each run matters: the piece and the windows touching it (operand), those windows
  // (source); the rest is read only by windows that scatter outside the piece
  std::vector<std::pair<int64_t, int64_t>> operand, source;
};

// The shortest runs for a dimension of `size` elements in `n` pieces, windows of `k` by stride
// `s` over it padded by `lo` and `hi` (`count` windows); nullopt when only the whole dimension
// serves. Each device's run start is the latest multiple of s at or before its piece, its first
// window that touches the piece (the windows before the run are cut by the local padding) and
// size - length (the run inside the operand), or 0.
std::optional<PaddedRuns> padded_runs(int64_t size, int64_t n, int64_t k, int64_t s, int64_t lo, int64_t hi,
                                      int64_t count) {
  const int64_t p = piece_size(size, n);
  for (int64_t length = std::max<int64_t>(1, k - lo - hi); length < size; ++length) {
    const auto un = static_cast<size_t>(n);
    PaddedRuns out{std::vector<int64_t>(un), length, (lo + length + hi - k) / s + 1, {un, {0, 0}}, {un, {0, 0}}};
    bool fits = true;
    for (int64_t i = 0; i < n && fits; ++i) {
      const int64_t begin = i * p, end = std::min(begin + p, size);
      int64_t latest = size - length;
      // windows a..z touch the piece: a's start (a·s - lo) is the first position read
      const int64_t a = std::max<int64_t>(0, -floor_div(-(begin - k + 1 + lo), s)), z = std::min(count - 1, floor_div(end - 1 + lo, s));
      const bool touched = begin < end && a <= z;
      if (begin < end) latest = std::min({latest, begin, touched ? a * s - lo : latest});
      const int64_t r = std::max<int64_t>(0, floor_div(latest, s) * s);
      out.first[static_cast<size_t>(i)] = r;
      if (begin >= end) continue;  // (an empty piece of an uneven split keeps whatever it gets)
      // the piece inside the run, and the windows touching it whole unless the run ends with the operand
      fits = end <= r + length && (r + length == size || !touched || z * s - lo + k <= r + length);
      out.operand[static_cast<size_t>(i)] = {touched ? std::max<int64_t>(0, std::min(begin, a * s - lo)) : begin,
                                             touched ? std::min(size, std::max(end, z * s - lo + k)) : end};
      if (touched) out.source[static_cast<size_t>(i)] = {a, z + 1};
    }
    if (fits) return out;
  }
  return std::nullopt;
}

}  // namespace

std::vector<HaloDim> select_scatter_halo_dims(const Op& op, const FactorAxes& assign, const ir::Sharding& operand,
                                              const ir::Mesh& mesh) {
  if (operand.mesh != mesh.name || !operand.unreduced.empty() || !scatter_combiner(op)) return {};
  const auto& shape = op.operand(0)->type().shape;
  const auto& source = op.operand(1)->type().shape;
  const ir::Window w = ir::read_window(op.attrs(), ir::kSelectAndScatterWindow, shape.size());
  std::vector<HaloDim> halo;
  for (size_t d = 0; d < shape.size(); ++d) {
    const std::vector<ir::AxisRef>& axes = operand.dims[d].axes;
    if (axes.empty() || w.trivial(d) || w.pad_lo[d] < 0 || w.pad_hi[d] < 0 || !free_of(assign, axes, mesh)) continue;
    const int64_t n = shard_count(mesh, axes), p = piece_size(shape[d], n), k = w.size[d], s = w.stride[d];
    if (p <= 0 || source[d] <= 0) continue;
    if (w.pad_lo[d] != 0 || w.pad_hi[d] != 0) {
      std::optional<PaddedRuns> runs = padded_runs(shape[d], n, k, s, w.pad_lo[d], w.pad_hi[d], source[d]);
      if (!runs) continue;
      std::vector<int64_t> lo;
      for (int64_t r : runs->first) lo.push_back(r / s);
      std::optional<HaloPlan> run = plan_runs(shape[d], n, runs->first, runs->length, runs->operand);
      std::optional<HaloPlan> scattered = plan_runs(source[d], n, lo, runs->windows, runs->source);
      if (!run || !scattered) continue;
      halo.push_back({d, axes, *run, 0});
      halo.push_back({d, axes, *scattered, 1});
      continue;
    }
    // Device i's piece [ip, ip + p) is touched by windows a..z; its run holds `length`
    // positions from window a's start: those windows and the whole piece (a window starting at
    // or before ip, where windows leave gaps: strides longer than the window).
    std::vector<int64_t> lo(static_cast<size_t>(n)), first(static_cast<size_t>(n));
    int64_t length = k;
    for (int64_t i = 0; i < n; ++i) {
      int64_t a = std::min(-floor_div(-(i * p - k + 1), s), floor_div(i * p, s)), z = floor_div(i * p + p - 1, s);
      lo[static_cast<size_t>(i)] = a;
      first[static_cast<size_t>(i)] = a * s;
      length = std::max({length, i * p + p - a * s, (z - a) * s + k});
    }
    const int64_t windows = (length - k) / s + 1;
    std::optional<HaloPlan> run = plan_runs(shape[d], n, first, length);
    std::optional<HaloPlan> scattered = plan_runs(source[d], n, lo, windows);
    if (!run || !scattered) continue;
    halo.push_back({d, axes, *run, 0});
    halo.push_back({d, axes, *scattered, 1});
  }
  return halo;
}

Tensor halo_select_scatter(LocalContext& ctx, const Op& op, std::vector<Tensor> operands, const std::vector<HaloDim>& halo,
                           const ir::Mesh& mesh, const std::function<Tensor(const std::vector<Tensor>&, const ir::Type&)>& emit) {
  ir::Builder& b = operands[0].builder();
  const OpKind combiner = *scatter_combiner(op);
  for (const HaloDim& h : halo) {
    ctx.forced_by = fmt::format("operand {}", h.operand);
    const auto d = static_cast<int64_t>(h.dim);
    Tensor& x = operands[h.operand];
    x = halo_slice(ctx, x, d, h.plan, mesh, h.axes);
    if (h.operand != 1) continue;
    // (windows outside the source scatter the identity; -0.0 is a float sum's exact one)
    Tensor identity = combiner == OpKind::Add && ir::is_float(x.element()) ? b.scalar(x.element(), -0.0)
                                                                           : identity_of(combiner, x, b);
    x = ir::select(window_valid(ctx, x, d, h.plan, mesh, h.axes), x, ir::broadcast_to(identity, x.shape()));
  }
  Tensor out = emit(operands, ir::Type(op.result(0)->type().element, operands[0].shape()));
  // Each device's piece of the result, from where its run starts (a run that ends with the
  // operand, on a padded dimension, is extended by the padding of the last, uneven piece).
  for (const HaloDim& h : halo) {
    if (h.operand != 0) continue;
    std::vector<int64_t> at(h.plan.first_index.size());
    int64_t reach = 0;
    for (size_t i = 0; i < at.size(); ++i) {
      at[i] = std::max<int64_t>(0, std::min(static_cast<int64_t>(i) * h.plan.piece, h.plan.size) - h.plan.first_index[i]);
      reach = std::max(reach, at[i] + h.plan.piece);
    }
    if (int64_t grow = reach - out.shape()[h.dim]; grow > 0) {
      std::vector<int64_t> lo(out.shape().size(), 0), hi(out.shape().size(), 0);
      hi[h.dim] = grow;
      out = ir::pad(out, b.scalar(out.element(), 0), lo, hi);
    }
    std::vector<Tensor> starts(out.shape().size(), b.scalar(ir::ElementType::i32, 0));
    starts[h.dim] = per_shard(ctx, b, mesh, h.axes, at);
    std::vector<int64_t> sizes = out.shape();
    sizes[h.dim] = h.plan.piece;
    out = ir::dynamic_slice(out, starts, sizes);
  }
  return out;
}

}  // namespace tessera::spmd
