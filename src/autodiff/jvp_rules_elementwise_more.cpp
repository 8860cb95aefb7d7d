// JVP rules of the elementwise ops added for what JAX exports (#17); the transposes of the VJP
// rules in rules_elementwise_more.cpp, with the same refusals.
#include <cmath>
#include <numbers>

#include "autodiff/jvp_rules.h"
#include "ir/builder_numeric.h"

namespace tessera::autodiff {

namespace {

using J = JvpContext&;
const double kTwoOverSqrtPi = 2 / std::sqrt(std::numbers::pi);

}  // namespace

// d tan(x) = dx * (1 + y^2)
void jvp_Tan(J c) { scaled(c, [](J c) { return c.y() * c.y() + 1.0; }); }
// d x^(1/3) = dx / (3 y^2)
void jvp_Cbrt(J c) { c.set(0, c.dx() / (c.y() * c.y() * 3.0)); }
// Integer results: no tangent.
void jvp_Popcnt(J) {}
void jvp_CountLeadingZeros(J) {}
// d reduce_precision(x) = reduce_precision(dx)
void jvp_ReducePrecision(J c) {
  c.set(0, ir::reduce_precision(c.dx(), c.op.attrs().get<int64_t>("exponent_bits"),
                                c.op.attrs().get<int64_t>("mantissa_bits")));
}
// complex values are not differentiated
void jvp_Complex(J c) { require_real(c.op); }
// real(x) = x for a float x
void jvp_Real(J c) {
  require_real(c.op);
  c.set(0, c.tangent(0));
}
// imag(x) = 0 for a float x
void jvp_Imag(J c) { require_real(c.op); }
// d erf(x) = dx * 2/sqrt(pi) * exp(-x^2)
void jvp_Erf(J c) { scaled(c, [](J c) { return ir::exp(-(c.x() * c.x())) * kTwoOverSqrtPi; }); }
// d erfc(x) = -dx * 2/sqrt(pi) * exp(-x^2)
void jvp_Erfc(J c) { scaled(c, [](J c) { return ir::exp(-(c.x() * c.x())) * -kTwoOverSqrtPi; }); }
// d erf^-1(x) = dx * sqrt(pi)/2 * exp(y^2)
void jvp_ErfInv(J c) { scaled(c, [](J c) { return ir::exp(c.y() * c.y()) / kTwoOverSqrtPi; }); }
// d lgamma(x) = dx * digamma(x)
void jvp_Lgamma(J c) { scaled(c, [](J c) { return ir::digamma(c.x()); }); }
// d digamma(x) = dx * polygamma(1, x)
void jvp_Digamma(J c) { scaled(c, [](J c) { return ir::polygamma(full_like(c.b, c.x().type(), 1.0), c.x()); }); }
// Integer results: no tangent.
void jvp_Mulhi(J) {}
// d polygamma(n, x) = dx * polygamma(n + 1, x); a tangent of n is refused, as in reverse mode
void jvp_Polygamma(J c) {
  if (c.has_tangent(0))
    c.fail("its order n takes integer values and has no derivative; it must be a constant of the program");
  c.set(0, c.term(1, [&](const Tensor& d) { return d * ir::polygamma(c.x(0) + 1.0, c.x(1)); }));
}
// d zeta(s, q) = dq * -s * zeta(s + 1, q); a tangent of s is refused
void jvp_Zeta(J c) {
  if (c.has_tangent(0))
    c.fail("its order s takes integer values and has no derivative; it must be a constant of the program");
  c.set(0, c.term(1, [&](const Tensor& d) { return -(d * c.x(0) * ir::zeta(c.x(0) + 1.0, c.x(1))); }));
}
void jvp_BesselI1e(J c) { c.fail("its derivative needs bessel_i0e, which Tessera does not define"); }
// d sinh(x) = dx * cosh(x)
void jvp_Sinh(J c) { scaled(c, [](J c) { return ir::cosh(c.x()); }); }
// d cosh(x) = dx * sinh(x)
void jvp_Cosh(J c) { scaled(c, [](J c) { return ir::sinh(c.x()); }); }
// d asin(x) = dx / sqrt(1 - x^2)
void jvp_Asin(J c) { scaled(c, [](J c) { return ir::rsqrt(1.0 - c.x() * c.x()); }); }
// d acos(x) = -dx / sqrt(1 - x^2)
void jvp_Acos(J c) { scaled(c, [](J c) { return -ir::rsqrt(1.0 - c.x() * c.x()); }); }
// d atan(x) = dx / (1 + x^2)
void jvp_Atan(J c) { c.set(0, c.dx() / (c.x() * c.x() + 1.0)); }
// d asinh(x) = dx / sqrt(x^2 + 1)
void jvp_Asinh(J c) { scaled(c, [](J c) { return ir::rsqrt(c.x() * c.x() + 1.0); }); }
// d acosh(x) = dx / sqrt((x - 1)(x + 1))
void jvp_Acosh(J c) { scaled(c, [](J c) { return ir::rsqrt((c.x() - 1.0) * (c.x() + 1.0)); }); }
// d atanh(x) = dx / (1 - x^2)
void jvp_Atanh(J c) { c.set(0, c.dx() / (1.0 - c.x() * c.x())); }
// d x^2 = dx * 2x
void jvp_Square(J c) { scaled(c, [](J c) { return c.x() * 2.0; }); }
// conj(x) = x for a float x
void jvp_Conj(J c) {
  require_real(c.op);
  c.set(0, c.tangent(0));
}
// Boolean results: no tangent.
void jvp_IsInf(J) {}
void jvp_IsPosInf(J) {}
void jvp_IsNegInf(J) {}
void jvp_NextAfter(J c) { c.fail("it has no derivative (JAX defines none for nextafter either)"); }

}  // namespace tessera::autodiff
