// The ops that read a dimension no factor splits, done by halo exchange (split_reads.h): which
// dimensions of slice, reverse, pad, concatenate and reduce_window can stay split and their plans, the bytes
// those plans move (for the partitioner's cost model), and the op on the exchanged pieces.
#include <fmt/format.h>

#include <algorithm>

#include "ir/window.h"
#include "spmd/mesh_math.h"
#include "spmd/split_reads.h"
#include "support/error.h"

namespace tessera::spmd {

using ir::Op;
using ir::OpKind;
using ir::Tensor;

namespace {

bool contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

const std::vector<int64_t>& ints(const Op& op, const char* name) { return op.attrs().get<std::vector<int64_t>>(name); }

// concatenate: one window per operand along the concatenated dimension, all split by one set of
// axes (the result's, else the first split operand's), each operand shifted by those before it.
std::vector<HaloDim> concatenate_dims(const Op& op, const FactorAxes& assign, const std::vector<ir::Sharding>& have,
                                      const ir::Sharding& result, const ir::Mesh& mesh) {
  const auto d = static_cast<size_t>(op.attrs().get<int64_t>("dimension"));
  std::vector<const std::vector<ir::AxisRef>*> candidates;
  if (result.mesh == mesh.name && result.unreduced.empty() && d < result.dims.size()) candidates.push_back(&result.dims[d].axes);
  for (const ir::Sharding& h : have) candidates.push_back(&h.dims[d].axes);
  const int64_t length = op.result(0)->type().shape[d];
  for (const std::vector<ir::AxisRef>* axes : candidates) {
    if (axes->empty() || !free_of(assign, *axes, mesh)) continue;
    std::vector<HaloDim> halo;
    int64_t offset = 0;
    for (size_t i = 0; i < op.operands().size(); ++i) {
      const int64_t size = op.operand(i)->type().shape[d];
      std::optional<HaloPlan> plan = plan_shift(size, offset, length, shard_count(mesh, *axes));
      if (!plan) return {};  // (an empty operand)
      halo.push_back({d, *axes, *plan, i});
      offset += size;
    }
    return halo;
  }
  return {};
}

// The rest of slice or reverse `op` on x, whose dimensions `done` are already done (by
// halo_slice): the dimensions it reads whole as they are, the others sliced or reversed.
Tensor rest_of(const Op& op, Tensor x, const std::vector<size_t>& done) {
  const auto& global = op.operand(0)->type().shape;
  auto is_done = [&](size_t d) { return std::find(done.begin(), done.end(), d) != done.end(); };
  if (op.kind() == OpKind::Reverse) {
    std::vector<int64_t> dims;
    for (int64_t d : ints(op, "dimensions"))
      if (!is_done(static_cast<size_t>(d))) dims.push_back(d);
    return dims.empty() ? x : ir::reverse(x, dims);
  }
  std::vector<int64_t> start = ints(op, "start_indices");
  std::vector<int64_t> limit = ints(op, "limit_indices");
  std::vector<int64_t> strides;
  if (const auto* given = op.attrs().find<std::vector<int64_t>>("strides")) strides = *given;
  strides.resize(global.size(), 1);
  const std::vector<int64_t> shape = x.shape();
  for (size_t d = 0; d < global.size(); ++d) {
    bool whole = start[d] == 0 && limit[d] == global[d] && strides[d] == 1;
    if (whole || is_done(d)) {
      start[d] = 0;
      limit[d] = shape[d];
      strides[d] = 1;
    }
  }
  // (a stride over a whole dimension still slices it: [0:64:8] keeps 8 of 64)
  if (start == std::vector<int64_t>(shape.size(), 0) && limit == shape && strides == std::vector<int64_t>(shape.size(), 1))
    return x;
  return ir::slice(x, start, limit, strides);
}

}  // namespace

bool free_of(const FactorAxes& assign, const std::vector<ir::AxisRef>& axes, const ir::Mesh& mesh) {
  return std::none_of(assign.begin(), assign.end(), [&](const std::vector<ir::AxisRef>& fa) {
    return std::any_of(fa.begin(), fa.end(), [&](const ir::AxisRef& u) {
      return std::any_of(axes.begin(), axes.end(), [&](const ir::AxisRef& a) { return overlaps(u, a, mesh); });
    });
  });
}


std::vector<HaloDim> halo_dims(const Op& op, const FactorRule& rule, const FactorAxes& assign,
                               const std::vector<ir::Sharding>& have, const ir::Sharding& result, const ir::Mesh& mesh) {
  // (the operands exchanged: a pad's padding value is not)
  const size_t exchanged = op.kind() == OpKind::Concatenate ? have.size() : 1;
  for (size_t i = 0; i < exchanged; ++i)
    if (have[i].mesh != mesh.name || !have[i].unreduced.empty()) return {};
  if (op.kind() == OpKind::Concatenate) return concatenate_dims(op, assign, have, result, mesh);
  const auto& shape = op.operand(0)->type().shape;
  std::vector<HaloDim> halo;
  for (size_t d = 0; d < shape.size(); ++d) {
    const std::vector<ir::AxisRef>& axes = have[0].dims[d].axes;
    if (!rule.operands[0][d].empty() || axes.empty() || !free_of(assign, axes, mesh)) continue;
    const int64_t shards = shard_count(mesh, axes);
    std::optional<HaloPlan> plan;
    if (op.kind() == OpKind::Reverse) {
      if (contains(ints(op, "dimensions"), static_cast<int64_t>(d))) plan = plan_reverse(shape[d], shards);
    } else if (op.kind() == OpKind::Pad) {
      // (interior padding: a shifted window over the operand dilated by interior + 1)
      const int64_t interior = ints(op, "interior_padding")[d], low = ints(op, "edge_padding_low")[d];
      const int64_t length = op.result(0)->type().shape[d];
      plan = interior == 0 ? plan_shift(shape[d], low, length, shards) : plan_window(shape[d], -low, 1, 1, length, shards, interior + 1);
    } else if (op.kind() == OpKind::ReduceWindow) {
      // (every input alike: one exchange each)
      const ir::Window w = ir::read_window(op.attrs(), ir::kReduceWindow, shape.size());
      // (a base dilation: only the operand's own elements move, dilated on the device)
      std::optional<HaloPlan> window = plan_window(shape[d], -w.pad_lo[d], w.stride[d], (w.size[d] - 1) * w.window_dilation[d] + 1,
                                                   op.result(0)->type().shape[d], shards, w.base_dilation[d]);
      if (window)
        for (size_t i = 0; i < op.num_results(); ++i) halo.push_back({d, axes, *window, i});
      continue;
    } else if (op.kind() == OpKind::Slice) {
      const auto& start = ints(op, "start_indices");
      const auto& limit = ints(op, "limit_indices");
      const auto* strides = op.attrs().find<std::vector<int64_t>>("strides");
      int64_t stride = strides && d < strides->size() ? (*strides)[d] : 1;
      if (start[d] == 0 && limit[d] == shape[d] && stride == 1) continue;  // (a dimension of 1, read whole)
      plan = plan_halo(shape[d], start[d], limit[d], stride, shards);
    }
    if (plan) halo.push_back({d, axes, *plan, 0});
  }
  return halo;
}

int64_t halo_bytes(const std::vector<HaloDim>& halo, size_t operand, std::vector<int64_t> local, int64_t element_bytes) {
  int64_t bytes = 0;
  for (const HaloDim& h : halo) {
    if (h.operand != operand) continue;
    int64_t other = 1;
    for (size_t d = 0; d < local.size(); ++d) other *= d == h.dim ? 1 : local[d];
    bytes += halo_bytes(h.plan, other, element_bytes);
    local[h.dim] = h.plan.dilation > 1 ? h.plan.dilated_window : h.plan.window > 0 ? h.plan.window : h.plan.result_piece;
  }
  return bytes;
}

std::vector<Tensor> halo_windows(LocalContext& ctx, const Op& op, std::vector<Tensor> operands, const std::vector<HaloDim>& halo,
                                 const ir::Mesh& mesh) {
  const size_t n = op.num_results();
  for (const HaloDim& h : halo) {
    ctx.forced_by = fmt::format("operand {}", h.operand);
    Tensor& x = operands[h.operand];
    x = halo_slice(ctx, x, static_cast<int64_t>(h.dim), h.plan, mesh, h.axes);
    // (outside the operand: the init value, as the op's padding reads)
    x = ir::select(window_valid(ctx, x, static_cast<int64_t>(h.dim), h.plan, mesh, h.axes), x,
                   ir::broadcast_to(operands[n + h.operand], x.shape()));
    // (the holes of a base dilation hold the init value too: the spec pads them with it)
    x = dilate_window(ctx, x, static_cast<int64_t>(h.dim), h.plan, mesh, h.axes, operands[n + h.operand]);
  }
  return operands;
}

ir::AttrMap halo_window_attrs(const Op& op, const std::vector<HaloDim>& halo) {
  ir::AttrMap attrs = op.attrs();
  ir::Window w = ir::read_window(attrs, ir::kReduceWindow, static_cast<size_t>(op.operand(0)->type().rank()));
  for (const HaloDim& h : halo) {
    w.pad_lo[h.dim] = w.pad_hi[h.dim] = 0;
    w.base_dilation[h.dim] = 1;
  }
  // (write_window leaves a default out, and would keep the old)
  attrs.erase(ir::kReduceWindow.padding);
  attrs.erase(ir::kReduceWindow.base_dilation);
  ir::write_window(attrs, ir::kReduceWindow, w);
  return attrs;
}

Tensor halo_op(LocalContext& ctx, const Op& op, const std::vector<Tensor>& operands, const std::vector<HaloDim>& halo,
               const ir::Mesh& mesh) {
  TESSERA_CHECK(!halo.empty(), "{}: a halo exchange of no dimension", op.name());
  if (op.kind() == OpKind::Concatenate) {
    // Each operand's window, kept where it is that operand's (a select: the other positions hold
    // whatever the window met, NaN included, and must not leak).
    std::optional<Tensor> out;
    for (const HaloDim& h : halo) {
      ctx.forced_by = fmt::format("operand {}", h.operand);
      Tensor w = halo_slice(ctx, operands[h.operand], static_cast<int64_t>(h.dim), h.plan, mesh, h.axes);
      out = out ? ir::select(window_valid(ctx, w, static_cast<int64_t>(h.dim), h.plan, mesh, h.axes), w, *out) : w;
    }
    return *out;
  }
  Tensor x = operands[0];
  std::vector<size_t> done;
  for (const HaloDim& h : halo) {
    x = halo_slice(ctx, x, static_cast<int64_t>(h.dim), h.plan, mesh, h.axes);
    if (op.kind() == OpKind::Pad) {
      x = ir::select(window_valid(ctx, x, static_cast<int64_t>(h.dim), h.plan, mesh, h.axes), x,
                     ir::broadcast_to(operands[1], x.shape()));
      x = dilate_window(ctx, x, static_cast<int64_t>(h.dim), h.plan, mesh, h.axes, operands[1]);
    }
    done.push_back(h.dim);
  }
  if (op.kind() != OpKind::Pad) return rest_of(op, x, done);
  // The pad of the other dimensions, here.
  std::vector<int64_t> lo = ints(op, "edge_padding_low"), hi = ints(op, "edge_padding_high"),
                       interior = ints(op, "interior_padding");
  for (size_t d : done) lo[d] = hi[d] = interior[d] = 0;
  const std::vector<int64_t> zeros(lo.size(), 0);
  if (lo == zeros && hi == zeros && interior == zeros) return x;
  return ir::pad(x, operands[1], lo, hi, interior);
}

}  // namespace tessera::spmd
