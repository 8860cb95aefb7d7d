// chlo.top_k, stablehlo.cholesky and stablehlo.triangular_solve through text and the reference
// interpreter: the spec's examples; cholesky and batched triangular solves (left and right side,
// lower and upper, unit diagonal, transposed) against values NumPy gave (numpy.linalg.cholesky and
// numpy.linalg.solve on the triangle read, stated below), with the other triangle of each input
// filled with values the op must not read; top_k's order on ties, NaN and signed zeros; the text
// forms (JAX's `chlo.top_k(%x, k = 2)`, `stablehlo.cholesky %a, lower = true`) read, printed and
// read back; and the shape rules' constraint messages.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "common/parse_error.h"
#include "interp/interpreter.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "support/error.h"

namespace tessera::interp {
namespace {

using ir::Literal;

std::vector<Literal> run_main(const std::string& text) {
  auto m = stablehlo::parse(text, "t.mlir");
  return evaluate(*m, "main", {});
}

void expect_values(const Literal& got, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got.get_double(static_cast<int64_t>(i)), want[i], tol) << "element " << i;
}

using testing::parse_error;

std::string round_trip(const std::string& text) {
  std::string once = stablehlo::print(*stablehlo::parse(text, "t.mlir"));
  EXPECT_EQ(stablehlo::print(*stablehlo::parse(once, "printed.mlir")), once);
  return once;
}

TEST(Cholesky, SpecExample) {
  auto r = run_main(R"(
func.func @main() -> tensor<3x3xf32> {
  %a = stablehlo.constant dense<[[1.0, 2.0, 3.0], [2.0, 20.0, 26.0], [3.0, 26.0, 70.0]]> : tensor<3x3xf32>
  %result = "stablehlo.cholesky"(%a) {lower = true} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  return %result : tensor<3x3xf32>
}
)");
  expect_values(r[0], {1, 0, 0, 2, 4, 0, 3, 5, 6}, 0);
}

// numpy.linalg.cholesky([[4, 2, -2], [2, 10, 5], [-2, 5, 21]]) = [[2, 0, 0], [1, 3, 0], [-1, 2, 4]];
// the upper factor is its transpose. 99 marks entries the op must not read.
const std::string kCholesky = R"(func.func @main() -> (tensor<3x3xf64>, tensor<3x3xf64>) {
  %cst = stablehlo.constant dense<[[4.000000e+00, 9.900000e+01, 9.900000e+01], [2.000000e+00, 1.000000e+01, 9.900000e+01], [-2.000000e+00, 5.000000e+00, 2.100000e+01]]> : tensor<3x3xf64>
  %cst_0 = stablehlo.constant dense<[[4.000000e+00, 2.000000e+00, -2.000000e+00], [9.900000e+01, 1.000000e+01, 5.000000e+00], [9.900000e+01, 9.900000e+01, 2.100000e+01]]> : tensor<3x3xf64>
  %0 = stablehlo.cholesky %cst, lower = true : tensor<3x3xf64>
  %1 = stablehlo.cholesky %cst_0, lower = false : tensor<3x3xf64>
  return %0, %1 : tensor<3x3xf64>, tensor<3x3xf64>
}
)";

TEST(Cholesky, LowerAndUpperMatchNumpyAndReadOnlyTheirTriangle) {
  auto r = run_main(kCholesky);
  expect_values(r[0], {2, 0, 0, 1, 3, 0, -1, 2, 4});
  expect_values(r[1], {2, 1, -1, 0, 3, 2, 0, 0, 4});
  EXPECT_NE(round_trip(kCholesky).find("stablehlo.cholesky %cst, lower = true : tensor<3x3xf64>"), std::string::npos);
}

TEST(Cholesky, NotPositiveDefiniteGivesNaN) {
  auto r = run_main(R"(
func.func @main() -> tensor<2x2xf32> {
  %a = stablehlo.constant dense<[[1.0, 0.0], [2.0, 1.0]]> : tensor<2x2xf32>
  %l = stablehlo.cholesky %a, lower = true : tensor<2x2xf32>
  return %l : tensor<2x2xf32>
}
)");
  EXPECT_TRUE(std::isnan(r[0].get_double(3)));
}

TEST(TriangularSolve, SpecExample) {
  auto r = run_main(R"(
func.func @main() -> tensor<3x3xf32> {
  %a = stablehlo.constant dense<[[1.0, 0.0, 0.0], [2.0, 4.0, 0.0], [3.0, 5.0, 6.0]]> : tensor<3x3xf32>
  %b = stablehlo.constant dense<[[2.0, 0.0, 0.0], [4.0, 8.0, 0.0], [6.0, 10.0, 12.0]]> : tensor<3x3xf32>
  %result = "stablehlo.triangular_solve"(%a, %b) {
    left_side = true,
    lower = true,
    unit_diagonal = false,
    transpose_a = #stablehlo<transpose NO_TRANSPOSE>
  } : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  return %result : tensor<3x3xf32>
}
)");
  expect_values(r[0], {2, 0, 0, 0, 2, 0, 0, 0, 2}, 0);
}

