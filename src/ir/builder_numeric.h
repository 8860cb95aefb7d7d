// Builder functions of issue #17's numeric ops (package B), apart from builder.h so that adding
// one recompiles only their users.
#pragma once

#include "ir/builder.h"
#include "ir/fft.h"

namespace tessera::ir {

// stablehlo.fft over the trailing length.size() dimensions (1 to 3).
Tensor fft(const Tensor& x, FftType type, std::vector<int64_t> length);

}  // namespace tessera::ir
