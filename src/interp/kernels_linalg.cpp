// Reference kernels of chlo.top_k, stablehlo.cholesky and stablehlo.triangular_solve.
//
// top_k orders each vector along the last dimension by a stable sort, descending, so equal values
// keep the lower index first; floats in IEEE total order (-NaN < -inf < ... < -0 < +0 < ... < inf
// < +NaN: a NaN counts as the largest value, as a sort with a TOTALORDER comparison gives). The
// linear-algebra kernels work in double on each matrix of the batch (the leading dimensions) and
// round once into the result: cholesky by the Cholesky-Banachiewicz recurrence on the triangle it
// reads (a matrix that is not positive definite gives NaN, where sqrt meets a negative pivot), the
// other triangle of the result zero; triangular_solve by forward or back substitution on op(a)
// built from the triangle it reads. Complex matrices run the same recurrences in complex<double>
// (cholesky of a Hermitian matrix, a = l·lᴴ; ADJOINT conjugates as it transposes).
#include <algorithm>
#include <cmath>
#include <complex>
#include <type_traits>
#include <numeric>

#include "interp/kernels.h"
#include "ir/shape_rules.h"

namespace tessera::interp {

namespace {

// a < b in IEEE total order.
bool total_less(double a, double b) {
  auto nan_rank = [](double v) { return std::isnan(v) ? (std::signbit(v) ? -1 : 1) : 0; };
  int ra = nan_rank(a), rb = nan_rank(b);
  if (ra != 0 || rb != 0) return ra < rb;
  if (a == b) return std::signbit(a) && !std::signbit(b);
  return a < b;
}

// The number of matrices of a [..., rows, cols] value.
int64_t batches(const ir::Type& t) {
  int64_t n = 1;
  for (size_t d = 0; d + 2 < t.shape.size(); ++d) n *= t.shape[d];
  return n;
}

// The kernels run in T = double for real types and std::complex<double> for complex ones, so a
// real solve does exactly the real arithmetic it always did.
double conj(double v) { return v; }
std::complex<double> conj(std::complex<double> v) { return std::conj(v); }

template <typename T>
using Matrix = std::vector<T>;  // row-major n x n or rows x cols

template <typename T>
Matrix<T> read_matrix(const ir::Literal& x, int64_t batch, int64_t rows, int64_t cols) {
  Matrix<T> m(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows * cols; ++i) {
    if constexpr (std::is_same_v<T, double>) m[static_cast<size_t>(i)] = x.get_double(batch * rows * cols + i);
    else m[static_cast<size_t>(i)] = x.get_complex(batch * rows * cols + i);
  }
  return m;
}

template <typename T>
void write_matrix(ir::Literal& x, int64_t batch, const Matrix<T>& m) {
  auto size = static_cast<int64_t>(m.size());
  for (int64_t i = 0; i < size; ++i) {
    if constexpr (std::is_same_v<T, double>) x.set_double(batch * size + i, m[static_cast<size_t>(i)]);
    else x.set_complex(batch * size + i, m[static_cast<size_t>(i)]);
  }
}

// Solves t·x = rhs for an n x n triangular t (lower or upper), in place.
template <typename T>
void substitute(const Matrix<T>& t, int64_t n, bool lower, std::vector<T>& x) {
  auto at = [&](int64_t i, int64_t j) { return t[static_cast<size_t>(i * n + j)]; };
  for (int64_t s = 0; s < n; ++s) {
    int64_t i = lower ? s : n - 1 - s;
    T v = x[static_cast<size_t>(i)];
    if (lower) {
      for (int64_t j = 0; j < i; ++j) v -= at(i, j) * x[static_cast<size_t>(j)];
    } else {
      for (int64_t j = i + 1; j < n; ++j) v -= at(i, j) * x[static_cast<size_t>(j)];
    }
    x[static_cast<size_t>(i)] = v / at(i, i);
  }
}

// Cholesky of one batch of a: a = l·lᴴ (lower) or uᴴ·u (upper), Hermitian for complex a.
template <typename T>
void cholesky(const ir::Literal& a, ir::Literal& result, int64_t batch, int64_t n, bool lower) {
  Matrix<T> m = read_matrix<T>(a, batch, n, n);
  // The upper case is the lower factor of the conjugate-transposed triangle, conjugate-transposed back.
  auto read = [&](int64_t i, int64_t j) {
    return lower ? m[static_cast<size_t>(i * n + j)] : conj(m[static_cast<size_t>(j * n + i)]);
  };
  Matrix<T> l(static_cast<size_t>(n * n), T(0));
  auto at = [&](int64_t i, int64_t j) -> T& { return l[static_cast<size_t>(i * n + j)]; };
  for (int64_t j = 0; j < n; ++j) {
    // The diagonal of a Hermitian matrix is real, and so is every pivot.
    double d = std::real(read(j, j));
    for (int64_t k = 0; k < j; ++k) d -= std::real(at(j, k) * conj(at(j, k)));
    at(j, j) = T(std::sqrt(d));
    for (int64_t i = j + 1; i < n; ++i) {
      T v = read(i, j);
      for (int64_t k = 0; k < j; ++k) v -= at(i, k) * conj(at(j, k));
      at(i, j) = v / at(j, j);
    }
  }
  if (!lower)
    for (int64_t i = 0; i < n; ++i) {
      at(i, i) = conj(at(i, i));
      for (int64_t j = 0; j < i; ++j) {
        T upper = conj(at(i, j));
        at(i, j) = conj(at(j, i));
        at(j, i) = upper;
      }
    }
  write_matrix(result, batch, l);
}

// triangular_solve of one batch: op(a)·x = b (left) or x·op(a) = b, op one of identity, transpose
// and adjoint (conjugate transpose; the transpose on reals).
template <typename T>
void triangular_solve(const ir::Literal& a, const ir::Literal& b, ir::Literal& result, int64_t batch, bool left,
                      bool lower, bool unit, ir::Transpose how) {
  int64_t n = a.shape().back();
  int64_t rows = b.shape()[b.shape().size() - 2], cols = b.shape().back();
  bool transposed = how != ir::Transpose::kNone, conjugated = how == ir::Transpose::kAdjoint;
  Matrix<T> m = read_matrix<T>(a, batch, n, n);
  // t = op(a) from the triangle read; t is lower when a's triangle is lower and not transposed, or
  // upper and transposed. A right-side solve x·t = b is tᵀ·xᵀ = bᵀ.
  Matrix<T> t(static_cast<size_t>(n * n), T(0));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      bool read = lower ? j <= i : j >= i;
      if (!read) continue;
      T v = i == j && unit ? T(1) : m[static_cast<size_t>(i * n + j)];
      if (conjugated) v = conj(v);
      bool flip = transposed != !left;  // transpose once for op(a), once more for the right side
      t[static_cast<size_t>(flip ? j * n + i : i * n + j)] = v;
    }
  bool t_lower = lower != (transposed != !left);
  Matrix<T> x = read_matrix<T>(b, batch, rows, cols);
  std::vector<T> v(static_cast<size_t>(n));
  int64_t systems = left ? cols : rows;
  for (int64_t s = 0; s < systems; ++s) {
    auto at = [&](int64_t e) -> T& { return x[static_cast<size_t>(left ? e * cols + s : s * cols + e)]; };
    for (int64_t e = 0; e < n; ++e) v[static_cast<size_t>(e)] = at(e);
    substitute(t, n, t_lower, v);
    for (int64_t e = 0; e < n; ++e) at(e) = v[static_cast<size_t>(e)];
  }
  write_matrix(result, batch, x);
}

}  // namespace

