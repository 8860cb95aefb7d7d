// The LAPACK custom calls that run through OpenBLAS's LAPACK (interp/kernels_lapack_solvers.cpp),
// as JAX's CPU lowering writes them: QR (geqrf, orgqr/ungqr), eigh (syevd/heevd), SVD (gesdd,
// gesvd) and eig (geev), batched, in f32, f64, complex<f32> and complex<f64>. Results are checked
// by identities that hold only for a right answer (Q^H Q = I and Q R = A; V^H A V = diag(w) with
// V unitary; U diag(s) V^H = A with U, V orthonormal; A vr = vr diag(w), vl^H A = diag(w) vl^H)
// and against NumPy (numpy.linalg.qr, eigvalsh, svd), which no one here wrote. Both calling
// conventions: `_ffi` with attributes in mhlo.backend_config, and api_version 2 with its scalar
// descriptors, tuple result and workspaces (returned as zeros).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>

#include "interp/interpreter.h"
#include "numpy_oracle.h"
#include "stablehlo/parser.h"
#include "support/error.h"

namespace tessera::interp {
namespace {

using C = std::complex<double>;
using ir::ElementType;
using ir::Literal;
using ir::Type;
using testing::NumPy;

const ElementType kTypes[] = {ElementType::f32, ElementType::f64, ElementType::c64, ElementType::c128};

// The tolerance of results in `e`, relative to the matrices' size (entries are O(1)).
double tolerance(ElementType e) { return e == ElementType::f32 || e == ElementType::c64 ? 2e-5 : 1e-12; }
char letter(ElementType e) {
  return e == ElementType::f32 ? 's' : e == ElementType::f64 ? 'd' : e == ElementType::c64 ? 'c' : 'z';
}
std::string text(const Type& t) { return ir::to_string(t); }

// Deterministic O(1) entries, complex ones with an imaginary part.
Literal matrix(ElementType e, std::vector<int64_t> shape, double seed) {
  Literal a(Type(e, shape));
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    double re = std::sin(0.7 * static_cast<double>(i) + seed) + 0.3 * std::cos(1.3 * static_cast<double>(i * i) + seed);
    double im = ir::is_complex(e) ? std::cos(0.9 * static_cast<double>(i) - seed) : 0.0;
    a.set_complex(i, C(re, im));
  }
  return a;
}

// Runs `body` as @main(%a) -> results, `body` ending in the return of `results`.
std::vector<Literal> run(const Literal& a, const std::string& body, const std::vector<Type>& results) {
  std::string types;
  for (const Type& t : results) types += (types.empty() ? "" : ", ") + text(t);
  std::string program = fmt::format("module {{\n  func.func @main(%a: {}) -> ({}) {{\n{}  }}\n}}\n", text(a.type()), types, body);
  auto m = stablehlo::parse(program, "lapack_solvers.mlir");
  return evaluate(*m, "main", {a});
}

// One custom call of `target` on %a returning all its results.
std::vector<Literal> call(const std::string& target, const std::string& attrs, const Literal& a,
                          const std::vector<Type>& results) {
  std::string types, names;
  for (size_t i = 0; i < results.size(); ++i) {
    types += (i ? ", " : "") + text(results[i]);
    names += fmt::format("{}%0#{}", i ? ", " : "", i);
  }
  std::string body = fmt::format("    %0:{} = stablehlo.custom_call @{}(%a) {{{}}} : ({}) -> ({})\n    return {} : {}\n",
                                 results.size(), target, attrs, text(a.type()), types, names, types);
  return run(a, body, results);
}

Type batched(ElementType e, std::vector<int64_t> batch, std::vector<int64_t> tail) {
  batch.insert(batch.end(), tail.begin(), tail.end());
  return Type(e, batch);
}

// Element (i, j) of matrix b of x (the last two dimensions), as complex<double>.
C at(const Literal& x, int64_t b, int64_t i, int64_t j) {
  const auto& s = x.shape();
  int64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
  return x.get_complex(b * rows * cols + i * cols + j);
}

// The largest |sum_k f(i, k) g(k, j) - want(i, j)| over i < rows, j < cols.
template <class F, class G, class W>
double product_error(int64_t rows, int64_t inner, int64_t cols, F f, G g, W want) {
  double worst = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      C s = 0;
      for (int64_t k = 0; k < inner; ++k) s += f(i, k) * g(k, j);
      double d = std::abs(s - want(i, j));
      worst = std::isnan(d) ? INFINITY : std::max(worst, d);
    }
  return worst;
}

void expect_close(const Literal& got, const Literal& want, double tol, const std::string& what) {
  ASSERT_EQ(got.num_elements(), want.num_elements()) << what;
  for (int64_t i = 0; i < got.num_elements(); ++i)
    EXPECT_LE(std::abs(got.get_complex(i) - want.get_complex(i)), tol) << what << " element " << i;
}

