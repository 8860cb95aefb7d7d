// The LAPACK custom calls of JAX's CPU lowering that reduce a matrix to a condensed form by
// unitary similarity, run by OpenBLAS's LAPACK as the other factorizations are
// (kernels_lapack_solvers.cpp says why): the Schur decomposition (`gees`, jax.scipy.linalg.schur),
// the Hessenberg form (`gehrd`, jax.lax.linalg.hessenberg) and the tridiagonal form of a
// symmetric or Hermitian matrix (`sytrd`/`hetrd`, jax.lax.linalg.tridiagonal); and two routines
// that only the typed FFI has: QR with column pivoting (`geqp3`, jax.scipy.linalg.qr with
// pivoting) and the tridiagonal solve (`gtsv`, jax.lax.linalg.tridiagonal_solve).
//
// Conventions (jaxlib's lapack_kernels), matrices column-major in the last two dimensions:
//   - gees: `mode` (86 'V' Schur vectors, 78 'N') and `sort` (78 'N'; JAX supplies no selection
//     function, so a sorting call is refused); results real (t, vs, wr, wi, sdim, info), complex
//     (t, vs, w, sdim, info). api_version 2 (batch, n, jobvs, sort, a) declares real (t, wr, wi,
//     vs, sdim, info), complex (t, rwork, w, vs, sdim, info).
//   - gehrd: `low`, `high` (1-based ilo, ihi, i32) -> (h and the reflectors below the first
//     subdiagonal, tau[n - 1], info); api_version 2 (n, ilo, ihi, lda, batch, lwork, a) -> (a, tau,
//     info, work).
//   - sytrd/hetrd: `uplo` -> (a with the reflectors, d[n], e[n - 1], tau[n - 1], info); api_version
//     2 (n, lower, lda, batch, lwork, a) -> (a, d, e, tau, info, work).
//   - geqp3: (a, jpvt) -> (a: R and the reflectors, jpvt: the 1-based column permutation, tau);
//     a nonzero jpvt entry on input keeps its column in front, as LAPACK's does.
//   - gtsv: (dl, d, du, b) -> (dl, d, du as LAPACK's elimination leaves them, x, info); the
//     diagonals are batches of vectors of b's row count, dl's first and du's last entry unused.
// Workspaces declared as results are returned as zeros (lapack_buffers.h).
#include <algorithm>

#include "interp/kernels.h"
#include "interp/lapack_buffers.h"

extern "C" {
using tessera::interp::lapack::lint;
using flen = size_t;
using Select2 = int (*)(const void*, const void*);
using Select1 = int (*)(const void*);
#define TESSERA_GEES_REAL(p, T)                                                                                       \
  void p##gees_(const char*, const char*, Select2, const lint*, T*, const lint*, lint*, T*, T*, T*, const lint*, T*, \
                const lint*, lint*, lint*, flen, flen);
TESSERA_GEES_REAL(s, float)
TESSERA_GEES_REAL(d, double)
#define TESSERA_GEES_COMPLEX(p, T, R)                                                                                \
  void p##gees_(const char*, const char*, Select1, const lint*, T*, const lint*, lint*, T*, T*, const lint*, T*,     \
                const lint*, R*, lint*, lint*, flen, flen);
TESSERA_GEES_COMPLEX(c, tessera::interp::lapack::cf, float)
TESSERA_GEES_COMPLEX(z, tessera::interp::lapack::cd, double)
#define TESSERA_GEHRD(p, T) \
  void p##gehrd_(const lint*, const lint*, const lint*, T*, const lint*, T*, T*, const lint*, lint*);
TESSERA_GEHRD(s, float)
TESSERA_GEHRD(d, double)
TESSERA_GEHRD(c, tessera::interp::lapack::cf)
TESSERA_GEHRD(z, tessera::interp::lapack::cd)
#define TESSERA_SYTRD(name, T, R) \
  void name##_(const char*, const lint*, T*, const lint*, R*, R*, T*, T*, const lint*, lint*, flen);
TESSERA_SYTRD(ssytrd, float, float)
TESSERA_SYTRD(dsytrd, double, double)
TESSERA_SYTRD(chetrd, tessera::interp::lapack::cf, float)
TESSERA_SYTRD(zhetrd, tessera::interp::lapack::cd, double)
#define TESSERA_GEQP3_REAL(p, T) \
  void p##geqp3_(const lint*, const lint*, T*, const lint*, lint*, T*, T*, const lint*, lint*);
