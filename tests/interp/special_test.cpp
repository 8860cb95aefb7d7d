// CHLO's mulhi, polygamma and zeta through text and the reference interpreter, against values that
// need no program of ours: products worked out in exact integer arithmetic (Python's ints), and
// closed forms of the Hurwitz zeta function and its derivatives, ζ(2) = π²/6, ζ(4) = π⁴/90,
// ζ(3) (Apéry's constant, 1.2020569031595942854), ζ(s, 1/2) = (2^s − 1) ζ(s), ζ(s, q + 1) = ζ(s, q) − q^−s,
// ψ(1) = −γ, ψ⁽ⁿ⁾(1) = (−1)ⁿ⁺¹ n! ζ(n + 1), ψ⁽ⁿ⁾(1/2) = (−1)ⁿ⁺¹ n! (2ⁿ⁺¹ − 1) ζ(n + 1); the domain edges
// as XLA's CHLO legalization gives them; CHLO's form read, printed and read back; and the shape
// rules' messages.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <numbers>

#include "common/parse_error.h"
#include "interp/interpreter.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "support/error.h"

namespace tessera::interp {
namespace {

using ir::Literal;

constexpr double kRel = 1e-13;  // relative error of the f64 kernels against the closed forms
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kApery = 1.2020569031595942854;
constexpr double kPi2 = std::numbers::pi * std::numbers::pi;

std::vector<Literal> run_main(const std::string& text) { return evaluate(*stablehlo::parse(text, "t.mlir"), "main", {}); }

// NaN where NaN is expected, the infinity expected, or within kRel; anything else fails (NaN too).
void expect_close(const Literal& got, const std::vector<double>& want) {
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    double g = got.get_double(static_cast<int64_t>(i)), w = want[i];
    if (std::isnan(w)) EXPECT_TRUE(std::isnan(g)) << "element " << i << ": " << g << ", want NaN";
    else if (std::isinf(w)) EXPECT_EQ(g, w) << "element " << i;
    else EXPECT_TRUE(std::abs(g - w) <= kRel * std::abs(w)) << "element " << i << ": " << g << " vs " << w;
  }
}

using testing::parse_error;

const std::string kZeta = R"(
func.func @main() -> (tensor<13xf64>, tensor<12xf64>) {
  %s = stablehlo.constant dense<[2.0, 3.0, 4.0, 2.0, 2.0, 30.0, 60.0, 1.0, 0.5, 2.0, 2.5, 2.0, 3.0]> : tensor<13xf64>
  %q = stablehlo.constant dense<[1.0, 1.0, 1.0, 0.5, 2.0, 1.0, 2.0, 3.0, 1.0, -1.0, -0.5, -0.5, 0.0]> : tensor<13xf64>
  %z = chlo.zeta %s, %q : tensor<13xf64>, tensor<13xf64> -> tensor<13xf64>
  %n = stablehlo.constant dense<[0.0, 1.0, 2.0, 3.0, 1.0, 1.0, 2.0, 1.5, -1.0, 1.0, 0.0, 4.0]> : tensor<12xf64>
  %x = stablehlo.constant dense<[1.0, 1.0, 1.0, 1.0, 0.5, 2.0, 0.5, 1.0, 1.0, -1.0, 0.0, 0.5]> : tensor<12xf64>
  %p = "chlo.polygamma"(%n, %x) : (tensor<12xf64>, tensor<12xf64>) -> tensor<12xf64>
  return %z, %p : tensor<13xf64>, tensor<12xf64>
}
)";

TEST(Special, ZetaAndPolygammaMatchClosedForms) {
  auto r = run_main(kZeta);
  expect_close(r[0], {kPi2 / 6, kApery, kPi2 * kPi2 / 90, kPi2 / 2, kPi2 / 6 - 1,
                      1.0000000009313274324,           // ζ(30)
                      8.673617380119933e-19,            // 2^-60 + 3^-60 + ...
                      kInf,                             // s = 1: the harmonic series
                      kNaN,                             // s < 1
                      kInf,                             // q a non-positive integer
                      kNaN,                             // q <= 0 and s not an integer
                      4 + kPi2 / 2,                     // (-1/2)^-2 + ζ(2, 1/2)
                      kInf});                           // q = 0
  double zeta5 = 1.0369277551433699263;  // ζ(5)
  expect_close(r[1], {-0.57721566490153286061,          // ψ(1) = -γ
                      kPi2 / 6, -2 * kApery, kPi2 * kPi2 / 15, kPi2 / 2, kPi2 / 6 - 1, -14 * kApery,
                      kNaN,                             // n not an integer
                      kNaN,                             // n < 0
                      kInf,                             // ψ'(-1): a pole
                      kNaN,                             // ψ(0): digamma's pole, NaN as XLA gives
                      -24 * 31 * zeta5});               // ψ⁽⁴⁾(1/2) = -4! (2⁵ - 1) ζ(5)
}

