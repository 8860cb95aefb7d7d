// The instructions of a fused element-wise loop (fusion.cpp): each computes one op on registers of
// kBlock elements, applying the reference kernel's scalar functor (interp/scalar_ops.h) to each
// element, or a loop that gives the same bits faster (exp.h, sqrt below); loads read a value
// through strides (broadcasts) or compute an iota. Internal to exec.
//
// The kernels are compiled three times: here for the baseline x86-64 (namespace fused::base), in
// fused_kernels_avx2.cpp for AVX2 (fused::avx2; its loops vectorize 8 floats wide where the
// baseline's take 4) and in fused_kernels_avx512.cpp for AVX-512 (fused::avx512, 16 wide). Every
// instruction there is an IEEE operation of the same width on each element (no FMA: the AVX2 target
// has none, and the AVX-512 file, whose target does, is compiled with -ffp-contract=off), so all
// give the same bits; kernels() picks one at start.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include <immintrin.h>

#include "exec/dims.h"
#include "exec/exp.h"
#include "interp/scalar_ops.h"

namespace tessera::exec::fused {

using ir::ElementType;
using ir::OpKind;

// Elements per register: a few dozen registers of a loop stay in L1 and L2.
constexpr int64_t kBlock = 512;

inline bool is_real(ElementType e) { return e == ElementType::f32 || e == ElementType::f64; }

struct Instr;
using Kernel = void (*)(const Instr& in, std::byte* const* regs, int64_t start, int64_t n);

struct Instr {
  Kernel fn = nullptr;
  std::array<int, 4> in{-1, -1, -1, -1};
  int out = -1;
  // Loads: the source, its strides along the loop's dimensions, and the loop's shape.
  const std::byte* src = nullptr;
  std::vector<int64_t> strides, shape;
  int64_t dim = 0;  // iota
  ir::ComparisonDirection direction{};
  // A load that gives every block the same elements (a scalar, or a row whose length divides
  // kBlock): run for the first block only, its register keeps them.
  bool invariant = false;
  // A load of one value per row of row_len elements (a row reduction's result broadcast along
  // the loop's last dimension, its other dimensions in row-major order): element f reads
  // src[f / row_len], with no walk over the dimensions. 0 for other loads.
  int64_t row_len = 0;
  // An index test's values where the index matches and elsewhere, when `given` (fusion_program.h:
  // an op of a scalar and a one-hot computed once for both values): each the output type's bits.
  bool given = false;
  std::array<std::array<std::byte, 8>, 2> values{};
};

// The kernel selectors of one instruction set (fused_kernels_avx2.cpp, the namespaces below).
struct KernelSet {
  Kernel (*arithmetic)(OpKind, ElementType);
  Kernel (*converter)(ElementType from, ElementType to);
  Kernel (*gather)(ElementType);
  Kernel (*iota)(ElementType);
  Kernel (*compare)(ElementType);  // of the operands' type
  Kernel (*select)(ElementType);
  Kernel (*index_test)(ElementType index, ElementType out);  // null for types it does not take
  Kernel (*select_compare)(ElementType compared, ElementType value);  // null for types it does not take
  Kernel (*binary_row)(OpKind, ElementType, bool broadcast_first);    // null for kinds it does not take
};

// The AVX2 and AVX-512 kernels (fused_kernels_avx2.cpp, fused_kernels_avx512.cpp), and the set
// this machine runs.
const KernelSet& avx2_kernels();
const KernelSet& avx512_kernels();
bool has_avx512();  // avx512f, avx512bw and avx512vl
const KernelSet& kernels();

#ifndef TESSERA_FUSED_ISA
#define TESSERA_FUSED_ISA base
#endif
// GCC takes the target for every function up to pop_options; clang (the fuzz build: fuzz/README.md)
// ignores `#pragma GCC target` and takes the same set through its attribute pragma.
#if defined(TESSERA_FUSED_AVX512) && defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl"))), apply_to = function)
#elif defined(TESSERA_FUSED_AVX512)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,prefer-vector-width=512")
#elif defined(TESSERA_FUSED_AVX2) && defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#elif defined(TESSERA_FUSED_AVX2)
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
namespace TESSERA_FUSED_ISA {

// Calls row(offset, index_along_dim, count) for the rows of flat range [start, start + n) of
// `shape`, where offset is the source position of the row's first element under `strides` and the
// row continues with step strides.back().
template <typename Row>
void for_rows(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, int64_t dim, int64_t start,
              int64_t n, Row&& row) {
  size_t rank = shape.size();
  if (rank == 0) {
    row(int64_t{0}, int64_t{0}, int64_t{0}, n);
    return;
  }
  Dims index(rank);  // the index of `start` (inline: this runs once per block and load)
  int64_t rest = start, offset = 0;
  for (size_t d = rank; d-- > 0;) {
    // One division per dimension: written as rest % shape[d] and rest / shape[d], the store to
    // index[d] (which may alias shape's storage, for all the compiler knows) made it two idivs,
    // a good part of a broadcast load's time.
    int64_t len = shape[d], quotient = rest / len;
    index[d] = rest - quotient * len;
    offset += index[d] * strides[d];
    rest = quotient;
  }
  int64_t done = 0;
  while (done < n) {
    int64_t count = std::min(n - done, shape[rank - 1] - index[rank - 1]);
    row(offset, index[static_cast<size_t>(dim)], done, count);
    done += count;
    offset += count * strides[rank - 1];
    index[rank - 1] += count;
    for (size_t d = rank - 1; d > 0 && index[d] == shape[d]; --d) {
      offset += strides[d - 1] - shape[d] * strides[d];
      index[d] = 0;
      ++index[d - 1];
    }
  }
}

template <typename T>
void gather(const Instr& s, std::byte* const* regs, int64_t start, int64_t n) {
  const T* src = reinterpret_cast<const T*>(s.src);
  T* out = reinterpret_cast<T*>(regs[s.out]);
  if (s.row_len > 0) {  // one division, then a fill per row
    int64_t row = start / s.row_len, count = std::min(n, (row + 1) * s.row_len - start);
    for (int64_t at = 0; at < n; at += count, count = std::min(s.row_len, n - at))
      std::fill(out + at, out + at + count, src[row++]);
    return;
  }
  int64_t step = s.strides.empty() ? 0 : s.strides.back();
  for_rows(s.shape, s.strides, 0, start, n, [&](int64_t offset, int64_t, int64_t at, int64_t count) {
    if (step == 0) std::fill(out + at, out + at + count, src[offset]);
    else if (step == 1 && count > 32) std::copy(src + offset, src + offset + count, out + at);
    else if (step == 1) for (int64_t i = 0; i < count; ++i) out[at + i] = src[offset + i];  // short rows: no call
    else for (int64_t i = 0; i < count; ++i) out[at + i] = src[offset + i * step];
  });
}

template <typename T>
void iota(const Instr& s, std::byte* const* regs, int64_t start, int64_t n) {
  T* out = reinterpret_cast<T*>(regs[s.out]);
  bool inner = s.dim == static_cast<int64_t>(s.shape.size()) - 1;
  for_rows(s.shape, s.strides, s.dim, start, n, [&](int64_t, int64_t at_dim, int64_t at, int64_t count) {
    for (int64_t i = 0; i < count; ++i) out[at + i] = static_cast<T>(inner ? at_dim + i : at_dim);
  });
}

template <typename Fn, typename E>
void unary(const Instr& s, std::byte* const* regs, int64_t, int64_t n) {
  using T = typename E::storage;
  const T* x = reinterpret_cast<const T*>(regs[s.in[0]]);
  T* z = reinterpret_cast<T*>(regs[s.out]);
  for (int64_t i = 0; i < n; ++i) z[i] = E::store(Fn::template apply<E>(E::load(x[i])));
}

// exp, logistic, sqrt and rsqrt of f32: the same bits as unary<> above, from vectorized loops
// (exp.h; sqrt and rsqrt below).
template <void (*F)(const float*, float*, int64_t)>
void unary_f32(const Instr& s, std::byte* const* regs, int64_t, int64_t n) {
  F(reinterpret_cast<const float*>(regs[s.in[0]]), reinterpret_cast<float*>(regs[s.out]), n);
}

// sqrt of f32 in float, as wide as the instruction set goes: the same bits as the reference's
// float(sqrt(double(x))). Proof: a float x is exact in double; sqrt(x) rounded to double (53 bits)
// and then to float (24 bits) is sqrt(x) rounded once to float whenever 53 >= 2*24 + 2 (Figueroa,
// "When is double rounding innocuous?", SIGNUM 1995: for +, -, *, / and sqrt, the exact result of
// p-bit operands is never close enough to a p-bit midpoint for the wider rounding to move it onto
// one). No over- or underflow intervenes: the square root of any finite float lies in
// [2^-74.5, 2^64], normal in both formats. The rest is IEEE: sqrt(±0) = ±0, sqrt(+inf) = +inf, a
// negative x or -inf gives the default NaN (0xffc00000 from sqrtps; sqrtsd's 0xfff8... narrows to
// the same), and a NaN comes back quieted with its payload's leading bits, which the widening and
// narrowing keep. Subnormal inputs are exact operands (MXCSR's DAZ and FTZ stay clear). Tested on
// every special value and a sweep of floats (fused_kernels_test.cpp; all 2^32 under the label
// `exhaustive`).
inline void sqrt_f32_span(const float* x, float* z, int64_t n) {
  int64_t i = 0;
#if defined(TESSERA_FUSED_AVX512)
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(z + i, _mm512_sqrt_ps(_mm512_loadu_ps(x + i)));
#elif defined(TESSERA_FUSED_AVX2)
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(z + i, _mm256_sqrt_ps(_mm256_loadu_ps(x + i)));
#endif
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(z + i, _mm_sqrt_ps(_mm_loadu_ps(x + i)));
  for (; i < n; ++i) _mm_store_ss(z + i, _mm_sqrt_ss(_mm_load_ss(x + i)));
}

// rsqrt of f32 as the reference computes it, 1.0 / sqrt(double(x)) rounded once to float (two
// roundings in double then one to float: not float's own sqrt and divide, whose result can differ
// in the last bit), so in double lanes: 8 per instruction with AVX-512, 4 with AVX2, 2 in the
// baseline. sqrtpd and divpd are the correctly rounded operations that the reference's std::sqrt
// (sqrtsd; the compiler keeps it scalar, to set errno for negative inputs) and 1.0 / r run, and
// cvtpd2ps rounds as static_cast<float> does; NaNs stay NaNs with the same payload.
inline void rsqrt_f32_span(const float* x, float* z, int64_t n) {
  int64_t i = 0;
#if defined(TESSERA_FUSED_AVX512)
  for (; i + 8 <= n; i += 8) {
    __m512d r = _mm512_sqrt_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)));
    _mm256_storeu_ps(z + i, _mm512_cvtpd_ps(_mm512_div_pd(_mm512_set1_pd(1.0), r)));
  }
