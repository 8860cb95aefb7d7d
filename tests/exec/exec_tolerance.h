// The one tolerance of the exec tests for results that differ from the reference interpreter only
// by the order of a reduction: BLAS contractions sum in f32, in blocks, where the reference sums
// each product in f64 in order and rounds once. Stated once here; every comparison goes through
// `close`, which fails on NaN (a NaN difference is not <= anything).
#pragma once

#include <cmath>

namespace tessera::exec::testing {

constexpr double kContractionTolerance = 1e-6;  // relative, f32 BLAS vs in-order f64 sums; k <= 16

inline bool close(double got, double want) {
  return std::abs(got - want) <= kContractionTolerance * (1 + std::abs(want));
}

}  // namespace tessera::exec::testing