// Orders and arguments so large that every term underflows (and q + 1 == q): 0, at once.
TEST(Special, ZetaOfHugeOrdersUnderflowsToZero) {
  auto r = run_main(R"(
func.func @main() -> tensor<2xf64> {
  %s = stablehlo.constant dense<[1.0e300, 1.0e300]> : tensor<2xf64>
  %q = stablehlo.constant dense<[1.0e300, 2.0]> : tensor<2xf64>
  %z = chlo.zeta %s, %q : tensor<2xf64>, tensor<2xf64> -> tensor<2xf64>
  return %z : tensor<2xf64>
}
)");
  EXPECT_EQ(r[0].get_double(0), 0.0);
  EXPECT_EQ(r[0].get_double(1), 0.0);
}

// Far out the value is about q^(1-s) / (s - 1), far above where q^-s underflows: ζ(2, 1e200) and
// ψ'(1e200) are 1e-200 (they were 0), ζ(2, 1e160) 1e-160 (it was 9.99988867e-161, the sum of
// subnormal terms), ζ(3, 1e100) 5e-201; values from mpmath at 40 digits.
TEST(Special, ZetaFarOutKeepsItsSmallValue) {
  auto r = run_main(R"(
func.func @main() -> (tensor<4xf64>, tensor<1xf64>) {
  %s = stablehlo.constant dense<[2.0, 2.0, 3.0, 2.0]> : tensor<4xf64>
  %q = stablehlo.constant dense<[1.0e200, 1.0e160, 1.0e100, 1.0e8]> : tensor<4xf64>
  %z = chlo.zeta %s, %q : tensor<4xf64>, tensor<4xf64> -> tensor<4xf64>
  %n = stablehlo.constant dense<[1.0]> : tensor<1xf64>
  %x = stablehlo.constant dense<[1.0e200]> : tensor<1xf64>
  %p = "chlo.polygamma"(%n, %x) : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
  return %z, %p : tensor<4xf64>, tensor<1xf64>
}
)");
  expect_close(r[0], {1e-200, 1e-160, 5.0000000000000000000e-201, 1.0000000050000000167e-08});
  expect_close(r[1], {1e-200});
}

// Exact integer products: (x * y) >> N in 2N bits, signed or unsigned per the element type.
TEST(Special, MulhiIsTheHighHalfOfTheProduct) {
  auto r = run_main(R"(
func.func @main() -> (tensor<4xi32>, tensor<1xui32>, tensor<2xi64>, tensor<1xui64>, tensor<1xi8>, tensor<1xui8>, tensor<1xi4>) {
  %a = stablehlo.constant dense<[2147483647, -1, -2147483648, 123456789]> : tensor<4xi32>
  %b = stablehlo.constant dense<[2, 1, -2147483648, 987654321]> : tensor<4xi32>
  %0 = chlo.mulhi %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %c = stablehlo.constant dense<4294967295> : tensor<1xui32>
  %1 = chlo.mulhi %c, %c : tensor<1xui32>, tensor<1xui32> -> tensor<1xui32>
  %d = stablehlo.constant dense<[4611686018427387904, -1]> : tensor<2xi64>
  %e = stablehlo.constant dense<[4, 5]> : tensor<2xi64>
  %2 = chlo.mulhi %d, %e : tensor<2xi64>, tensor<2xi64> -> tensor<2xi64>
  %f = stablehlo.constant dense<18446744073709551615> : tensor<1xui64>
  %3 = chlo.mulhi %f, %f : tensor<1xui64>, tensor<1xui64> -> tensor<1xui64>
  %g = stablehlo.constant dense<-128> : tensor<1xi8>
  %h = stablehlo.constant dense<127> : tensor<1xi8>
  %4 = chlo.mulhi %g, %h : tensor<1xi8>, tensor<1xi8> -> tensor<1xi8>
  %k = stablehlo.constant dense<200> : tensor<1xui8>
  %5 = chlo.mulhi %k, %k : tensor<1xui8>, tensor<1xui8> -> tensor<1xui8>
  %m = stablehlo.constant dense<-8> : tensor<1xi4>
  %n = stablehlo.constant dense<7> : tensor<1xi4>
  %6 = "chlo.mulhi"(%m, %n) : (tensor<1xi4>, tensor<1xi4>) -> tensor<1xi4>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4xi32>, tensor<1xui32>, tensor<2xi64>, tensor<1xui64>, tensor<1xi8>, tensor<1xui8>, tensor<1xi4>
}
)");
  ASSERT_EQ(r.size(), 7u);
  // 123456789 * 987654321 = 121932631112635269 = 28389652 * 2^32 + 1492815461... >> 32 = 28389652
  EXPECT_EQ(r[0], Literal::from<int64_t>(ir::Type(ir::ElementType::i32, {4}), {0, -1, 1073741824, 28389652}));
  EXPECT_EQ(r[1].get_uint(0), 4294967294u);
  EXPECT_EQ(r[2], Literal::from<int64_t>(ir::Type(ir::ElementType::i64, {2}), {1, -1}));
  EXPECT_EQ(r[3].get_uint(0), 18446744073709551614u);
  EXPECT_EQ(r[4], Literal::from<int64_t>(ir::Type(ir::ElementType::i8, {1}), {-64}));
  EXPECT_EQ(r[5].get_uint(0), 156u);
  EXPECT_EQ(r[6], Literal::from<int64_t>(ir::Type(ir::ElementType::i4, {1}), {-4}));
}

