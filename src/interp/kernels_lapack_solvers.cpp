// The LAPACK custom calls of JAX's CPU lowering for the factorizations that iterate or whose
// results are only defined up to LAPACK's own choices (the sign of an eigenvector or singular
// vector, the Householder vectors of a QR): QR (`geqrf`, `orgqr`/`ungqr`), the symmetric and
// Hermitian eigendecomposition (`syevd`/`heevd`), the SVD (`gesdd`, and `gesvd`, JAX's
// algorithm=QR) and the general eigendecomposition (`geev`). They are run by the LAPACK routines
// themselves, from the OpenBLAS the executor links (which carries reference LAPACK), so that the
// results are the ones JAX's recorded outputs came from, down to those choices; a routine of our
// own would agree only up to signs and rounding.
//
// Conventions (jaxlib's lapack_kernels): every call takes the matrices in its last two
// dimensions, batched over the leading ones, column-major (JAX's operand_layouts); a row-major
// matrix is refused. The `_ffi` form (and later jaxlibs' unsuffixed typed-FFI calls) takes the
// matrices alone, with char attributes in `mhlo.backend_config`: syevd `uplo` (76 'L', 85 'U')
// and `mode` (86 'V' vectors, 78 'N'), gesdd/gesvd `mode` (65 'A' full, 83 'S' reduced, 78 'N'
// values only), geev `compute_left`/`compute_right` (86 or 78). api_version 2 puts i32 scalar
// descriptors first (geqrf: batch, m, n, lwork; orgqr: batch, m, n, k, lwork; syevd: lower,
// batch, n; gesdd: full_matrices, compute_uv, batch, m, n, lwork; geev: batch, n, jobvl, jobvr).
// Results, in the order every convention declares them: geqrf (a, tau, info), orgqr (q, info),
// syevd (vectors, w, info), gesdd (a, s, u, vt, info), geev real (wr, wi, vl, vr, info) with the
// vectors unpacked to complex (a conjugate pair's columns re ± i im), complex (w, vl, vr, info);
// api_version 2's geev interleaves its workspaces (real: a, vl, vr work, wr, wi, vl, vr, info;
// complex: a, rwork, w, vl, vr, info). Results declared beyond these are LAPACK workspaces that
// JAX passed as outputs; they are returned as zeros.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <optional>
#include <type_traits>

#include "interp/kernels.h"
#include "interp/lapack_buffers.h"

// LAPACK's Fortran entry points (gfortran's convention: every argument by address, a hidden
// length after the arguments for each character argument).
extern "C" {
using tessera::interp::lapack::lint;
using flen = size_t;
#define TESSERA_GEQRF(p, T) void p##geqrf_(const lint*, const lint*, T*, const lint*, T*, T*, const lint*, lint*);
TESSERA_GEQRF(s, float)
TESSERA_GEQRF(d, double)
TESSERA_GEQRF(c, tessera::interp::lapack::cf)
TESSERA_GEQRF(z, tessera::interp::lapack::cd)
#define TESSERA_ORGQR(name, T) \
  void name##_(const lint*, const lint*, const lint*, T*, const lint*, const T*, T*, const lint*, lint*);
TESSERA_ORGQR(sorgqr, float)
TESSERA_ORGQR(dorgqr, double)
TESSERA_ORGQR(cungqr, tessera::interp::lapack::cf)
TESSERA_ORGQR(zungqr, tessera::interp::lapack::cd)
void ssyevd_(const char*, const char*, const lint*, float*, const lint*, float*, float*, const lint*, lint*,
             const lint*, lint*, flen, flen);
void dsyevd_(const char*, const char*, const lint*, double*, const lint*, double*, double*, const lint*, lint*,
             const lint*, lint*, flen, flen);
#define TESSERA_HEEVD(p, T, R)                                                                                \
  void p##heevd_(const char*, const char*, const lint*, T*, const lint*, R*, T*, const lint*, R*, const lint*, \
                 lint*, const lint*, lint*, flen, flen);