#elif defined(TESSERA_FUSED_AVX2)
  for (; i + 4 <= n; i += 4) {
    __m256d r = _mm256_sqrt_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)));
    _mm_storeu_ps(z + i, _mm256_cvtpd_ps(_mm256_div_pd(_mm256_set1_pd(1.0), r)));
  }
#endif
  for (; i + 2 <= n; i += 2) {
    // Two floats in and out through the unaligned 64-bit load and store.
    __m128 two = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i_u*>(x + i)));
    __m128d r = _mm_div_pd(_mm_set1_pd(1.0), _mm_sqrt_pd(_mm_cvtps_pd(two)));
    _mm_storel_epi64(reinterpret_cast<__m128i_u*>(z + i), _mm_castps_si128(_mm_cvtpd_ps(r)));
  }
  for (; i < n; ++i) z[i] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(x[i])));
}

template <typename Fn, typename E>
void binary(const Instr& s, std::byte* const* regs, int64_t, int64_t n) {
  using T = typename E::storage;
  const T* x = reinterpret_cast<const T*>(regs[s.in[0]]);
  const T* y = reinterpret_cast<const T*>(regs[s.in[1]]);
  T* z = reinterpret_cast<T*>(regs[s.out]);
  for (int64_t i = 0; i < n; ++i) z[i] = E::store(Fn::template apply<E>(E::load(x[i]), E::load(y[i])));
}

