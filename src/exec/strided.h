// Strided copies, the one loop behind transpose, broadcast_in_dim, slice, reverse, concatenate and
// pad: dst (row-major over `shape`) takes src[base + sum_d index_d * strides[d]]. Large ones can be
// spread over the free threads (strided_copy_spread). Also the base and strides at which a view
// (broadcast, slice, reverse) reads its operand, for these copies and for the fused loops' loads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "exec/dims.h"
#include "ir/module.h"
#include "support/error.h"
#include "support/threads.h"

namespace tessera::exec {

// The strides through which broadcast `op` reads its operand, along its result's dimensions
// (`strides`: that many zeros).
inline void broadcast_strides(const ir::Op& op, Dims& strides) {
  const std::vector<int64_t>& shape = op.result(0)->type().shape;
  const std::vector<int64_t>& from = op.operand(0)->type().shape;
  const auto& dims = op.attrs().get<std::vector<int64_t>>("broadcast_dimensions");
  RowMajor xs(from);
  for (size_t k = 0; k < dims.size(); ++k)
    if (from[k] == shape[static_cast<size_t>(dims[k])]) strides[static_cast<size_t>(dims[k])] = xs[k];
}

// The element offset and strides (along its result's dimensions; `strides`: that many zeros) at
// which view `op` (a broadcast, a slice or a reverse: fusion_rules::is_view) reads its operand: a
// broadcast repeats elements (stride 0), a slice starts inside and steps over some, a reverse walks
// reversed dimensions backwards from their last index.
inline int64_t view_strides(const ir::Op& op, Dims& strides) {
  const std::vector<int64_t>& from = op.operand(0)->type().shape;
  RowMajor xs(from);
  int64_t offset = 0;
  switch (op.kind()) {
    case ir::OpKind::BroadcastInDim: broadcast_strides(op, strides); break;
    case ir::OpKind::Slice: {
      const auto& start = op.attrs().get<std::vector<int64_t>>("start_indices");
      const auto& step = op.attrs().get<std::vector<int64_t>>("strides");
      for (size_t d = 0; d < from.size(); ++d) {
        strides[d] = xs[d] * (step.empty() ? 1 : step[d]);
        offset += xs[d] * start[d];
      }
      break;
    }
    case ir::OpKind::Reverse: {
      const auto& dims = op.attrs().get<std::vector<int64_t>>("dimensions");
      for (size_t d = 0; d < from.size(); ++d) strides[d] = xs[d];
      for (int64_t d : dims) {  // unique (the shape rule checks)
        auto u = static_cast<size_t>(d);
        offset += (from[u] - 1) * xs[u];
        strides[u] = -xs[u];
      }
      break;
    }
    default: TESSERA_CHECK(false, "view_strides of {}", op.name());
  }
  return offset;
}

// Tiles of a transposing copy: kTile x kTile elements, whose source lines (kTile of them, one per
// destination column) stay in L1 while the tile's destination rows are written.
constexpr int64_t kTile = 32;

// transpose_tiles below for 4-byte elements in AVX2 registers, 8x8 blocks at a time
// (transpose_avx2.cpp); false (nothing done) where the CPU has no AVX2 or the copy is narrower than
// a block, or TESSERA_TRANSPOSE_BLOCKS=0. transpose_blocks_done() counts the blocks moved since
// start (for tests).
bool transpose_tiles_4byte(const void* src, int64_t src_col, int64_t rows, int64_t cols, void* dst, int64_t dst_row);
int64_t transpose_blocks_done();

// dst[i * dst_row + j] = src[i + j * src_col] for i < rows, j < cols: a 2-D transpose, tile by tile.
// Row by row it reads a new source line (and often a new page) for every element it writes.
template <typename T>
void transpose_tiles(const T* src, int64_t src_col, int64_t rows, int64_t cols, T* dst, int64_t dst_row) {
  if constexpr (sizeof(T) == 4)
    if (transpose_tiles_4byte(src, src_col, rows, cols, dst, dst_row)) return;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile)
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      int64_t i1 = std::min(rows, i0 + kTile), j1 = std::min(cols, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i) {
        T* out = dst + i * dst_row;
        const T* in = src + i;
        for (int64_t j = j0; j < j1; ++j) out[j] = in[j * src_col];
      }
    }
}

template <typename T>
void strided_copy(const T* src, int64_t base, std::span<const int64_t> shape, std::span<const int64_t> strides, T* dst,
                  std::span<const int64_t> dst_strides = {}) {
  size_t rank = shape.size();
  for (int64_t d : shape)
    if (d == 0) return;
  if (rank == 0) {
    dst[0] = src[base];
    return;
  }
  // Row-major destination unless strides are given (for writing into part of a larger buffer).
  Dims ds(rank);
  if (dst_strides.empty()) Dims::row_major(shape, ds.data());
  else std::copy(dst_strides.begin(), dst_strides.end(), ds.begin());
  const int64_t n = shape[rank - 1], step = strides[rank - 1], dstep = ds[rank - 1];
  // A transpose: the destination's rows read the source across its lines, and an outer dimension
  // `p` reads it along them. Copied in tiles over (p, the innermost dimension), the other
  // dimensions in row-major order around them; p = rank - 1 when there is none (rows copied).
  size_t p = rank - 1;
  if (rank >= 2 && dstep == 1 && step != 1 && n >= 8)
    for (size_t d = 0; d + 1 < rank; ++d)
      if (strides[d] == 1 && shape[d] >= 8) p = d;
  Dims index(rank);
  int64_t in = base, out = 0;
  while (true) {
    if (p + 1 < rank) {
      transpose_tiles(src + in, step, shape[p], n, dst + out, ds[p]);
    } else if (step == 1 && dstep == 1) {
      std::memcpy(dst + out, src + in, static_cast<size_t>(n) * sizeof(T));
    } else {
      for (int64_t i = 0; i < n; ++i) dst[out + i * dstep] = src[in + i * step];
    }
    size_t d = rank - 1;
    while (d-- > 0) {
      if (d == p) continue;  // the tiles cover it
      in += strides[d];
      out += ds[d];
      if (++index[d] < shape[d]) break;
      in -= strides[d] * shape[d];
      out -= ds[d] * shape[d];
      index[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

// Copies of fewer elements than this stay on the calling thread: handing a piece to another thread
// costs about what copying 16K elements does.
constexpr int64_t kSpreadElements = 64 * 1024;

// strided_copy into a row-major dst, in pieces along the outermost dimension longer than 1, spread
// over the threads the budget has free (support/threads.h). A copy's bits do not depend on which
// thread copies what.
template <typename T>
void strided_copy_spread(const T* src, int64_t base, std::span<const int64_t> shape, std::span<const int64_t> strides,
                         T* dst) {
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  size_t d = 0;
  while (d < shape.size() && shape[d] == 1) ++d;
  int64_t threads = total >= kSpreadElements ? support::available_threads() : 1;
  if (threads <= 1 || d == shape.size()) {
    strided_copy(src, base, shape, strides, dst);
    return;
  }
  int64_t inner = total / shape[d];  // dst elements per index of dimension d
  int64_t per = std::max<int64_t>((shape[d] + 4 * threads - 1) / (4 * threads), (kSpreadElements / 4 + inner - 1) / inner);
  int64_t pieces = (shape[d] + per - 1) / per;
  support::parallel_chunks(pieces, [&](int64_t c) {
    int64_t first = c * per;
    Dims part(shape);
    part[d] = std::min(per, shape[d] - first);
    strided_copy(src, base + first * strides[d], part, strides, dst + first * inner);
  });
}


}  // namespace tessera::exec