TEST(Special, ChloFormsRoundTrip) {
  std::string once = stablehlo::print(*stablehlo::parse(kZeta, "t.mlir"));
  EXPECT_EQ(stablehlo::print(*stablehlo::parse(once, "printed.mlir")), once);
  EXPECT_NE(once.find("chlo.zeta %"), std::string::npos) << once;
  EXPECT_NE(once.find("chlo.polygamma %"), std::string::npos) << once;  // the generic input prints in CHLO's form
  EXPECT_NE(once.find(": tensor<12xf64>, tensor<12xf64> -> tensor<12xf64>"), std::string::npos) << once;
}

std::string binary_error(const std::string& op, const std::string& a, const std::string& b) {
  return parse_error(fmt::format(R"(
func.func @main(%a: {1}, %b: {2}) -> {1} {{
  %0 = "chlo.{0}"(%a, %b) : ({1}, {2}) -> {1}
  return %0 : {1}
}}
)", op, a, b));
}

TEST(Special, ShapeRuleMessages) {
  auto has = [](const std::string& msg, const std::string& part) {
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
  };
  has(binary_error("mulhi", "tensor<2xf32>", "tensor<2xf32>"), "chlo.mulhi: operand 0 has type tensor<2xf32>, must be");
  has(binary_error("mulhi", "tensor<2xi1>", "tensor<2xi1>"), "chlo.mulhi: operand 0 has type tensor<2xi1>, must be");
  has(binary_error("mulhi", "tensor<2xi32>", "tensor<3xi32>"),
      "chlo.mulhi: operand 1 has type tensor<3xi32>, but operand 0 has type tensor<2xi32>");
  has(binary_error("polygamma", "tensor<2xi32>", "tensor<2xi32>"), "chlo.polygamma: operand 0 has type tensor<2xi32>, must be");
  has(binary_error("zeta", "tensor<2xf32>", "tensor<2xf64>"),
      "chlo.zeta: operand 1 has type tensor<2xf64>, but operand 0 has type tensor<2xf32>");
  has(binary_error("zeta", "tensor<2xcomplex<f32>>", "tensor<2xcomplex<f32>>"), "chlo.zeta: operand 0 has type");
}

// chlo.square of a complex number far out: (a - b)(a + b) + 2abi, where a*a - b*b was inf - inf
// (NaN); |a| = |b| gives an exact 0 real part.
TEST(Special, ComplexSquaresFarOutStayFinitePartsOrInfinities) {
  auto r = run_main(R"(
func.func @main() -> tensor<3xcomplex<f64>> {
  %z = stablehlo.constant dense<[(1.0e+155, 2.0e+155), (1.0e+308, 1.0e+308), (1.0e+308, -1.0e+308)]> : tensor<3xcomplex<f64>>
  %r = chlo.square %z : tensor<3xcomplex<f64>> -> tensor<3xcomplex<f64>>
  return %r : tensor<3xcomplex<f64>>
}
)");
  const std::complex<double> want[] = {{-kInf, kInf}, {0.0, kInf}, {0.0, -kInf}};
  for (int64_t i = 0; i < 3; ++i) {
    std::complex<double> got = r[0].get_complex(i);
    EXPECT_EQ(got, want[i]) << "element " << i << ": (" << got.real() << ", " << got.imag() << ")";
  }
}

}  // namespace
}  // namespace tessera::interp
