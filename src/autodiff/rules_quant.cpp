// Autodiff and vmap rules of uniform_quantize and uniform_dequantize. JAX defines no derivative for
// them (rounding to integers has a zero or undefined derivative), so both modes refuse by name; vmap
// maps them elementwise, with a per-axis quantization dimension moved one place by the batch
// dimension in front (VmapContext::batched_type).
#include "autodiff/jvp_rules.h"
#include "autodiff/rules.h"
#include "autodiff/vmap_rules.h"

namespace tessera::autodiff {

namespace {
constexpr std::string_view kNoDerivative =
    "quantization rounds to integers, so it has no derivative (JAX defines none); differentiate the "
    "float program, or keep the quantized values out of the loss";

// y[b] = op(x[b]), the result type the op's own with the batch in front.
void quant_elementwise(VmapContext& c) {
  c.set(0, c.again({c.bx(0)}, std::nullopt, std::vector<ir::Type>{c.batched_type(c.result_type())})[0]);
}
}  // namespace

void vjp_UniformQuantize(VjpContext& c) { refuse(c.op, kNoDerivative); }
void vjp_UniformDequantize(VjpContext& c) { refuse(c.op, kNoDerivative); }
void jvp_UniformQuantize(JvpContext& c) { refuse(c.op, kNoDerivative); }
void jvp_UniformDequantize(JvpContext& c) { refuse(c.op, kNoDerivative); }
void vmap_UniformQuantize(VmapContext& c) { quant_elementwise(c); }
void vmap_UniformDequantize(VmapContext& c) { quant_elementwise(c); }

}  // namespace tessera::autodiff