Results eval_TopK(const EvalContext& ctx) {
  const ir::Literal& x = ctx.operand(0);
  ir::Literal values(ctx.result_type(0)), indices(ctx.result_type(1));
  int64_t n = x.shape().back(), k = values.shape().back();
  int64_t rows = n == 0 ? 0 : x.num_elements() / n;
  bool is_float = ir::is_float(x.element()), is_unsigned = ir::is_unsigned_integer(x.element());
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    std::iota(order.begin(), order.end(), int64_t{0});
    auto greater = [&](int64_t i, int64_t j) {
      int64_t a = r * n + i, b = r * n + j;
      if (is_float) return total_less(x.get_double(b), x.get_double(a));
      if (is_unsigned) return x.get_uint(a) > x.get_uint(b);
      return x.get_int(a) > x.get_int(b);
    };
    std::stable_sort(order.begin(), order.end(), greater);
    for (int64_t j = 0; j < k; ++j) {
      copy_element(x, r * n + order[static_cast<size_t>(j)], values, r * k + j);
      indices.set_int(r * k + j, order[static_cast<size_t>(j)]);
    }
  }
  Results out;
  out.push_back(std::move(values));
  out.push_back(std::move(indices));
  return out;
}

Results eval_Cholesky(const EvalContext& ctx) {
  const ir::Literal& a = ctx.operand(0);
  ir::Literal result(ctx.result_type());
  int64_t n = a.shape().back();
  bool lower = ctx.op.attrs().get_or<bool>("lower", false);  // absent: false, its default
  for (int64_t batch = 0; batch < batches(a.type()); ++batch) {
    if (ir::is_complex(a.element())) cholesky<std::complex<double>>(a, result, batch, n, lower);
    else cholesky<double>(a, result, batch, n, lower);
  }
  return one(std::move(result));
}

Results eval_TriangularSolve(const EvalContext& ctx) {
  const ir::Literal &a = ctx.operand(0), &b = ctx.operand(1);
  const ir::AttrMap& attrs = ctx.op.attrs();
  bool left = attrs.get<bool>("left_side"), lower = attrs.get<bool>("lower"), unit = attrs.get<bool>("unit_diagonal");
  ir::Transpose how = *ir::transpose_of(attrs);
  ir::Literal result(ctx.result_type());
  for (int64_t batch = 0; batch < batches(a.type()); ++batch) {
    if (ir::is_complex(a.element())) triangular_solve<std::complex<double>>(a, b, result, batch, left, lower, unit, how);
    else triangular_solve<double>(a, b, result, batch, left, lower, unit, how);
  }
  return one(std::move(result));
}

}  // namespace tessera::interp