// A batch of two: numpy.linalg.solve(tril(A), B); solve(transpose(tril(A, -1) + I), B); and
// x·triu(A) = Bᵀ as solve(transpose(triu(A)), B)ᵀ.
const std::string kSolves = R"(func.func @main() -> (tensor<2x3x2xf64>, tensor<2x3x2xf64>, tensor<2x2x3xf64>) {
  %cst = stablehlo.constant dense<[[[2.000000e+00, 9.000000e+00, 9.000000e+00], [1.000000e+00, 3.000000e+00, 9.000000e+00], [-1.000000e+00, 2.000000e+00, 4.000000e+00]], [[1.000000e+00, 9.000000e+00, 9.000000e+00], [5.000000e-01, 2.000000e+00, 9.000000e+00], [3.000000e+00, -1.000000e+00, 5.000000e+00]]]> : tensor<2x3x3xf64>
  %cst_0 = stablehlo.constant dense<[[[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00]], [[-1.000000e+00, 5.000000e-01], [2.000000e+00, 1.000000e+00], [0.000000e+00, 3.000000e+00]]]> : tensor<2x3x2xf64>
  %0 = "stablehlo.triangular_solve"(%cst, %cst_0) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<2x3x3xf64>, tensor<2x3x2xf64>) -> tensor<2x3x2xf64>
  %1 = "stablehlo.triangular_solve"(%cst, %cst_0) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = true}> : (tensor<2x3x3xf64>, tensor<2x3x2xf64>) -> tensor<2x3x2xf64>
  %2 = stablehlo.transpose %cst_0, dims = [0, 2, 1] : (tensor<2x3x2xf64>) -> tensor<2x2x3xf64>
  %3 = "stablehlo.triangular_solve"(%cst, %2) <{left_side = false, lower = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<2x3x3xf64>, tensor<2x2x3xf64>) -> tensor<2x2x3xf64>
  return %0, %1, %3 : tensor<2x3x2xf64>, tensor<2x3x2xf64>, tensor<2x2x3xf64>
}
)";

TEST(TriangularSolve, BatchedSolvesMatchNumpy) {
  auto r = run_main(kSolves);
  expect_values(r[0], {0.5, 1.0, 0.8333333333333333, 1.0, 0.9583333333333334, 1.25,  //
                       -1.0, 0.5, 1.2500000000000002, 0.375, 0.8500000000000001, 0.375});
  expect_values(r[1], {13, 16, -7, -8, 5, 6, -2, -10.5, 2, 4, 0, 3});
  expect_values(r[2], {0.5, -0.5, 1.25, 1.0, -1.666666666666667, 3.0000000000000004,  //
                       -1.0, 5.5, -8.1, 0.5000000000000001, -1.7500000000000004, 2.8500000000000005});
  round_trip(kSolves);
}

// The right-side solve above, multiplied back: x·triu(a) = bᵀ.
TEST(TriangularSolve, RightSideMultipliesBack) {
  auto r = run_main(kSolves);
  const double a[2][3][3] = {{{2, 9, 9}, {1, 3, 9}, {-1, 2, 4}}, {{1, 9, 9}, {0.5, 2, 9}, {3, -1, 5}}};
  const double b[2][3][2] = {{{1, 2}, {3, 4}, {5, 6}}, {{-1, 0.5}, {2, 1}, {0, 3}}};
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) {
        double sum = 0;  // Σ_k x[i][k]·triu(a)[k][j]
        for (int k = 0; k <= j; ++k) sum += r[2].get_double(n * 6 + i * 3 + k) * a[n][k][j];
        EXPECT_NEAR(sum, b[n][j][i], 1e-12);
      }
}

