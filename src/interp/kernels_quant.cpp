// Reference kernels of uniform_quantize and uniform_dequantize, per the spec's quantize and
// dequantize ("Quantization computations"): per-tensor or per-axis, where element i of a per-axis
// tensor uses the parameters of its index along the quantization dimension. A quantized tensor's
// literal holds its storage integers.
#include "interp/kernels.h"
#include "ir/quantize.h"

namespace tessera::interp {
namespace {

// The parameter index of each element (row-major) of a tensor of type `t`.
size_t parameter_of(const ir::Type& t, int64_t flat) {
  const ir::Quantization& q = *t.quant;
  if (!q.axis) return 0;
  int64_t stride = 1;
  for (int64_t d = t.rank() - 1; d > *q.axis; --d) stride *= t.dim(d);
  return static_cast<size_t>((flat / stride) % t.dim(*q.axis));
}

}  // namespace

Results eval_UniformQuantize(const EvalContext& ctx) {
  const ir::Literal& x = ctx.operand(0);
  const ir::Type& to = ctx.result_type();
  ir::Literal out(to);
  const ir::Type& from = x.type();
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    // A quantized operand is requantized: its dequantized value quantized with the result's parameters.
    double v = from.is_quantized() ? ir::dequantize_value(*from.quant, x.get_int(i), parameter_of(from, i))
                                   : x.get_double(i);
    out.set_int(i, ir::quantize_value(*to.quant, v, parameter_of(to, i)));
  }
  return one(std::move(out));
}

Results eval_UniformDequantize(const EvalContext& ctx) {
  const ir::Literal& x = ctx.operand(0);
  const ir::Type& from = x.type();
  if (!from.is_quantized()) ctx.fail("operand has type {}, must be a quantized tensor", to_string(from));
  ir::Literal out(ctx.result_type());
  for (int64_t i = 0; i < x.num_elements(); ++i)
    out.set_double(i, ir::dequantize_value(*from.quant, x.get_int(i), parameter_of(from, i)));
  return one(std::move(out));
}

}  // namespace tessera::interp
