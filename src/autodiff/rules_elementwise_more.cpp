// VJP rules of the elementwise ops added for what JAX exports (#17): StableHLO's tan, cbrt,
// popcnt, count_leading_zeros, reduce_precision, complex, real, imag and CHLO's elementwise ops.
// Each carries its math (JAX's rule in lax.py / special.py); the ops JAX does not differentiate
// either (next_after), and those whose derivative needs a function Tessera does not define
// (bessel_i1e: bessel_i0e), are refused with that reason. polygamma(n, x) and zeta(s, q) are
// differentiated in x and q; their order n (s) takes integer values in JAX's programs and has no
// derivative here: a gradient that would flow into an order computed from the parameters is
// refused (an order made of constants receives none).
#include <cmath>
#include <numbers>

#include "autodiff/constants.h"
#include "autodiff/rules.h"
#include "ir/builder_numeric.h"

namespace tessera::autodiff {

namespace {

const double kTwoOverSqrtPi = 2 / std::sqrt(std::numbers::pi);

void require_constant_order(VjpContext& c, std::string_view name) {
  if (!made_of_constants(c.x(0).value()))
    c.fail("its order {} takes integer values and has no derivative; it must be a constant of the program", name);
}

}  // namespace

// d tan(x) = dy * (1 + y^2)
void vjp_Tan(VjpContext& c) { c.add(0, c.dy() * (c.y() * c.y() + 1.0)); }
// d x^(1/3) = dy / (3 y^2)
void vjp_Cbrt(VjpContext& c) { c.add(0, c.dy() / (c.y() * c.y() * 3.0)); }
// Integer results: no gradient.
void vjp_Popcnt(VjpContext&) {}
void vjp_CountLeadingZeros(VjpContext&) {}
// reduce_precision is the identity up to rounding: dx = reduce_precision(dy), as JAX transposes it
void vjp_ReducePrecision(VjpContext& c) {
  c.add(0, ir::reduce_precision(c.dy(), c.op.attrs().get<int64_t>("exponent_bits"),
                                c.op.attrs().get<int64_t>("mantissa_bits")));
}
// complex values are not differentiated (require_real says why), so complex() always refuses
void vjp_Complex(VjpContext& c) { require_real(c.op); }
// real(x) = x for a float x: dx = dy
void vjp_Real(VjpContext& c) {
  require_real(c.op);
  c.add(0, c.dy());
}
// imag(x) = 0 for a float x: no gradient
void vjp_Imag(VjpContext& c) { require_real(c.op); }
// d erf(x) = dy * 2/sqrt(pi) * exp(-x^2)
void vjp_Erf(VjpContext& c) { c.add(0, c.dy() * ir::exp(-(c.x() * c.x())) * kTwoOverSqrtPi); }
// d erfc(x) = -dy * 2/sqrt(pi) * exp(-x^2)
void vjp_Erfc(VjpContext& c) { c.add(0, c.dy() * ir::exp(-(c.x() * c.x())) * -kTwoOverSqrtPi); }
// d erf^-1(x) = dy * sqrt(pi)/2 * exp(y^2)
void vjp_ErfInv(VjpContext& c) { c.add(0, c.dy() * ir::exp(c.y() * c.y()) / kTwoOverSqrtPi); }
// d lgamma(x) = dy * digamma(x)
void vjp_Lgamma(VjpContext& c) { c.add(0, c.dy() * ir::digamma(c.x())); }
// d digamma(x) = dy * polygamma(1, x)
void vjp_Digamma(VjpContext& c) { c.add(0, c.dy() * ir::polygamma(full_like(c.b, c.x().type(), 1.0), c.x())); }
// Integer results: no gradient.
void vjp_Mulhi(VjpContext&) {}
// d polygamma(n, x) = dy * polygamma(n + 1, x) in x; n refused unless a constant
void vjp_Polygamma(VjpContext& c) {
  require_constant_order(c, "n");
  c.add(1, c.dy() * ir::polygamma(c.x(0) + 1.0, c.x(1)));
}
// d zeta(s, q) = dy * -s * zeta(s + 1, q) in q; s refused unless a constant
void vjp_Zeta(VjpContext& c) {
  require_constant_order(c, "s");
  c.add(1, -(c.dy() * c.x(0) * ir::zeta(c.x(0) + 1.0, c.x(1))));
}
// d i1e(x) = dy * (i0e(x) - i1e(x) (sign(x) + 1/x)): refused
void vjp_BesselI1e(VjpContext& c) {
  c.fail("its derivative needs bessel_i0e, which Tessera does not define");
}
// d sinh(x) = dy * cosh(x)
void vjp_Sinh(VjpContext& c) { c.add(0, c.dy() * ir::cosh(c.x())); }
// d cosh(x) = dy * sinh(x)
void vjp_Cosh(VjpContext& c) { c.add(0, c.dy() * ir::sinh(c.x())); }
// d asin(x) = dy / sqrt(1 - x^2)
void vjp_Asin(VjpContext& c) { c.add(0, c.dy() * ir::rsqrt(1.0 - c.x() * c.x())); }
// d acos(x) = -dy / sqrt(1 - x^2)
void vjp_Acos(VjpContext& c) { c.add(0, -(c.dy() * ir::rsqrt(1.0 - c.x() * c.x()))); }
// d atan(x) = dy / (1 + x^2)
void vjp_Atan(VjpContext& c) { c.add(0, c.dy() / (c.x() * c.x() + 1.0)); }
// d asinh(x) = dy / sqrt(x^2 + 1)
void vjp_Asinh(VjpContext& c) { c.add(0, c.dy() * ir::rsqrt(c.x() * c.x() + 1.0)); }
// d acosh(x) = dy / sqrt((x - 1)(x + 1))
void vjp_Acosh(VjpContext& c) { c.add(0, c.dy() * ir::rsqrt((c.x() - 1.0) * (c.x() + 1.0))); }
// d atanh(x) = dy / (1 - x^2)
void vjp_Atanh(VjpContext& c) { c.add(0, c.dy() / (1.0 - c.x() * c.x())); }
// d x^2 = dy * 2x
void vjp_Square(VjpContext& c) { c.add(0, c.dy() * c.x() * 2.0); }
// conj(x) = x for a float x: dx = dy
void vjp_Conj(VjpContext& c) {
  require_real(c.op);
  c.add(0, c.dy());
}
// Boolean results: no gradient.
void vjp_IsInf(VjpContext&) {}
void vjp_IsPosInf(VjpContext&) {}
void vjp_IsNegInf(VjpContext&) {}
// JAX defines no derivative of nextafter: refused
void vjp_NextAfter(VjpContext& c) { c.fail("it has no derivative (JAX defines none for nextafter either)"); }

}  // namespace tessera::autodiff
