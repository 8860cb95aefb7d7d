// The exp and logistic loops of exp.h for AVX2 with FMA (four doubles per instruction) and for
// AVX-512 (eight), chosen at run time by exp.cpp. Each lane computes exp_near of exp_internal.h
// (the same reduction, table and polynomial, so the same error bound), the loop then rounds to
// float, puts in the results known outside the range (0 below -104, logistic's 1 above 87: the
// masked scores of a softmax are half of them), and flags the lanes otherwise out of range or near
// a float rounding boundary; only a block with a flagged lane goes element by element through the
// reference's expression. A block's inputs are
// in registers before its results are stored: z may be x.
// GCC 12 warns that the _mm512_undefined_* placeholders inside its own AVX-512 cast intrinsics may
// be uninitialized (GCC bug 105593); the warning concerns the header, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>

#include "exec/exp_internal.h"

namespace tessera::exec::exp_detail {

namespace {

// The flagged lanes of a block of `Lanes` (bit q set: lane q) recomputed from the inputs.
template <bool Logistic, int Lanes>
__attribute__((noinline, cold)) void fix(const float* xs, float* zs, unsigned flags) {
  for (int q = 0; q < Lanes; ++q)
    if (flags >> q & 1) zs[q] = fallback<Logistic>(xs[q]);
}

// ---- AVX2 + FMA ----

template <bool Logistic>
__attribute__((target("avx2,fma"), always_inline)) inline __m256d near4(__m256d x) {
  if constexpr (Logistic) x = _mm256_xor_pd(x, _mm256_set1_pd(-0.0));
  const __m256d shift = _mm256_set1_pd(kShift);
  __m256d s = _mm256_fmadd_pd(x, _mm256_set1_pd(kInvStep), shift);
  __m256d n = _mm256_sub_pd(s, shift);
  __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(kStepHi), x);
  r = _mm256_fnmadd_pd(n, _mm256_set1_pd(kStepLo), r);
  __m256i b = _mm256_castpd_si256(s);
  __m256i j = _mm256_and_si256(b, _mm256_set1_epi64x(kTableSize - 1));
  __m256d t = _mm256_i64gather_pd(kTable.v, j, 8);
  __m256d scale = _mm256_castsi256_pd(
      _mm256_add_epi64(_mm256_castpd_si256(t), _mm256_slli_epi64(_mm256_srli_epi64(b, kTableBits), 52)));
  __m256d p = _mm256_fmadd_pd(_mm256_set1_pd(kC6), r, _mm256_set1_pd(kC5));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kC4));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kC3));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kC2));
  p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0));
  __m256d y = _mm256_fmadd_pd(scale, _mm256_mul_pd(p, r), scale);
  if constexpr (Logistic) y = _mm256_div_pd(_mm256_set1_pd(1.0), _mm256_add_pd(_mm256_set1_pd(1.0), y));
  return y;
}

// Lanes of y within kMargin ulps of a float rounding boundary (near_float_boundary), as bits.
__attribute__((target("avx2"), always_inline)) inline unsigned near_boundary4(__m256d y) {
  __m256i t = _mm256_and_si256(_mm256_add_epi64(_mm256_castpd_si256(y), _mm256_set1_epi64x(static_cast<int64_t>(kBoundaryBias))),
                               _mm256_set1_epi64x(static_cast<int64_t>(kLow29)));
  __m256i near = _mm256_cmpgt_epi64(_mm256_set1_epi64x(2 * kMargin + 1), t);
  return static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(near)));
}

template <bool Logistic>
__attribute__((target("avx2,fma"), always_inline)) inline void block8(const float* x, float* z) {
  __m256 xf = _mm256_loadu_ps(x);
  __m256 in = _mm256_and_ps(_mm256_cmp_ps(xf, _mm256_set1_ps(-kRange), _CMP_GE_OQ),
                            _mm256_cmp_ps(xf, _mm256_set1_ps(kRange), _CMP_LE_OQ));
  __m256d lo = near4<Logistic>(_mm256_cvtps_pd(_mm256_castps256_ps128(xf)));
  __m256d hi = near4<Logistic>(_mm256_cvtps_pd(_mm256_extractf128_ps(xf, 1)));
  __m256 zf = _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
  // The outside lanes whose result is known (outside_known): a causal mask's scores, in bulk.
  __m256 zero = _mm256_cmp_ps(xf, _mm256_set1_ps(-kZeroBelow), _CMP_LT_OQ);
  zf = _mm256_andnot_ps(zero, zf);
  __m256 known = zero;
  if constexpr (Logistic) {
    __m256 one = _mm256_cmp_ps(xf, _mm256_set1_ps(kRange), _CMP_GT_OQ);
    zf = _mm256_blendv_ps(zf, _mm256_set1_ps(1.0f), one);
    known = _mm256_or_ps(known, one);
  }
  unsigned inside = static_cast<unsigned>(_mm256_movemask_ps(in));
  unsigned flags = (~(inside | static_cast<unsigned>(_mm256_movemask_ps(known))) & 0xFF) |
                   ((near_boundary4(lo) | near_boundary4(hi) << 4) & inside);
  if (__builtin_expect(flags != 0, 0)) {
    alignas(32) float xs[8], zs[8];
    _mm256_store_ps(xs, xf);
    _mm256_store_ps(zs, zf);
    fix<Logistic, 8>(xs, zs, flags);
    zf = _mm256_load_ps(zs);
  }
  _mm256_storeu_ps(z, zf);
}

