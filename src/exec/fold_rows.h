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

// acc + x[0] + ... + x[done - 1] in order, as fold.h's fold_in_order sums floats: a run of 64
// elements all ±0 is tested in vector registers and skipped (adding a zero leaves every sum but
// ±0 and NaN as it is; ±0 becomes +0 if a +0 is among them), any other run added one element after
// another. `done`: the largest multiple of 64 up to n (0 where the CPU has no AVX2); the caller
// folds the rest. A masked loss's sum (a one-hot times a log-softmax) is nearly all zeros.
float sum_skipping_zeros_f32(float acc, const float* x, int64_t n, int64_t& done);

// x[0, n) written to out with each run of 64 elements all ±0 (x[0, 64), x[64, 128), ...) as one
// zero: +0 if a +0 is among them, else -0; the last run, if shorter, as it is. Summing the list in
// order from any acc gives the bits of summing x in order: adding a run of zeros changes a sum only
// by turning -0 into +0 (which a +0 among them does) and quieting a NaN (which one zero does).
// Returns how many were written, or -1 (out partly written) where that would pass `capacity`.
int64_t keep_zero_runs_f32(const float* x, int64_t n, float* out, int64_t capacity);

}  // namespace tessera::exec
