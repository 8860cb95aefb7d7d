// Folding a block of a fused loop into a reduction's results (fusion.cpp: a reduce whose operand is
// computed in the loop, never stored). The reference folds the input in row-major order into each
// result element; a fused loop visits the input in row-major order too, block after block, so
// folding each block's elements in order into the running results gives the reference's bits.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "exec/dims.h"

namespace tessera::exec {

// The reductions a fused loop can fold: the innermost dimension kept (each input row adds into a
// row of results, element by element), or only trailing dimensions reduced, into rows of `row`
// contiguous elements each (folded side by side, several rows at a time, when a block holds them).
struct FoldShape {
  bool rows = false;         // trailing dimensions reduced
  int64_t row = 0;           // elements per result, when `rows`
  std::vector<int64_t> shape, out_strides;  // the input's shape; result offset per input dimension
};

// acc combined with x[0], ..., x[n - 1] in order. For a sum (`add`) of floats, a run of 32 zeros
// is skipped in one test: adding +0 or -0 leaves every value but -0 and NaN as it is (round to
// nearest), and -0 plus zeros is +0 if one of them is +0, else -0; runs with another element, and
// any run while the sum is a NaN, fold in order.
// The same bits, but a sum whose terms are mostly zeros (a loss masked by a one-hot) no longer waits
// on one add after another for each of them.
template <typename T, typename F>
T fold_in_order(T acc, const T* x, int64_t n, F&& combine, bool add) {
  int64_t k = 0;
  if constexpr (std::is_floating_point_v<T>) {
    if (add) {
      using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
      constexpr int64_t kRun = 32;
      for (; k + kRun <= n; k += kRun) {
        U nonzero = 0, plus_zero = 0;
        for (int64_t q = 0; q < kRun; ++q) {
          U bits = std::bit_cast<U>(x[k + q]);
          nonzero |= static_cast<U>(bits << 1);  // the sign dropped: 0 only for +0 and -0
          plus_zero |= static_cast<U>(bits == 0);
        }
        if (nonzero != 0 || acc != acc) {  // a NaN sum folds too: a signaling NaN gets quieted
          for (int64_t q = 0; q < kRun; ++q) acc = combine(acc, x[k + q]);
        } else if (plus_zero != 0 && acc == T(0)) {
          acc = T(0);  // -0 + +0 is +0; +0 stays
        }
      }
    }
  }
  for (; k < n; ++k) acc = combine(acc, x[k]);
  return acc;
}

// Folds v[0, n), the elements [start, start + n) of the input in row-major order, into dst.
// `add`: the combiner is a sum (fold_in_order).
template <typename T, typename F>
void fold_block(const FoldShape& f, const T* v, int64_t start, int64_t n, T* dst, F&& combine, bool add = false) {
  if (!f.rows) {
    // Result offset of the block's first element, then row by row along the innermost dimension
    // (whose result stride is 1).
    size_t rank = f.shape.size();
    Dims index(rank);
    int64_t rest = start, offset = 0;
    for (size_t d = rank; d-- > 0;) {
      index[d] = rest % f.shape[d];
      rest /= f.shape[d];
      offset += index[d] * f.out_strides[d];
    }
    int64_t done = 0;
    while (done < n) {
      int64_t count = std::min(n - done, f.shape[rank - 1] - index[rank - 1]);
      T* o = dst + offset;
      for (int64_t i = 0; i < count; ++i) o[i] = combine(o[i], v[done + i]);
      done += count;
      offset += count;
      index[rank - 1] += count;
      for (size_t d = rank - 1; d > 0 && index[d] == f.shape[d]; --d) {
        offset += f.out_strides[d - 1] - f.shape[d] * f.out_strides[d];
        index[d] = 0;
        ++index[d - 1];
      }
    }
    return;
  }
  const int64_t len = f.row;
  int64_t i = 0;
  while (i < n) {
    int64_t at = start + i, r = at / len, col = at % len;
    if (col != 0 || n - i < len) {  // a row begun in the last block or ending in the next
      int64_t count = std::min(len - col, n - i);
      dst[r] = fold_in_order(dst[r], v + i, count, combine, add);
      i += count;
      continue;
    }
    // Whole rows: eight (then four) chains side by side, each in its own order.
    int64_t whole = (n - i) / len, g = 0;
    for (; g + 8 <= whole; g += 8) {
      const T* x = v + i + g * len;
      T a[8];
      for (int64_t q = 0; q < 8; ++q) a[q] = dst[r + g + q];
      for (int64_t k = 0; k < len; ++k)
        for (int64_t q = 0; q < 8; ++q) a[q] = combine(a[q], x[q * len + k]);
      for (int64_t q = 0; q < 8; ++q) dst[r + g + q] = a[q];
    }
    for (; g + 4 <= whole; g += 4) {
      const T* x = v + i + g * len;
      T a0 = dst[r + g], a1 = dst[r + g + 1], a2 = dst[r + g + 2], a3 = dst[r + g + 3];
      for (int64_t k = 0; k < len; ++k) {
        a0 = combine(a0, x[k]);
        a1 = combine(a1, x[len + k]);
        a2 = combine(a2, x[2 * len + k]);
        a3 = combine(a3, x[3 * len + k]);
      }
      dst[r + g] = a0;
      dst[r + g + 1] = a1;
      dst[r + g + 2] = a2;
      dst[r + g + 3] = a3;
    }
    for (; g < whole; ++g) {
      T acc = dst[r + g];
      for (int64_t k = 0; k < len; ++k) acc = combine(acc, v[i + g * len + k]);
      dst[r + g] = acc;
    }
    i += whole * len;
  }
}

}  // namespace tessera::exec
