// Shape rules of the quantization ops (uniform_quantize, uniform_dequantize) with the spec's
// constraints, and the rule of every other op on quantized operands: the spec defines those ops
// by dequantize -> op -> quantize, so their shapes are the op's shapes on the expressed (float)
// types, and a declared quantized result stands for its expressed type.
#include "ir/shape_rules.h"

namespace tessera::ir {
namespace shape_rules {

using Types = std::vector<Type>;

namespace {
Type expressed_view(const Type& t) { return t.quant ? t.with_element(t.quant->expressed) : t; }
}  // namespace

Types infer_UniformQuantize(const ShapeQuery& q) {
  const Type& operand = q.operands[0];
  const Type& result = declared_result(q);
  if (!operand.is_tensor() || (!operand.is_quantized() && !is_float(operand.element)))
    reject(q, "operand has type {}, must be a float or quantized tensor", to_string(operand));
  if (!result.is_tensor() || !result.is_quantized())
    reject(q, "result has type {}, must be a quantized tensor", to_string(result));
  if (operand.shape != result.shape)
    reject(q, "(C1) result shape {} differs from operand shape {}", to_string(result), to_string(operand));
  ElementType from = operand.is_quantized() ? operand.quant->expressed : operand.element;
  if (result.quant->expressed != from)
    reject(q, "(C2) the result's expressed type is {}, but the operand's {} type is {}",
           spelling(result.quant->expressed), operand.is_quantized() ? "expressed" : "element", spelling(from));
  return {result};
}

Types infer_UniformDequantize(const ShapeQuery& q) {
  const Type& operand = q.operands[0];
  if (!operand.is_tensor() || !operand.is_quantized())
    reject(q, "operand has type {}, must be a quantized tensor", to_string(operand));
  Type result = expressed_view(operand);
  if (!q.declared.empty()) {
    const Type& d = q.declared[0];
    if (d.is_tensor() && d.shape != operand.shape)
      reject(q, "(C1) result shape {} differs from operand shape {}", to_string(d), to_string(operand));
    if (d.is_tensor() && (d.is_quantized() || d.element != result.element))
      reject(q, "(C2) result has type {}, but the operand's expressed type is {}", to_string(d),
             spelling(result.element));
  }
  return {result};
}

bool quantized_query(const ShapeQuery& q) {
  if (q.kind == OpKind::UniformQuantize || q.kind == OpKind::UniformDequantize || q.kind == OpKind::BitcastConvert)
    return false;  // rules of their own: they see the quantization (bitcast_convert: the storage bits)
  for (const Type& t : q.operands)
    if (t.is_quantized()) return true;
  for (const Type& t : q.declared)
    if (t.is_quantized()) return true;
  return false;
}

Types infer_on_expressed(const ShapeQuery& q, Types (*rule)(const ShapeQuery&)) {
  Types operands, declared;
  for (const Type& t : q.operands) operands.push_back(expressed_view(t));
  for (const Type& t : q.declared) declared.push_back(expressed_view(t));
  Types inferred = rule(ShapeQuery{q.kind, operands, q.attrs, declared});
  for (size_t i = 0; i < inferred.size() && i < q.declared.size(); ++i)
    if (q.declared[i].is_quantized() && inferred[i] == declared[i]) inferred[i] = q.declared[i];
  return inferred;
}

}  // namespace shape_rules
}  // namespace tessera::ir