// binary<> with one operand read as a row broadcast (Instr::row_len; s.src one value per row):
// z[i] = Fn(x[i], v), or Fn(v, x[i]) with `First`, v the row's value, where a gather would fill a
// register with v for binary<> to read. The same functor with the operands in the same order:
// the same bits. Not for add and multiply: when both operands are NaN, x86 returns the first
// source's, and the compiler may order a commutative op's sources differently here and in binary<>
// (it does: tested).
template <typename Fn, typename E, bool First>
void binary_row(const Instr& s, std::byte* const* regs, int64_t start, int64_t n) {
  using T = typename E::storage;
  const T* x = reinterpret_cast<const T*>(regs[s.in[0]]);
  const T* src = reinterpret_cast<const T*>(s.src);
  T* z = reinterpret_cast<T*>(regs[s.out]);
  int64_t row = start / s.row_len, count = std::min(n, (row + 1) * s.row_len - start);
  for (int64_t at = 0; at < n; at += count, count = std::min(s.row_len, n - at)) {
    const auto v = E::load(src[row++]);
    for (int64_t i = at; i < at + count; ++i) {
      if constexpr (First) z[i] = E::store(Fn::template apply<E>(v, E::load(x[i])));
      else z[i] = E::store(Fn::template apply<E>(E::load(x[i]), v));
    }
  }
}

