// Moving matrices between the interpreter's literals and LAPACK's column-major arrays, and the
// results of a LAPACK custom call as the op declares them (kernels_lapack_solvers.cpp,
// kernels_lapack_reductions.cpp).
#pragma once

#include <algorithm>
#include <complex>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "interp/lapack_common.h"

extern "C" void openblas_set_num_threads(int);  // OpenBLAS's (cblas.h)

namespace tessera::interp::lapack {

using cf = std::complex<float>;
using cd = std::complex<double>;
using lint = int;  // LAPACK's INTEGER

template <class T>
constexpr bool kComplex = !std::is_floating_point_v<T>;
template <class T>
struct RealOf {
  using type = T;
};
template <class T>
struct RealOf<std::complex<T>> {
  using type = T;
};
template <class T>
using Real = typename RealOf<T>::type;

// A LAPACK workspace size answered by a query call (lwork = -1 writes it to work[0]).
template <class T>
lint queried(const T& w) {
  return std::max<lint>(1, static_cast<lint>(std::real(w)));
}

// The matrix `b` of `a` (row-major, logical) as LAPACK's column-major array, and back.
template <class T>
std::vector<T> gather(const ir::Literal& a, int64_t b, int64_t rows, int64_t cols) {
  const T* src = reinterpret_cast<const T*>(a.bytes().data()) + b * rows * cols;
  std::vector<T> out(static_cast<size_t>(std::max<int64_t>(1, rows * cols)));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) out[static_cast<size_t>(j * rows + i)] = src[i * cols + j];
  return out;
}
template <class T>
void scatter(ir::Literal& out, int64_t b, int64_t rows, int64_t cols, const T* in, int64_t ld) {
  T* dst = reinterpret_cast<T*>(out.bytes().data()) + b * rows * cols;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[i * cols + j] = in[j * ld + i];
}
template <class T>
void put(ir::Literal& out, int64_t b, int64_t n, const T* in) {
  if (n == 0) return;  // an empty matrix: its buffers may be null, which memcpy must not see
  std::memcpy(reinterpret_cast<T*>(out.bytes().data()) + b * n, in, static_cast<size_t>(n) * sizeof(T));
}

// A type of the batch dimensions of `a` followed by `tail`.
inline ir::Type batched(const ir::Literal& a, ir::ElementType e, std::vector<int64_t> tail) {
  std::vector<int64_t> s(a.shape().begin(), a.shape().end() - 2);
  s.insert(s.end(), tail.begin(), tail.end());
  return ir::Type(e, s);
}

// The declared result types, the members of a tuple result (api_version 2) or the results.
inline std::vector<ir::Type> declared(const EvalContext& ctx) {
  if (ctx.op.num_results() == 1 && ctx.result_type(0).is_tuple()) return ctx.result_type(0).elements;
  std::vector<ir::Type> t;
  for (size_t i = 0; i < ctx.op.num_results(); ++i) t.push_back(ctx.result_type(i));
  return t;
}

// `values` at their result positions (nullopt: a workspace, returned as zeros of its declared
// type), packaged as the op declares: the first `required` must be declared, the others (an info
// that the latest jaxlibs no longer return) are dropped when they are not.
inline Results finish(const EvalContext& ctx, std::vector<std::optional<ir::Literal>> values, size_t required) {
  std::vector<ir::Type> types = declared(ctx);
  if (types.size() < required) ctx.fail("declares {} results, the routine gives {}", types.size(), required);
  std::vector<ir::Literal> out;
  for (size_t i = 0; i < types.size(); ++i) {
    if (i < values.size() && values[i]) out.push_back(std::move(*values[i]));
    else if (!types[i].is_tensor() || !types[i].is_static()) ctx.fail("result {} is not a static tensor", i);
    else out.emplace_back(types[i]);
  }
  return package(ctx, std::move(out));
}

// The values of a call's results in order, for finish (std::nullopt: a workspace).
template <class... Values>
std::vector<std::optional<ir::Literal>> slots(Values&&... values) {
  std::vector<std::optional<ir::Literal>> r;
  (r.emplace_back(std::forward<Values>(values)), ...);
  return r;
}

// The number of api_version 2's leading scalar descriptors (none in the typed-FFI forms, with or
// without the `_ffi` suffix), which is the index of the first of the `matrices` operands after
// them; that matrix's element type and layout are checked (only its layout matters: a batch of
// vectors such as orgqr's tau has a [1, 0] layout).
inline size_t descriptors_before_matrix(const EvalContext& ctx, const std::string& target, size_t matrices) {
  size_t descriptors = 0;
  while (descriptors < ctx.num_operands() && ctx.operand(descriptors).shape().empty()) ++descriptors;
  if (ctx.num_operands() != descriptors + matrices)
    ctx.fail("@{} takes {} matrix operand(s) after its scalar descriptors, got {} operands", target, matrices,
             ctx.num_operands());
  check_type(ctx, target, target[7], ctx.operand(descriptors));
  if (row_major(ctx, descriptors))
    ctx.fail("@{}: a row-major layout of operand {} is not supported (JAX passes column-major)", target, descriptors);
  return descriptors;
}

// Calls `f` with a value of the C++ element type of routine letter `t`. OpenBLAS runs on one
// thread, set before its first call as exec/gemm.cpp does: its own pool would be a second one
// outside the thread budget (DESIGN.md, "One GEMM thread per call").
template <class F>
Results by_type(char t, F&& f) {
  static const bool one_thread = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)one_thread;
  switch (t) {
    case 's': return f(float{});
    case 'd': return f(double{});
    case 'c': return f(cf{});
    default: return f(cd{});
  }
}

}  // namespace tessera::interp::lapack
