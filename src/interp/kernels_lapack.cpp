// The LAPACK custom calls that JAX's CPU lowering emits for its linear-algebra primitives, as the
// interpreter runs them: Cholesky (`lapack_{s,d,c,z}potrf`) and LU with partial pivoting
// (`lapack_{s,d,c,z}getrf`), each in both calling conventions JAX has used, and the BLAS
// triangular solve of jaxlibs' triangular_solve and lu_solve (older: `blas_{s,d,c,z}trsm`,
// api_version 2; later: `lapack_{s,d,c,z}trsm_ffi`, typed FFI):
//   - api_version 2 (jaxlib before the FFI): leading i32 scalar operands describing the problem
//     (potrf: lower, batch, n; getrf: batch, m, n), then the matrices; one tuple result;
//   - `_ffi` (typed FFI): the matrices only, potrf's triangle in `mhlo.backend_config`'s
//     `uplo` (76 'L', 85 'U'); several results.
// Results are LAPACK's: potrf writes the factor into the chosen triangle and leaves the other as
// given, info = k when the leading minor of order k is not positive definite (the factorization
// stops there); getrf returns L (unit diagonal, not stored) and U packed in one matrix, the
// 1-based pivot rows `ipiv` and info = the first zero pivot (1-based) or 0. The matrices are the
// operands' last two dimensions, batched over the leading ones. JAX gives them column-major
// layouts, in which LAPACK's (i, j) is the logical (i, j); a row-major layout
// (`operand_layouts` minor-to-major starting with the last dimension) is LAPACK's transpose, so
// the triangle is swapped (potrf) and a row-major getrf is refused.
// Arithmetic is in double (complex<double>), each step rounded to f32 for the single-precision
// routines as theirs are, so results follow LAPACK's where a pivot cancels.
#include <cctype>
#include <complex>
#include <optional>

#include "interp/kernels.h"
#include "interp/kernels_lapack.h"
#include "interp/lapack_common.h"

