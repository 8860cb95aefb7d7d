// exp and logistic of f32 arrays with the reference kernel's bits, several times faster (exp.h).
//
// The reference computes float(exp(double(x))) with glibc's exp, one call per element (about 15 ns
// here): the softmax and SwiGLU of a training step spent more time in it than in any op but dot.
// These loops compute exp in double with a polynomial the compiler vectorizes (error a few units in
// the last place of the double), then round to float. Two doubles that close round to the same
// float unless they straddle a rounding boundary of float (a midpoint between two floats), so any
// element whose double lies within kMargin double-ulps of such a boundary, or whose input is
// outside the range where the float result is normal, is computed again by the reference's own
// expression. The result is the reference's float in every case; the fallback is taken for a few
// elements in ten million.
#include "exec/exp.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tessera::exec {

namespace {

// Double-ulps of distance to a float rounding boundary below which the reference recomputes: the
// polynomial's error (under 4 ulps) plus glibc's (under 1), with room to spare.
constexpr int64_t kMargin = 64;

// exp(x) for |x| <= 88 (any other x gives some value, without undefined behaviour):
// x = k ln2 + r with |r| <= ln2/2 (Cody-Waite: k * kLn2Hi is exact), then exp(r) by its Taylor
// polynomial of degree 13 (truncation error below 1e-17) and 2^k by the exponent bits.
inline double exp_near(double x) {
  constexpr double kLog2e = 1.4426950408889634074;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 32 significant bits
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kShift = 0x1.8p52;  // adding it rounds to an integer held in the low bits
  double s = x * kLog2e + kShift;
  double n = s - kShift;
  // Unsigned, so inputs out of range (recomputed by the caller) wrap instead of overflowing.
  uint64_t k = std::bit_cast<uint64_t>(s) - std::bit_cast<uint64_t>(kShift);
  double r = (x - n * kLn2Hi) - n * kLn2Lo;
  double p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  return p * std::bit_cast<double>((k + 1023) << 52);  // 2^k
}

// Whether rounding y (a normal float's range) to float could differ from rounding any double
// within kMargin ulps of it.
inline bool near_float_boundary(double y) {
  int64_t low = std::bit_cast<int64_t>(y) & ((int64_t{1} << 29) - 1);  // the bits float drops
  int64_t d = low - (int64_t{1} << 28);
  return d <= kMargin && d >= -kMargin;
}

// The reference's expressions (interp/scalar_ops.h: Exponential and Logistic of f32).
inline float exp_reference(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }
inline float logistic_reference(float x) {
  double d = static_cast<double>(x);
  return static_cast<float>(1.0 / (1.0 + std::exp(-d)));
}

// Inputs where the float result is a normal number and the polynomial applies (false for NaN).
// The loops below compute every element without asking, and then whether any needs more: a
// branch per element would keep them from vectorizing.
inline bool in_range(float x) { return (x >= -87.0f) & (x <= 87.0f); }

// The reference's result outside that range, where it is known without calling glibc (whose
// underflow path is slow, and attention masks send half the scores there): below -104,
// exp(x) < 2^-150, which rounds to +0 in float; above 87, 1 + exp(-x) is 1 in double.
inline float exp_outside(float x) { return x < -104.0f ? 0.0f : exp_reference(x); }
inline float logistic_outside(float x) {
  return x < -104.0f ? 0.0f : x > 87.0f ? 1.0f : logistic_reference(x);
}

// z[i] = the float of y[i], then, for the elements whose input is out of range or whose y lies
// near a float rounding boundary, the fallback. x is a copy: z may be the caller's x (a fused loop
// writes its result over a dying operand).
template <float (*Outside)(float), float (*Reference)(float)>
inline void finish(const float* x, const double* y, float* z, int64_t m) {
  int any = 0;
  for (int64_t i = 0; i < m; ++i) {
    z[i] = static_cast<float>(y[i]);
    any |= static_cast<int>(!in_range(x[i])) | static_cast<int>(near_float_boundary(y[i]));
  }
  if (any == 0) return;
  for (int64_t i = 0; i < m; ++i) {
    if (!in_range(x[i])) z[i] = Outside(x[i]);
    else if (near_float_boundary(y[i])) z[i] = Reference(x[i]);
  }
}

}  // namespace

// The loops are compiled twice, for AVX2 + FMA and for the baseline, and the CPU picks one: four
// doubles per instruction instead of two. (FMA changes the double by an ulp, never the float.)
// Not under ThreadSanitizer: the clones' ifunc resolver runs while the dynamic loader relocates,
// before TSan's runtime is up, and its instrumented entry crashes every binary at start-up.
#if defined(__SANITIZE_THREAD__)
#define TESSERA_CLONES
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TESSERA_CLONES
#endif
#endif
#ifndef TESSERA_CLONES
#define TESSERA_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#endif

// z = f(x) in chunks: `near` computes each element's double from the input (vectorized), then
// finish() rounds and sends the elements that need it to the fallbacks. x is copied per chunk: z
// may be x (a fused loop writes its result over a dying operand).
template <float (*Outside)(float), float (*Reference)(float), typename Near>
__attribute__((always_inline)) inline void chunked(const float* x, float* z, int64_t n, Near near) {
  constexpr int64_t kChunk = 256;
  double y[kChunk];
  float xs[kChunk];
  for (int64_t base = 0; base < n; base += kChunk) {
    int64_t m = std::min(kChunk, n - base);
    std::copy(x + base, x + base + m, xs);
    for (int64_t i = 0; i < m; ++i) y[i] = near(static_cast<double>(xs[i]));
    finish<Outside, Reference>(xs, y, z + base, m);
  }
}

TESSERA_CLONES void exp_f32(const float* x, float* z, int64_t n) {
  chunked<exp_outside, exp_reference>(x, z, n, [](double d) { return exp_near(d); });
}

TESSERA_CLONES void logistic_f32(const float* x, float* z, int64_t n) {
  chunked<logistic_outside, logistic_reference>(x, z, n, [](double d) { return 1.0 / (1.0 + exp_near(-d)); });
}

}  // namespace tessera::exec
