// A convolution whose input arrives split along a spatial dimension, kept split by a halo
// exchange (split_reads.h) where the cost model finds that cheaper than gathering the input: the
// output is split alike along its spatial dimension, and each device's output piece reads a run
// of the input that reaches into its neighbours' pieces (the kernel's extent less one, more with
// strides and padding). The run comes by collective_permute (plan_window: several chunks where
// the run is longer than a piece, so any window size and uneven splits are exchanged, never
// gathered), positions outside the input are zeros (the convolution's padding), and the local
// convolution runs on it with no padding along that dimension. An lhs_dilation b > 1 (a strided
// convolution's input gradient) moves only the input's own elements: the run is dilated here
// (b - 1 zeros between elements, as the op would) and the device's window cut from it at its
// phase. A kernel gradient (the "kernel" is the output gradient, split along the same spatial
// dimension by the same axes) is summed the other way: each device convolves the input run its
// kernel rows read with those rows, and the partial results are summed after (an all_reduce of
// the small kernel-sized result) instead of gathering both. The spatial split is independent of feature and batch groups (they tie the feature and
// batch dimensions only), so grouped convolutions are exchanged too.
#include <fmt/format.h>

#include "ir/window.h"
#include "spmd/mesh_math.h"
#include "spmd/split_reads.h"

namespace tessera::spmd {

using ir::Op;
using ir::Tensor;

namespace {

ir::Window conv_window(const Op& op) {
  const auto& dn = op.attrs().get<ir::ConvDims>("dimension_numbers");
  const auto& rhs = op.operand(1)->type().shape;
  std::vector<int64_t> sizes;
  for (int64_t k : dn.kernel_spatial) sizes.push_back(rhs[static_cast<size_t>(k)]);
  return ir::read_window(op.attrs(), ir::kConvolutionWindow, dn.input_spatial.size(), sizes);
}

}  // namespace

std::vector<HaloDim> conv_halo_dims(const Op& op, const FactorAxes& assign, const ir::Sharding& lhs, const ir::Sharding& rhs,
                                    const ir::Mesh& mesh) {
  if (lhs.mesh != mesh.name || !lhs.unreduced.empty()) return {};
  const bool rhs_usable = rhs.mesh == mesh.name && rhs.unreduced.empty();
  const auto& dn = op.attrs().get<ir::ConvDims>("dimension_numbers");
  const auto& shape = op.operand(0)->type().shape;
  const auto& out = op.result(0)->type().shape;
  const ir::Window w = conv_window(op);
  std::vector<HaloDim> halo;
  for (size_t k = 0; k < dn.input_spatial.size(); ++k) {
    const auto d = static_cast<size_t>(dn.input_spatial[k]);
    const std::vector<ir::AxisRef>& axes = lhs.dims[d].axes;
    if (axes.empty() || !free_of(assign, axes, mesh)) continue;
    const int64_t length = out[static_cast<size_t>(dn.output_spatial[k])];
    const auto kd = static_cast<size_t>(dn.kernel_spatial[k]);
    if (rhs_usable && rhs.dims[kd].axes == axes) {
      // Device i holds kernel rows [i r, i r + r): its outputs' partial sums over them read the
      // input from -pad_lo + i r rhs_dilation over (r - 1) rhs_dilation + (length - 1) stride + 1,
      // a window as plan_window counts one, with the kernel rows as its "outputs".
      std::optional<HaloPlan> plan = plan_window(shape[d], -w.pad_lo[k], w.window_dilation[k], (length - 1) * w.stride[k] + 1,
                                                 w.size[k], shard_count(mesh, axes), w.base_dilation[k]);
      if (plan) halo.push_back({d, axes, *plan, 0, dn.output_spatial[k], dn.kernel_spatial[k]});
      continue;
    }
    const int64_t extent = (w.size[k] - 1) * w.window_dilation[k] + 1;
    std::optional<HaloPlan> plan = plan_window(shape[d], -w.pad_lo[k], w.stride[k], extent,
                                               length, shard_count(mesh, axes),
                                               w.base_dilation[k]);
    if (plan) halo.push_back({d, axes, *plan, 0, dn.output_spatial[k]});
  }
  return halo;
}

Tensor halo_conv_lhs(LocalContext& ctx, const Op& op, Tensor x, const std::vector<HaloDim>& halo, const ir::Mesh& mesh) {
  ir::Builder& b = x.builder();
  ctx.forced_by = "operand 0";
  for (const HaloDim& h : halo) {
    const auto d = static_cast<int64_t>(h.dim);
    const HaloPlan& plan = h.plan;
    x = halo_slice(ctx, x, d, plan, mesh, h.axes);
    // (select, not a product: whatever the run met outside the input, NaN included, reads as 0)
    Tensor zero = ir::broadcast_to(b.scalar(x.element(), 0), x.shape());
    x = ir::select(window_valid(ctx, x, d, plan, mesh, h.axes), x, zero);
    x = dilate_window(ctx, x, d, plan, mesh, h.axes, b.scalar(x.element(), 0));
  }
  return x;
}

ir::AttrMap halo_conv_attrs(const Op& op, const std::vector<HaloDim>& halo) {
  ir::AttrMap attrs = op.attrs();
  const auto& dn = op.attrs().get<ir::ConvDims>("dimension_numbers");
  ir::Window w = conv_window(op);
  for (const HaloDim& h : halo)
    for (size_t k = 0; k < dn.input_spatial.size(); ++k)
      if (static_cast<size_t>(dn.input_spatial[k]) == h.dim) {
        w.pad_lo[k] = w.pad_hi[k] = 0;
        w.base_dilation[k] = 1;
      }
  // (write_window leaves a default out, and would keep the old)
  attrs.erase(ir::kConvolutionWindow.padding);
  attrs.erase(ir::kConvolutionWindow.base_dilation);
  ir::write_window(attrs, ir::kConvolutionWindow, w);
  return attrs;
}

}  // namespace tessera::spmd