TESSERA_HEEVD(c, tessera::interp::lapack::cf, float)
TESSERA_HEEVD(z, tessera::interp::lapack::cd, double)
#define TESSERA_GESDD_REAL(p, T)                                                                               \
  void p##gesdd_(const char*, const lint*, const lint*, T*, const lint*, T*, T*, const lint*, T*, const lint*, \
                 T*, const lint*, lint*, lint*, flen);
TESSERA_GESDD_REAL(s, float)
TESSERA_GESDD_REAL(d, double)
#define TESSERA_GESDD_COMPLEX(p, T, R)                                                                         \
  void p##gesdd_(const char*, const lint*, const lint*, T*, const lint*, R*, T*, const lint*, T*, const lint*, \
                 T*, const lint*, R*, lint*, lint*, flen);
TESSERA_GESDD_COMPLEX(c, tessera::interp::lapack::cf, float)
TESSERA_GESDD_COMPLEX(z, tessera::interp::lapack::cd, double)
#define TESSERA_GESVD_REAL(p, T)                                                                              \
  void p##gesvd_(const char*, const char*, const lint*, const lint*, T*, const lint*, T*, T*, const lint*, T*, \
                 const lint*, T*, const lint*, lint*, flen, flen);
TESSERA_GESVD_REAL(s, float)
TESSERA_GESVD_REAL(d, double)
#define TESSERA_GESVD_COMPLEX(p, T, R)                                                                        \
  void p##gesvd_(const char*, const char*, const lint*, const lint*, T*, const lint*, R*, T*, const lint*, T*, \
                 const lint*, T*, const lint*, R*, lint*, flen, flen);
TESSERA_GESVD_COMPLEX(c, tessera::interp::lapack::cf, float)
TESSERA_GESVD_COMPLEX(z, tessera::interp::lapack::cd, double)
#define TESSERA_GEEV_REAL(p, T)                                                                                    \
  void p##geev_(const char*, const char*, const lint*, T*, const lint*, T*, T*, T*, const lint*, T*, const lint*, \
                T*, const lint*, lint*, flen, flen);
TESSERA_GEEV_REAL(s, float)
TESSERA_GEEV_REAL(d, double)
#define TESSERA_GEEV_COMPLEX(p, T, R)                                                                           \
  void p##geev_(const char*, const char*, const lint*, T*, const lint*, T*, T*, const lint*, T*, const lint*, \
                T*, const lint*, R*, lint*, flen, flen);
TESSERA_GEEV_COMPLEX(c, tessera::interp::lapack::cf, float)
TESSERA_GEEV_COMPLEX(z, tessera::interp::lapack::cd, double)
}