TEST(LapackSolvers, GeqrfThenOrgqrGiveNumPysQAndRBatched) {
  for (ElementType e : kTypes) {
    std::string t = std::string(1, letter(e)), q = ir::is_complex(e) ? "ungqr" : "orgqr";
    Literal a = matrix(e, {2, 5, 3}, 0.25);
    Type mt = a.type(), taut = batched(e, {2}, {3});
    std::string body = fmt::format(
        "    %0:2 = stablehlo.custom_call @lapack_{0}geqrf_ffi(%a) {{mhlo.backend_config = {{}}, operand_layouts = "
        "[dense<[1, 2, 0]> : tensor<3xindex>]}} : ({1}) -> ({1}, {2})\n"
        "    %1 = stablehlo.custom_call @lapack_{0}{3}_ffi(%0#0, %0#1) {{mhlo.backend_config = {{}}}} : ({1}, {2}) -> {1}\n"
        "    return %0#0, %1 : {1}, {1}\n",
        t, text(mt), text(taut), q);
    std::vector<Literal> r = run(a, body, {mt, mt});
    NumPy np;
    size_t nq = np.add("np.linalg.qr(a0)[0]", {a}), nr = np.add("np.linalg.qr(a0)[1]", {a});
    std::vector<Literal> want = np.run();
    double tol = 10 * tolerance(e);
    for (int64_t b = 0; b < 2; ++b) {
      auto qm = [&](int64_t i, int64_t k) { return at(r[1], b, i, k); };
      auto rm = [&](int64_t k, int64_t j) { return k <= j ? at(r[0], b, k, j) : C(0); };
      auto qh = [&](int64_t i, int64_t k) { return std::conj(at(r[1], b, k, i)); };
      EXPECT_LE(product_error(5, 3, 3, qm, rm, [&](int64_t i, int64_t j) { return at(a, b, i, j); }), tol) << "Q R = A";
      EXPECT_LE(product_error(3, 5, 3, qh, qm, [](int64_t i, int64_t j) { return C(i == j); }), tol) << "Q^H Q = I";
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 3; ++j) {
          EXPECT_LE(std::abs(rm(i, j) - at(want[nr], b, i, j)), tol) << std::string(ir::spelling(e)) << " R " << i << j;
          EXPECT_LE(std::abs(at(r[1], b, i + 2, j) - at(want[nq], b, i + 2, j)), tol) << std::string(ir::spelling(e)) << " Q";
        }
    }
  }
}

TEST(LapackSolvers, GeqrfApiVersion2ReturnsInfoAndAZeroWorkspace) {
  // A wide matrix (m < n): R is 3 x 5, upper trapezoidal, as numpy.linalg.qr gives it.
  Literal a = matrix(ElementType::f64, {3, 5}, 1.5);
  std::string tuple = "tuple<tensor<3x5xf64>, tensor<3xf64>, tensor<i32>, tensor<7xf64>>";
  std::string body =
      "    %b = stablehlo.constant dense<1> : tensor<i32>\n    %m = stablehlo.constant dense<3> : tensor<i32>\n"
      "    %n = stablehlo.constant dense<5> : tensor<i32>\n    %w = stablehlo.constant dense<7> : tensor<i32>\n"
      "    %0 = stablehlo.custom_call @lapack_dgeqrf(%b, %m, %n, %w, %a) {api_version = 2 : i32} : (tensor<i32>, "
      "tensor<i32>, tensor<i32>, tensor<i32>, tensor<3x5xf64>) -> " + tuple + "\n"
      "    %1 = stablehlo.get_tuple_element %0[0] : (" + tuple + ") -> tensor<3x5xf64>\n"
      "    %2 = stablehlo.get_tuple_element %0[2] : (" + tuple + ") -> tensor<i32>\n"
      "    %3 = stablehlo.get_tuple_element %0[3] : (" + tuple + ") -> tensor<7xf64>\n"
      "    return %1, %2, %3 : tensor<3x5xf64>, tensor<i32>, tensor<7xf64>\n";
  std::vector<Literal> r = run(a, body, {a.type(), Type(ElementType::i32, {}), Type(ElementType::f64, {7})});
  Literal want = testing::numpy("np.linalg.qr(a0)[1]", {a});
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = i; j < 5; ++j) EXPECT_NEAR(r[0].get_double(i * 5 + j), want.get_double(i * 5 + j), 1e-12) << i << j;
  EXPECT_EQ(r[1].get_int(0), 0);
  for (int64_t i = 0; i < 7; ++i) EXPECT_EQ(r[2].get_double(i), 0.0);
}

