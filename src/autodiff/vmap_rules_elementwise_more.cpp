// vmap rules of the elementwise ops added for what JAX exports (#17): each applies to each
// example's elements alike, so y[b] = op(x[b], ...) is the op itself on operands carrying the batch
// in front (vmap_rules_elementwise.cpp's elementwise()).
#include "autodiff/vmap_rules.h"

namespace tessera::autodiff {

#define ELEMENTWISE(e) \
  void vmap_##e(VmapContext& c) { elementwise(c); }
ELEMENTWISE(Tan) ELEMENTWISE(Cbrt) ELEMENTWISE(Popcnt) ELEMENTWISE(CountLeadingZeros)
ELEMENTWISE(ReducePrecision) ELEMENTWISE(Complex) ELEMENTWISE(Real) ELEMENTWISE(Imag)
ELEMENTWISE(Erf) ELEMENTWISE(Erfc) ELEMENTWISE(ErfInv) ELEMENTWISE(Lgamma) ELEMENTWISE(Digamma)
ELEMENTWISE(BesselI1e) ELEMENTWISE(Sinh) ELEMENTWISE(Cosh) ELEMENTWISE(Asin) ELEMENTWISE(Acos)
ELEMENTWISE(Atan) ELEMENTWISE(Asinh) ELEMENTWISE(Acosh) ELEMENTWISE(Atanh) ELEMENTWISE(Square)
ELEMENTWISE(Conj) ELEMENTWISE(IsInf) ELEMENTWISE(IsPosInf) ELEMENTWISE(IsNegInf)
ELEMENTWISE(NextAfter) ELEMENTWISE(Mulhi) ELEMENTWISE(Polygamma) ELEMENTWISE(Zeta)
#undef ELEMENTWISE

}  // namespace tessera::autodiff