TESSERA_GEQP3_REAL(s, float)
TESSERA_GEQP3_REAL(d, double)
#define TESSERA_GEQP3_COMPLEX(p, T, R) \
  void p##geqp3_(const lint*, const lint*, T*, const lint*, lint*, T*, T*, const lint*, R*, lint*);
TESSERA_GEQP3_COMPLEX(c, tessera::interp::lapack::cf, float)
TESSERA_GEQP3_COMPLEX(z, tessera::interp::lapack::cd, double)
#define TESSERA_GTSV(p, T) void p##gtsv_(const lint*, const lint*, T*, T*, T*, T*, const lint*, lint*);
TESSERA_GTSV(s, float)
TESSERA_GTSV(d, double)
TESSERA_GTSV(c, tessera::interp::lapack::cf)
TESSERA_GTSV(z, tessera::interp::lapack::cd)
}

namespace tessera::interp::lapack {
namespace {

using ir::Literal;

// clang-format off
void gehrd(lint n, lint lo, lint hi, float* a, float* tau, float* w, lint lw, lint* info) { lint ld = std::max(1, n); sgehrd_(&n, &lo, &hi, a, &ld, tau, w, &lw, info); }
void gehrd(lint n, lint lo, lint hi, double* a, double* tau, double* w, lint lw, lint* info) { lint ld = std::max(1, n); dgehrd_(&n, &lo, &hi, a, &ld, tau, w, &lw, info); }
void gehrd(lint n, lint lo, lint hi, cf* a, cf* tau, cf* w, lint lw, lint* info) { lint ld = std::max(1, n); cgehrd_(&n, &lo, &hi, a, &ld, tau, w, &lw, info); }
void gehrd(lint n, lint lo, lint hi, cd* a, cd* tau, cd* w, lint lw, lint* info) { lint ld = std::max(1, n); zgehrd_(&n, &lo, &hi, a, &ld, tau, w, &lw, info); }
void sytrd(char u, lint n, float* a, float* d, float* e, float* tau, float* w, lint lw, lint* info) { lint ld = std::max(1, n); ssytrd_(&u, &n, a, &ld, d, e, tau, w, &lw, info, 1); }
void sytrd(char u, lint n, double* a, double* d, double* e, double* tau, double* w, lint lw, lint* info) { lint ld = std::max(1, n); dsytrd_(&u, &n, a, &ld, d, e, tau, w, &lw, info, 1); }
void sytrd(char u, lint n, cf* a, float* d, float* e, cf* tau, cf* w, lint lw, lint* info) { lint ld = std::max(1, n); chetrd_(&u, &n, a, &ld, d, e, tau, w, &lw, info, 1); }
void sytrd(char u, lint n, cd* a, double* d, double* e, cd* tau, cd* w, lint lw, lint* info) { lint ld = std::max(1, n); zhetrd_(&u, &n, a, &ld, d, e, tau, w, &lw, info, 1); }
void gtsv(lint n, lint nrhs, float* dl, float* d, float* du, float* b, lint* info) { sgtsv_(&n, &nrhs, dl, d, du, b, &n, info); }
void gtsv(lint n, lint nrhs, double* dl, double* d, double* du, double* b, lint* info) { dgtsv_(&n, &nrhs, dl, d, du, b, &n, info); }
void gtsv(lint n, lint nrhs, cf* dl, cf* d, cf* du, cf* b, lint* info) { cgtsv_(&n, &nrhs, dl, d, du, b, &n, info); }
void gtsv(lint n, lint nrhs, cd* dl, cd* d, cd* du, cd* b, lint* info) { zgtsv_(&n, &nrhs, dl, d, du, b, &n, info); }
// clang-format on

lint square(const EvalContext& ctx, const Literal& a, const char* routine) {
  Matrices s = shape_of(ctx, a);
  if (s.rows != s.cols) ctx.fail("{} needs square matrices, got {}", routine, ir::to_string(a.type()));
  return static_cast<lint>(s.rows);
}

// The Schur form T = Z^H A Z (real: quasi-triangular with 2x2 blocks for conjugate pairs), the
// Schur vectors Z when `vectors`, the eigenvalues and sdim (0: nothing is selected).
template <class T>
Results run_gees(const EvalContext& ctx, const Literal& a, bool vectors, bool v2) {
  lint n = square(ctx, a, "gees"), ld = std::max(1, n), status = 0, sdim = 0;
  int64_t batch = shape_of(ctx, a).batch;
  ir::ElementType e = a.element();
  Literal t = a, vs(a.type()), wr(batched(a, e, {n})), wi(batched(a, e, {n}));
  Literal sd(batched(a, ir::ElementType::i32, {})), info(batched(a, ir::ElementType::i32, {}));
  char jobvs = vectors ? 'V' : 'N', sort = 'N';
  std::vector<T> w1(static_cast<size_t>(ld)), w2(static_cast<size_t>(ld)), z(static_cast<size_t>(ld * ld));
  std::vector<Real<T>> rwork(static_cast<size_t>(ld));
  auto call = [&](T* x, T* work, lint lw) {
    if constexpr (std::is_same_v<T, float>)
      sgees_(&jobvs, &sort, nullptr, &n, x, &ld, &sdim, w1.data(), w2.data(), z.data(), &ld, work, &lw, nullptr, &status, 1, 1);
    else if constexpr (std::is_same_v<T, double>)
      dgees_(&jobvs, &sort, nullptr, &n, x, &ld, &sdim, w1.data(), w2.data(), z.data(), &ld, work, &lw, nullptr, &status, 1, 1);
    else if constexpr (std::is_same_v<T, cf>)
      cgees_(&jobvs, &sort, nullptr, &n, x, &ld, &sdim, w1.data(), z.data(), &ld, work, &lw, rwork.data(), nullptr, &status, 1, 1);
    else
      zgees_(&jobvs, &sort, nullptr, &n, x, &ld, &sdim, w1.data(), z.data(), &ld, work, &lw, rwork.data(), nullptr, &status, 1, 1);
  };
  T query{};
  call(nullptr, &query, -1);
  std::vector<T> work(static_cast<size_t>(queried(query)));
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<T> x = gather<T>(a, b, n, n);
    call(x.data(), work.data(), static_cast<lint>(work.size()));
    scatter(t, b, n, n, x.data(), ld);
    if (vectors) scatter(vs, b, n, n, z.data(), ld);
    put(wr, b, n, w1.data());
    if constexpr (!kComplex<T>) put(wi, b, n, w2.data());
    sd.set_int(b, sdim);
    info.set_int(b, status);
  }
  std::vector<std::optional<Literal>> r;
  r.emplace_back(std::move(t));
  if (!v2) r.emplace_back(std::move(vs));
  if (kComplex<T> && v2) r.emplace_back();  // rwork
  r.emplace_back(std::move(wr));
  if (!kComplex<T>) r.emplace_back(std::move(wi));
  if (v2) r.emplace_back(std::move(vs));
  r.emplace_back(std::move(sd));
  r.emplace_back(std::move(info));
  size_t required = r.size();
  return finish(ctx, std::move(r), required);
}

// The Hessenberg form Q^H A Q with Q's reflectors below the first subdiagonal (ilo, ihi 1-based).
template <class T>
Results run_gehrd(const EvalContext& ctx, const Literal& a, int64_t low, int64_t high) {
  lint n = square(ctx, a, "gehrd"), status = 0;
  if (n > 0 && !(1 <= low && low <= std::max<int64_t>(1, high) && high <= n))
    ctx.fail("gehrd needs 1 <= low <= high <= n = {}, got low {} and high {}", n, low, high);
  int64_t batch = shape_of(ctx, a).batch;
  lint k = std::max(0, n - 1);
  Literal h = a, tau(batched(a, a.element(), {k})), info(batched(a, ir::ElementType::i32, {}));
  T query{};
  gehrd(n, static_cast<lint>(low), static_cast<lint>(high), static_cast<T*>(nullptr), static_cast<T*>(nullptr), &query, -1,
        &status);
  std::vector<T> work(static_cast<size_t>(queried(query))), t(static_cast<size_t>(std::max(1, k)));
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<T> x = gather<T>(a, b, n, n);
    gehrd(n, static_cast<lint>(low), static_cast<lint>(high), x.data(), t.data(), work.data(),
          static_cast<lint>(work.size()), &status);
    scatter(h, b, n, n, x.data(), std::max(1, n));
    put(tau, b, k, t.data());
    info.set_int(b, status);
  }
  return finish(ctx, slots(std::move(h), std::move(tau), std::move(info)), 3);
}