// Complex matrices: L = [[2, ., .], [1-i, 3, .], [0.5+2i, -1+i, 4]] (the upper triangle holds 9+9i,
// which must not be read), A = L·Lᴴ. cholesky(A) gives L (lower) and Lᴴ (upper); triangular_solve
// with op = identity, TRANSPOSE and ADJOINT, on the left and (adjoint) on the right. Expected values
// from numpy.linalg.cholesky and numpy.linalg.solve (complex128).
const std::string kComplex = R"(func.func @main() -> (tensor<3x3xcomplex<f64>>, tensor<3x3xcomplex<f64>>, tensor<3x2xcomplex<f64>>, tensor<3x2xcomplex<f64>>, tensor<3x2xcomplex<f64>>, tensor<2x3xcomplex<f64>>) {
  %l = stablehlo.constant dense<[[(2.0, 0.0), (9.0, 9.0), (9.0, 9.0)], [(1.0, -1.0), (3.0, 0.0), (9.0, 9.0)], [(0.5, 2.0), (-1.0, 1.0), (4.0, 0.0)]]> : tensor<3x3xcomplex<f64>>
  %a = stablehlo.constant dense<[[(4.0, 0.0), (2.0, 2.0), (1.0, -4.0)], [(2.0, -2.0), (11.0, 0.0), (-4.5, -5.5)], [(1.0, 4.0), (-4.5, 5.5), (22.25, 0.0)]]> : tensor<3x3xcomplex<f64>>
  %b = stablehlo.constant dense<[[(1.0, 1.0), (2.0, 0.0)], [(0.0, 0.0), (0.0, -1.0)], [(3.0, 0.0), (1.0, 2.0)]]> : tensor<3x2xcomplex<f64>>
  %br = stablehlo.constant dense<[[(1.0, 1.0), (0.0, 0.0), (3.0, 0.0)], [(2.0, 0.0), (0.0, -1.0), (1.0, 2.0)]]> : tensor<2x3xcomplex<f64>>
  %0 = stablehlo.cholesky %a, lower = true : tensor<3x3xcomplex<f64>>
  %1 = stablehlo.cholesky %a : tensor<3x3xcomplex<f64>>
  %2 = "stablehlo.triangular_solve"(%l, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<3x3xcomplex<f64>>, tensor<3x2xcomplex<f64>>) -> tensor<3x2xcomplex<f64>>
  %3 = "stablehlo.triangular_solve"(%l, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose ADJOINT>, unit_diagonal = false}> : (tensor<3x3xcomplex<f64>>, tensor<3x2xcomplex<f64>>) -> tensor<3x2xcomplex<f64>>
  %4 = "stablehlo.triangular_solve"(%l, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = false}> : (tensor<3x3xcomplex<f64>>, tensor<3x2xcomplex<f64>>) -> tensor<3x2xcomplex<f64>>
  %5 = "stablehlo.triangular_solve"(%l, %br) <{left_side = false, lower = true, transpose_a = #stablehlo<transpose ADJOINT>, unit_diagonal = false}> : (tensor<3x3xcomplex<f64>>, tensor<2x3xcomplex<f64>>) -> tensor<2x3xcomplex<f64>>
  return %0, %1, %2, %3, %4, %5 : tensor<3x3xcomplex<f64>>, tensor<3x3xcomplex<f64>>, tensor<3x2xcomplex<f64>>, tensor<3x2xcomplex<f64>>, tensor<3x2xcomplex<f64>>, tensor<2x3xcomplex<f64>>
}
)";

TEST(Linalg, ComplexCholeskyAndSolvesMatchNumpy) {
  auto r = run_main(kComplex);
  using C = std::complex<double>;
  auto expect_complex = [](const Literal& got, const std::vector<C>& want) {
    ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size()));
    for (size_t i = 0; i < want.size(); ++i) {
      C g = got.get_complex(static_cast<int64_t>(i));
      EXPECT_NEAR(g.real(), want[i].real(), 1e-12) << "element " << i;
      EXPECT_NEAR(g.imag(), want[i].imag(), 1e-12) << "element " << i;
    }
  };
  expect_complex(r[0], {{2, 0}, {0, 0}, {0, 0}, {1, -1}, {3, 0}, {0, 0}, {0.5, 2}, {-1, 1}, {4, 0}});
  expect_complex(r[1], {{2, 0}, {1, 1}, {0.5, -2}, {0, 0}, {3, 0}, {-1, -1}, {0, 0}, {0, 0}, {4, 0}});
  expect_complex(r[2], {{0.5, 0.5}, {1, 0}, {-1.0 / 3, 0}, {-1.0 / 3, 0}, {0.8541666666666666, -0.22916666666666666},
                        {0.04166666666666663, 0.08333333333333331}});
  expect_complex(r[3], {{0.3125, 1}, {0.4375, 0.20833333333333331}, {0.25, 0.25}, {-1.0 / 12, -1.0 / 12}, {0.75, 0},
                        {0.25, 0.5}});
  expect_complex(r[4], {{0.3125, 0}, {1.4375, -0.125}, {0.25, -0.25}, {0.25, -0.25}, {0.75, 0}, {0.25, 0.5}});
  expect_complex(r[5], {{0.5, 0.5}, {0, -1.0 / 3}, {0.5208333333333333, 0.10416666666666669}, {1, 0},
                        {-1.0 / 3, -2.0 / 3}, {0.20833333333333331, 0.75}});
  round_trip(kComplex);
}

