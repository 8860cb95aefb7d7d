// Builder: issue #17's numeric ops (fft).
#include "ir/builder_numeric.h"

namespace tessera::ir {

Tensor fft(const Tensor& x, FftType type, std::vector<int64_t> length) {
  AttrMap a;
  a.set("fft_type", fft_type_attr(type));
  a.set("fft_length", std::move(length));
  return x.builder().emit1(OpKind::Fft, {x}, std::move(a));
}

}  // namespace tessera::ir