// The tridiagonal form Q^H A Q = tridiag(e, d, e) of the matrix whose `lower` (or upper)
// triangle `a` holds, Q's reflectors in the rest of that triangle.
template <class T>
Results run_sytrd(const EvalContext& ctx, const Literal& a, bool lower) {
  lint n = square(ctx, a, "sytrd/hetrd"), status = 0;
  int64_t batch = shape_of(ctx, a).batch;
  lint k = std::max(0, n - 1);
  ir::ElementType re = ir::real_type(a.element());
  Literal out = a, d(batched(a, re, {n})), e(batched(a, re, {k})), tau(batched(a, a.element(), {k}));
  Literal info(batched(a, ir::ElementType::i32, {}));
  char uplo = lower ? 'L' : 'U';
  T query{};
  sytrd(uplo, n, static_cast<T*>(nullptr), nullptr, nullptr, nullptr, &query, -1, &status);
  std::vector<T> work(static_cast<size_t>(queried(query))), t(static_cast<size_t>(std::max(1, k)));
  std::vector<Real<T>> db(static_cast<size_t>(std::max(1, n))), eb(static_cast<size_t>(std::max(1, k)));
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<T> x = gather<T>(a, b, n, n);
    sytrd(uplo, n, x.data(), db.data(), eb.data(), t.data(), work.data(), static_cast<lint>(work.size()), &status);
    scatter(out, b, n, n, x.data(), std::max(1, n));
    put(d, b, n, db.data());
    put(e, b, k, eb.data());
    put(tau, b, k, t.data());
    info.set_int(b, status);
  }
  return finish(ctx, slots(std::move(out), std::move(d), std::move(e), std::move(tau), std::move(info)), 5);
}

