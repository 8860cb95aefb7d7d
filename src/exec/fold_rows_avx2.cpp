// Eight f32 rows folded side by side in AVX2 registers (fold_rows.h): lane q of the accumulator is
// row q's running result, and each step combines it with the next element of every row (an 8x8
// block of the rows transposed in registers), so each row still folds its elements one after the
// other, in its order, with the scalar combiner's IEEE operation: add and multiply are the same
// single instruction (no FMA), and max/min pick the operand the reference's Extremum picks (a NaN
// first operand, else a NaN second, else between ±0 by sign, else by <). The bits are the scalar
// fold's; eight chains of one vector instruction replace eight scalar chains of several. Max and
// min of rows without NaNs take order keys (one integer max or min per step; fold8_ordered).
#include "exec/fold_rows.h"

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <string_view>

#include "exec/transpose8_avx2.h"

namespace tessera::exec {

namespace {

// TESSERA_ORDERED_FOLDS=0 in the environment: max and min rows fold through the NaN-aware combine
// alone (for measuring the keys, and for testing that path on rows without NaNs).
bool ordered_folds_on() {
  static const bool on = [] {
    const char* env = std::getenv("TESSERA_ORDERED_FOLDS");
    return !(env != nullptr && std::string_view(env) == "0");
  }();
  return on;
}

template <ir::OpKind Kind>
__attribute__((target("avx2"), always_inline)) inline __m256 combine(__m256 a, __m256 b) {
  // Written out, so that `a` stays the first source: when both are NaN, x86 returns the first
  // source's NaN, as the scalar a + b does (addss adds into a), and the compiler may otherwise swap
  // the operands of a commutative intrinsic.
  if constexpr (Kind == ir::OpKind::Add) {
    __m256 r;
    asm("vaddps %2, %1, %0" : "=x"(r) : "x"(a), "x"(b));
    return r;
  } else if constexpr (Kind == ir::OpKind::Multiply) {
    __m256 r;
    asm("vmulps %2, %1, %0" : "=x"(r) : "x"(a), "x"(b));
    return r;
  } else {
    // Extremum<Max>(a, b): a if a is NaN; b if b is NaN; between equal values (only ±0 differ) b
    // when a's sign bit is set (max) or clear (min); else b when (a < b) == Max.
    constexpr bool kMax = Kind == ir::OpKind::Maximum;
    __m256 nan_a = _mm256_cmp_ps(a, a, _CMP_UNORD_Q);
    __m256 nan_b = _mm256_cmp_ps(b, b, _CMP_UNORD_Q);
    __m256 eq = _mm256_cmp_ps(a, b, _CMP_EQ_OQ);
    __m256 sign = _mm256_castsi256_ps(_mm256_srai_epi32(_mm256_castps_si256(a), 31));  // all ones where set
    __m256 lt = _mm256_cmp_ps(a, b, _CMP_LT_OQ);
    __m256 by_sign = kMax ? sign : _mm256_xor_ps(sign, _mm256_castsi256_ps(_mm256_set1_epi32(-1)));
    __m256 by_order = kMax ? lt : _mm256_xor_ps(lt, _mm256_castsi256_ps(_mm256_set1_epi32(-1)));
    __m256 take_b = _mm256_or_ps(nan_b, _mm256_blendv_ps(by_order, by_sign, eq));
    take_b = _mm256_andnot_ps(nan_a, take_b);
    return _mm256_blendv_ps(a, b, take_b);
  }
}

// Rows r .. r + 7 of x (each `len` long) folded into acc's lanes.
template <ir::OpKind Kind>
__attribute__((target("avx2"))) void fold8(const float* x, int64_t len, float* dst) {
  __m256 acc = _mm256_loadu_ps(dst);
  int64_t k = 0;
  for (; k + 8 <= len; k += 8) {
    __m256 c[8];
    #pragma GCC unroll 8
    for (int64_t q = 0; q < 8; ++q) c[q] = _mm256_loadu_ps(x + q * len + k);
    transpose8(c);  // c[j]'s lane q is row q's element k + j
    #pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) acc = combine<Kind>(acc, c[j]);
  }
  for (; k < len; ++k) {
    __m256 c = _mm256_setr_ps(x[k], x[len + k], x[2 * len + k], x[3 * len + k], x[4 * len + k], x[5 * len + k],
                              x[6 * len + k], x[7 * len + k]);
    acc = combine<Kind>(acc, c);
  }
  _mm256_storeu_ps(dst, acc);
}

// Max and min of floats with no NaN among them, as the reference's Extremum picks them, are the
// integer max and min of keys that order the floats as it does: x ^ ((x >> 31) & 0x7fffffff)
// keeps a positive float's bits and flips all but the sign of a negative one's, so that signed
// keys follow the floats' order with -0 below +0 (Extremum's max of ±0 is +0, its min -0), and
// equal keys are equal bits. The key is its own inverse. One integer instruction on the
// accumulator's chain instead of the NaN-aware compare-and-blend's five.
__attribute__((target("avx2"), always_inline)) inline __m256i order_key(__m256 x) {
  __m256i i = _mm256_castps_si256(x);
  return _mm256_xor_si256(i, _mm256_and_si256(_mm256_srai_epi32(i, 31), _mm256_set1_epi32(0x7fffffff)));
}

// fold8<Maximum or Minimum> through the keys: false (dst untouched) where a NaN is among the rows'
// elements or their running results, whose fold then takes the NaN-aware combine.
template <ir::OpKind Kind>
__attribute__((target("avx2"))) bool fold8_ordered(const float* x, int64_t len, float* dst) {
  constexpr bool kMax = Kind == ir::OpKind::Maximum;
  __m256 init = _mm256_loadu_ps(dst);
  __m256 nan = _mm256_cmp_ps(init, init, _CMP_UNORD_Q);
  __m256i acc = order_key(init);
  auto step = [&](__m256 c) __attribute__((target("avx2"), always_inline)) {
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(c, c, _CMP_UNORD_Q));
    acc = kMax ? _mm256_max_epi32(acc, order_key(c)) : _mm256_min_epi32(acc, order_key(c));
  };
  int64_t k = 0;
  for (; k + 8 <= len; k += 8) {
    __m256 c[8];
    #pragma GCC unroll 8
    for (int64_t q = 0; q < 8; ++q) c[q] = _mm256_loadu_ps(x + q * len + k);
    transpose8(c);
    #pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) step(c[j]);
  }
  for (; k < len; ++k)
    step(_mm256_setr_ps(x[k], x[len + k], x[2 * len + k], x[3 * len + k], x[4 * len + k], x[5 * len + k],
                        x[6 * len + k], x[7 * len + k]));
  if (_mm256_movemask_ps(nan) != 0) return false;
  _mm256_storeu_ps(dst, _mm256_castsi256_ps(order_key(_mm256_castsi256_ps(acc))));
  return true;
}

template <ir::OpKind Kind>
__attribute__((target("avx2"))) int64_t fold_all(const float* x, int64_t rows, int64_t len, float* dst) {
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8) {
    if constexpr (Kind == ir::OpKind::Maximum || Kind == ir::OpKind::Minimum) {
      if (ordered_folds_on() && fold8_ordered<Kind>(x + r * len, len, dst + r)) continue;
    }
    fold8<Kind>(x + r * len, len, dst + r);
  }
  return r;
}