const std::string kTopK = R"(func.func @main() -> (tensor<2x6xf32>, tensor<2x6xi32>, tensor<1x2xi32>, tensor<1x2xi32>) {
  %cst = stablehlo.constant dense<[[3.000000e+00, 1.000000e+00, 3.000000e+00, 0x7FC00000, -0.000000e+00, 0.000000e+00], [-1.000000e+00, -1.000000e+00, -1.000000e+00, 5.000000e+00, 2.000000e+00, -0.000000e+00]]> : tensor<2x6xf32>
  %c = stablehlo.constant dense<[[7, -3, 7, 2]]> : tensor<1x4xi32>
  %0:2 = chlo.top_k(%cst, k = 6) : tensor<2x6xf32> -> (tensor<2x6xf32>, tensor<2x6xi32>)
  %1:2 = chlo.top_k(%c, k = 2, is_stable = true) : tensor<1x4xi32> -> (tensor<1x2xi32>, tensor<1x2xi32>)
  return %0#0, %0#1, %1#0, %1#1 : tensor<2x6xf32>, tensor<2x6xi32>, tensor<1x2xi32>, tensor<1x2xi32>
}
)";

// Descending in IEEE total order (NaN first, +0 before -0), equal values by lower index first.
TEST(TopK, DescendingStableWithNaNFirst) {
  auto r = run_main(kTopK);
  EXPECT_TRUE(std::isnan(r[0].get_double(0)));
  std::vector<double> values{3, 3, 1, 0, 0, 5, 2, 0, -1, -1, -1};
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(r[0].get_double(static_cast<int64_t>(i) + 1), values[i]);
  EXPECT_FALSE(std::signbit(r[0].get_double(4)));
  EXPECT_TRUE(std::signbit(r[0].get_double(5)));
  std::vector<int64_t> indices{3, 0, 2, 1, 5, 4, 3, 4, 5, 0, 1, 2};
  for (size_t i = 0; i < indices.size(); ++i) EXPECT_EQ(r[1].get_int(static_cast<int64_t>(i)), indices[i]);
  EXPECT_EQ(r[2].get_int(0), 7);
  EXPECT_EQ(r[2].get_int(1), 7);
  EXPECT_EQ(r[3].get_int(0), 0);
  EXPECT_EQ(r[3].get_int(1), 2);
}

TEST(TopK, TextReadsAsJaxPrintsItAndPrintsBack) {
  std::string printed = round_trip(kTopK);
  EXPECT_NE(printed.find("chlo.top_k(%cst, k = 6) : tensor<2x6xf32> -> (tensor<2x6xf32>, tensor<2x6xi32>)"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("chlo.top_k(%c, k = 2, is_stable = true)"), std::string::npos) << printed;
  // The names JAX gives the two results.
  auto m = stablehlo::parse(R"(
func.func @main(%arg0: tensor<5xf32>) -> tensor<2xi32> {
  %values, %indices = chlo.top_k(%arg0, k = 2) : tensor<5xf32> -> (tensor<2xf32>, tensor<2xi32>)
  return %indices : tensor<2xi32>
}
)",
                            "t.mlir");
  Literal x = Literal::from<double>(ir::Type(ir::ElementType::f32, {5}), {0.5, 4, -1, 4.5, 2});
  Literal got = evaluate(*m, "main", {x})[0];
  EXPECT_EQ(got.get_int(0), 3);
  EXPECT_EQ(got.get_int(1), 1);
}

TEST(LinalgShapes, MessagesNameTheConstraint) {
  auto one_op = [](const std::string& arg, const std::string& op) {
    return "func.func @main(" + arg + ") {\n  " + op + "\n  return\n}\n";
  };
  EXPECT_NE(parse_error(one_op("%a: tensor<2x3xf32>", "%0 = stablehlo.cholesky %a, lower = true : tensor<2x3xf32>"))
                .find("stablehlo.cholesky: a has shape tensor<2x3xf32>, not square (C3)"),
            std::string::npos);
  EXPECT_NE(parse_error(one_op("%a: tensor<3xf32>", "%0:2 = chlo.top_k(%a, k = 4) : tensor<3xf32> -> (tensor<4xf32>, tensor<4xi32>)"))
                .find("chlo.top_k: k = 4 is out of range [0, 3] for the last dimension of tensor<3xf32>"),
            std::string::npos);
  std::string solve = one_op(
      "%a: tensor<3x3xf32>, %b: tensor<2x3xf32>",
      "%0 = \"stablehlo.triangular_solve\"(%a, %b) <{left_side = true, lower = true, transpose_a = "
      "#stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<3x3xf32>, tensor<2x3xf32>) -> "
      "tensor<2x3xf32>");
  EXPECT_NE(parse_error(solve).find("stablehlo.triangular_solve: a has shape tensor<3x3xf32> and b tensor<2x3xf32>: a "
                                 "must be square and match b's dimension -2 (C3)"),
            std::string::npos)
      << parse_error(solve);
}

}  // namespace
}  // namespace tessera::interp