template <typename Fn>
Kernel binary_row_of(ElementType e, bool first) {
  using F32 = ir::Elem<ElementType::f32>;
  using F64 = ir::Elem<ElementType::f64>;
  if (e == ElementType::f32) return first ? &binary_row<Fn, F32, true> : &binary_row<Fn, F32, false>;
  return first ? &binary_row<Fn, F64, true> : &binary_row<Fn, F64, false>;
}

inline Kernel binary_row_kernel(OpKind k, ElementType e, bool first) {
  namespace s = interp::scalar;
  if (!is_real(e)) return nullptr;
  switch (k) {
    case OpKind::Subtract: return binary_row_of<s::Subtract>(e, first);
    case OpKind::Divide: return binary_row_of<s::Divide>(e, first);
    case OpKind::Maximum: return binary_row_of<s::Maximum>(e, first);
    case OpKind::Minimum: return binary_row_of<s::Minimum>(e, first);
    default: return nullptr;
  }
}

template <typename T>
void compare(const Instr& s, std::byte* const* regs, int64_t, int64_t n) {
  const T* x = reinterpret_cast<const T*>(regs[s.in[0]]);
  const T* y = reinterpret_cast<const T*>(regs[s.in[1]]);
  uint8_t* z = reinterpret_cast<uint8_t*>(regs[s.out]);
  using D = ir::ComparisonDirection;
  switch (s.direction) {
    case D::EQ: for (int64_t i = 0; i < n; ++i) z[i] = x[i] == y[i]; break;
    case D::NE: for (int64_t i = 0; i < n; ++i) z[i] = x[i] != y[i]; break;
    case D::GE: for (int64_t i = 0; i < n; ++i) z[i] = x[i] >= y[i]; break;
    case D::GT: for (int64_t i = 0; i < n; ++i) z[i] = x[i] > y[i]; break;
    case D::LE: for (int64_t i = 0; i < n; ++i) z[i] = x[i] <= y[i]; break;
    case D::LT: for (int64_t i = 0; i < n; ++i) z[i] = x[i] < y[i]; break;
  }
}

// z[i] = a[i] where `first`, else b[i], elements of U's bits: the chosen element's bits through a
// mask, without a branch (the predicate of a causal mask changes every few elements, and a branch
// on it mispredicts), so the loops of select and select_compare vectorize.
template <typename U>
__attribute__((always_inline)) inline void pick_bits(const std::byte* a, const std::byte* b, std::byte* z, int64_t i,
                                                     bool first) {
  U x, y;
  std::memcpy(&x, a + i * sizeof(U), sizeof(U));
  std::memcpy(&y, b + i * sizeof(U), sizeof(U));
  U m = static_cast<U>(U{0} - static_cast<U>(first));
  U r = static_cast<U>((x & m) | (y & static_cast<U>(~m)));
  std::memcpy(z + i * sizeof(U), &r, sizeof(U));
}

template <typename T>
void select(const Instr& s, std::byte* const* regs, int64_t, int64_t n) {
  using U = std::conditional_t<sizeof(T) == 1, uint8_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
  const uint8_t* p = reinterpret_cast<const uint8_t*>(regs[s.in[0]]);
  const std::byte *a = regs[s.in[1]], *b = regs[s.in[2]];
  std::byte* z = regs[s.out];
  for (int64_t i = 0; i < n; ++i) pick_bits<U>(a, b, z, i, p[i] != 0);
}

// select(compare(x, y), a, b) in one pass, where compare and select would write and read a
// register of i1: the same comparison of each element (NaNs compare false but for NE) choosing
// the same bits through a mask. in = {x, y, a, b}; T the compared type, U the values' bits.
template <typename T, typename U, typename Cmp>
void select_compare_loop(const Instr& s, std::byte* const* regs, int64_t n, Cmp&& cmp) {
  const T* x = reinterpret_cast<const T*>(regs[s.in[0]]);
  const T* y = reinterpret_cast<const T*>(regs[s.in[1]]);
  const std::byte *a = regs[s.in[2]], *b = regs[s.in[3]];
  std::byte* z = regs[s.out];
  for (int64_t i = 0; i < n; ++i) pick_bits<U>(a, b, z, i, cmp(x[i], y[i]));
}

