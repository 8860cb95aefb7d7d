// Issue #17's numerics line. Complex expm1, log1p and power where the plain formulas lose digits:
// exp(z) - 1 and log(1 + z) near 0 and expm1 near 2πi against mpmath (40 digits, on the doubles
// written below); power with integral exponents exact as NumPy gives them (i² = -1 with a zero
// imaginary part, 0⁰ = 1, (1 + i)⁻² = -i/2). dot_general with an integer operand and a bf16/f16
// one: the integer is rounded to the float type first, as XLA does (257 is 256 in bf16, 2049 is
// 2048 in f16). The minifloat types through convert and through their constants' text forms.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "interp/interpreter.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::interp {
namespace {

using C = std::complex<double>;

constexpr double kRelTol = 1e-14;  // relative, per part, f64

void expect_parts(const ir::Literal& got, const std::vector<C>& want) {
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    C g = got.get_complex(static_cast<int64_t>(i));
    EXPECT_TRUE(std::abs(g.real() - want[i].real()) <= kRelTol * std::abs(want[i].real()))
        << "element " << i << " real: " << g << " vs " << want[i];
    EXPECT_TRUE(std::abs(g.imag() - want[i].imag()) <= kRelTol * std::abs(want[i].imag()))
        << "element " << i << " imag: " << g << " vs " << want[i];
  }
}

TEST(ComplexPrecision, Expm1Log1pAndIntegralPowers) {
  auto m = stablehlo::parse(R"(
func.func @main() -> (tensor<2xcomplex<f64>>, tensor<1xcomplex<f64>>, tensor<3xcomplex<f64>>) {
  %z = stablehlo.constant dense<[(1.0e-10, 1.0e-10), (1.0e-09, 6.283185307179586)]> : tensor<2xcomplex<f64>>
  %e = "stablehlo.exponential_minus_one"(%z) : (tensor<2xcomplex<f64>>) -> tensor<2xcomplex<f64>>
  %w = stablehlo.constant dense<[(1.0e-10, 1.0e-10)]> : tensor<1xcomplex<f64>>
  %l = "stablehlo.log_plus_one"(%w) : (tensor<1xcomplex<f64>>) -> tensor<1xcomplex<f64>>
  %a = stablehlo.constant dense<[(0.0, 1.0), (0.0, 0.0), (1.0, 1.0)]> : tensor<3xcomplex<f64>>
  %b = stablehlo.constant dense<[(2.0, 0.0), (0.0, 0.0), (-2.0, 0.0)]> : tensor<3xcomplex<f64>>
  %p = "stablehlo.power"(%a, %b) : (tensor<3xcomplex<f64>>, tensor<3xcomplex<f64>>) -> tensor<3xcomplex<f64>>
  return %e, %l, %p : tensor<2xcomplex<f64>>, tensor<1xcomplex<f64>>, tensor<3xcomplex<f64>>
}
)",
                            "t.mlir");
  auto r = evaluate(*m, "main", {});
  expect_parts(r[0], {{1.0000000000000000036428863982164e-10, 1.0000000001000000036435530656118e-10},
                      {1.0000000005000000624482281915741e-09, -2.449293600743999953971485171103e-16}});
  expect_parts(r[1], {{1.0000000000000000036425530648832e-10, 9.9999999990000003643886397487797e-11}});
  expect_parts(r[2], {{-1, 0}, {1, 0}, {0, -0.5}});
}

// [257, -255]·[1, 1] is 1 once 257 is rounded to bf16 (256); the exact product would give 2.
// [2049, -2047]·[1, 1] likewise in f16 (2049 → 2048), also into an f32 result.
TEST(MixedDot, IntegerOperandIsRoundedToTheFloatOperandsType) {
  auto m = stablehlo::parse(R"(
func.func @main() -> (tensor<1x1xbf16>, tensor<1x1xf16>, tensor<1x1xf32>) {
  %a = stablehlo.constant dense<[[257, -255]]> : tensor<1x2xi32>
  %b = stablehlo.constant dense<[[1.0], [1.0]]> : tensor<2x1xbf16>
  %c = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<1x2xi32>, tensor<2x1xbf16>) -> tensor<1x1xbf16>
  %h = stablehlo.constant dense<[[1.0, 1.0]]> : tensor<1x2xf16>
  %i = stablehlo.constant dense<[[2049], [-2047]]> : tensor<2x1xi16>
  %d = stablehlo.dot_general %h, %i, contracting_dims = [1] x [0] : (tensor<1x2xf16>, tensor<2x1xi16>) -> tensor<1x1xf16>
  %e = stablehlo.dot_general %h, %i, contracting_dims = [1] x [0] : (tensor<1x2xf16>, tensor<2x1xi16>) -> tensor<1x1xf32>
  return %c, %d, %e : tensor<1x1xbf16>, tensor<1x1xf16>, tensor<1x1xf32>
}
)",
                            "t.mlir");
  auto r = evaluate(*m, "main", {});
  EXPECT_EQ(r[0].get_double(0), 1.0);
  EXPECT_EQ(r[1].get_double(0), 1.0);
  EXPECT_EQ(r[2].get_double(0), 1.0);
}