namespace tessera::interp {
namespace lapack {

using ir::Literal;

// `operand_layouts` is kept as its text, `[dense<> : tensor<0xindex>, dense<[1, 2, 0]> :
// tensor<3xindex>]`: a minor-to-major list per operand.
bool row_major(const EvalContext& ctx, size_t index) {
  const auto* o = ctx.op.attrs().find<ir::Opaque>("operand_layouts");
  if (o == nullptr) return false;
  size_t first = o->text.find('['), last = o->text.rfind(']');
  if (first == std::string::npos || last == std::string::npos || last <= first) return false;
  // The items of the outer list, split at its own commas.
  std::vector<std::string> items(1);
  int depth = 0;
  for (char c : o->text.substr(first + 1, last - first - 1)) {
    if (c == '[' || c == '<' || c == '(') ++depth;
    if (c == ']' || c == '>' || c == ')') --depth;
    if (depth == 0 && c == ',') items.emplace_back();
    else items.back() += c;
  }
  if (index >= items.size()) return false;
  const std::string& item = items[index];
  size_t open = item.find("dense<[");
  if (open == std::string::npos) return false;
  std::vector<int64_t> minor_to_major;
  for (size_t i = open + 7; i < item.size() && item[i] != ']';) {
    if (std::isdigit(static_cast<unsigned char>(item[i]))) {
      size_t used = 0;
      minor_to_major.push_back(std::stoll(item.substr(i), &used));
      i += used;
    } else {
      ++i;
    }
  }
  auto rank = static_cast<int64_t>(minor_to_major.size());
  return rank >= 2 && minor_to_major[0] == rank - 1;
}

Matrices shape_of(const EvalContext& ctx, const Literal& a) {
  const auto& s = a.shape();
  if (s.size() < 2) ctx.fail("the matrix operand {} has rank {}, needs at least 2", ir::to_string(a.type()), s.size());
  Matrices m;
  for (size_t d = 0; d + 2 < s.size(); ++d) m.batch *= s[d];
  m.rows = s[s.size() - 2];
  m.cols = s[s.size() - 1];
  return m;
}

bool is_routine(const std::string& target, const char* routine, bool& ffi) {
  const std::string head = "lapack_";
  if (target.rfind(head, 0) != 0 || target.size() < head.size() + 1) return false;
  std::string rest = target.substr(head.size() + 1);
  ffi = rest.size() > 4 && rest.substr(rest.size() - 4) == "_ffi";
  if (ffi) rest = rest.substr(0, rest.size() - 4);
  char t = target[head.size()];
  return rest == routine && (t == 's' || t == 'd' || t == 'c' || t == 'z');
}

void check_type(const EvalContext& ctx, const std::string& target, char t, const Literal& a) {
  ir::ElementType e = a.element();
  bool fits = (t == 's' && e == ir::ElementType::f32) || (t == 'd' && e == ir::ElementType::f64) ||
              (t == 'c' && e == ir::ElementType::c64) || (t == 'z' && e == ir::ElementType::c128);
  if (!fits)
    ctx.fail("@{} takes {} matrices, not {}", target,
             t == 's' ? "f32" : t == 'd' ? "f64" : t == 'c' ? "complex<f32>" : "complex<f64>", ir::to_string(a.type()));
}

Literal as_declared(Literal v, const ir::Type& t) {
  if (!t.is_tensor() || !t.is_static() || t.element != v.element() || t.num_elements() != v.num_elements() ||
      t == v.type())
    return v;
  Literal out(t);
  for (int64_t i = 0; i < v.num_elements(); ++i) out.set_complex(i, v.get_complex(i));
  return out;
}

Results package(const EvalContext& ctx, std::vector<Literal> values) {
  if (ctx.op.num_results() == 1 && ctx.result_type(0).is_tuple()) {
    const ir::Type& t = ctx.result_type(0);
    for (size_t i = 0; i < values.size() && i < t.elements.size(); ++i) values[i] = as_declared(std::move(values[i]), t.elements[i]);
    return one(Literal::tuple(std::move(values)));
  }
  for (size_t i = 0; i < values.size() && i < ctx.op.num_results(); ++i)
    values[i] = as_declared(std::move(values[i]), ctx.result_type(i));
  if (ctx.op.num_results() != values.size())
    ctx.fail("declares {} results, the routine gives {}", ctx.op.num_results(), values.size());
  return values;
}

std::optional<int64_t> config_int(const EvalContext& ctx, const std::string& key) {
  const auto* o = ctx.op.attrs().find<ir::Opaque>("mhlo.backend_config");
  if (o == nullptr) return std::nullopt;
  const std::string& t = o->text;
  for (size_t at = t.find(key); at != std::string::npos; at = t.find(key, at + 1)) {
    // The whole key (not the tail of a longer one), then `=` and the number.
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(t[at - 1])) || t[at - 1] == '_')) continue;
    size_t i = at + key.size();
    while (i < t.size() && t[i] == ' ') ++i;
    if (i >= t.size() || t[i] != '=') continue;
    ++i;
    while (i < t.size() && t[i] == ' ') ++i;
    size_t used = 0;
    try {
      int64_t v = std::stoll(t.substr(i), &used);
      if (used > 0) return v;
    } catch (const std::exception&) {
    }
    ctx.fail("mhlo.backend_config's `{}` is not an integer: {}", key, t);
  }
  return std::nullopt;
}

}  // namespace lapack