template <typename T, typename U>
void select_compare(const Instr& s, std::byte* const* regs, int64_t, int64_t n) {
  using D = ir::ComparisonDirection;
  switch (s.direction) {
    case D::EQ: select_compare_loop<T, U>(s, regs, n, [](T p, T q) { return p == q; }); break;
    case D::NE: select_compare_loop<T, U>(s, regs, n, [](T p, T q) { return p != q; }); break;
    case D::GE: select_compare_loop<T, U>(s, regs, n, [](T p, T q) { return p >= q; }); break;
    case D::GT: select_compare_loop<T, U>(s, regs, n, [](T p, T q) { return p > q; }); break;
    case D::LE: select_compare_loop<T, U>(s, regs, n, [](T p, T q) { return p <= q; }); break;
    case D::LT: select_compare_loop<T, U>(s, regs, n, [](T p, T q) { return p < q; }); break;
  }
}

inline Kernel select_compare_kernel(ElementType compared, ElementType value) {
  auto by_value = [&]<typename T>() -> Kernel {
    switch (value) {
      case ElementType::f32:
      case ElementType::i32: return &select_compare<T, uint32_t>;
      case ElementType::f64:
      case ElementType::i64: return &select_compare<T, uint64_t>;
      default: return nullptr;
    }
  };
  switch (compared) {
    case ElementType::f32: return by_value.template operator()<float>();
    case ElementType::f64: return by_value.template operator()<double>();
    case ElementType::i32: return by_value.template operator()<int32_t>();
    case ElementType::i64: return by_value.template operator()<int64_t>();
    default: return nullptr;
  }
}

template <typename S, typename D>
void convert(const Instr& s, std::byte* const* regs, int64_t, int64_t n) {
  const S* x = reinterpret_cast<const S*>(regs[s.in[0]]);
  D* z = reinterpret_cast<D*>(regs[s.out]);
  for (int64_t i = 0; i < n; ++i) z[i] = static_cast<D>(x[i]);
}

// compare(iota, b) EQ or NE, with the iota along the last dimension and b the same along it (a
// one-hot's labels broadcast over the classes), converted to `O` (uint8_t: the compare's i1 as
// it is): each row of the block holds the iota's index at most once, so the block is filled with
// the miss value and the one element where the index equals b (if any) gets the hit value.
// s.src and s.strides are b's (strides.back() is 0), s.direction the compare's; every iota value
// converts to T exactly (the planner checks the last dimension's length), so an element equals b
// exactly where b is that integer.
template <typename T, typename O>
void index_test(const Instr& s, std::byte* const* regs, int64_t start, int64_t n) {
  O* out = reinterpret_cast<O*>(regs[s.out]);
  const T* b = reinterpret_cast<const T*>(s.src);
  const bool eq = s.direction == ir::ComparisonDirection::EQ;
  O hit = static_cast<O>(eq ? 1 : 0), miss = static_cast<O>(eq ? 0 : 1);
  if (s.given) {
    std::memcpy(&hit, s.values[0].data(), sizeof(O));
    std::memcpy(&miss, s.values[1].data(), sizeof(O));
  }
  std::fill(out, out + n, miss);
  int64_t last = static_cast<int64_t>(s.shape.size()) - 1;
  for_rows(s.shape, s.strides, last, start, n, [&](int64_t offset, int64_t at_dim, int64_t at, int64_t count) {
    T v = b[offset];
    int64_t index;
    if constexpr (std::is_integral_v<T>) {
      if (v < static_cast<T>(at_dim) || static_cast<int64_t>(v) - at_dim >= count) return;
      index = static_cast<int64_t>(v);
    } else {
      // NaN fails both tests; -0 equals the iota's 0 as the compare has it.
      if (!(v >= static_cast<T>(at_dim) && v < static_cast<T>(at_dim + count)) || std::floor(v) != v) return;
      index = static_cast<int64_t>(v);
    }
    out[at + index - at_dim] = hit;
  });
}

template <typename T>
Kernel index_test_to(ElementType out) {
  switch (out) {
    case ElementType::i1: return &index_test<T, uint8_t>;
    case ElementType::f32: return &index_test<T, float>;
    case ElementType::f64: return &index_test<T, double>;
    default: return nullptr;
  }
}