// acc + b with acc the first source (its NaN when both are: fold8's rule, in a scalar register).
__attribute__((target("avx2"), always_inline)) inline float add_first(float acc, float b) {
  float r;
  asm("vaddss %2, %1, %0" : "=x"(r) : "x"(acc), "x"(b));
  return r;
}

__attribute__((target("avx2"))) float sum_runs(float acc, const float* x, int64_t runs) {
  constexpr int64_t kRun = 64;
  for (int64_t r = 0; r < runs; ++r, x += kRun) {
    __m256i nonzero = _mm256_setzero_si256(), plus_zero = _mm256_setzero_si256();
    #pragma GCC unroll 8
    for (int64_t q = 0; q < kRun; q += 8) {
      __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + q));
      nonzero = _mm256_or_si256(nonzero, _mm256_slli_epi32(bits, 1));  // the sign dropped
      plus_zero = _mm256_or_si256(plus_zero, _mm256_cmpeq_epi32(bits, _mm256_setzero_si256()));
    }
    if (!_mm256_testz_si256(nonzero, nonzero) || acc != acc) {  // a NaN sum adds too (quieting a signaling one)
      for (int64_t q = 0; q < kRun; ++q) acc = add_first(acc, x[q]);
    } else if (!_mm256_testz_si256(plus_zero, plus_zero) && acc == 0.0f) {
      acc = 0.0f;  // -0 + +0 is +0; +0 stays
    }
  }
  return acc;
}

}  // namespace

float sum_skipping_zeros_f32(float acc, const float* x, int64_t n, int64_t& done) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  done = avx2 ? n / 64 * 64 : 0;
  return done > 0 ? sum_runs(acc, x, done / 64) : acc;
}

int64_t fold_rows8_f32(ir::OpKind kind, const float* x, int64_t rows, int64_t len, float* dst) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (!avx2) return 0;
  switch (kind) {
    case ir::OpKind::Add: return fold_all<ir::OpKind::Add>(x, rows, len, dst);
    case ir::OpKind::Multiply: return fold_all<ir::OpKind::Multiply>(x, rows, len, dst);
    case ir::OpKind::Maximum: return fold_all<ir::OpKind::Maximum>(x, rows, len, dst);
    case ir::OpKind::Minimum: return fold_all<ir::OpKind::Minimum>(x, rows, len, dst);
    default: return 0;
  }
}

int64_t keep_zero_runs_f32(const float* x, int64_t n, float* out, int64_t capacity) {
  constexpr int64_t kRun = 64;
  int64_t size = 0;
  for (int64_t at = 0; at < n; at += kRun) {
    int64_t count = std::min(kRun, n - at);
    uint32_t magnitude = 0, plus_zero = 0;
    for (int64_t i = 0; i < count; ++i) {
      uint32_t bits = std::bit_cast<uint32_t>(x[at + i]);
      magnitude |= bits << 1;  // the sign dropped
      plus_zero |= bits == 0;
    }
    int64_t add = magnitude == 0 && count == kRun ? 1 : count;
    if (size + add > capacity) return -1;
    if (add == 1) out[size] = plus_zero ? 0.0f : -0.0f;
    else std::copy(x + at, x + at + count, out + size);
    size += add;
  }
  return size;
}

}  // namespace tessera::exec
