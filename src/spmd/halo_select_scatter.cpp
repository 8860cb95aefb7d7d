// select_and_scatter (a max-pool's gradient) along a split window dimension, kept split by halo
// exchanges (split_reads.h) where the cost model finds that cheaper than gathering: the result
// is split like the operand, and a device's piece of it receives the scatters of every window
// that touches the piece, each of which selects among its own positions only. So each device
// takes those windows whole, the run of the operand they cover and the run of the source they
// scatter (both by collective_permute, several chunks where a run is longer than a piece), does
// the op on the runs and keeps its piece: windows that straddle two pieces are selected on both
// devices, alike. The runs have one length on every device, so at their ends they hold windows
// that do not touch the piece, or lie outside the source: those scatter the scatter's identity
// (-0.0 for a float sum: x + -0.0 is x, bit for bit), or land outside the piece. Only without
// padding along the dimension: a padding position must never be selected, and a device whose run
// holds padding could only mark it with a value the select then has to lose, which no value does
// against every input (NaN, equal extremes); padded windows gather instead (docs/CONFORMANCE.md).
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
    if (axes.empty() || w.trivial(d) || w.pad_lo[d] != 0 || w.pad_hi[d] != 0 || !free_of(assign, axes, mesh)) continue;
    const int64_t n = shard_count(mesh, axes), p = piece_size(shape[d], n), k = w.size[d], s = w.stride[d];
    if (p <= 0 || source[d] <= 0) continue;
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
  // Each device's piece of the result, from where its run starts.
  for (const HaloDim& h : halo) {
    if (h.operand != 0) continue;
    std::vector<int64_t> at(h.plan.first_index.size());
    for (size_t i = 0; i < at.size(); ++i) at[i] = static_cast<int64_t>(i) * h.plan.piece - h.plan.first_index[i];
    std::vector<Tensor> starts(out.shape().size(), b.scalar(ir::ElementType::i32, 0));
    starts[h.dim] = per_shard(ctx, b, mesh, h.axes, at);
    std::vector<int64_t> sizes = out.shape();
    sizes[h.dim] = h.plan.piece;
    out = ir::dynamic_slice(out, starts, sizes);
  }
  return out;
}

}  // namespace tessera::spmd
