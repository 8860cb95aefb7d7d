// exp and logistic of f32 arrays with the reference kernel's bits, several times faster (exp.h).
//
// The reference computes float(exp(double(x))) with glibc's exp, one call per element (about 15 ns
// here): the softmax and SwiGLU of a training step spent more time in it than in any op but dot.
// The loops compute exp in double with a table of 16 powers of two and a polynomial of degree 6
// (exp_internal.h: error under 6 units in the last place of the double), then round to float.
// Two doubles that close round to the same float unless they straddle a rounding boundary of
// float, so any element whose double lies within kMargin double-ulps of such a boundary, or whose
// input is outside the range where the float result is normal, is computed again by the
// reference's own expression. The result is the reference's float in every case, on every
// instruction set; the fallback is taken for a few elements in ten million.
//
// This file holds the baseline loop (any x86-64) and picks the loop of the CPU: AVX-512 or AVX2
// with FMA (exp_simd.cpp) where present, chosen at run time, as other machines run this build.
#include "exec/exp.h"

#include "exec/exp_internal.h"
#include "support/error.h"

namespace tessera::exec {

namespace exp_detail {
// exp_simd.cpp.
void exp_avx2(const float* x, float* z, int64_t n);
void logistic_avx2(const float* x, float* z, int64_t n);
void exp_avx512(const float* x, float* z, int64_t n);
void logistic_avx512(const float* x, float* z, int64_t n);
}  // namespace exp_detail

namespace {

using namespace exp_detail;

// One element at a time; the element's input is read before its result is written (z may be x).
template <bool Logistic>
void baseline(const float* x, float* z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    double d = static_cast<double>(v);
    double y = Logistic ? 1.0 / (1.0 + exp_near(-d)) : exp_near(d);
    z[i] = in_range(v) && !near_float_boundary(y) ? static_cast<float>(y) : fallback<Logistic>(v);
  }
}

ExpIsa best_isa() {
  static const ExpIsa isa = exp_isa_available(ExpIsa::kAvx512) ? ExpIsa::kAvx512
                            : exp_isa_available(ExpIsa::kAvx2) ? ExpIsa::kAvx2
                                                                : ExpIsa::kBaseline;
  return isa;
}

// The one table of loops: each instruction set's exp or logistic.
template <bool Logistic>
void run(ExpIsa isa, const float* x, float* z, int64_t n) {
  switch (isa) {
    case ExpIsa::kBaseline: return baseline<Logistic>(x, z, n);
    case ExpIsa::kAvx2: return Logistic ? logistic_avx2(x, z, n) : exp_avx2(x, z, n);
    case ExpIsa::kAvx512: return Logistic ? logistic_avx512(x, z, n) : exp_avx512(x, z, n);
  }
}

// A caller's choice of instruction set, checked first (tests compare them all).
template <bool Logistic>
void run_checked(const char* what, ExpIsa isa, const float* x, float* z, int64_t n) {
  if (!exp_isa_available(isa)) throw support::InternalError(fmt::format("{}: instruction set not available on this CPU", what));
  run<Logistic>(isa, x, z, n);
}

}  // namespace

bool exp_isa_available(ExpIsa isa) {
  switch (isa) {
    case ExpIsa::kBaseline: return true;
    case ExpIsa::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case ExpIsa::kAvx512: return __builtin_cpu_supports("avx512f");
  }
  return false;
}

void exp_f32(ExpIsa isa, const float* x, float* z, int64_t n) { run_checked<false>("exp_f32", isa, x, z, n); }
void logistic_f32(ExpIsa isa, const float* x, float* z, int64_t n) { run_checked<true>("logistic_f32", isa, x, z, n); }

void exp_f32(const float* x, float* z, int64_t n) { run<false>(best_isa(), x, z, n); }
void logistic_f32(const float* x, float* z, int64_t n) { run<true>(best_isa(), x, z, n); }

}  // namespace tessera::exec