inline Kernel index_test_kernel(ElementType index, ElementType out) {
  switch (index) {
    case ElementType::i32: return index_test_to<int32_t>(out);
    case ElementType::i64: return index_test_to<int64_t>(out);
    case ElementType::f32: return index_test_to<float>(out);
    case ElementType::f64: return index_test_to<double>(out);
    default: return nullptr;
  }
}

// fn<T>() with T the storage type of a loadable element type.
template <typename F>
Kernel by_type(ElementType e, F&& fn) {
  switch (e) {
    case ElementType::f32: return fn.template operator()<float>();
    case ElementType::f64: return fn.template operator()<double>();
    case ElementType::i32: return fn.template operator()<int32_t>();
    case ElementType::i64: return fn.template operator()<int64_t>();
    default: return fn.template operator()<uint8_t>();  // i1
  }
}

template <typename Fn, bool Unary>
Kernel float_kernel(ElementType e) {
  using F32 = ir::Elem<ElementType::f32>;
  using F64 = ir::Elem<ElementType::f64>;
  if constexpr (Unary) return e == ElementType::f32 ? &unary<Fn, F32> : &unary<Fn, F64>;
  else return e == ElementType::f32 ? &binary<Fn, F32> : &binary<Fn, F64>;
}

inline Kernel arithmetic(OpKind k, ElementType e) {
  namespace s = interp::scalar;
  switch (k) {
    case OpKind::Add: return float_kernel<s::Add, false>(e);
    case OpKind::Subtract: return float_kernel<s::Subtract, false>(e);
    case OpKind::Multiply: return float_kernel<s::Multiply, false>(e);
    case OpKind::Divide: return float_kernel<s::Divide, false>(e);
    case OpKind::Maximum: return float_kernel<s::Maximum, false>(e);
    case OpKind::Minimum: return float_kernel<s::Minimum, false>(e);
    case OpKind::Power: return float_kernel<s::Power, false>(e);
    case OpKind::Negate: return float_kernel<s::Negate, true>(e);
    case OpKind::Exponential:
      return e == ElementType::f32 ? &unary_f32<exp_f32> : float_kernel<s::Exponential, true>(e);
    case OpKind::Log: return float_kernel<s::Log, true>(e);
    case OpKind::Logistic:
      return e == ElementType::f32 ? &unary_f32<logistic_f32> : float_kernel<s::Logistic, true>(e);
    case OpKind::Sqrt: return e == ElementType::f32 ? &unary_f32<sqrt_f32_span> : float_kernel<s::Sqrt, true>(e);
    case OpKind::Rsqrt: return e == ElementType::f32 ? &unary_f32<rsqrt_f32_span> : float_kernel<s::Rsqrt, true>(e);
    case OpKind::Tanh: return float_kernel<s::Tanh, true>(e);
    default: return nullptr;
  }
}

inline Kernel converter(ElementType from, ElementType to) {
  auto to_float = [&]<typename S>() -> Kernel {
    return to == ElementType::f32 ? &convert<S, float> : &convert<S, double>;
  };
  switch (from) {
    case ElementType::f32: return to_float.template operator()<float>();
    case ElementType::f64: return to_float.template operator()<double>();
    case ElementType::i32: return to_float.template operator()<int32_t>();
    default: return to_float.template operator()<uint8_t>();  // i1
  }
}

inline const KernelSet& kernel_set() {
  static const KernelSet set{
      &arithmetic,
      &converter,
      [](ElementType e) { return by_type(e, []<typename T>() -> Kernel { return &gather<T>; }); },
      [](ElementType e) { return by_type(e, []<typename T>() -> Kernel { return &iota<T>; }); },
      [](ElementType e) { return by_type(e, []<typename T>() -> Kernel { return &compare<T>; }); },
      [](ElementType e) { return by_type(e, []<typename T>() -> Kernel { return &select<T>; }); },
      &index_test_kernel,
      &select_compare_kernel,
      &binary_row_kernel,
  };
  return set;
}

}  // namespace TESSERA_FUSED_ISA
#if (defined(TESSERA_FUSED_AVX512) || defined(TESSERA_FUSED_AVX2)) && defined(__clang__)
#pragma clang attribute pop
#elif defined(TESSERA_FUSED_AVX512) || defined(TESSERA_FUSED_AVX2)
#pragma GCC pop_options
#endif

}  // namespace tessera::exec::fused
