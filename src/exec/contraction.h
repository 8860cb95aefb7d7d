// dot_general as GEMM calls over strided operands, planned from shapes alone.
//
// A dot_general's result is [batch..., lhs free..., rhs free...] in row-major order: for each batch
// index an M x N matrix (M, N the products of the free sizes), the sum over K (the product of the
// contracting sizes). BLAS reads a matrix with one dimension at unit stride and the other at any
// larger stride (the leading dimension), transposed or not. So an operand is read in place when
// * its contracting dimensions lie one inside the next in memory (the stride of each is the stride
//   of the next times its size; size-1 dimensions do not count) in one order shared with the other
//   operand (the pairs may be reordered: the sum does not depend on how K is numbered), and so do
//   its free dimensions, in increasing order (the result's order);
// * one of the two groups is innermost (unit stride) and the other lies outside it;
// and its batch dimensions may lie anywhere: each batch index is one GEMM call on pointers offset by
// the batch strides (neither Debian's OpenBLAS 0.3.21 nor oneDNN 2.6 has a batched GEMM).
// Only an operand that fails is copied, into [batch, free, contracting] (lhs) or [batch,
// contracting, free] (rhs) order; when both orders of the contracting pairs would need a copy, the
// one that copies fewer elements wins.
//
// Operands and the result may be strided views (a transpose folded into the contraction: its
// operand read through the permuted strides, or the contraction's result written in a transpose's
// order). The result must have one of its two free groups at unit stride: rhs's (each call writes
// C row-major) or lhs's (each call computes C^T = op(B)^T op(A)^T, the operands swapped).
//
// One product is computed as C^T even into a row-major result, because oneDNN runs it faster that
// way: a single call (no batch) with both operands read contracting-first (A^T B) and M >= 4N.
// Its calls write C^T into a buffer of the run's cache, copied into the result in its order. The
// choice depends on the operands' layouts and sizes alone, never on the result's strides, so a
// result written straight into a transpose's order (fusion_contraction.h) makes the same calls and
// gets the same bits (docs/PERFORMANCE.md, "Session 18").
//
// The plan depends only on the shapes, strides and dimension numbers, so an executable can make it
// once.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ir/attribute.h"

namespace tessera::exec {

// One batch loop of GEMM calls: its size and the pointer step of A, B (the GEMM's operands: lhs and
// rhs, or rhs and lhs when the plan is `swapped`) and the result per index.
struct GemmLoop {
  int64_t size = 1, a = 0, b = 0, out = 0;
};

struct ContractionPlan {
  int64_t m = 0, n = 0, k = 0;        // each call: out[m x n] (+)= op(a)[m x k] · op(b)[k x n]
  bool ta = false, tb = false;        // a (b) is stored transposed: k x m (n x k) row-major
  int64_t lda = 1, ldb = 1, ldc = 1;  // leading dimensions of the row-major storage
  bool swapped = false;               // A is rhs and B is lhs: each call computes the result's C^T
  // swapped into a row-major result: the calls write C^T (n x m, ldc = n) into a buffer, copied
  // into the result's rows of `out_ld` elements (one call only)
  bool via_buffer = false;
  int64_t out_ld = 0;
  bool ok = true;                     // false: the result's layout reads as no matrix (no plan)
  std::vector<GemmLoop> batch;        // outermost first; size-1 loops dropped, contiguous ones merged
  int64_t calls = 1;                  // GEMM calls (the product of the batch sizes)
  int64_t out_elements = 0;           // elements of the result
  // An operand read through a copy: the shape and source strides of the copy, in the order it
  // is copied to (empty when the operand is read in place).
  struct Copy {
    bool needed = false;
    std::vector<int64_t> shape, strides;
    int64_t elements = 0;
  };
  Copy lhs_copy, rhs_copy;
};

ContractionPlan plan_contraction(std::span<const int64_t> lhs_shape, std::span<const int64_t> rhs_shape,
                                 const ir::DotDims& dims);

// The element strides of an operand or of the result (empty: row-major), for plan_contraction.
struct ContractionStrides {
  std::span<const int64_t> lhs, rhs, out;
};
// The plan for strided operands and result. `ok` is false when the result has neither free group at
// unit stride (a layout no GEMM writes).
ContractionPlan plan_contraction(std::span<const int64_t> lhs_shape, std::span<const int64_t> rhs_shape,
                                 const ir::DotDims& dims, const ContractionStrides& strides);

// plan_contraction's plan for the op at `key` (a dot_general), kept in the run's cache
// (support/run_cache.h) for the next call with the same key: a steady-state step plans nothing
// and allocates nothing. The shapes and dimension numbers are compared on every call, so a key
// reused by another op (a freed module's address) gets its own plan. The reference stays valid
// until the next call in the same run (or thread).
const ContractionPlan& cached_contraction(const void* key, std::span<const int64_t> lhs_shape,
                                          std::span<const int64_t> rhs_shape, const ir::DotDims& dims,
                                          const ContractionStrides& strides = {});

// Whether two plans make the same GEMM calls (sizes, transpose flags, leading dimensions of A and B,
// operands' roles, batch loops over A and B), so that they give the same bits; where the result is
// written may differ.
bool same_gemm_calls(const ContractionPlan& a, const ContractionPlan& b);

// Whether every size and leading dimension of the plan fits BLAS's 32-bit integers.
bool fits_blas(const ContractionPlan& plan);

// One GEMM call of a plan's run: C[m x n] (+)= op(A)·op(B) over K = the plan's k, with the plan's
// transpose flags and leading dimensions, A, B and C starting this many elements into the
// plan's A, B (the operands, or their copies) and result (or the C^T buffer when via_buffer).
struct GemmCall {
  int64_t m = 0, n = 0, a = 0, b = 0, c = 0;
};
// The GEMM calls run_contraction makes for a plan (each batch call, cut into the pieces two or more
// threads share; none when K or the result is empty), and call `t` of them,
// 0 <= t < gemm_calls(plan). Both depend on the plan alone, never on the thread budget: what
// bench/gemm_bench.cpp times is what a step runs.
int64_t gemm_calls(const ContractionPlan& plan);
GemmCall gemm_call(const ContractionPlan& plan, int64_t t);

// out = the contraction of lhs and rhs, each laid out as the plan was made for, by the GEMM library
// of gemm.h (float and double). `out_is_zero`: out already holds zeros (a fresh literal), so each GEMM adds into it
// (beta 1, which skips BLAS's pass that clears C and gives the bits of beta 0); otherwise out's
// contents are ignored. Copies go to buffers of the run's cache kept for the next call (no
// allocation in the steady state).
template <typename T>
void run_contraction(const ContractionPlan& plan, const T* lhs, const T* rhs, T* out, bool out_is_zero);

}  // namespace tessera::exec
