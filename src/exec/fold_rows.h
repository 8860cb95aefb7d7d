// Rows of f32 folded eight side by side in vector registers (fold_rows_avx2.cpp), with the bits of
// the scalar fold (fold.h): each row in its order, each step the reference's combiner. Used by the
// row groups (fusion_rows.cpp) for their row reductions (a softmax's max and sum, a cross-entropy's).
#pragma once

#include <cstdint>

#include "ir/module.h"

namespace tessera::exec {

// Folds rows [0, 8k) of x (`rows` rows of `len` elements, the largest multiple of 8 of them) into
// dst[0, 8k) with `kind` (add, multiply, maximum or minimum), each dst[r] the row's running
// result; returns 8k, or 0 where the CPU has no AVX2 or the kind is another.
int64_t fold_rows8_f32(ir::OpKind kind, const float* x, int64_t rows, int64_t len, float* dst);

}  // namespace tessera::exec
