// 2-D transposes of 4-byte elements (strided.h's transpose_tiles) in AVX2 registers: each 8x8 block
// is eight 8-element loads along the source's lines, an in-register transpose (transpose8_avx2.h:
// moves of bits, never arithmetic, so NaN payloads and -0 pass unchanged) and
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

#include "exec/transpose8_avx2.h"

namespace tessera::exec {

namespace {

std::atomic<int64_t> blocks_done{0};

__attribute__((target("avx2"))) inline void block8(const float* src, int64_t src_col, float* dst, int64_t dst_row) {
  // r[k]: source line k (destination column k), elements 0..7 along it (destination rows).
  __m256 r[8];
  #pragma GCC unroll 8
  for (int64_t k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(src + k * src_col);
  transpose8(r);
  #pragma GCC unroll 8
  for (int64_t m = 0; m < 8; ++m) _mm256_storeu_ps(dst + m * dst_row, r[m]);
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
