// Builder: issue #17's numeric ops (fft).
#include "ir/builder_numeric.h"

namespace tessera::ir {

Tensor mulhi(const Tensor& a, const Tensor& b) { return a.builder().emit1(OpKind::Mulhi, {a, b}); }
Tensor polygamma(const Tensor& n, const Tensor& x) { return x.builder().emit1(OpKind::Polygamma, {n, x}); }
Tensor zeta(const Tensor& s, const Tensor& q) { return s.builder().emit1(OpKind::Zeta, {s, q}); }

Tensor fft(const Tensor& x, FftType type, std::vector<int64_t> length) {
  AttrMap a;
  a.set("fft_type", fft_type_attr(type));
  a.set("fft_length", std::move(length));
  return x.builder().emit1(OpKind::Fft, {x}, std::move(a));
}

}  // namespace tessera::ir
