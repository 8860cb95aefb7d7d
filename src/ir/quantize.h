// The spec's computations on quantized element types (ir::Quantization, quant.h): the storage
// ranges, the scalar dequantize and quantize ("Quantization computations"; every step rounded to
// the expressed type, as the spec's ops on tensors of that type are), the text form, the
// constraints of QuantizedTensorElementType, and which ops transforms::lower_quantized rewrites.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/quant.h"

namespace tessera::ir {

class Op;

// Parameter i's scale and zero point (parameter 0 for per-tensor quantization).
inline double scale_of(const Quantization& q, size_t i) { return q.scales.at(q.axis ? i : 0); }
inline int64_t zero_point_of(const Quantization& q, size_t i) { return q.zero_points.at(q.axis ? i : 0); }

// min_value and max_value of an integer type (i4: -8 and 7, ui8: 0 and 255).
int64_t integer_min(ElementType e);
int64_t integer_max(ElementType e);

// `v` rounded to float type `e` (nearest, ties to even), as a constant of that type holds it.
double round_to_float(ElementType e, double v);

// The spec's dequantize of one stored value with parameter `i`: convert(q - zero_point) * scale.
double dequantize_value(const Quantization& q, int64_t stored, size_t i);
// The spec's quantize of one value of the expressed type with parameter `i`:
// round_nearest_even(clamp(storage_min, x / scale + zero_point, storage_max)).
int64_t quantize_value(const Quantization& q, double x, size_t i);

// "!quant.uniform<i8:f32, 0.1:-3>": the element type as StableHLO text writes it, the storage
// range only when narrower than the storage type's, no zero point when it is 0.
std::string to_string(const Quantization& q);

// Why `q` breaks a constraint of QuantizedTensorElementType (C1-C11) or, given the tensor's rank,
// of a quantized tensor type (C12-C13, `dim_size` the size of the quantization dimension when it is
// known); empty when it keeps them all. rank < 0: only the element type's constraints.
std::string quantization_error(const Quantization& q, int64_t rank = -1, int64_t dim_size = -1);

// Whether `op` has a quantized operand or result and is one the spec defines on quantized values
// by dequantize -> op -> quantize, so that transforms::lower_quantized rewrites it and the
// interpreter, autodiff and the partitioner refuse it unlowered. The ops that keep quantized
// values as they are: uniform_quantize and uniform_dequantize, bitcast_convert (the storage bits),
// constants (storage values), and the ops that only pass values on: return, call, composite,
// tuple, get_tuple_element and optimization_barrier.
bool needs_quantized_lowering(const Op& op);
// A UserError naming `op`, its line and `layer` when needs_quantized_lowering(op): the layers that
// run float programs call it on each op they meet.
void refuse_unlowered_quantized(const Op& op, std::string_view layer);

}  // namespace tessera::ir
