// Builder: the elementwise ops added for what JAX exports (#17), StableHLO's and CHLO's. Binary
// ones take operands of one shape (no broadcasting): their shape rules say what does not match.
#include "ir/builder.h"

namespace tessera::ir {
namespace {

Tensor unary(OpKind k, const Tensor& x) { return x.builder().emit1(k, {x}); }

}  // namespace

Tensor tan(const Tensor& x) { return unary(OpKind::Tan, x); }
Tensor cbrt(const Tensor& x) { return unary(OpKind::Cbrt, x); }
Tensor popcnt(const Tensor& x) { return unary(OpKind::Popcnt, x); }
Tensor count_leading_zeros(const Tensor& x) { return unary(OpKind::CountLeadingZeros, x); }
Tensor reduce_precision(const Tensor& x, int64_t exponent_bits, int64_t mantissa_bits) {
  AttrMap attrs;
  attrs.set("exponent_bits", exponent_bits);
  attrs.set("mantissa_bits", mantissa_bits);
  return x.builder().emit1(OpKind::ReducePrecision, {x}, std::move(attrs));
}
Tensor complex(const Tensor& re, const Tensor& im) { return re.builder().emit1(OpKind::Complex, {re, im}); }
Tensor real(const Tensor& x) { return unary(OpKind::Real, x); }
Tensor imag(const Tensor& x) { return unary(OpKind::Imag, x); }
Tensor erf(const Tensor& x) { return unary(OpKind::Erf, x); }
Tensor erfc(const Tensor& x) { return unary(OpKind::Erfc, x); }
Tensor erf_inv(const Tensor& x) { return unary(OpKind::ErfInv, x); }
Tensor lgamma(const Tensor& x) { return unary(OpKind::Lgamma, x); }
Tensor digamma(const Tensor& x) { return unary(OpKind::Digamma, x); }
Tensor bessel_i1e(const Tensor& x) { return unary(OpKind::BesselI1e, x); }
Tensor sinh(const Tensor& x) { return unary(OpKind::Sinh, x); }
Tensor cosh(const Tensor& x) { return unary(OpKind::Cosh, x); }
Tensor asin(const Tensor& x) { return unary(OpKind::Asin, x); }
Tensor acos(const Tensor& x) { return unary(OpKind::Acos, x); }
Tensor atan(const Tensor& x) { return unary(OpKind::Atan, x); }
Tensor asinh(const Tensor& x) { return unary(OpKind::Asinh, x); }
Tensor acosh(const Tensor& x) { return unary(OpKind::Acosh, x); }
Tensor atanh(const Tensor& x) { return unary(OpKind::Atanh, x); }
Tensor square(const Tensor& x) { return unary(OpKind::Square, x); }
Tensor conj(const Tensor& x) { return unary(OpKind::Conj, x); }
Tensor is_inf(const Tensor& x) { return unary(OpKind::IsInf, x); }
Tensor is_pos_inf(const Tensor& x) { return unary(OpKind::IsPosInf, x); }
Tensor is_neg_inf(const Tensor& x) { return unary(OpKind::IsNegInf, x); }
Tensor next_after(const Tensor& x, const Tensor& toward) {
  return x.builder().emit1(OpKind::NextAfter, {x, toward});
}

}  // namespace tessera::ir