// QR with column pivoting: A P = Q R, jpvt the 1-based columns of A that P takes, in order.
template <class T>
Results run_geqp3(const EvalContext& ctx, const Literal& a, const Literal& jpvt) {
  Matrices s = shape_of(ctx, a);
  auto m = static_cast<lint>(s.rows), n = static_cast<lint>(s.cols), k = std::min(m, n), status = 0;
  if (jpvt.element() != ir::ElementType::i32 || jpvt.num_elements() != s.batch * n)
    ctx.fail("jpvt {} is not {} i32 column indices per matrix", ir::to_string(jpvt.type()), n);
  Literal out = a, piv = jpvt, tau(batched(a, a.element(), {k}));
  lint lda = std::max(1, m);
  std::vector<Real<T>> rwork(static_cast<size_t>(std::max(1, 2 * n)));
  auto call = [&](T* x, lint* p, T* t, T* work, lint lw) {
    if constexpr (std::is_same_v<T, float>) sgeqp3_(&m, &n, x, &lda, p, t, work, &lw, &status);
    else if constexpr (std::is_same_v<T, double>) dgeqp3_(&m, &n, x, &lda, p, t, work, &lw, &status);
    else if constexpr (std::is_same_v<T, cf>) cgeqp3_(&m, &n, x, &lda, p, t, work, &lw, rwork.data(), &status);
    else zgeqp3_(&m, &n, x, &lda, p, t, work, &lw, rwork.data(), &status);
  };
  T query{};
  call(nullptr, nullptr, nullptr, &query, -1);
  std::vector<T> work(static_cast<size_t>(queried(query))), t(static_cast<size_t>(std::max(1, k)));
  std::vector<lint> p(static_cast<size_t>(std::max(1, n)));
  for (int64_t b = 0; b < s.batch; ++b) {
    std::vector<T> x = gather<T>(a, b, m, n);
    for (lint j = 0; j < n; ++j) p[static_cast<size_t>(j)] = static_cast<lint>(jpvt.get_int(b * n + j));
    call(x.data(), p.data(), t.data(), work.data(), static_cast<lint>(work.size()));
    scatter(out, b, m, n, x.data(), lda);
    for (lint j = 0; j < n; ++j) piv.set_int(b * n + j, p[static_cast<size_t>(j)]);
    put(tau, b, k, t.data());
  }
  return finish(ctx, slots(std::move(out), std::move(piv), std::move(tau)), 3);
}

