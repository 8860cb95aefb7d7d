// What the exp and logistic loops of every instruction set share (exp.cpp, exp_simd.cpp): the
// reduction's constants and table, the scalar form of the computation, the test that decides when
// the reference's own expression must be run, and the reference's results outside the range.
//
// exp(x) = 2^k * 2^(j/16) * exp(r), where x = (16k + j) ln2/16 + r, |r| <= ln2/32 (plus a hair), and
// exp(r) = 1 + q with q the Taylor polynomial r + r^2/2 + ... + r^6/720. The error of the double y
// that a loop computes, for |x| <= 87, in units of y's last place (ulp(y) >= 2^-53 y):
//   - truncation: |r|^7/7! e^|r| <= 0.021662^7/5040 * 1.022 < 4.6e-16 relative: < 4.2 ulps;
//   - the table entry, 2^(j/16) rounded to double from 64-bit long double: < 0.52 ulp of the
//     entry, relative 2^-53 * 0.52, so < 1.04 ulps of y (whose last place may be half as large);
//   - r: n * kStepHi is exact (n < 2^12, kStepHi has 32 significant bits) and so is x minus it
//     (both lie on the grid of 2^-36 when |x| >= 2^-6; n = 0 below), so r is off by the rounding of
//     r - n * kStepLo and of that product (< 2^-58 together), plus n times the error of
//     kStepHi + kStepLo as ln2/16 (below 2^-80): a relative error of y under 2^-57, 1/16 ulp;
//   - evaluating q (|q| < 0.022, a few roundings of terms below it): under 3 ulps of q, so under
//     0.07 ulp of y; y = scale * q + scale, scale = 2^k 2^(j/16) exact, with one rounding (FMA:
//     0.5 ulp) or two (without FMA: 0.5 ulp + 0.022 ulp).
// Total: under 6 ulps. logistic's double 1/(1 + e), e computed so: the relative error of e passes to
// 1 + e at most whole, and the sum and the division add half an ulp each (relative 2^-53): under
// 9 ulps in all. glibc's exp (the reference's, glibc >= 2.28) is within 1 ulp, so the reference's
// double is within 3.5 ulps of the exact value for either function. The reference's float is the
// rounding of that double, ours the rounding of y: the same float unless a float rounding boundary
// (a midpoint of two floats) lies between them, that is unless y is within 6 + 3.5 (exp) or
// 9 + 3.5 (logistic) ulps of one. kMargin = 64 recomputes every element closer than 64 ulps: five
// times the bound. Elements recomputed: about 2 * 64 / 2^29 of them, one in four million.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace tessera::exec::exp_detail {

// Double-ulps of distance to a float rounding boundary below which the reference recomputes.
inline constexpr int64_t kMargin = 64;

inline constexpr int kTableBits = 4;
inline constexpr int kTableSize = 1 << kTableBits;

struct Table {
  double v[kTableSize];
};

// 2^(j/16) for j < 16: exp(j ln2/16) by its Taylor series in long double (64 significant bits,
// terms to 1/30!), rounded once to double; at compile time, so every build has the same table.
consteval Table make_table() {
  constexpr long double kLn2 = 0.693147180559945309417232121458176568L;
  Table t{};
  for (int j = 0; j < kTableSize; ++j) {
    long double a = kLn2 * j / kTableSize, term = 1, sum = 1;
    for (int i = 1; i <= 30; ++i) {
      term = term * a / i;
      sum += term;
    }
    t.v[j] = static_cast<double>(sum);
  }
  return t;
}
alignas(64) inline constexpr Table kTable = make_table();

inline constexpr double kInvStep = 16 * 1.4426950408889634074;  // 16/ln2, rounded (n needs no more)
inline constexpr double kStepHi = 6.93147180369123816490e-01 / 16;  // ln2/16 to 32 significant bits
inline constexpr double kStepLo = 1.90821492927058770002e-10 / 16;  // the rest of ln2/16
inline constexpr double kShift = 0x1.8p52;  // adding it rounds to an integer held in the low bits
// exp(r) - 1 = r (1 + r (c2 + r (c3 + r (c4 + r (c5 + r c6))))).
inline constexpr double kC2 = 1.0 / 2, kC3 = 1.0 / 6, kC4 = 1.0 / 24, kC5 = 1.0 / 120, kC6 = 1.0 / 720;

// exp(x) for |x| <= 87 (any other x gives some value, without undefined behaviour), as each
// vector loop computes it lane by lane.
inline double exp_near(double x) {
  double s = x * kInvStep + kShift;
  double n = s - kShift;
  uint64_t b = std::bit_cast<uint64_t>(s);  // n = 16k + j in the low bits
  double r = (x - n * kStepHi) - n * kStepLo;
  // 2^k by the exponent bits (unsigned: inputs out of range wrap instead of overflowing).
  double scale = std::bit_cast<double>(std::bit_cast<uint64_t>(kTable.v[b & (kTableSize - 1)]) + ((b >> kTableBits) << 52));
  double p = kC6;
  p = p * r + kC5;
  p = p * r + kC4;
  p = p * r + kC3;
  p = p * r + kC2;
  p = p * r + 1.0;
  return scale * (p * r) + scale;
}

// Whether rounding y (a normal float's range) to float could differ from rounding any double
// within kMargin ulps of it: the 29 bits float drops lie within kMargin of the midpoint 2^28.
inline bool near_float_boundary(double y) {
  int64_t low = std::bit_cast<int64_t>(y) & ((int64_t{1} << 29) - 1);
  int64_t d = low - (int64_t{1} << 28);
  return d <= kMargin && d >= -kMargin;
}
// The same test as the vector loops make it: (low + kMargin - 2^28) mod 2^29 <= 2 kMargin.
inline constexpr uint64_t kBoundaryBias = kMargin - (int64_t{1} << 28);
inline constexpr uint64_t kLow29 = (uint64_t{1} << 29) - 1;

// The reference's expressions (interp/scalar_ops.h: Exponential and Logistic of f32).
inline float exp_reference(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }
inline float logistic_reference(float x) {
  double d = static_cast<double>(x);
  return static_cast<float>(1.0 / (1.0 + std::exp(-d)));
}

// Inputs where the float result is a normal number and the polynomial applies (false for NaN).
inline constexpr float kRange = 87.0f;
inline bool in_range(float x) { return (x >= -kRange) & (x <= kRange); }

// The reference's result outside that range, where it is known without calling glibc (whose
// underflow path is slow, and attention masks send half the scores there): below -104,
// exp(x) < 2^-150, which rounds to +0 in float (and logistic's is below that); above 87,
// 1 + exp(-x) is 1 in double. The vector loops put these in without a branch.
inline constexpr float kZeroBelow = 104.0f;
inline float exp_outside(float x) { return x < -kZeroBelow ? 0.0f : exp_reference(x); }
inline float logistic_outside(float x) {
  return x < -kZeroBelow ? 0.0f : x > kRange ? 1.0f : logistic_reference(x);
}

// The element a vector loop flagged: out of range, or in range with its double near a boundary.
template <bool Logistic>
inline float fallback(float x) {
  if (!in_range(x)) return Logistic ? logistic_outside(x) : exp_outside(x);
  return Logistic ? logistic_reference(x) : exp_reference(x);
}

}  // namespace tessera::exec::exp_detail