TEST(LapackSolvers, EighReadsOnlyItsTriangleAndGivesAscendingValuesAndUnitaryVectors) {
  for (ElementType e : kTypes) {
    for (bool lower : {true, false}) {
      // The other triangle holds values that are not the matrix's: LAPACK must not read them.
      Literal a = matrix(e, {2, 4, 4}, 0.5);
      ElementType re = ir::real_type(e);
      std::string routine = ir::is_complex(e) ? "heevd" : "syevd";
      std::vector<Literal> r =
          call(fmt::format("lapack_{}{}_ffi", letter(e), routine),
               fmt::format("mhlo.backend_config = {{mode = 86 : ui8, uplo = {} : ui8}}", lower ? 76 : 85), a,
               {a.type(), batched(re, {2}, {4}), Type(ElementType::i32, {2})});
      Literal w = testing::numpy(fmt::format("np.linalg.eigvalsh(a0, UPLO='{}').astype({})", lower ? 'L' : 'U',
                                             testing::numpy_dtype(re)),
                                 {a});
      expect_close(r[1], w, 10 * tolerance(e), std::string(ir::spelling(e)));
      double tol = 10 * tolerance(e);
      for (int64_t b = 0; b < 2; ++b) {
        EXPECT_EQ(r[2].get_int(b), 0);
        // The Hermitian matrix the triangle stands for.
        auto h = [&](int64_t i, int64_t j) {
          bool stored = lower ? i >= j : i <= j;
          C v = stored ? at(a, b, i, j) : std::conj(at(a, b, j, i));
          return i == j ? C(v.real()) : v;
        };
        auto v = [&](int64_t i, int64_t j) { return at(r[0], b, i, j); };
        auto vh = [&](int64_t i, int64_t j) { return std::conj(at(r[0], b, j, i)); };
        auto vw = [&](int64_t i, int64_t j) { return at(r[0], b, i, j) * r[1].get_double(b * 4 + j); };
        EXPECT_LE(product_error(4, 4, 4, h, v, vw), tol) << std::string(ir::spelling(e)) << " A V = V diag(w), lower " << lower;
        EXPECT_LE(product_error(4, 4, 4, vh, v, [](int64_t i, int64_t j) { return C(i == j); }), tol) << "V^H V = I";
        for (int64_t i = 0; i + 1 < 4; ++i) EXPECT_LE(r[1].get_double(b * 4 + i), r[1].get_double(b * 4 + i + 1));
      }
    }
  }
}

TEST(LapackSolvers, EighApiVersion2AndItsWorkspaces) {
  // [[2, 1], [1, 2]] (upper triangle garbage): eigenvalues 1 and 3, vectors (1, -1) / sqrt(2), (1, 1) / sqrt(2).
  Literal a = Literal::from_doubles(Type(ElementType::f32, {2, 2}), std::vector<double>{2, 99, 1, 2});
  std::string tuple = "tuple<tensor<2x2xf32>, tensor<2xf32>, tensor<i32>, tensor<17xf32>, tensor<13xi32>>";
  std::string body =
      "    %l = stablehlo.constant dense<1> : tensor<i32>\n    %b = stablehlo.constant dense<1> : tensor<i32>\n"
      "    %n = stablehlo.constant dense<2> : tensor<i32>\n"
      "    %0 = stablehlo.custom_call @lapack_ssyevd(%l, %b, %n, %a) {api_version = 2 : i32, operand_layouts = [dense<> : "
      "tensor<0xindex>, dense<> : tensor<0xindex>, dense<> : tensor<0xindex>, dense<[0, 1]> : tensor<2xindex>]} : "
      "(tensor<i32>, tensor<i32>, tensor<i32>, tensor<2x2xf32>) -> " + tuple + "\n"
      "    %1 = stablehlo.get_tuple_element %0[0] : (" + tuple + ") -> tensor<2x2xf32>\n"
      "    %2 = stablehlo.get_tuple_element %0[1] : (" + tuple + ") -> tensor<2xf32>\n"
      "    return %1, %2 : tensor<2x2xf32>, tensor<2xf32>\n";
  std::vector<Literal> r = run(a, body, {a.type(), Type(ElementType::f32, {2})});
  EXPECT_NEAR(r[1].get_double(0), 1.0, 1e-6);
  EXPECT_NEAR(r[1].get_double(1), 3.0, 1e-6);
  double h = std::sqrt(0.5);
  EXPECT_NEAR(std::abs(r[0].get_double(0)), h, 1e-6);  // column 0: (1, -1) / sqrt(2) up to sign
  EXPECT_NEAR(r[0].get_double(0) + r[0].get_double(2), 0.0, 1e-6);
  EXPECT_NEAR(r[0].get_double(1) - r[0].get_double(3), 0.0, 1e-6);  // column 1: (1, 1) / sqrt(2) up to sign
}

