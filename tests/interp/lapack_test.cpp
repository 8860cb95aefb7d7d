// The LAPACK custom calls of JAX's CPU lowering (interp/kernels_lapack.cpp) through text and the
// reference interpreter, in both calling conventions (api_version 2 with its descriptor operands
// and a tuple result, and `_ffi` with results one by one): potrf's factor in the chosen triangle
// with the other left as given and info = the order of the first minor that is not positive
// definite; getrf's packed LU, 1-based pivots and info. Values are worked by hand (exact in
// binary), the f32 potrf on a matrix whose last pivot cancels is compared with LAPACK's spotrf as
// JAX recorded it in its test program (cholesky of a 5x5, element [4, 4] = 0.753140688).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "interp/interpreter.h"
#include "stablehlo/parser.h"
#include "support/error.h"

namespace tessera::interp {
namespace {

using ir::Literal;

std::vector<Literal> run(const std::string& body, const std::string& results) {
  std::string text = "module {\n  func.func @main() -> (" + results + ") {\n" + body + "  }\n}\n";
  auto m = stablehlo::parse(text, "lapack.mlir");
  return evaluate(*m, "main", {});
}

void expect_values(const Literal& got, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got.get_double(static_cast<int64_t>(i)), want[i], tol) << "element " << i;
}

constexpr const char* kSpd = "dense<[[4.0, 2.0, -2.0], [2.0, 10.0, 2.0], [-2.0, 2.0, 6.0]]> : tensor<3x3xf64>";

TEST(Lapack, PotrfApiVersion2FactorsTheLowerTriangleAndKeepsTheUpper) {
  std::string body = std::string("    %a = stablehlo.constant ") + kSpd + "\n" +
                     "    %l = stablehlo.constant dense<1> : tensor<i32>\n"
                     "    %b = stablehlo.constant dense<1> : tensor<i32>\n"
                     "    %n = stablehlo.constant dense<3> : tensor<i32>\n"
                     "    %0 = stablehlo.custom_call @lapack_dpotrf(%l, %b, %n, %a) {api_version = 2 : i32, operand_layouts = "
                     "[dense<> : tensor<0xindex>, dense<> : tensor<0xindex>, dense<> : tensor<0xindex>, dense<[0, 1]> : "
                     "tensor<2xindex>]} : (tensor<i32>, tensor<i32>, tensor<i32>, tensor<3x3xf64>) -> "
                     "tuple<tensor<3x3xf64>, tensor<i32>>\n"
                     "    %1 = stablehlo.get_tuple_element %0[0] : (tuple<tensor<3x3xf64>, tensor<i32>>) -> tensor<3x3xf64>\n"
                     "    %2 = stablehlo.get_tuple_element %0[1] : (tuple<tensor<3x3xf64>, tensor<i32>>) -> tensor<i32>\n"
                     "    return %1, %2 : tensor<3x3xf64>, tensor<i32>\n";
  std::vector<Literal> r = run(body, "tensor<3x3xf64>, tensor<i32>");
  // L = [[2, 0, 0], [1, 3, 0], [-1, 1, 2]] (L L^T is the matrix); the upper part stays as given.
  expect_values(r[0], {2, 2, -2, 1, 3, 2, -1, 1, 2});
  EXPECT_EQ(r[1].get_int(0), 0);
}

TEST(Lapack, PotrfFfiUpperAndARowMajorLayoutSwapTheTriangle) {
  auto call = [](const std::string& attrs) {
    std::string body = std::string("    %a = stablehlo.constant ") + kSpd + "\n" +
                       "    %0:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%a) {" + attrs +
                       "} : (tensor<3x3xf64>) -> (tensor<3x3xf64>, tensor<i32>)\n"
                       "    return %0#0, %0#1 : tensor<3x3xf64>, tensor<i32>\n";
    return run(body, "tensor<3x3xf64>, tensor<i32>");
  };
  // U = L^T in the upper triangle; the lower part stays as given.
  std::vector<Literal> upper = call("mhlo.backend_config = {uplo = 85 : ui8}");
  expect_values(upper[0], {2, 1, -1, 2, 3, 1, -2, 2, 2});
  EXPECT_EQ(upper[1].get_int(0), 0);
  // 'L' on a row-major matrix is LAPACK's lower triangle of the transpose: the logical upper one.
  std::vector<Literal> transposed =
      call("mhlo.backend_config = {uplo = 76 : ui8}, operand_layouts = [dense<[1, 0]> : tensor<2xindex>]");
  expect_values(transposed[0], {2, 1, -1, 2, 3, 1, -2, 2, 2});
}

TEST(Lapack, PotrfInfoIsTheOrderOfTheFirstMinorThatIsNotPositiveDefinite) {
  // The second leading minor of [[1, 2], [2, 1]] is -3: the factorization stops at column 2.
  std::string body =
      "    %a = stablehlo.constant dense<[[[4.0, 0.0], [0.0, 9.0]], [[1.0, 2.0], [2.0, 1.0]]]> : tensor<2x2x2xf32>\n"
      "    %0:2 = stablehlo.custom_call @lapack_spotrf_ffi(%a) {mhlo.backend_config = {uplo = 76 : ui8}} : "
      "(tensor<2x2x2xf32>) -> (tensor<2x2x2xf32>, tensor<2xi32>)\n"
      "    return %0#0, %0#1 : tensor<2x2x2xf32>, tensor<2xi32>\n";
  std::vector<Literal> r = run(body, "tensor<2x2x2xf32>, tensor<2xi32>");
  expect_values(r[0], {2, 0, 0, 3, 1, 2, 2, 1});  // column 1 of the second matrix factored: [1, 2]
  EXPECT_EQ(r[1].get_int(0), 0);
  EXPECT_EQ(r[1].get_int(1), 2);
}

TEST(Lapack, SinglePrecisionPotrfRoundsLikeSpotrf) {
  // LAPACK's spotrf gives 0.753140688 at [4, 4] (JAX's recorded value); the factorization in double
  // rounded once gives 0.753144920, 4.2e-6 away, beyond JAX's f32 tolerance 1e-6 * (1 + 0.75)
  // (the pivot cancels from 53.8). Rounding each step to f32 stays within it.
  std::string body =
      "    %a = stablehlo.constant dense<[[21.4709015, 3.8059082, -24.6269531, 1.12866211, 4.78710938], [3.8059082, "
      "31.4267731, -22.8348389, 9.32849121, -30.4909592], [-24.6269531, -22.8348389, 62.130188, -0.340942383, "
      "-7.6810913], [1.12866211, 9.32849121, -0.340942383, 49.4057617, -21.1902466], [4.78710938, -30.4909592, "
      "-7.6810913, -21.1902466, 53.8049965]]> : tensor<5x5xf32>\n"
      "    %0:2 = stablehlo.custom_call @lapack_spotrf_ffi(%a) {mhlo.backend_config = {uplo = 76 : ui8}} : "
      "(tensor<5x5xf32>) -> (tensor<5x5xf32>, tensor<i32>)\n"
      "    return %0#0 : tensor<5x5xf32>\n";
  std::vector<Literal> r = run(body, "tensor<5x5xf32>");
  EXPECT_NEAR(r[0].get_double(24), 0.753140688, 1e-6 * (1 + 0.753140688));
  EXPECT_NEAR(r[0].get_double(0), 4.63367033, 1e-6);
}

TEST(Lapack, GetrfPacksLUWithOneBasedPivotsInBothConventions) {
  // [[1, 2], [3, 4]]: row 2 is the first pivot; L = [[1, 0], [1/3, 1]], U = [[3, 4], [0, 2/3]].
  std::string v2 =
      "    %a = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf64>\n"
      "    %b = stablehlo.constant dense<1> : tensor<i32>\n"
      "    %m = stablehlo.constant dense<2> : tensor<i32>\n"
      "    %0 = stablehlo.custom_call @lapack_dgetrf(%b, %m, %m, %a) {api_version = 2 : i32} : (tensor<i32>, "
      "tensor<i32>, tensor<i32>, tensor<2x2xf64>) -> tuple<tensor<2x2xf64>, tensor<2xi32>, tensor<i32>>\n"
      "    %1 = stablehlo.get_tuple_element %0[0] : (tuple<tensor<2x2xf64>, tensor<2xi32>, tensor<i32>>) -> tensor<2x2xf64>\n"
      "    %2 = stablehlo.get_tuple_element %0[1] : (tuple<tensor<2x2xf64>, tensor<2xi32>, tensor<i32>>) -> tensor<2xi32>\n"
      "    %3 = stablehlo.get_tuple_element %0[2] : (tuple<tensor<2x2xf64>, tensor<2xi32>, tensor<i32>>) -> tensor<i32>\n"
      "    return %1, %2, %3 : tensor<2x2xf64>, tensor<2xi32>, tensor<i32>\n";
  std::vector<Literal> r = run(v2, "tensor<2x2xf64>, tensor<2xi32>, tensor<i32>");
  expect_values(r[0], {3, 4, 1.0 / 3, 2.0 / 3}, 1e-15);
  EXPECT_EQ(r[1].get_int(0), 2);
  EXPECT_EQ(r[1].get_int(1), 2);
  EXPECT_EQ(r[2].get_int(0), 0);
  // A zero column: info names it (1-based), and the factorization goes on.
  std::string ffi =
      "    %a = stablehlo.constant dense<[[0.0, 1.0], [0.0, 2.0]]> : tensor<2x2xf32>\n"
      "    %0:3 = stablehlo.custom_call @lapack_sgetrf_ffi(%a) : (tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2xi32>, "
      "tensor<i32>)\n"
      "    return %0#0, %0#1, %0#2 : tensor<2x2xf32>, tensor<2xi32>, tensor<i32>\n";
  r = run(ffi, "tensor<2x2xf32>, tensor<2xi32>, tensor<i32>");
  expect_values(r[0], {0, 1, 0, 2});
  EXPECT_EQ(r[1].get_int(0), 1);
  EXPECT_EQ(r[1].get_int(1), 2);
  EXPECT_EQ(r[2].get_int(0), 1);
}

TEST(Lapack, ATypeThatDoesNotFitTheRoutineIsRefusedByName) {
  std::string body =
      "    %a = stablehlo.constant dense<[[1.0]]> : tensor<1x1xf32>\n"
      "    %0:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%a) : (tensor<1x1xf32>) -> (tensor<1x1xf32>, tensor<i32>)\n"
      "    return %0#0 : tensor<1x1xf32>\n";
  try {
    run(body, "tensor<1x1xf32>");
    FAIL() << "no error";
  } catch (const support::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("@lapack_dpotrf_ffi takes f64 matrices, not tensor<1x1xf32>"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tessera::interp

namespace tessera::interp {
namespace {

// blas_?trsm (api_version 2: left_side, lower, trans_a, unit_diagonal, m, n, batch, alpha, a, b),
// as older jaxlibs' lu_solve calls it: L (unit lower) then U, on [[2, 1], [4, 5]] = L U with
// L = [[1, 0], [2, 1]], U = [[2, 1], [0, 3]] packed as getrf gives them: [[2, 1], [2, 3]].
std::string trsm_call(int left, int lower, int trans, int unit, const std::string& b, const std::string& bt) {
  return fmt::format(
      "    %a = stablehlo.constant dense<[[2.0, 1.0], [2.0, 3.0]]> : tensor<2x2xf64>\n"
      "    %b = stablehlo.constant dense<{}> : {}\n"
      "    %f0 = stablehlo.constant dense<{}> : tensor<i32>\n"
      "    %f1 = stablehlo.constant dense<{}> : tensor<i32>\n"
      "    %f2 = stablehlo.constant dense<{}> : tensor<i32>\n"
      "    %f3 = stablehlo.constant dense<{}> : tensor<i32>\n"
      "    %m = stablehlo.constant dense<2> : tensor<i32>\n"
      "    %one = stablehlo.constant dense<1> : tensor<i32>\n"
      "    %alpha = stablehlo.constant dense<2.0> : tensor<f64>\n"
      "    %0 = stablehlo.custom_call @blas_dtrsm(%f0, %f1, %f2, %f3, %m, %one, %one, %alpha, %a, %b) {{api_version = 2 : i32}} : "
      "(tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<f64>, "
      "tensor<2x2xf64>, {}) -> {}\n"
      "    return %0 : {}\n",
      b, bt, left, lower, trans, unit, bt, bt, bt);
}

TEST(Lapack, TrsmSolvesWithEitherTriangleSideAndTranspose) {
  // Left, unit lower L: L x = 2 [1, 4] gives x = [2, 4].
  expect_values(run(trsm_call(1, 1, 0, 1, "[[1.0], [4.0]]", "tensor<2x1xf64>"), "tensor<2x1xf64>")[0], {2, 4});
  // Left, upper U: U x = 2 [3, 6] gives x2 = 4, x1 = (6 - 4) / 2 = 1.
  expect_values(run(trsm_call(1, 0, 0, 0, "[[3.0], [6.0]]", "tensor<2x1xf64>"), "tensor<2x1xf64>")[0], {1, 4});
  // Left, U^T (trans 1, upper stored): [[2, 0], [1, 3]] x = 2 [1, 2] gives x1 = 1, x2 = (4 - 1) / 3 = 1.
  expect_values(run(trsm_call(1, 0, 1, 0, "[[1.0], [2.0]]", "tensor<2x1xf64>"), "tensor<2x1xf64>")[0], {1, 1});
  // Right side, upper U: x U = 2 [2, 7] gives x1 = 2, x2 = (14 - 2) / 3 = 4.
  expect_values(run(trsm_call(0, 0, 0, 0, "[[2.0, 7.0]]", "tensor<1x2xf64>"), "tensor<1x2xf64>")[0], {2, 4});
}

}  // namespace
}  // namespace tessera::interp

namespace tessera::interp {
namespace {

// lapack_?trsm_ffi (later jaxlibs): (a, b[, alpha]) with side, uplo, trans_x and diag in
// mhlo.backend_config, on the packed LU above ([[2, 1], [2, 3]]).
TEST(Lapack, TrsmFfiReadsItsFlagsFromTheBackendConfig) {
  auto call = [](const std::string& config, bool alpha) {
    std::string body = fmt::format(
        "    %a = stablehlo.constant dense<[[2.0, 1.0], [2.0, 3.0]]> : tensor<2x2xf64>\n"
        "    %b = stablehlo.constant dense<[[1.0], [4.0]]> : tensor<2x1xf64>\n"
        "    %alpha = stablehlo.constant dense<2.0> : tensor<f64>\n"
        "    %0 = stablehlo.custom_call @lapack_dtrsm_ffi(%a, %b{}) {{mhlo.backend_config = {{{}}}, operand_layouts = "
        "[dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>{}]}} : (tensor<2x2xf64>, tensor<2x1xf64>{}) "
        "-> tensor<2x1xf64>\n"
        "    return %0 : tensor<2x1xf64>\n",
        alpha ? ", %alpha" : "", config, alpha ? ", dense<> : tensor<0xindex>" : "", alpha ? ", tensor<f64>" : "");
    return run(body, "tensor<2x1xf64>")[0];
  };
  // Unit lower L = [[1, 0], [2, 1]]: L x = [1, 4] gives x = [1, 2].
  expect_values(call("diag = 85 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8", false), {1, 2});
  // U^T = [[2, 0], [1, 3]]: U^T x = 2 [1, 4] gives x1 = 1, x2 = (8 - 1) / 3.
  expect_values(call("diag = 78 : ui8, side = 76 : ui8, trans_x = 84 : ui8, uplo = 85 : ui8", true), {1, 7.0 / 3});
}

}  // namespace
}  // namespace tessera::interp
