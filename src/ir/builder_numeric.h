// Builder functions of issue #17's numeric ops (package B), apart from builder.h so that adding
// one recompiles only their users.
#pragma once

#include "ir/builder.h"
#include "ir/fft.h"

namespace tessera::ir {

// stablehlo.fft over the trailing length.size() dimensions (1 to 3).
Tensor fft(const Tensor& x, FftType type, std::vector<int64_t> length);
// CHLO: the high half of the 2N-bit product of two N-bit integers; polygamma(n, x); the Hurwitz
// zeta function zeta(s, q) = sum_k (q + k)^-s.
Tensor mulhi(const Tensor& a, const Tensor& b);
Tensor polygamma(const Tensor& n, const Tensor& x);
Tensor zeta(const Tensor& s, const Tensor& q);

}  // namespace tessera::ir
