// 2-D transposes of 4-byte elements (strided.h's transpose_tiles) in AVX2 registers: each 8x8 block
// is eight 8-element loads along the source's lines, an in-register transpose (unpacks, shuffles
// and lane permutes: moves of bits, never arithmetic, so NaN payloads and -0 pass unchanged) and
// eight 8-element stores along the destination's rows, where the scalar tile loop does one load
// from a different line per element. Blocks go through the same 32x32 tiles as the scalar loop
// (their source lines stay in L1 while the tile's destination rows are written); the ragged edges
// of a tile are left to the scalar loop.
#include "exec/strided.h"

#include <immintrin.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace tessera::exec {

namespace {

std::atomic<int64_t> blocks_done{0};

__attribute__((target("avx2"))) inline void block8(const float* src, int64_t src_col, float* dst, int64_t dst_row) {
  // r[k]: source line k (destination column k), elements 0..7 along it (destination rows).
  __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + src_col), r2 = _mm256_loadu_ps(src + 2 * src_col),
         r3 = _mm256_loadu_ps(src + 3 * src_col), r4 = _mm256_loadu_ps(src + 4 * src_col),
         r5 = _mm256_loadu_ps(src + 5 * src_col), r6 = _mm256_loadu_ps(src + 6 * src_col),
         r7 = _mm256_loadu_ps(src + 7 * src_col);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
         t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
         t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE),
         s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE),
         s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE),
         s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(dst, _mm256_permute2f128_ps(s0, s4, 0x20));
  _mm256_storeu_ps(dst + dst_row, _mm256_permute2f128_ps(s1, s5, 0x20));
  _mm256_storeu_ps(dst + 2 * dst_row, _mm256_permute2f128_ps(s2, s6, 0x20));
  _mm256_storeu_ps(dst + 3 * dst_row, _mm256_permute2f128_ps(s3, s7, 0x20));
  _mm256_storeu_ps(dst + 4 * dst_row, _mm256_permute2f128_ps(s0, s4, 0x31));
  _mm256_storeu_ps(dst + 5 * dst_row, _mm256_permute2f128_ps(s1, s5, 0x31));
  _mm256_storeu_ps(dst + 6 * dst_row, _mm256_permute2f128_ps(s2, s6, 0x31));
  _mm256_storeu_ps(dst + 7 * dst_row, _mm256_permute2f128_ps(s3, s7, 0x31));
}

__attribute__((target("avx2"))) void transpose(const float* src, int64_t src_col, int64_t rows, int64_t cols, float* dst,
                                               int64_t dst_row) {
  int64_t blocks = 0;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile)
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      int64_t i1 = std::min(rows, i0 + kTile), j1 = std::min(cols, j0 + kTile);
      int64_t i8 = i0 + (i1 - i0) / 8 * 8, j8 = j0 + (j1 - j0) / 8 * 8;
      for (int64_t i = i0; i < i8; i += 8)
        for (int64_t j = j0; j < j8; j += 8, ++blocks) block8(src + i + j * src_col, src_col, dst + i * dst_row + j, dst_row);
      // The tile's ragged edges: its columns past the blocks, then its rows past them.
      // (Copied as bytes: the elements may be integers, and a copy must move a float's bits as they are.)
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = i < i8 ? j8 : j0; j < j1; ++j) std::memcpy(dst + i * dst_row + j, src + i + j * src_col, 4);
    }
  blocks_done.fetch_add(blocks, std::memory_order_relaxed);
}

}  // namespace

bool transpose_tiles_4byte(const void* src, int64_t src_col, int64_t rows, int64_t cols, void* dst, int64_t dst_row) {
  // TESSERA_TRANSPOSE_BLOCKS=0 in the environment: the scalar tiles (for measuring, in one build).
  static const bool on = __builtin_cpu_supports("avx2") && !(std::getenv("TESSERA_TRANSPOSE_BLOCKS") &&
                                                               std::string_view(std::getenv("TESSERA_TRANSPOSE_BLOCKS")) == "0");
  if (!on || rows < 8 || cols < 8) return false;
  transpose(static_cast<const float*>(src), src_col, rows, cols, static_cast<float*>(dst), dst_row);
  return true;
}

int64_t transpose_blocks_done() { return blocks_done.load(std::memory_order_relaxed); }

}  // namespace tessera::exec