// The tridiagonal solve A X = B, A with subdiagonal dl[1:], diagonal d and superdiagonal du[:-1].
template <class T>
Results run_gtsv(const EvalContext& ctx, const Literal& dl, const Literal& d, const Literal& du, const Literal& b) {
  Matrices s = shape_of(ctx, b);
  auto m = static_cast<lint>(s.rows), nrhs = static_cast<lint>(s.cols);
  for (const Literal* v : {&dl, &d, &du})
    if (v->element() != b.element() || v->num_elements() != s.batch * m)
      ctx.fail("the diagonal {} does not fit b {}", ir::to_string(v->type()), ir::to_string(b.type()));
  Literal dlo = dl, dout = d, duo = du, x = b, info(batched(b, ir::ElementType::i32, {}));
  for (int64_t bt = 0; bt < s.batch; ++bt) {
    auto vec = [&](const Literal& v) {
      const T* p = reinterpret_cast<const T*>(v.bytes().data()) + bt * m;
      return std::vector<T>(p, p + m);
    };
    std::vector<T> l = vec(dl), dd = vec(d), u = vec(du), xb = gather<T>(b, bt, m, nrhs);
    lint status = 0;
    if (m > 0) gtsv(m, nrhs, l.data() + 1, dd.data(), u.data(), xb.data(), &status);
    put(dlo, bt, m, l.data());
    put(dout, bt, m, dd.data());
    put(duo, bt, m, u.data());
    scatter(x, bt, m, nrhs, xb.data(), std::max(1, m));
    info.set_int(bt, status);
  }
  return finish(ctx, slots(std::move(dlo), std::move(dout), std::move(duo), std::move(x), std::move(info)), 4);
}

}  // namespace

std::optional<Results> eval_reductions(const EvalContext& ctx, const std::string& target) {
  bool ffi = false;
  if (is_routine(target, "geqp3", ffi) || is_routine(target, "gtsv", ffi)) {
    bool qr = target.find("geqp3") != std::string::npos;
    size_t operands = qr ? 2 : 4, matrix = qr ? 0 : 3;
    if (ctx.num_operands() != operands) ctx.fail("@{} takes {} operands, got {}", target, operands, ctx.num_operands());
    check_type(ctx, target, target[7], ctx.operand(matrix));
    // Only the matrix's layout matters: gtsv's diagonals are batches of vectors ([1, 0]).
    if (row_major(ctx, matrix))
      ctx.fail("@{}: a row-major layout of operand {} is not supported (JAX passes column-major)", target, matrix);
    if (qr) return by_type(target[7], [&](auto x) { return run_geqp3<decltype(x)>(ctx, ctx.operand(0), ctx.operand(1)); });
    return by_type(target[7], [&](auto x) {
      return run_gtsv<decltype(x)>(ctx, ctx.operand(0), ctx.operand(1), ctx.operand(2), ctx.operand(3));
    });
  }
  enum class Routine { Gees, Gehrd, Sytrd } routine;
  if (is_routine(target, "gees", ffi)) routine = Routine::Gees;
  else if (is_routine(target, "gehrd", ffi)) routine = Routine::Gehrd;
  else if (is_routine(target, "sytrd", ffi) || is_routine(target, "hetrd", ffi)) routine = Routine::Sytrd;
  else return std::nullopt;
  size_t descriptors = descriptors_before_matrix(ctx, target, 1);
  char t = target[7];
  const Literal& a = ctx.operand(descriptors);
  bool v2 = descriptors > 0;
  auto flag = [&](size_t i) { return ctx.operand(i).get_int(0); };
  switch (routine) {
    case Routine::Gees: {
      // api_version 2: batch, n, jobvs, sort; FFI: mode, sort.
      int64_t mode = v2 && descriptors > 2 ? flag(2) : config_int(ctx, "mode").value_or('V');
      int64_t sort = v2 && descriptors > 3 ? flag(3) : config_int(ctx, "sort").value_or('N');
      if (sort != 'N')
        ctx.fail("@{}: sorting the eigenvalues (sort = {}) needs a selection function, which JAX does not pass", target, sort);
      return by_type(t, [&](auto x) { return run_gees<decltype(x)>(ctx, a, mode != 'N', v2); });
    }
    case Routine::Gehrd: {
      // api_version 2: n, ilo, ihi, lda, batch, lwork; FFI: low, high.
      int64_t n = a.shape().back();
      int64_t low = v2 && descriptors > 2 ? flag(1) : config_int(ctx, "low").value_or(1);
      int64_t high = v2 && descriptors > 2 ? flag(2) : config_int(ctx, "high").value_or(n);
      return by_type(t, [&](auto x) { return run_gehrd<decltype(x)>(ctx, a, low, high); });
    }
    case Routine::Sytrd: {
      // api_version 2: n, lower, lda, batch, lwork; FFI: uplo.
      bool lower = v2 && descriptors > 1 ? flag(1) != 0 : config_int(ctx, "uplo").value_or('L') != 'U';
      return by_type(t, [&](auto x) { return run_sytrd<decltype(x)>(ctx, a, lower); });
    }
  }
  return std::nullopt;
}

}  // namespace tessera::interp::lapack
