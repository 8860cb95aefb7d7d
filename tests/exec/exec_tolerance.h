// The one tolerance of the exec tests for results that differ from the reference interpreter only
// by the order of a reduction: BLAS contractions sum in f32, in blocks, where the reference sums
// each product in f64 in order and rounds once. Stated once here; every comparison goes through
// `close`, which fails on NaN (a NaN difference is not <= anything).
#pragma once

#include <cmath>
#include <cstdint>

namespace tessera::exec::testing {

constexpr double kContractionTolerance = 1e-6;  // relative, f32 BLAS vs in-order f64 sums; k <= 16

// A whole random program (the SPMD property generator's) whose contractions sum in another order:
// the ops after a contraction (tanh's inverse near 1, squares, differences) amplify its 1e-6, so
// programs are held to DESIGN.md §2's tolerance for a schedule, as sharded against unsharded runs are.
// Seeds 20000-60000 of Executable.PropertyProgramsGiveTheInterpretersBits (by hand) gave up to 2.3e-6.
constexpr double kProgramTolerance = 1e-5;

// bf16 contractions (f32 sums rounded once to bf16): sums that differ in order by ~1e-7 can round
// to neighbouring bf16 values when they lie near a rounding boundary: one bf16 ulp, at most 2^-7
// of the value.
constexpr double kBf16ContractionTolerance = 1.0 / 128;

// One GEMM call of any size against its product summed in f64: an f32 sum of K products is off by
// at most K·2^-24 times the sum of the products' magnitudes (the standard bound for any order of
// summation; `gemm_error_bound`).
inline double gemm_error_bound(int64_t k, double abs_sum) { return double(k) * 0x1p-24 * abs_sum; }

inline bool close(double got, double want, double tolerance = kContractionTolerance) {
  return std::abs(got - want) <= tolerance * (1 + std::abs(want));
}

}  // namespace tessera::exec::testing