namespace tessera::interp::lapack {
namespace {

using ir::Literal;
using ir::Type;

// LAPACK's routines for element type T, by overload.
// clang-format off
void geqrf(lint m, lint n, float* a, float* tau, float* w, lint lw, lint* info) { lint ld = std::max(1, m); sgeqrf_(&m, &n, a, &ld, tau, w, &lw, info); }
void geqrf(lint m, lint n, double* a, double* tau, double* w, lint lw, lint* info) { lint ld = std::max(1, m); dgeqrf_(&m, &n, a, &ld, tau, w, &lw, info); }
void geqrf(lint m, lint n, cf* a, cf* tau, cf* w, lint lw, lint* info) { lint ld = std::max(1, m); cgeqrf_(&m, &n, a, &ld, tau, w, &lw, info); }
void geqrf(lint m, lint n, cd* a, cd* tau, cd* w, lint lw, lint* info) { lint ld = std::max(1, m); zgeqrf_(&m, &n, a, &ld, tau, w, &lw, info); }
void orgqr(lint m, lint n, lint k, float* a, const float* tau, float* w, lint lw, lint* info) { lint ld = std::max(1, m); sorgqr_(&m, &n, &k, a, &ld, tau, w, &lw, info); }
void orgqr(lint m, lint n, lint k, double* a, const double* tau, double* w, lint lw, lint* info) { lint ld = std::max(1, m); dorgqr_(&m, &n, &k, a, &ld, tau, w, &lw, info); }
void orgqr(lint m, lint n, lint k, cf* a, const cf* tau, cf* w, lint lw, lint* info) { lint ld = std::max(1, m); cungqr_(&m, &n, &k, a, &ld, tau, w, &lw, info); }
void orgqr(lint m, lint n, lint k, cd* a, const cd* tau, cd* w, lint lw, lint* info) { lint ld = std::max(1, m); zungqr_(&m, &n, &k, a, &ld, tau, w, &lw, info); }
// clang-format on

// QR: Householder vectors below the diagonal and R on and above it, tau, info.
template <class T>
Results run_geqrf(const EvalContext& ctx, const Literal& a) {
  Matrices s = shape_of(ctx, a);
  auto m = static_cast<lint>(s.rows), n = static_cast<lint>(s.cols), k = std::min(m, n);
  Literal out = a, tau(batched(a, a.element(), {k})), info(batched(a, ir::ElementType::i32, {}));
  T query{};
  lint status = 0;
  geqrf(m, n, static_cast<T*>(nullptr), static_cast<T*>(nullptr), &query, -1, &status);
  std::vector<T> work(static_cast<size_t>(queried(query))), t(static_cast<size_t>(std::max(1, k)));
  for (int64_t b = 0; b < s.batch; ++b) {
    std::vector<T> x = gather<T>(a, b, m, n);
    geqrf(m, n, x.data(), t.data(), work.data(), static_cast<lint>(work.size()), &status);
    scatter(out, b, m, n, x.data(), m);
    put(tau, b, k, t.data());
    info.set_int(b, status);
  }
  return finish(ctx, slots(std::move(out), std::move(tau), std::move(info)), 2);
}

// The first n columns of Q = H(1) ... H(k) from geqrf's reflectors in `a` (m x n, m >= n >= k).
template <class T>
Results run_orgqr(const EvalContext& ctx, const Literal& a, const Literal& tau) {
  Matrices s = shape_of(ctx, a);
  auto m = static_cast<lint>(s.rows), n = static_cast<lint>(s.cols);
  if (tau.shape().empty()) ctx.fail("tau {} needs a dimension", ir::to_string(tau.type()));
  auto k = static_cast<lint>(tau.shape().back());
  if (!(m >= n && n >= k) || tau.num_elements() != s.batch * k)
    ctx.fail("orgqr needs m >= n >= k with k reflectors per matrix, got a {} and tau {}", ir::to_string(a.type()),
             ir::to_string(tau.type()));
  if (tau.element() != a.element())
    ctx.fail("tau {} does not have the matrix's element type", ir::to_string(tau.type()));
  Literal out = a, info(batched(a, ir::ElementType::i32, {}));
  T query{};
  lint status = 0;
  orgqr(m, n, k, static_cast<T*>(nullptr), nullptr, &query, -1, &status);
  std::vector<T> work(static_cast<size_t>(queried(query)));
  const T* taus = reinterpret_cast<const T*>(tau.bytes().data());
  for (int64_t b = 0; b < s.batch; ++b) {
    std::vector<T> x = gather<T>(a, b, m, n);
    orgqr(m, n, k, x.data(), taus + b * k, work.data(), static_cast<lint>(work.size()), &status);
    scatter(out, b, m, n, x.data(), m);
    info.set_int(b, status);
  }
  return finish(ctx, slots(std::move(out), std::move(info)), 1);
}

// Eigenvalues (ascending) and, with `vectors`, orthonormal eigenvectors (columns) of the
// symmetric or Hermitian matrices whose `lower` (or upper) triangle `a` holds.
template <class T>
Results run_syevd(const EvalContext& ctx, const Literal& a, bool lower, bool vectors) {
  Matrices s = shape_of(ctx, a);
  if (s.rows != s.cols) ctx.fail("syevd/heevd needs square matrices, got {}", ir::to_string(a.type()));
  auto n = static_cast<lint>(s.rows);
  using R = Real<T>;
  Literal out = a, w(batched(a, ir::real_type(a.element()), {n})), info(batched(a, ir::ElementType::i32, {}));
  char jobz = vectors ? 'V' : 'N', uplo = lower ? 'L' : 'U';
  lint ld = std::max(1, n);  // LAPACK's leading dimensions are at least 1, even for an empty matrix
  lint status = 0, lwork = -1, liwork = -1, lrwork = -1, iquery = 0;
  T query{};
  R rquery{};
  auto call = [&](T* x, R* ev, T* work, lint lw, R* rwork, lint lrw, lint* iwork, lint liw) {
    if constexpr (std::is_same_v<T, float>) ssyevd_(&jobz, &uplo, &n, x, &ld, ev, work, &lw, iwork, &liw, &status, 1, 1);
    else if constexpr (std::is_same_v<T, double>) dsyevd_(&jobz, &uplo, &n, x, &ld, ev, work, &lw, iwork, &liw, &status, 1, 1);
    else if constexpr (std::is_same_v<T, cf>) cheevd_(&jobz, &uplo, &n, x, &ld, ev, work, &lw, rwork, &lrw, iwork, &liw, &status, 1, 1);
    else zheevd_(&jobz, &uplo, &n, x, &ld, ev, work, &lw, rwork, &lrw, iwork, &liw, &status, 1, 1);
  };
  call(nullptr, nullptr, &query, lwork, &rquery, lrwork, &iquery, liwork);
  std::vector<T> work(static_cast<size_t>(queried(query)));
  std::vector<R> rwork(static_cast<size_t>(queried(rquery)));
  std::vector<lint> iwork(static_cast<size_t>(std::max<lint>(1, iquery)));
  std::vector<R> ev(static_cast<size_t>(std::max(1, n)));
  for (int64_t b = 0; b < s.batch; ++b) {
    std::vector<T> x = gather<T>(a, b, n, n);
    call(x.data(), ev.data(), work.data(), static_cast<lint>(work.size()), rwork.data(),
         static_cast<lint>(rwork.size()), iwork.data(), static_cast<lint>(iwork.size()));
    scatter(out, b, n, n, x.data(), n);
    put(w, b, n, ev.data());
    info.set_int(b, status);
  }
  return finish(ctx, slots(std::move(out), std::move(w), std::move(info)), 3);
}

// The SVD A = U diag(s) V^H, s descending: `mode` 'A' (U m x m, V^H n x n), 'S' (U m x k, V^H
// k x n) or 'N' (s alone; U and V^H returned as zeros of their declared types), by gesdd
// (divide and conquer) or gesvd (QR iteration).
template <class T>
Results run_svd(const EvalContext& ctx, const Literal& a, char mode, bool gesdd) {
  Matrices s = shape_of(ctx, a);
  auto m = static_cast<lint>(s.rows), n = static_cast<lint>(s.cols), k = std::min(m, n);
  if (mode != 'A' && mode != 'S' && mode != 'N') ctx.fail("mode {} is not 65 ('A'), 83 ('S') or 78 ('N')", int(mode));
  lint ucols = mode == 'A' ? m : mode == 'S' ? k : 0, vrows = mode == 'A' ? n : mode == 'S' ? k : 0;
  lint ldu = std::max(1, m), ldvt = std::max(1, vrows);
  using R = Real<T>;
  ir::ElementType e = a.element();
  Literal out = a, sv(batched(a, ir::real_type(e), {k})), info(batched(a, ir::ElementType::i32, {}));
  std::optional<Literal> u, vt;
  if (mode != 'N') u.emplace(batched(a, e, {m, ucols})), vt.emplace(batched(a, e, {vrows, n}));
  std::vector<T> ub(static_cast<size_t>(ldu * std::max(1, ucols))), vb(static_cast<size_t>(ldvt * std::max(1, n)));
  std::vector<R> sb(static_cast<size_t>(std::max(1, k)));
  std::vector<lint> iwork(static_cast<size_t>(std::max(1, 8 * k)));
  int64_t big = std::max(m, n);
  std::vector<R> rwork(static_cast<size_t>(std::max<int64_t>(
      {1, 7 * int64_t{k}, 5 * int64_t{k} * k + 5 * k, 2 * big * k + 2 * int64_t{k} * k + k})));
  lint status = 0, lda = std::max(1, m);
  auto call = [&](T* x, T* work, lint lw) {
    if constexpr (!kComplex<T>) {
      if (gesdd) {
        if constexpr (std::is_same_v<T, float>)
          sgesdd_(&mode, &m, &n, x, &lda, sb.data(), ub.data(), &ldu, vb.data(), &ldvt, work, &lw, iwork.data(), &status, 1);
        else
          dgesdd_(&mode, &m, &n, x, &lda, sb.data(), ub.data(), &ldu, vb.data(), &ldvt, work, &lw, iwork.data(), &status, 1);
      } else if constexpr (std::is_same_v<T, float>) {
        sgesvd_(&mode, &mode, &m, &n, x, &lda, sb.data(), ub.data(), &ldu, vb.data(), &ldvt, work, &lw, &status, 1, 1);
      } else {
        dgesvd_(&mode, &mode, &m, &n, x, &lda, sb.data(), ub.data(), &ldu, vb.data(), &ldvt, work, &lw, &status, 1, 1);
      }
    } else {
      R* rw = rwork.data();
      if (gesdd) {
        if constexpr (std::is_same_v<T, cf>)
          cgesdd_(&mode, &m, &n, x, &lda, sb.data(), ub.data(), &ldu, vb.data(), &ldvt, work, &lw, rw, iwork.data(), &status, 1);
        else
          zgesdd_(&mode, &m, &n, x, &lda, sb.data(), ub.data(), &ldu, vb.data(), &ldvt, work, &lw, rw, iwork.data(), &status, 1);
      } else if constexpr (std::is_same_v<T, cf>) {
        cgesvd_(&mode, &mode, &m, &n, x, &lda, sb.data(), ub.data(), &ldu, vb.data(), &ldvt, work, &lw, rw, &status, 1, 1);
      } else {
        zgesvd_(&mode, &mode, &m, &n, x, &lda, sb.data(), ub.data(), &ldu, vb.data(), &ldvt, work, &lw, rw, &status, 1, 1);
      }
    }
  };
  T query{};
  call(nullptr, &query, -1);
  std::vector<T> work(static_cast<size_t>(queried(query)));
  for (int64_t b = 0; b < s.batch; ++b) {
    std::vector<T> x = gather<T>(a, b, m, n);
    call(x.data(), work.data(), static_cast<lint>(work.size()));
    scatter(out, b, m, n, x.data(), lda);
    put(sv, b, k, sb.data());
    if (u) scatter(*u, b, m, ucols, ub.data(), ldu), scatter(*vt, b, vrows, n, vb.data(), ldvt);
    info.set_int(b, status);
  }
  return finish(ctx, slots(std::move(out), std::move(sv), std::move(u), std::move(vt), std::move(info)), 5);
}

// Eigenvalues and left/right eigenvectors (columns, each of unit norm) of general matrices. A real
// matrix gives its eigenvalues as (wr, wi) and its vectors unpacked to complex: LAPACK stores a
// conjugate pair (wi > 0 first) as the real and imaginary parts in two columns. A matrix with a
// non-finite entry is not factored: info -4, as jaxlib sets it. `v2` places the results as
// api_version 2 declares them, between its workspaces.
template <class T>
Results run_geev(const EvalContext& ctx, const Literal& a, char jobvl, char jobvr, bool v2) {
  Matrices s = shape_of(ctx, a);
  if (s.rows != s.cols) ctx.fail("geev needs square matrices, got {}", ir::to_string(a.type()));
  auto n = static_cast<lint>(s.rows);
  lint ld = std::max(1, n);
  using R = Real<T>;
  using Z = std::complex<R>;
  ir::ElementType e = a.element(), ce = kComplex<T> ? e : (e == ir::ElementType::f32 ? ir::ElementType::c64 : ir::ElementType::c128);
  Literal wr(batched(a, e, {n})), wi(batched(a, e, {n})), vl(batched(a, ce, {n, n})), vr(batched(a, ce, {n, n}));
  Literal info(batched(a, ir::ElementType::i32, {}));
  std::vector<T> w1(static_cast<size_t>(ld)), w2(static_cast<size_t>(ld));
  std::vector<T> lb(static_cast<size_t>(ld * ld)), rb(static_cast<size_t>(ld * ld));
  std::vector<R> rwork(static_cast<size_t>(2 * ld));
  lint status = 0;
  auto call = [&](T* x, T* work, lint lw) {
    if constexpr (std::is_same_v<T, float>)
      sgeev_(&jobvl, &jobvr, &n, x, &ld, w1.data(), w2.data(), lb.data(), &ld, rb.data(), &ld, work, &lw, &status, 1, 1);
    else if constexpr (std::is_same_v<T, double>)
      dgeev_(&jobvl, &jobvr, &n, x, &ld, w1.data(), w2.data(), lb.data(), &ld, rb.data(), &ld, work, &lw, &status, 1, 1);
    else if constexpr (std::is_same_v<T, cf>)
      cgeev_(&jobvl, &jobvr, &n, x, &ld, w1.data(), lb.data(), &ld, rb.data(), &ld, work, &lw, rwork.data(), &status, 1, 1);
    else
      zgeev_(&jobvl, &jobvr, &n, x, &ld, w1.data(), lb.data(), &ld, rb.data(), &ld, work, &lw, rwork.data(), &status, 1, 1);
  };
  T query{};
  call(nullptr, &query, -1);
  std::vector<T> work(static_cast<size_t>(queried(query)));
  // A real routine's vectors as complex columns (the pairs unpacked); a complex one's as they are.
  auto unpack = [&](const std::vector<T>& v) {
    std::vector<Z> z(static_cast<size_t>(ld * ld));
    for (lint j = 0; j < n; ++j) {
      if constexpr (kComplex<T>) {
        for (lint i = 0; i < n; ++i) z[j * ld + i] = v[j * ld + i];
      } else if (w2[j] == 0 || j + 1 == n) {
        for (lint i = 0; i < n; ++i) z[j * ld + i] = Z(v[j * ld + i], 0);
      } else {
        for (lint i = 0; i < n; ++i) {
          z[j * ld + i] = Z(v[j * ld + i], v[(j + 1) * ld + i]);
          z[(j + 1) * ld + i] = Z(v[j * ld + i], -v[(j + 1) * ld + i]);
        }
        ++j;
      }
    }
    return z;
  };
  for (int64_t b = 0; b < s.batch; ++b) {
    std::vector<T> x = gather<T>(a, b, n, n);
    bool finite = std::all_of(x.begin(), x.end(), [](T v) { return std::isfinite(std::real(v)) && std::isfinite(std::imag(v)); });
    if (!finite) {
      info.set_int(b, -4);
      continue;
    }
    call(x.data(), work.data(), static_cast<lint>(work.size()));
    put(wr, b, n, w1.data());
    if constexpr (!kComplex<T>) put(wi, b, n, w2.data());
    if (status == 0) {
      std::vector<Z> zl = unpack(lb), zr = unpack(rb);
      if (jobvl == 'V') scatter(vl, b, n, n, zl.data(), ld);
      if (jobvr == 'V') scatter(vr, b, n, n, zr.data(), ld);
    }
    info.set_int(b, status);
  }
  std::vector<std::optional<Literal>> r;
  if (v2) r.resize(kComplex<T> ? 2 : 3);  // the workspaces before the results
  r.emplace_back(std::move(wr));
  if (!kComplex<T>) r.emplace_back(std::move(wi));
  r.emplace_back(std::move(vl));
  r.emplace_back(std::move(vr));
  r.emplace_back(std::move(info));
  size_t required = r.size();
  return finish(ctx, std::move(r), required);
}

}  // namespace

std::optional<Results> eval_solvers(const EvalContext& ctx, const std::string& target) {
  bool ffi = false;
  auto is = [&](const char* real, const char* complex) {
    return is_routine(target, real, ffi) || (complex != nullptr && is_routine(target, complex, ffi));
  };
  enum class Routine { Geqrf, Orgqr, Syevd, Gesdd, Gesvd, Geev } routine;
  size_t matrices = 1;
  if (is("geqrf", nullptr)) routine = Routine::Geqrf;
  else if (is("orgqr", "ungqr")) routine = Routine::Orgqr, matrices = 2;
  else if (is("syevd", "heevd")) routine = Routine::Syevd;
  else if (is("gesdd", nullptr)) routine = Routine::Gesdd;
  else if (is("gesvd", nullptr)) routine = Routine::Gesvd;
  else if (is("geev", nullptr)) routine = Routine::Geev;
  else return eval_reductions(ctx, target);
  size_t descriptors = descriptors_before_matrix(ctx, target, matrices);
  char t = target[7];
  const Literal& a = ctx.operand(descriptors);
  bool v2 = descriptors > 0;
  auto flag = [&](size_t i, int64_t otherwise) { return v2 && i < descriptors ? ctx.operand(i).get_int(0) : otherwise; };
  switch (routine) {
    case Routine::Geqrf:
      return by_type(t, [&](auto x) { return run_geqrf<decltype(x)>(ctx, a); });
    case Routine::Orgqr:
      return by_type(t, [&](auto x) { return run_orgqr<decltype(x)>(ctx, a, ctx.operand(descriptors + 1)); });
    case Routine::Syevd: {
      // api_version 2: lower, batch, n (vectors always); FFI: uplo and mode.
      bool lower = v2 ? flag(0, 1) != 0 : config_int(ctx, "uplo").value_or('L') != 'U';
      bool vectors = v2 || config_int(ctx, "mode").value_or('V') != 'N';
      return by_type(t, [&](auto x) { return run_syevd<decltype(x)>(ctx, a, lower, vectors); });
    }
    case Routine::Gesdd:
    case Routine::Gesvd: {
      // api_version 2: full_matrices, compute_uv, batch, m, n, lwork; FFI: mode.
      char mode = v2 ? (flag(1, 1) == 0 ? 'N' : flag(0, 1) != 0 ? 'A' : 'S')
                     : static_cast<char>(config_int(ctx, "mode").value_or('A'));
      bool dc = routine == Routine::Gesdd;
      return by_type(t, [&](auto x) { return run_svd<decltype(x)>(ctx, a, mode, dc); });
    }
    case Routine::Geev: {
      // api_version 2: batch, n, jobvl, jobvr; FFI: compute_left, compute_right.
      auto job = [&](size_t i, const char* key) {
        return static_cast<char>(v2 ? flag(i, 'V') : config_int(ctx, key).value_or('V')) == 'N' ? 'N' : 'V';
      };
      char left = job(2, "compute_left"), right = job(3, "compute_right");
      return by_type(t, [&](auto x) { return run_geev<decltype(x)>(ctx, a, left, right, v2); });
    }
  }
  return std::nullopt;
}

}  // namespace tessera::interp::lapack
