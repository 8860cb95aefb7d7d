// The fast convolution: im2col + one GEMM (accelerate.h). Each output position (batch and output
// spatial index) becomes a row of a patch matrix [positions, window elements x input features]
// (zeros where the window falls into padding or between dilated input elements); the kernel
// becomes [window elements x input features, output features]; their product through OpenBLAS
// (contraction.h) is scattered into the result's layout. Covers f32 and f64 convolutions of any
// rank and layout with strides, padding and both dilations, without feature or batch groups or
// window reversal (those go to the reference kernel). The scratch matrices are per thread and kept
// for the next call. Sums run in BLAS's order, so results differ from the reference kernel's by
// rounding only (tests/exec checks them against it).
#include <vector>

#include "exec/accelerate.h"
#include "exec/contraction.h"
#include "ir/window.h"

namespace tessera::exec {

namespace {

using ir::Literal;

template <typename T>
void im2col_gemm(const ir::Op& op, const Literal& lhs, const Literal& rhs, Literal& out) {
  const auto& d = op.attrs().get<ir::ConvDims>("dimension_numbers");
  size_t s = d.input_spatial.size();
  auto at = [](const std::vector<int64_t>& v, int64_t i) { return v[static_cast<size_t>(i)]; };
  std::vector<int64_t> ksize, osize;
  for (int64_t k : d.kernel_spatial) ksize.push_back(at(rhs.shape(), k));
  for (int64_t k : d.output_spatial) osize.push_back(at(out.shape(), k));
  ir::Window w = ir::read_window(op.attrs(), ir::kConvolutionWindow, s, ksize);
  std::vector<int64_t> ls = lhs.strides(), rs = rhs.strides(), os = out.strides();
  int64_t channels = at(lhs.shape(), d.input_feature), features = at(rhs.shape(), d.kernel_output_feature);
  int64_t batch = at(out.shape(), d.output_batch);
  int64_t window = 1, positions = 1;
  for (int64_t k : ksize) window *= k;
  for (int64_t o : osize) positions *= o;
  int64_t rows = batch * positions, depth = window * channels;
  thread_local std::vector<T> patches, weights, product;
  patches.assign(static_cast<size_t>(rows * depth), T(0));
  weights.resize(static_cast<size_t>(depth * features));
  product.resize(static_cast<size_t>(rows * features));
  const T* x = reinterpret_cast<const T*>(lhs.bytes().data());
  const T* k = reinterpret_cast<const T*>(rhs.bytes().data());
  T* y = reinterpret_cast<T*>(out.bytes().data());
  int64_t lf = at(ls, d.input_feature);
  std::vector<int64_t> oi(s, 0), ki(s, 0);
  // Patches: row (b, output position), column (window element, channel).
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t p = 0; p < positions; ++p) {
      for (int64_t r = p, i = static_cast<int64_t>(s) - 1; i >= 0; --i) {
        oi[static_cast<size_t>(i)] = r % osize[static_cast<size_t>(i)];
        r /= osize[static_cast<size_t>(i)];
      }
      T* row = patches.data() + (b * positions + p) * depth;
      for (int64_t e = 0; e < window; ++e) {
        int64_t base = b * at(ls, d.input_batch);
        bool inside = true;
        for (int64_t r = e, i = static_cast<int64_t>(s) - 1; i >= 0 && inside; --i) {
          auto u = static_cast<size_t>(i);
          int64_t kk = r % ksize[u];
          r /= ksize[u];
          int64_t q = oi[u] * w.stride[u] + kk * w.window_dilation[u] - w.pad_lo[u];
          if (q < 0 || q % w.base_dilation[u] != 0) inside = false;
          int64_t xi = q / w.base_dilation[u];
          if (xi >= at(lhs.shape(), d.input_spatial[u])) inside = false;
          base += xi * at(ls, d.input_spatial[u]);
        }
        if (!inside) continue;
        for (int64_t c = 0; c < channels; ++c) row[e * channels + c] = x[base + c * lf];
      }
    }
  }
  // Weights: row (window element, channel), column output feature.
  for (int64_t e = 0; e < window; ++e) {
    int64_t base = 0;
    for (int64_t r = e, i = static_cast<int64_t>(s) - 1; i >= 0; --i) {
      base += (r % ksize[static_cast<size_t>(i)]) * at(rs, d.kernel_spatial[static_cast<size_t>(i)]);
      r /= ksize[static_cast<size_t>(i)];
    }
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t o = 0; o < features; ++o)
        weights[static_cast<size_t>((e * channels + c) * features + o)] =
            k[base + c * at(rs, d.kernel_input_feature) + o * at(rs, d.kernel_output_feature)];
  }
  std::vector<int64_t> a{rows, depth}, bshape{depth, features};
  ContractionPlan plan = plan_contraction(a, bshape, ir::DotDims{{}, {}, {1}, {0}});
  run_contraction(plan, patches.data(), weights.data(), product.data(), false);
  // The product [b, positions, features] into the result's layout.
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t p = 0; p < positions; ++p) {
      int64_t base = b * at(os, d.output_batch);
      for (int64_t r = p, i = static_cast<int64_t>(s) - 1; i >= 0; --i) {
        base += (r % osize[static_cast<size_t>(i)]) * at(os, d.output_spatial[static_cast<size_t>(i)]);
        r /= osize[static_cast<size_t>(i)];
      }
      const T* src = product.data() + (b * positions + p) * features;
      for (int64_t o = 0; o < features; ++o) y[base + o * at(os, d.output_feature)] = src[o];
    }
}

}  // namespace

bool accelerate_convolution(const ir::Op& op, std::span<const Literal* const> in, std::vector<Literal>& out) {
  const ir::Type& t = op.result(0)->type();
  if ((t.element != ir::ElementType::f32 && t.element != ir::ElementType::f64) || in[0]->element() != t.element ||
      in[1]->element() != t.element)
    return false;
  if (op.attrs().get_or<int64_t>("feature_group_count", 1) != 1 || op.attrs().get_or<int64_t>("batch_group_count", 1) != 1)
    return false;
  bool ok = true;
  for (bool r : ir::bool_array(op.attrs(), "window_reversal", ok))
    if (r) return false;
  if (!ok || t.num_elements() == 0 || in[0]->num_elements() == 0 || in[1]->num_elements() == 0) return false;
  const auto& d = op.attrs().get<ir::ConvDims>("dimension_numbers");
  int64_t window = 1;
  for (int64_t k : d.kernel_spatial) window *= in[1]->shape()[static_cast<size_t>(k)];
  int64_t depth = window * in[0]->shape()[static_cast<size_t>(d.input_feature)];
  int64_t rows = t.num_elements() / t.shape[static_cast<size_t>(d.output_feature)];
  if (depth > (int64_t{1} << 30) || rows > (int64_t{1} << 30) || rows * depth > (int64_t{1} << 31)) return false;
  if (out.empty()) out.emplace_back(t);
  if (t.element == ir::ElementType::f32)
    im2col_gemm<float>(op, *in[0], *in[1], out.back());
  else
    im2col_gemm<double>(op, *in[0], *in[1], out.back());
  return true;
}

}  // namespace tessera::exec