namespace {

using ir::Literal;
using C = std::complex<double>;
using lapack::Matrices;
using lapack::shape_of;

// The `uplo` of an _ffi potrf's backend_config ('L' unless it says 85, 'U').
bool ffi_lower(const EvalContext& ctx) { return lapack::config_int(ctx, "uplo").value_or(76) != 85; }

// Each step rounded to the element type's precision, as LAPACK's single-precision routines
// compute (a double sum would differ from them by more than JAX's f32 tolerance where a pivot
// cancels).
struct Rounding {
  ir::ElementType e;
  bool single() const { return e == ir::ElementType::f32 || e == ir::ElementType::c64; }
  double operator()(double v) const { return single() ? static_cast<double>(static_cast<float>(v)) : v; }
  C operator()(C v) const { return single() ? C((*this)(v.real()), (*this)(v.imag())) : v; }
};

// Cholesky of each matrix of `a`: returns the factored matrices and info per matrix.
std::pair<Literal, Literal> potrf(const EvalContext& ctx, const Literal& a, bool lower) {
  Matrices m = shape_of(ctx, a);
  if (m.rows != m.cols) ctx.fail("potrf needs square matrices, got {}", ir::to_string(a.type()));
  int64_t n = m.rows;
  Literal out = a;
  Literal info(ir::Type(ir::ElementType::i32, std::vector<int64_t>(a.shape().begin(), a.shape().end() - 2)));
  bool complex = ir::is_complex(a.element());
  Rounding round{a.element()};
  for (int64_t b = 0; b < m.batch; ++b) {
    int64_t base = b * n * n;
    // (i, j) of the triangle factored: lower uses (i >= j) as L(i, j); upper stores U = L^H.
    auto at = [&](int64_t i, int64_t j) { return base + (lower ? i * n + j : j * n + i); };
    auto get = [&](int64_t i, int64_t j) {
      C v = a.get_complex(at(i, j));
      return lower ? v : std::conj(v);
    };
    std::vector<C> l(static_cast<size_t>(n * n));
    int64_t failed = 0;
    for (int64_t j = 0; j < n && failed == 0; ++j) {
      double d = get(j, j).real();
      for (int64_t k = 0; k < j; ++k) d = round(d - round(std::norm(l[static_cast<size_t>(j * n + k)])));
      if (!(d > 0)) {
        failed = j + 1;
        break;
      }
      double djj = round(std::sqrt(d));
      l[static_cast<size_t>(j * n + j)] = djj;
      for (int64_t i = j + 1; i < n; ++i) {
        C s = get(i, j);
        for (int64_t k = 0; k < j; ++k)
          s = round(s - round(l[static_cast<size_t>(i * n + k)] * std::conj(l[static_cast<size_t>(j * n + k)])));
        l[static_cast<size_t>(i * n + j)] = round(s / djj);
      }
    }
    int64_t done = failed == 0 ? n : failed - 1;  // columns factored
    for (int64_t j = 0; j < done; ++j)
      for (int64_t i = j; i < n; ++i) {
        C v = l[static_cast<size_t>(i * n + j)];
        v = lower ? v : std::conj(v);
        if (complex) out.set_complex(at(i, j), v);
        else out.set_double(at(i, j), v.real());
      }
    info.set_int(b, failed);
  }
  return {std::move(out), std::move(info)};
}

// LU with partial pivoting of each matrix of `a` (LAPACK's getrf): packed LU, ipiv, info.
std::tuple<Literal, Literal, Literal> getrf(const EvalContext& ctx, const Literal& a) {
  Matrices m = shape_of(ctx, a);
  int64_t rows = m.rows, cols = m.cols, k = std::min(rows, cols);
  std::vector<int64_t> pivot_shape(a.shape().begin(), a.shape().end() - 2);
  std::vector<int64_t> ipiv_shape = pivot_shape;
  ipiv_shape.push_back(k);
  Literal out = a;
  Literal ipiv(ir::Type(ir::ElementType::i32, ipiv_shape));
  Literal info(ir::Type(ir::ElementType::i32, pivot_shape));
  bool complex = ir::is_complex(a.element());
  // LAPACK's i?amax: the first entry of largest |re| + |im| (|x| for reals).
  Rounding round{a.element()};
  auto magnitude = [&](C v) { return complex ? std::fabs(v.real()) + std::fabs(v.imag()) : std::fabs(v.real()); };
  for (int64_t b = 0; b < m.batch; ++b) {
    std::vector<C> x(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows * cols; ++i) x[static_cast<size_t>(i)] = a.get_complex(b * rows * cols + i);
    auto e = [&](int64_t i, int64_t j) -> C& { return x[static_cast<size_t>(i * cols + j)]; };
    int64_t first_zero = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t p = j;
      for (int64_t i = j + 1; i < rows; ++i)
        if (magnitude(e(i, j)) > magnitude(e(p, j))) p = i;
      ipiv.set_int(b * k + j, p + 1);
      if (e(p, j) == C(0)) {
        if (first_zero == 0) first_zero = j + 1;
        continue;  // LAPACK leaves the column and goes on
      }
      if (p != j)
        for (int64_t c = 0; c < cols; ++c) std::swap(e(p, c), e(j, c));
      for (int64_t i = j + 1; i < rows; ++i) {
        e(i, j) = round(e(i, j) / e(j, j));
        for (int64_t c = j + 1; c < cols; ++c) e(i, c) = round(e(i, c) - round(e(i, j) * e(j, c)));
      }
    }
    for (int64_t i = 0; i < rows * cols; ++i) {
      if (complex) out.set_complex(b * rows * cols + i, x[static_cast<size_t>(i)]);
      else out.set_double(b * rows * cols + i, x[static_cast<size_t>(i)].real());
    }
    info.set_int(b, first_zero);
  }
  return {std::move(out), std::move(ipiv), std::move(info)};
}