// U diag(s) V^H = A with orthonormal U and V, s descending and NumPy's, for gesdd (and gesvd)
// in modes 'A' (full), 'S' (reduced) and 'N' (values only).
void check_svd(ElementType e, const std::string& routine, char mode, int64_t m, int64_t n) {
  SCOPED_TRACE(fmt::format("{} {} mode {} {}x{}", ir::spelling(e), routine, mode, m, n));
  int64_t k = std::min(m, n), ucols = mode == 'A' ? m : k, vrows = mode == 'A' ? n : k;
  Literal a = matrix(e, {2, m, n}, 0.75);
  ElementType re = ir::real_type(e);
  std::vector<Type> types = {a.type(), batched(re, {2}, {k}), batched(e, {2}, {m, ucols}), batched(e, {2}, {vrows, n}),
                             Type(ElementType::i32, {2})};
  std::vector<Literal> r = call(fmt::format("lapack_{}{}_ffi", letter(e), routine),
                                fmt::format("mhlo.backend_config = {{mode = {} : ui8}}", int(mode)), a, types);
  Literal s = testing::numpy(fmt::format("np.linalg.svd(a0, compute_uv=False).astype({})", testing::numpy_dtype(re)), {a});
  double tol = 10 * tolerance(e);
  expect_close(r[1], s, tol, "s");
  for (int64_t b = 0; b < 2; ++b) {
    EXPECT_EQ(r[4].get_int(b), 0);
    for (int64_t i = 0; i + 1 < k; ++i) EXPECT_GE(r[1].get_double(b * k + i), r[1].get_double(b * k + i + 1));
    if (mode == 'N') continue;
    auto us = [&](int64_t i, int64_t j) { return j < k ? at(r[2], b, i, j) * r[1].get_double(b * k + j) : C(0); };
    auto vt = [&](int64_t i, int64_t j) { return i < k ? at(r[3], b, i, j) : C(0); };
    EXPECT_LE(product_error(m, std::min(ucols, vrows), n, us, vt, [&](int64_t i, int64_t j) { return at(a, b, i, j); }), tol)
        << "U diag(s) V^H = A";
    auto uh = [&](int64_t i, int64_t j) { return std::conj(at(r[2], b, j, i)); };
    auto u = [&](int64_t i, int64_t j) { return at(r[2], b, i, j); };
    EXPECT_LE(product_error(ucols, m, ucols, uh, u, [](int64_t i, int64_t j) { return C(i == j); }), tol) << "U^H U = I";
    auto v = [&](int64_t i, int64_t j) { return at(r[3], b, i, j); };
    auto vh = [&](int64_t i, int64_t j) { return std::conj(at(r[3], b, j, i)); };
    EXPECT_LE(product_error(vrows, n, vrows, v, vh, [](int64_t i, int64_t j) { return C(i == j); }), tol) << "V^H V = I";
  }
}

TEST(LapackSolvers, SvdReconstructsTheMatrixWithOrthonormalFactorsInEveryMode) {
  for (ElementType e : kTypes) {
    check_svd(e, "gesdd", 'A', 4, 3);
    check_svd(e, "gesdd", 'S', 3, 5);
    check_svd(e, "gesdd", 'N', 4, 4);
    check_svd(e, "gesvd", 'S', 5, 3);
  }
}

TEST(LapackSolvers, GesddApiVersion2WithItsWorkspaces) {
  // full_matrices 0, compute_uv 1: mode 'S'; [[3, 0], [0, -4]] has singular values 4, 3.
  Literal a = Literal::from_doubles(Type(ElementType::f64, {2, 2}), std::vector<double>{3, 0, 0, -4});
  std::string tuple =
      "tuple<tensor<2x2xf64>, tensor<2xf64>, tensor<2x2xf64>, tensor<2x2xf64>, tensor<i32>, tensor<16xi32>, tensor<40xf64>>";
  std::string body =
      "    %f = stablehlo.constant dense<0> : tensor<i32>\n    %u = stablehlo.constant dense<1> : tensor<i32>\n"
      "    %b = stablehlo.constant dense<1> : tensor<i32>\n    %n = stablehlo.constant dense<2> : tensor<i32>\n"
      "    %w = stablehlo.constant dense<40> : tensor<i32>\n"
      "    %0 = stablehlo.custom_call @lapack_dgesdd(%f, %u, %b, %n, %n, %w, %a) {api_version = 2 : i32} : (tensor<i32>, "
      "tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<2x2xf64>) -> " + tuple + "\n"
      "    %1 = stablehlo.get_tuple_element %0[1] : (" + tuple + ") -> tensor<2xf64>\n"
      "    %2 = stablehlo.get_tuple_element %0[2] : (" + tuple + ") -> tensor<2x2xf64>\n"
      "    %3 = stablehlo.get_tuple_element %0[3] : (" + tuple + ") -> tensor<2x2xf64>\n"
      "    return %1, %2, %3 : tensor<2xf64>, tensor<2x2xf64>, tensor<2x2xf64>\n";
  std::vector<Literal> r = run(a, body, {Type(ElementType::f64, {2}), a.type(), a.type()});
  EXPECT_NEAR(r[0].get_double(0), 4, 1e-14);
  EXPECT_NEAR(r[0].get_double(1), 3, 1e-14);
  // u[:, 0] s0 vt[0, :] is the -4 entry: |u[1][0]| = |vt[0][1]| = 1, their product -1.
  EXPECT_NEAR(r[1].get_double(2) * r[2].get_double(1), -1, 1e-14);
  EXPECT_NEAR(r[1].get_double(1) * r[2].get_double(2), 1, 1e-14);
}

