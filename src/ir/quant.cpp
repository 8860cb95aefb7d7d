// Quantized element types: the storage ranges, the spec's scalar dequantize and quantize, the text
// form and the constraints of QuantizedTensorElementType (spec.md, "Types").
#include "ir/quantize.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ir/module.h"
#include "support/error.h"

namespace tessera::ir {

int64_t integer_min(ElementType e) {
  int bits = info(e).bits;
  if (is_unsigned_integer(e) || is_bool(e)) return 0;
  return bits >= 64 ? INT64_MIN : -(int64_t{1} << (bits - 1));
}

int64_t integer_max(ElementType e) {
  int bits = info(e).bits;
  if (is_unsigned_integer(e) || is_bool(e)) return bits >= 63 ? INT64_MAX : (int64_t{1} << bits) - 1;
  return bits >= 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1;
}

double round_to_float(ElementType e, double v) {
  if (e == ElementType::f64) return v;
  if (e == ElementType::f32) return static_cast<double>(static_cast<float>(v));
  return minifloat_to_double(e, double_to_minifloat(e, v));
}

double dequantize_value(const Quantization& q, int64_t stored, size_t i) {
  // x_storage - zero_point is exact in integer arithmetic (in double where i64 storage would
  // overflow); the conversion and the product are each rounded to the expressed type.
  int64_t d = 0;
  double exact = __builtin_sub_overflow(stored, zero_point_of(q, i), &d)
                     ? static_cast<double>(stored) - static_cast<double>(zero_point_of(q, i))
                     : static_cast<double>(d);
  double diff = round_to_float(q.expressed, exact);
  return round_to_float(q.expressed, diff * round_to_float(q.expressed, scale_of(q, i)));
}

int64_t quantize_value(const Quantization& q, double x, size_t i) {
  ElementType e = q.expressed;
  double scaled = round_to_float(e, x / round_to_float(e, scale_of(q, i)));
  double shifted = round_to_float(e, scaled + round_to_float(e, static_cast<double>(zero_point_of(q, i))));
  double lo = round_to_float(e, static_cast<double>(q.storage_min));
  double hi = round_to_float(e, static_cast<double>(q.storage_max));
  // clamp propagates NaN; converting NaN to an integer is not defined by the spec: 0 here, as
  // StableHLO's convert from float to integer gives for NaN.
  if (std::isnan(shifted)) return 0;
  double clamped = std::min(std::max(shifted, lo), hi);
  double rounded = std::nearbyint(clamped);  // default rounding mode: nearest, ties to even
  // A range end that rounds up in the expressed type (i32's max in f32) still converts into range.
  return std::clamp(static_cast<int64_t>(std::clamp(rounded, -9.2e18, 9.2e18)), q.storage_min, q.storage_max);
}

std::string to_string(const Quantization& q) {
  // MLIR's quant dialect spells unsigned storage u8, not ui8 (both are read).
  std::string storage(spelling(q.storage));
  if (storage.starts_with("ui")) storage.erase(1, 1);
  std::string s = fmt::format("!quant.uniform<{}", storage);
  if (q.storage_min != integer_min(q.storage) || q.storage_max != integer_max(q.storage))
    s += fmt::format("<{}:{}>", q.storage_min, q.storage_max);
  s += fmt::format(":{}", spelling(q.expressed));
  if (q.axis) s += fmt::format(":{}", *q.axis);
  s += ", ";
  if (q.axis) s += "{";
  for (size_t i = 0; i < q.scales.size(); ++i) {
    // Shortest text that reads back as the same double (print -> parse -> print is the identity),
    // with a '.' or exponent so that it reads as a float literal.
    std::string scale = fmt::format("{}", q.scales[i]);
    if (scale.find_first_of(".e") == std::string::npos) scale += ".0";
    s += fmt::format("{}{}", i ? ", " : "", scale);
    if (i < q.zero_points.size() && q.zero_points[i] != 0) s += fmt::format(":{}", q.zero_points[i]);
  }
  if (q.axis) s += "}";
  return s + ">";
}

std::string quantization_error(const Quantization& q, int64_t rank, int64_t dim_size) {
  if (!is_integer(q.storage))
    return fmt::format("(C1) the storage type must be an integer type, not {}", spelling(q.storage));
  if (q.storage_min < integer_min(q.storage) || q.storage_max > integer_max(q.storage) ||
      q.storage_min >= q.storage_max)
    return fmt::format("(C3) storage range {}:{} must satisfy {} <= storage_min < storage_max <= {} for {}",
                       q.storage_min, q.storage_max, integer_min(q.storage), integer_max(q.storage),
                       spelling(q.storage));
  if (!is_float(q.expressed))
    return fmt::format("(C4) the expressed type must be a floating-point type, not {}", spelling(q.expressed));
  for (double s : q.scales) {
    if (!std::isfinite(s) || !std::isfinite(round_to_float(q.expressed, s)))
      return fmt::format("(C6) scale {} is not finite in {}", s, spelling(q.expressed));
    if (!(s > 0)) return fmt::format("(C5) scale {} must be positive", s);
  }
  for (int64_t z : q.zero_points)
    if (z < q.storage_min || z > q.storage_max)
      return fmt::format("(C7) zero point {} is outside the storage range {}:{}", z, q.storage_min, q.storage_max);
  if (q.scales.size() != q.zero_points.size())
    return fmt::format("(C9) {} scales but {} zero points", q.scales.size(), q.zero_points.size());
  if (!q.axis && q.scales.size() != 1)
    return fmt::format("(C10) per-tensor quantization has one scale, not {}", q.scales.size());
  if (q.axis && *q.axis < 0) return fmt::format("(C11) quantization dimension {} is negative", *q.axis);
  if (rank >= 0 && q.axis) {
    if (*q.axis >= rank)
      return fmt::format("(C12) quantization dimension {} is out of range for rank {}", *q.axis, rank);
    if (dim_size >= 0 && dim_size != static_cast<int64_t>(q.scales.size()))
      return fmt::format("(C13) quantization dimension {} has size {}, but there are {} scales", *q.axis,
                         dim_size, q.scales.size());
  }
  return "";
}

bool needs_quantized_lowering(const Op& op) {
  switch (op.kind()) {
    case OpKind::UniformQuantize:
    case OpKind::UniformDequantize:
    case OpKind::BitcastConvert:
    case OpKind::Constant:
    case OpKind::Return:
    case OpKind::Call:
    case OpKind::Composite:
    case OpKind::Tuple:
    case OpKind::GetTupleElement:
    case OpKind::OptimizationBarrier: return false;
    default: break;
  }
  for (const Value* v : op.operands())
    if (v->type().is_quantized()) return true;
  for (size_t i = 0; i < op.num_results(); ++i)
    if (op.result(i)->type().is_quantized()) return true;
  return false;
}

void refuse_unlowered_quantized(const Op& op, std::string_view layer) {
  if (!needs_quantized_lowering(op)) return;
  std::string where = op.loc.line > 0 ? fmt::format(" (line {})", op.loc.line) : "";
  support::fail("{}{} has quantized operands or results, which the {} does not take: lower quantized "
                "ops first (transforms::lower_quantized, as `tessera run` and `tessera check` do), which "
                "makes it dequantize -> {} -> quantize",
                op.name(), where, layer, op.name());
}

}  // namespace tessera::ir