// BLAS trsm: X with op(A) X = alpha B (left side) or X op(A) = alpha B, A triangular (`lower`,
// `unit` diagonal not read), op = A, A^T (trans 1) or A^H (trans 2); batched over the leading
// dimensions of both.
Literal trsm(const EvalContext& ctx, bool left, bool lower, int64_t trans, bool unit, C alpha, const Literal& a,
             const Literal& b) {
  Matrices ma = shape_of(ctx, a), mb = shape_of(ctx, b);
  int64_t m = mb.rows, n = mb.cols, k = left ? m : n;
  if (ma.rows != k || ma.cols != k || ma.batch != mb.batch)
    ctx.fail("trsm: a {} does not fit b {} (left side {})", ir::to_string(a.type()), ir::to_string(b.type()), left);
  Rounding round{b.element()};
  bool complex = ir::is_complex(b.element());
  Literal out = b;
  for (int64_t bt = 0; bt < mb.batch; ++bt) {
    // op(A)(i, j), from A's stored triangle.
    auto opa = [&](int64_t i, int64_t j) {
      C v = trans == 0 ? a.get_complex(bt * k * k + i * k + j) : a.get_complex(bt * k * k + j * k + i);
      return trans == 2 ? std::conj(v) : v;
    };
    // op(A) is lower when A is lower and not transposed, or upper and transposed.
    bool op_lower = lower == (trans == 0);
    std::vector<C> x(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m * n; ++i) x[static_cast<size_t>(i)] = round(alpha * b.get_complex(bt * m * n + i));
    auto e = [&](int64_t i, int64_t j) -> C& { return x[static_cast<size_t>(i * n + j)]; };
    if (left) {  // solve op(A) X = B column by column, rows in dependency order
      for (int64_t c = 0; c < n; ++c)
        for (int64_t t = 0; t < m; ++t) {
          int64_t i = op_lower ? t : m - 1 - t;
          C s = e(i, c);
          for (int64_t j = 0; j < m; ++j)
            if (op_lower ? j < i : j > i) s = round(s - round(opa(i, j) * e(j, c)));
          e(i, c) = unit ? s : round(s / opa(i, i));
        }
    } else {  // X op(A) = B: row by row, columns in dependency order
      for (int64_t r = 0; r < m; ++r)
        for (int64_t t = 0; t < n; ++t) {
          int64_t j = op_lower ? n - 1 - t : t;
          C s = e(r, j);
          for (int64_t i = 0; i < n; ++i)
            if (op_lower ? i > j : i < j) s = round(s - round(e(r, i) * opa(i, j)));
          e(r, j) = unit ? s : round(s / opa(j, j));
        }
    }
    for (int64_t i = 0; i < m * n; ++i) {
      if (complex) out.set_complex(bt * m * n + i, x[static_cast<size_t>(i)]);
      else out.set_double(bt * m * n + i, x[static_cast<size_t>(i)].real());
    }
  }
  return out;
}

}  // namespace