TEST(LapackSolvers, GeevGivesRightAndLeftEigenvectorsAndUnpacksConjugatePairs) {
  // A rotation block and 2: eigenvalues +-i and 2 (a conjugate pair in the real routine).
  for (ElementType e : kTypes) {
    SCOPED_TRACE(std::string(ir::spelling(e)));
    Literal a(Type(e, {3, 3}));
    std::vector<double> v = {0, -1, 0, 1, 0, 0, 0.5, 0.25, 2};
    for (int64_t i = 0; i < 9; ++i) a.set_complex(i, v[static_cast<size_t>(i)]);
    bool complex = ir::is_complex(e);
    ElementType ce = complex ? e : (e == ElementType::f32 ? ElementType::c64 : ElementType::c128);
    std::vector<Type> types;
    if (complex) types = {Type(e, {3})};
    else types = {Type(e, {3}), Type(e, {3})};
    types.insert(types.end(), {Type(ce, {3, 3}), Type(ce, {3, 3}), Type(ElementType::i32, {})});
    std::vector<Literal> r = call(fmt::format("lapack_{}geev_ffi", letter(e)),
                                  "mhlo.backend_config = {compute_left = 86 : ui8, compute_right = 86 : ui8}", a, types);
    size_t vl = complex ? 1 : 2;
    auto w = [&](int64_t j) { return complex ? r[0].get_complex(j) : C(r[0].get_double(j), r[1].get_double(j)); };
    EXPECT_EQ(r[vl + 2].get_int(0), 0);
    std::vector<C> got = {w(0), w(1), w(2)};
    std::sort(got.begin(), got.end(), [](C x, C y) { return x.imag() < y.imag() || (x.imag() == y.imag() && x.real() < y.real()); });
    double tol = 10 * tolerance(e);
    EXPECT_LE(std::abs(got[0] - C(0, -1)), tol);
    EXPECT_LE(std::abs(got[1] - C(2, 0)), tol);
    EXPECT_LE(std::abs(got[2] - C(0, 1)), tol);
    auto am = [&](int64_t i, int64_t j) { return at(a, 0, i, j); };
    auto vr = [&](int64_t i, int64_t j) { return at(r[vl + 1], 0, i, j); };
    auto vlh = [&](int64_t i, int64_t j) { return std::conj(at(r[vl], 0, j, i)); };
    EXPECT_LE(product_error(3, 3, 3, am, vr, [&](int64_t i, int64_t j) { return vr(i, j) * w(j); }), tol) << "A vr = vr w";
    EXPECT_LE(product_error(3, 3, 3, vlh, am, [&](int64_t i, int64_t j) { return w(i) * vlh(i, j); }), tol) << "vl^H A = w vl^H";
    for (int64_t j = 0; j < 3; ++j) {
      double norm = 0;
      for (int64_t i = 0; i < 3; ++i) norm += std::norm(vr(i, j));
      EXPECT_NEAR(norm, 1, tol) << "column " << j << " of unit norm";
    }
  }
}

TEST(LapackSolvers, GeevOfANonFiniteMatrixSetsInfoMinus4) {
  Literal a = Literal::from_doubles(Type(ElementType::f64, {2, 2, 2}), std::vector<double>{1, 0, 0, 2, INFINITY, 0, 0, 1});
  std::vector<Literal> r = call("lapack_dgeev_ffi", "mhlo.backend_config = {compute_left = 78 : ui8, compute_right = 86 : ui8}", a,
                                {Type(ElementType::f64, {2, 2}), Type(ElementType::f64, {2, 2}), Type(ElementType::c128, {2, 2, 2}),
                                 Type(ElementType::c128, {2, 2, 2}), Type(ElementType::i32, {2})});
  EXPECT_EQ(r[4].get_int(0), 0);
  EXPECT_EQ(r[4].get_int(1), -4);
  EXPECT_EQ(r[0].get_double(0) + r[0].get_double(1), 3.0);
}

