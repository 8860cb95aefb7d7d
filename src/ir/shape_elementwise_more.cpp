// Shape rules of the elementwise ops added for what JAX exports (#17): StableHLO's tan, cbrt,
// popcnt, count_leading_zeros, reduce_precision, complex, real and imag, and CHLO's elementwise
// ops. Messages carry the spec's constraint numbers (C1, C2, ...) where the spec numbers them
// (StableHLO's spec.md; the CHLO reference states operand and result types without numbers).
#include "ir/shape_rules.h"

namespace tessera::ir {
namespace shape_rules {

using Types = std::vector<Type>;

namespace {

// A predicate of floats: i1 of the operand's shape (chlo.is_inf and its signed forms).
Types float_predicate(const ShapeQuery& q) {
  check_allowed(q, 0, kFloat);
  return {q.operands[0].with_element(ElementType::i1)};
}

// real and imag: (C1) shape(result) = shape(operand); (C2) the element type is the operand's for
// a float, the part type for a complex.
Types complex_part(const ShapeQuery& q) {
  check_allowed(q, 0, kFloating);
  return {q.operands[0].with_element(real_type(q.operands[0].element))};
}

}  // namespace

// tan, cbrt: (C1) baseline_type(operand) = baseline_type(result).
Types infer_Tan(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Cbrt(const ShapeQuery& q) { return unary(q, kFloating); }
// popcnt, count_leading_zeros: (C1) type(operand) = type(result), of an integer type.
Types infer_Popcnt(const ShapeQuery& q) { return unary(q, kInt); }
Types infer_CountLeadingZeros(const ShapeQuery& q) { return unary(q, kInt); }

// reduce_precision: (C1) the result has the operand's type, (C2) 1 <= exponent_bits,
// (C3) 0 <= mantissa_bits.
Types infer_ReducePrecision(const ShapeQuery& q) {
  Types t = unary(q, kFloat);
  const auto* e = q.attrs.find<int64_t>("exponent_bits");
  const auto* m = q.attrs.find<int64_t>("mantissa_bits");
  if (e == nullptr || m == nullptr) reject(q, "needs both exponent_bits and mantissa_bits");
  if (*e < 1) reject(q, "(C2) exponent_bits = {} must be at least 1", *e);
  if (*m < 0) reject(q, "(C3) mantissa_bits = {} must not be negative", *m);
  return t;
}

// complex: (C1) type(lhs) = type(rhs), f32 or f64; (C2) shape(result) = shape(lhs);
// (C3) the result's element type is complex<element_type(lhs)>.
Types infer_Complex(const ShapeQuery& q) {
  const Type& lhs = q.operands[0];
  if (q.operands[1] != lhs)
    reject(q, "(C1) rhs has type {}, but lhs has type {}", to_string(q.operands[1]), to_string(lhs));
  if (lhs.element != ElementType::f32 && lhs.element != ElementType::f64)
    reject(q, "(C1) operands have type {}, must be of f32 or f64", to_string(lhs));
  return {lhs.with_element(lhs.element == ElementType::f32 ? ElementType::c64 : ElementType::c128)};
}
Types infer_Real(const ShapeQuery& q) { return complex_part(q); }
Types infer_Imag(const ShapeQuery& q) { return complex_part(q); }

// CHLO: the special functions of real floats; the trigonometric and hyperbolic functions, square
// and conj of floats or complex numbers; bessel_i1e of real floats only (Tessera defines no complex
// Bessel function); the predicates give i1; next_after takes two floats of one type.
Types infer_Erf(const ShapeQuery& q) { return unary(q, kFloat); }
Types infer_Erfc(const ShapeQuery& q) { return unary(q, kFloat); }
Types infer_ErfInv(const ShapeQuery& q) { return unary(q, kFloat); }
Types infer_Lgamma(const ShapeQuery& q) { return unary(q, kFloat); }
Types infer_Digamma(const ShapeQuery& q) { return unary(q, kFloat); }
Types infer_BesselI1e(const ShapeQuery& q) { return unary(q, kFloat); }
Types infer_Sinh(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Cosh(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Asin(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Acos(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Atan(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Asinh(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Acosh(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Atanh(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Square(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Conj(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_IsInf(const ShapeQuery& q) { return float_predicate(q); }
Types infer_IsPosInf(const ShapeQuery& q) { return float_predicate(q); }
Types infer_IsNegInf(const ShapeQuery& q) { return float_predicate(q); }
Types infer_NextAfter(const ShapeQuery& q) { return binary(q, kFloat); }
// CHLO's mulhi takes two integers of one type; polygamma(n, x) and zeta(x, q) two floats.
Types infer_Mulhi(const ShapeQuery& q) { return binary(q, kInt); }
Types infer_Polygamma(const ShapeQuery& q) { return binary(q, kFloat); }
Types infer_Zeta(const ShapeQuery& q) { return binary(q, kFloat); }

}  // namespace shape_rules
}  // namespace tessera::ir