std::optional<Results> eval_lapack(const EvalContext& ctx, const std::string& target) {
  using namespace lapack;
  bool ffi = false;
  // The matrix operand of a LAPACK routine, its type checked, and its index. The convention
  // shows in the operands too: later jaxlibs call the typed-FFI routine without the `_ffi` suffix
  // (`lapack_sgetrf(%a) {mhlo.backend_config = {}}`), and api_version 2 calls (three descriptor
  // operands first: potrf lower, batch, n; getrf batch, m, n) may declare their results one by
  // one instead of as a tuple.
  auto matrix = [&](size_t& index) -> const Literal& {
    ffi = ffi || ctx.num_operands() == 1;
    index = ffi ? 0 : 3;
    if (ctx.num_operands() != index + 1) ctx.fail("@{} takes {} operands, got {}", target, index + 1, ctx.num_operands());
    check_type(ctx, target, target[7], ctx.operand(index));
    return ctx.operand(index);
  };
  size_t index = 0;
  if (is_routine(target, "potrf", ffi)) {
    const Literal& a = matrix(index);
    bool lower = ffi ? ffi_lower(ctx) : ctx.operand(0).get_int(0) != 0;
    if (row_major(ctx, index)) lower = !lower;  // LAPACK sees the transpose
    auto [factor, info] = potrf(ctx, a, lower);
    return package(ctx, {std::move(factor), std::move(info)});
  }
  if (is_routine(target, "getrf", ffi)) {
    const Literal& a = matrix(index);
    if (row_major(ctx, index)) ctx.fail("@{}: a row-major matrix layout is not supported (JAX passes column-major)", target);
    auto [lu, ipiv, info] = getrf(ctx, a);
    return package(ctx, {std::move(lu), std::move(ipiv), std::move(info)});
  }
  if (is_routine(target, "trsm", ffi)) {
    // The typed-FFI triangular solve of later jaxlibs: (a, b[, alpha]) with `side` (76 'L',
    // 82 'R'), `uplo` (76, 85), `trans_x` (78 'N', 84 'T', 67 'C') and `diag` (78, 85 'U').
    if (ctx.num_operands() != 2 && ctx.num_operands() != 3)
      ctx.fail("@{} takes 2 or 3 operands (a, b[, alpha]), got {}", target, ctx.num_operands());
    const Literal& a = ctx.operand(0);
    check_type(ctx, target, target[7], a);
    check_type(ctx, target, target[7], ctx.operand(1));
    if (row_major(ctx, 0) || row_major(ctx, 1))
      ctx.fail("@{}: a row-major matrix layout is not supported (JAX passes column-major)", target);
    int64_t trans_x = config_int(ctx, "trans_x").value_or('N');
    int64_t trans = trans_x == 'T' ? 1 : trans_x == 'C' ? 2 : 0;
    C alpha = ctx.num_operands() == 3 ? ctx.operand(2).get_complex(0) : C(1);
    Literal x = trsm(ctx, config_int(ctx, "side").value_or('L') != 'R', config_int(ctx, "uplo").value_or('L') != 'U',
                     trans, config_int(ctx, "diag").value_or('N') == 'U', alpha, a, ctx.operand(1));
    return package(ctx, {std::move(x)});
  }
  if (target.size() == 10 && target.rfind("blas_", 0) == 0 && target.substr(6) == "trsm" &&
      std::string("sdcz").find(target[5]) != std::string::npos) {
    // api_version 2: left_side, lower, trans_a (0 N, 1 T, 2 C), unit_diagonal, m, n, batch,
    // alpha, a, b.
    if (ctx.num_operands() != 10) ctx.fail("@{} takes 10 operands, got {}", target, ctx.num_operands());
    const Literal& a = ctx.operand(8);
    check_type(ctx, target, target[5], a);
    if (row_major(ctx, 8) || row_major(ctx, 9))
      ctx.fail("@{}: a row-major matrix layout is not supported (JAX passes column-major)", target);
    auto flag = [&](size_t i) { return ctx.operand(i).get_int(0); };
    Literal x = trsm(ctx, flag(0) != 0, flag(1) != 0, flag(2), flag(3) != 0, ctx.operand(7).get_complex(0), a,
                     ctx.operand(9));
    return package(ctx, {std::move(x)});
  }
  return eval_solvers(ctx, target);
}

}  // namespace tessera::interp
