// Lowering of quantized programs: every op on quantized values that the spec defines by
// dequantize -> op -> quantize ("Quantization computations": dequantize_op_quantize, and the
// per-op notes) becomes exactly that, so that only uniform_quantize and uniform_dequantize (and
// the ops that merely pass stored values on, ir::needs_quantized_lowering) see quantized types.
// The interpreter, autodiff and the partitioner then run the float program.
//
// For an op that needs it:
//   - each quantized operand is dequantized (uniform_dequantize) to its expressed type;
//   - the op runs on the float values, its quantized results typed as their expressed types;
//     dot_general and convolution with a quantized result accumulate in f64 (operands converted
//     to f64 and the result back): the integer sums that StableHLO's integer lowering computes
//     exactly stay exact, where an f32 sum of many products would round;
//   - each quantized result is quantized (uniform_quantize) from that float value, and its uses
//     read the new value.
// An op with regions (reduce, reduce_window, sort, while, ...) is lowered the same way, its regions
// made to take and return float values: each quantized block argument is quantized again on entry
// (exact, the float value being a dequantized one) and each quantized returned value dequantized,
// so the body, lowered like any block, computes what the spec's body on quantized values does.
#pragma once

#include "ir/module.h"

namespace tessera::transforms {

// Lowers every function of `module`; returns whether any op was rewritten.
bool lower_quantized(ir::Module& module);

// Whether any op of `module` needs lowering (ir::needs_quantized_lowering).
bool has_quantized_ops(const ir::Module& module);

}  // namespace tessera::transforms