TEST(LapackSolvers, AMismatchedTypeOrARowMajorLayoutIsRefusedByName) {
  auto message = [](const std::string& target, const std::string& attrs, const Literal& a) {
    try {
      call(target, attrs, a, {a.type(), Type(a.element(), {2})});
    } catch (const support::UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Literal a = matrix(ElementType::f32, {2, 2}, 0);
  EXPECT_NE(message("lapack_dgeqrf_ffi", "", a).find("@lapack_dgeqrf_ffi takes f64 matrices, not tensor<2x2xf32>"),
            std::string::npos);
  EXPECT_NE(message("lapack_sgeqrf_ffi", "operand_layouts = [dense<[1, 0]> : tensor<2xindex>]", a)
                .find("@lapack_sgeqrf_ffi: a row-major layout of operand 0 is not supported"),
            std::string::npos);
}

// Whether each of `got` (n values) is within `tol` of a distinct one of `want`.
void expect_same_values(const std::vector<C>& got, const Literal& want, double tol, const std::string& what) {
  std::vector<bool> used(static_cast<size_t>(want.num_elements()));
  ASSERT_EQ(static_cast<int64_t>(got.size()), want.num_elements()) << what;
  for (C g : got) {
    int64_t best = -1;
    for (int64_t j = 0; j < want.num_elements(); ++j)
      if (!used[static_cast<size_t>(j)] && (best < 0 || std::abs(want.get_complex(j) - g) < std::abs(want.get_complex(best) - g)))
        best = j;
    ASSERT_GE(best, 0);
    used[static_cast<size_t>(best)] = true;
    EXPECT_LE(std::abs(want.get_complex(best) - g), tol) << what << ": " << g.real() << " + " << g.imag() << "i";
  }
}

TEST(LapackSolvers, GeesGivesAUnitarySimilarityToATriangularForm) {
  for (ElementType e : kTypes) {
    SCOPED_TRACE(std::string(ir::spelling(e)));
    bool complex = ir::is_complex(e);
    Literal a = matrix(e, {2, 4, 4}, 2.0);
    std::vector<Type> types = {a.type(), a.type(), batched(e, {2}, {4})};
    if (!complex) types.push_back(batched(e, {2}, {4}));
    types.insert(types.end(), {Type(ElementType::i32, {2}), Type(ElementType::i32, {2})});
    std::vector<Literal> r = call(fmt::format("lapack_{}gees_ffi", letter(e)),
                                  "mhlo.backend_config = {mode = 86 : ui8, sort = 78 : ui8}", a, types);
    Literal want = testing::numpy("np.linalg.eigvals(a0).astype(np.complex128)", {a});
    double tol = 10 * tolerance(e);
    size_t info = complex ? 4 : 5;
    for (int64_t b = 0; b < 2; ++b) {
      EXPECT_EQ(r[info].get_int(b), 0);
      auto t = [&](int64_t i, int64_t j) { return at(r[0], b, i, j); };
      auto z = [&](int64_t i, int64_t j) { return at(r[1], b, i, j); };
      auto zh = [&](int64_t i, int64_t j) { return std::conj(at(r[1], b, j, i)); };
      // A Z = Z T, Z unitary, T upper triangular (real: quasi-, with 2 x 2 blocks).
      EXPECT_LE(product_error(4, 4, 4, [&](int64_t i, int64_t k) { return at(a, b, i, k); }, z,
                              [&](int64_t i, int64_t j) {
                                C s = 0;
                                for (int64_t k = 0; k < 4; ++k) s += z(i, k) * t(k, j);
                                return s;
                              }),
                tol) << "A Z = Z T";
      EXPECT_LE(product_error(4, 4, 4, zh, z, [](int64_t i, int64_t j) { return C(i == j); }), tol) << "Z^H Z = I";
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j + (complex ? 1 : 2) <= i; ++j) EXPECT_EQ(t(i, j), C(0)) << "T " << i << j;
      std::vector<C> w;
      for (int64_t j = 0; j < 4; ++j)
        w.push_back(complex ? r[2].get_complex(b * 4 + j) : C(r[2].get_double(b * 4 + j), r[3].get_double(b * 4 + j)));
      Literal wb(Type(ElementType::c128, {4}));
      for (int64_t j = 0; j < 4; ++j) wb.set_complex(j, want.get_complex(b * 4 + j));
      expect_same_values(w, wb, tol, "eigenvalues");
    }
  }
}

TEST(LapackSolvers, GehrdAndSytrdKeepTheEigenvaluesInTheirCondensedForms) {
  for (ElementType e : kTypes) {
    SCOPED_TRACE(std::string(ir::spelling(e)));
    ElementType re = ir::real_type(e);
    Literal a = matrix(e, {5, 5}, 3.0);
    double tol = 10 * tolerance(e);
    // gehrd: the upper Hessenberg part of the result has A's eigenvalues.
    std::vector<Literal> h = call(fmt::format("lapack_{}gehrd_ffi", letter(e)), "mhlo.backend_config = {high = 5 : i32, low = 1 : i32}",
                                  a, {a.type(), Type(e, {4}), Type(ElementType::i32, {})});
    EXPECT_EQ(h[2].get_int(0), 0);
    NumPy np;
    size_t hw = np.add("np.linalg.eigvals(np.triu(a0, -1)).astype(np.complex128)", {h[0]});
    size_t aw = np.add("np.linalg.eigvals(a0).astype(np.complex128)", {a});
    // sytrd/hetrd on the lower triangle: tridiag(e, d, e) has the Hermitian matrix's eigenvalues.
    std::vector<Literal> t =
        call(fmt::format("lapack_{}{}_ffi", letter(e), ir::is_complex(e) ? "hetrd" : "sytrd"), "mhlo.backend_config = {uplo = 76 : ui8}",
             a, {a.type(), Type(re, {5}), Type(re, {4}), Type(e, {4}), Type(ElementType::i32, {})});
    EXPECT_EQ(t[4].get_int(0), 0);
    size_t tw = np.add("np.linalg.eigvalsh(np.diag(a0) + np.diag(a1, 1) + np.diag(a1, -1)).astype(np.complex128)", {t[1], t[2]});
    size_t sw = np.add("np.linalg.eigvalsh(a0, UPLO='L').astype(np.complex128)", {a});
    std::vector<Literal> w = np.run();
    std::vector<C> got;
    for (int64_t i = 0; i < 5; ++i) got.push_back(w[hw].get_complex(i));
    expect_same_values(got, w[aw], 100 * tol, "gehrd");
    got.clear();
    for (int64_t i = 0; i < 5; ++i) got.push_back(w[tw].get_complex(i));
    expect_same_values(got, w[sw], 10 * tol, "sytrd");
  }
}

TEST(LapackSolvers, Geqp3PivotsTheLargestColumnsFirstAndKeepsTheGramMatrix) {
  for (ElementType e : kTypes) {
    SCOPED_TRACE(std::string(ir::spelling(e)));
    Literal a = matrix(e, {2, 5, 4}, 4.0);
    std::string body = fmt::format(
        "    %p = stablehlo.constant dense<0> : tensor<2x4xi32>\n"
        "    %0:3 = stablehlo.custom_call @lapack_{}geqp3_ffi(%a, %p) {{mhlo.backend_config = {{}}, operand_layouts = "
        "[dense<[1, 2, 0]> : tensor<3xindex>, dense<[1, 0]> : tensor<2xindex>]}} : ({}, tensor<2x4xi32>) -> ({}, "
        "tensor<2x4xi32>, {})\n    return %0#0, %0#1 : {}, tensor<2x4xi32>\n",
        letter(e), text(a.type()), text(a.type()), text(batched(e, {2}, {4})), text(a.type()));
    std::vector<Literal> r = run(a, body, {a.type(), Type(ElementType::i32, {2, 4})});
    double tol = 20 * tolerance(e);
    for (int64_t b = 0; b < 2; ++b) {
      std::vector<int64_t> p;
      for (int64_t j = 0; j < 4; ++j) p.push_back(r[1].get_int(b * 4 + j) - 1);
      std::vector<int64_t> sorted = p;
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(sorted, (std::vector<int64_t>{0, 1, 2, 3})) << "a permutation";
      ASSERT_TRUE(sorted == (std::vector<int64_t>{0, 1, 2, 3}));
      // R^H R = (A P)^H (A P): Q is unitary.
      auto rm = [&](int64_t k, int64_t j) { return k <= j ? at(r[0], b, k, j) : C(0); };
      auto rh = [&](int64_t j, int64_t k) { return std::conj(rm(k, j)); };
      EXPECT_LE(product_error(4, 4, 4, rh, rm,
                              [&](int64_t i, int64_t j) {
                                C g = 0;
                                for (int64_t k = 0; k < 5; ++k) g += std::conj(at(a, b, k, p[i])) * at(a, b, k, p[j]);
                                return g;
                              }),
                tol) << "R^H R = P^T A^H A P";
      for (int64_t j = 0; j + 1 < 4; ++j) EXPECT_GE(std::abs(rm(j, j)) + tol, std::abs(rm(j + 1, j + 1))) << "pivoted";
    }
  }
}

TEST(LapackSolvers, GtsvSolvesTheBatchedTridiagonalSystems) {
  for (ElementType e : kTypes) {
    SCOPED_TRACE(std::string(ir::spelling(e)));
    // Diagonally dominant: d = 4 + ..., off-diagonals O(1).
    Literal dl = matrix(e, {2, 4}, 0.1), d = matrix(e, {2, 4}, 0.2), du = matrix(e, {2, 4}, 0.3), b = matrix(e, {2, 4, 3}, 0.4);
    for (int64_t i = 0; i < 8; ++i) d.set_complex(i, d.get_complex(i) + 4.0);
    std::string v = text(dl.type()), m = text(b.type());
    std::string program = fmt::format(
        "module {{\n  func.func @main(%dl: {0}, %d: {0}, %du: {0}, %b: {1}) -> {1} {{\n"
        "    %0:5 = stablehlo.custom_call @lapack_{2}gtsv_ffi(%dl, %d, %du, %b) {{mhlo.backend_config = {{}}, "
        "operand_layouts = [dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : "
        "tensor<2xindex>, dense<[1, 2, 0]> : tensor<3xindex>]}} : ({0}, {0}, {0}, {1}) -> ({0}, {0}, {0}, {1}, tensor<2xi32>)\n"
        "    return %0#3 : {1}\n  }}\n}}\n",
        v, m, letter(e));
    auto mod = stablehlo::parse(program, "gtsv.mlir");
    Literal x = evaluate(*mod, "main", {dl, d, du, b})[0];
    for (int64_t bt = 0; bt < 2; ++bt) {
      // A(i, i - 1) = dl[i], A(i, i) = d[i], A(i, i + 1) = du[i].
      auto am = [&](int64_t i, int64_t j) {
        if (j == i - 1) return dl.get_complex(bt * 4 + i);
        if (j == i) return d.get_complex(bt * 4 + i);
        if (j == i + 1) return du.get_complex(bt * 4 + i);
        return C(0);
      };
      EXPECT_LE(product_error(4, 4, 3, am, [&](int64_t i, int64_t j) { return at(x, bt, i, j); },
                              [&](int64_t i, int64_t j) { return at(b, bt, i, j); }),
                10 * tolerance(e))
          << "A x = b";
    }
  }
}

TEST(LapackSolvers, GeevAndSytrdInApiVersion2PlaceTheirResultsBetweenWorkspaces) {
  // geev (batch, n, jobvl, jobvr, a) -> (a, vl, vr work, wr, wi, vl, vr, info) on diag(3, -1).
  Literal a = Literal::from_doubles(Type(ElementType::f64, {2, 2}), std::vector<double>{3, 0, 0, -1});
  std::string tuple =
      "tuple<tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2x2xcomplex<f64>>, "
      "tensor<2x2xcomplex<f64>>, tensor<i32>>";
  std::string body =
      "    %b = stablehlo.constant dense<1> : tensor<i32>\n    %n = stablehlo.constant dense<2> : tensor<i32>\n"
      "    %v = stablehlo.constant dense<86> : tensor<ui8>\n    %no = stablehlo.constant dense<78> : tensor<ui8>\n"
      "    %0 = stablehlo.custom_call @lapack_dgeev(%b, %n, %no, %v, %a) {api_version = 2 : i32} : (tensor<i32>, tensor<i32>, "
      "tensor<ui8>, tensor<ui8>, tensor<2x2xf64>) -> " + tuple + "\n"
      "    %1 = stablehlo.get_tuple_element %0[3] : (" + tuple + ") -> tensor<2xf64>\n"
      "    %2 = stablehlo.get_tuple_element %0[6] : (" + tuple + ") -> tensor<2x2xcomplex<f64>>\n"
      "    %3 = stablehlo.get_tuple_element %0[7] : (" + tuple + ") -> tensor<i32>\n"
      "    return %1, %2, %3 : tensor<2xf64>, tensor<2x2xcomplex<f64>>, tensor<i32>\n";
  std::vector<Literal> r = run(a, body, {Type(ElementType::f64, {2}), Type(ElementType::c128, {2, 2}), Type(ElementType::i32, {})});
  EXPECT_EQ(r[0].get_double(0), 3);
  EXPECT_EQ(r[0].get_double(1), -1);
  EXPECT_EQ(std::abs(r[1].get_complex(0)), 1);  // the right vectors: e1 and e2 up to sign
  EXPECT_EQ(std::abs(r[1].get_complex(3)), 1);
  EXPECT_EQ(r[2].get_int(0), 0);
  // sytrd (n, lower, lda, batch, lwork, a) -> (a, d, e, tau, info, work): a 2x2 matrix is already
  // tridiagonal, d its diagonal and e its off-diagonal (up to sign), read from the upper triangle.
  Literal s2 = Literal::from_doubles(Type(ElementType::f32, {2, 2}), std::vector<double>{1, 5, 99, 2});
  std::string t2 = "tuple<tensor<2x2xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<i32>, tensor<64xf32>>";
  std::string b2 =
      "    %n = stablehlo.constant dense<2> : tensor<i32>\n    %l = stablehlo.constant dense<0> : tensor<i32>\n"
      "    %b = stablehlo.constant dense<1> : tensor<i32>\n    %w = stablehlo.constant dense<64> : tensor<i32>\n"
      "    %0 = stablehlo.custom_call @lapack_ssytrd(%n, %l, %n, %b, %w, %a) {api_version = 2 : i32} : (tensor<i32>, tensor<i32>, "
      "tensor<i32>, tensor<i32>, tensor<i32>, tensor<2x2xf32>) -> " + t2 + "\n"
      "    %1 = stablehlo.get_tuple_element %0[1] : (" + t2 + ") -> tensor<2xf32>\n"
      "    %2 = stablehlo.get_tuple_element %0[2] : (" + t2 + ") -> tensor<1xf32>\n"
      "    return %1, %2 : tensor<2xf32>, tensor<1xf32>\n";
  r = run(s2, b2, {Type(ElementType::f32, {2}), Type(ElementType::f32, {1})});
  EXPECT_EQ(r[0].get_double(0), 1);
  EXPECT_EQ(r[0].get_double(1), 2);
  EXPECT_EQ(std::abs(r[1].get_double(0)), 5);
}

TEST(LapackSolvers, EmptyMatricesGiveEmptyResultsAndInfoZero) {
  // LAPACK wants leading dimensions of at least 1 even for an empty matrix (info -4 otherwise).
  Literal a(Type(ElementType::f32, {0, 3}));
  std::vector<Literal> q = call("lapack_sgeqrf_ffi", "", a, {a.type(), Type(ElementType::f32, {0})});
  EXPECT_EQ(q[0].num_elements(), 0);
  Literal e(Type(ElementType::f64, {2, 0, 0}));
  std::vector<Literal> h = call("lapack_dsyevd_ffi", "mhlo.backend_config = {mode = 86 : ui8, uplo = 76 : ui8}", e,
                                {e.type(), Type(ElementType::f64, {2, 0}), Type(ElementType::i32, {2})});
  EXPECT_EQ(h[2].get_int(0), 0);
  EXPECT_EQ(h[2].get_int(1), 0);
  std::vector<Literal> t = call("lapack_dsytrd_ffi", "mhlo.backend_config = {uplo = 76 : ui8}", e,
                                {e.type(), Type(ElementType::f64, {2, 0}), Type(ElementType::f64, {2, 0}),
                                 Type(ElementType::f64, {2, 0}), Type(ElementType::i32, {2})});
  EXPECT_EQ(t[4].get_int(1), 0);
}

}  // namespace
}  // namespace tessera::interp