// Each new minifloat: decimal values converted in and back out (rounded to nearest even on the
// type's grid: 0.3 → 0.3125 with 2-3 mantissa bits, 0.5 in f4E2M1FN, 0.25 in f6E2M3FN and in
// f8E8M0FNU's powers of two), hex bit patterns of its constants (1.0 and the largest finite value,
// hand-decoded from the bias: FNUZ 8/16/11, f4 1, f6 1/3, E8M0 127), and the printed module read
// back to the same text.
TEST(Minifloat, ConvertAndConstantsInHexAndDecimal) {
  const std::string text = R"(
func.func @main() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<14xf32>) {
  %x = stablehlo.constant dense<[1.0, -1.5, 0.3, 4.0]> : tensor<4xf32>
  %y = stablehlo.constant dense<[1.0, 0.3, 4.0, 0.0078125]> : tensor<4xf32>
  %a = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xf8E4M3FNUZ>
  %a2 = stablehlo.convert %a : (tensor<4xf8E4M3FNUZ>) -> tensor<4xf32>
  %b = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xf8E5M2FNUZ>
  %b2 = stablehlo.convert %b : (tensor<4xf8E5M2FNUZ>) -> tensor<4xf32>
  %c = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xf8E4M3B11FNUZ>
  %c2 = stablehlo.convert %c : (tensor<4xf8E4M3B11FNUZ>) -> tensor<4xf32>
  %d = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xf4E2M1FN>
  %d2 = stablehlo.convert %d : (tensor<4xf4E2M1FN>) -> tensor<4xf32>
  %e = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xf6E2M3FN>
  %e2 = stablehlo.convert %e : (tensor<4xf6E2M3FN>) -> tensor<4xf32>
  %f = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xf6E3M2FN>
  %f2 = stablehlo.convert %f : (tensor<4xf6E3M2FN>) -> tensor<4xf32>
  %g = stablehlo.convert %y : (tensor<4xf32>) -> tensor<4xf8E8M0FNU>
  %g2 = stablehlo.convert %g : (tensor<4xf8E8M0FNU>) -> tensor<4xf32>
  %h = stablehlo.constant dense<[0x40, 0x7F]> : tensor<2xf8E4M3FNUZ>
  %i = stablehlo.constant dense<[0x40, 0x7F]> : tensor<2xf8E5M2FNUZ>
  %j = stablehlo.constant dense<[0x58, 0x7F]> : tensor<2xf8E4M3B11FNUZ>
  %k = stablehlo.constant dense<[0x7F, 0xFE]> : tensor<2xf8E8M0FNU>
  %l = stablehlo.constant dense<[0x2, 0xF]> : tensor<2xf4E2M1FN>
  %m = stablehlo.constant dense<[0x08, 0x1F]> : tensor<2xf6E2M3FN>
  %n = stablehlo.constant dense<[0x0C, 0x1F]> : tensor<2xf6E3M2FN>
  %h2 = stablehlo.convert %h : (tensor<2xf8E4M3FNUZ>) -> tensor<2xf32>
  %i2 = stablehlo.convert %i : (tensor<2xf8E5M2FNUZ>) -> tensor<2xf32>
  %j2 = stablehlo.convert %j : (tensor<2xf8E4M3B11FNUZ>) -> tensor<2xf32>
  %k2 = stablehlo.convert %k : (tensor<2xf8E8M0FNU>) -> tensor<2xf32>
  %l2 = stablehlo.convert %l : (tensor<2xf4E2M1FN>) -> tensor<2xf32>
  %m2 = stablehlo.convert %m : (tensor<2xf6E2M3FN>) -> tensor<2xf32>
  %n2 = stablehlo.convert %n : (tensor<2xf6E3M2FN>) -> tensor<2xf32>
  %all = stablehlo.concatenate %h2, %i2, %j2, %k2, %l2, %m2, %n2, dim = 0 : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<14xf32>
  return %a2, %b2, %c2, %d2, %e2, %f2, %g2, %all : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<14xf32>
}
)";
  auto m = stablehlo::parse(text, "t.mlir");
  std::string printed = stablehlo::print(*m);
  auto again = stablehlo::parse(printed, "printed.mlir");
  EXPECT_EQ(stablehlo::print(*again), printed);
  const std::vector<std::vector<double>> want = {
      {1, -1.5, 0.3125, 4}, {1, -1.5, 0.3125, 4}, {1, -1.5, 0.3125, 4}, {1, -1.5, 0.5, 4},
      {1, -1.5, 0.25, 4},   {1, -1.5, 0.3125, 4}, {1, 0.25, 4, 0.0078125},
      {1, 240, 1, 57344, 1, 30, 1, 0x1p127, 1, -6, 1, 7.5, 1, 28}};
  for (const ir::Module* module : {m.get(), again.get()}) {
    auto r = evaluate(*module, "main", {});
    ASSERT_EQ(r.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k)
      for (size_t i = 0; i < want[k].size(); ++i)
        EXPECT_EQ(r[k].get_double(static_cast<int64_t>(i)), want[k][i]) << "result " << k << " element " << i;
  }
}

}  // namespace
}  // namespace tessera::interp