template <bool Logistic>
__attribute__((target("avx2,fma"))) void run_avx2(const float* x, float* z, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) block8<Logistic>(x + i, z + i);
  if (i < n) {
    float buf[8] = {};
    std::copy(x + i, x + n, buf);
    block8<Logistic>(buf, buf);
    std::copy(buf, buf + (n - i), z + i);
  }
}

// ---- AVX-512 ----

template <bool Logistic>
__attribute__((target("avx512f"), always_inline)) inline __m512d near8(__m512d x) {
  if constexpr (Logistic) x = _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(x), _mm512_set1_epi64(INT64_MIN)));
  const __m512d shift = _mm512_set1_pd(kShift);
  __m512d s = _mm512_fmadd_pd(x, _mm512_set1_pd(kInvStep), shift);
  __m512d n = _mm512_sub_pd(s, shift);
  __m512d r = _mm512_fnmadd_pd(n, _mm512_set1_pd(kStepHi), x);
  r = _mm512_fnmadd_pd(n, _mm512_set1_pd(kStepLo), r);
  __m512i b = _mm512_castpd_si512(s);
  // The table's 16 entries sit in two registers; the index's low 4 bits pick one (no gather).
  __m512d t = _mm512_permutex2var_pd(_mm512_load_pd(kTable.v), b, _mm512_load_pd(kTable.v + 8));
  __m512d scale = _mm512_castsi512_pd(
      _mm512_add_epi64(_mm512_castpd_si512(t), _mm512_slli_epi64(_mm512_srli_epi64(b, kTableBits), 52)));
  __m512d p = _mm512_fmadd_pd(_mm512_set1_pd(kC6), r, _mm512_set1_pd(kC5));
  p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kC4));
  p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kC3));
  p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kC2));
  p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
  __m512d y = _mm512_fmadd_pd(scale, _mm512_mul_pd(p, r), scale);
  if constexpr (Logistic) y = _mm512_div_pd(_mm512_set1_pd(1.0), _mm512_add_pd(_mm512_set1_pd(1.0), y));
  return y;
}

__attribute__((target("avx512f"), always_inline)) inline unsigned near_boundary8(__m512d y) {
  __m512i t = _mm512_and_si512(_mm512_add_epi64(_mm512_castpd_si512(y), _mm512_set1_epi64(static_cast<int64_t>(kBoundaryBias))),
                               _mm512_set1_epi64(static_cast<int64_t>(kLow29)));
  return _mm512_cmple_epu64_mask(t, _mm512_set1_epi64(2 * kMargin));
}

// Sixteen elements, the lanes of `mask` only (a tail loads and stores no further).
template <bool Logistic>
__attribute__((target("avx512f"), always_inline)) inline void block16(const float* x, float* z, __mmask16 mask) {
  __m512 xf = _mm512_maskz_loadu_ps(mask, x);
  __mmask16 in = _mm512_cmp_ps_mask(xf, _mm512_set1_ps(-kRange), _CMP_GE_OQ) &
                 _mm512_cmp_ps_mask(xf, _mm512_set1_ps(kRange), _CMP_LE_OQ);
  __m512d lo = near8<Logistic>(_mm512_cvtps_pd(_mm512_castps512_ps256(xf)));
  __m512d hi = near8<Logistic>(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(xf), 1))));
  __m512 zf = _mm512_castpd_ps(
      _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(_mm512_cvtpd_ps(lo))), _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1));
  __mmask16 zero = _mm512_cmp_ps_mask(xf, _mm512_set1_ps(-kZeroBelow), _CMP_LT_OQ);
  zf = _mm512_maskz_mov_ps(static_cast<__mmask16>(~zero), zf);
  __mmask16 known = zero;
  if constexpr (Logistic) {
    __mmask16 one = _mm512_cmp_ps_mask(xf, _mm512_set1_ps(kRange), _CMP_GT_OQ);
    zf = _mm512_mask_mov_ps(zf, one, _mm512_set1_ps(1.0f));
    known |= one;
  }
  unsigned flags = (~static_cast<unsigned>(in | known) | ((near_boundary8(lo) | near_boundary8(hi) << 8) & in)) & mask;
  if (__builtin_expect(flags != 0, 0)) {
    alignas(64) float xs[16], zs[16];
    _mm512_store_ps(xs, xf);
    _mm512_store_ps(zs, zf);
    fix<Logistic, 16>(xs, zs, flags);
    zf = _mm512_load_ps(zs);
  }
  _mm512_mask_storeu_ps(z, mask, zf);
}

template <bool Logistic>
__attribute__((target("avx512f"))) void run_avx512(const float* x, float* z, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) block16<Logistic>(x + i, z + i, 0xFFFF);
  if (i < n) block16<Logistic>(x + i, z + i, static_cast<__mmask16>((1u << (n - i)) - 1));
}

}  // namespace

void exp_avx2(const float* x, float* z, int64_t n) { run_avx2<false>(x, z, n); }
void logistic_avx2(const float* x, float* z, int64_t n) { run_avx2<true>(x, z, n); }
void exp_avx512(const float* x, float* z, int64_t n) { run_avx512<false>(x, z, n); }
void logistic_avx512(const float* x, float* z, int64_t n) { run_avx512<true>(x, z, n); }

}  // namespace tessera::exec::exp_detail
