// Printer: literals as dense<...> attributes and float elements digit for digit as MLIR prints
// them (the float cases were checked against LLVM's APFloat, which MLIR's printer uses).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "ir/literal.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

using namespace ir;

std::string f32_text(float v) { return print_float(ElementType::f32, std::bit_cast<uint32_t>(v)); }
std::string f64_text(double v) { return print_float(ElementType::f64, std::bit_cast<uint64_t>(v)); }

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(PrintLiteral, SplatsPrintOneElement) {
  EXPECT_EQ(print(Literal::splat(f32({8, 3}), 0.0)), "dense<0.000000e+00> : tensor<8x3xf32>");
  EXPECT_EQ(print(Literal::scalar(ElementType::f32, -1.5)), "dense<-1.500000e+00> : tensor<f32>");
  EXPECT_EQ(print(Literal::from<int64_t>(i64({1}), {5})), "dense<5> : tensor<1xi64>");
  EXPECT_EQ(print(Literal::from<int64_t>(i1({2}), {1, 1})), "dense<true> : tensor<2xi1>");
  // Negative zero is a different bit pattern, so no splat.
  EXPECT_EQ(print(Literal::from<double>(f32({2}), {0.0, -0.0})),
            "dense<[0.000000e+00, -0.000000e+00]> : tensor<2xf32>");
}

TEST(PrintLiteral, BracketsNestByShape) {
  EXPECT_EQ(
      print(Literal::from<double>(f32({2, 2}), {1, 2, 3, 4})),
      "dense<[[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>");
  EXPECT_EQ(print(Literal::from<int64_t>(i32({2, 1, 2}), {1, 2, 3, 4})),
            "dense<[[[1, 2]], [[3, 4]]]> : tensor<2x1x2xi32>");
  EXPECT_EQ(print(Literal::from<int64_t>(i32({3, 1}), {1, 2, 3})),
            "dense<[[1], [2], [3]]> : tensor<3x1xi32>");
}

TEST(PrintLiteral, IntegersAndBools) {
  EXPECT_EQ(print(Literal::from<int64_t>(i1({3}), {1, 0, 1})),
            "dense<[true, false, true]> : tensor<3xi1>");
  EXPECT_EQ(print(Literal::from<int64_t>(Type(ElementType::i8, {2}), {-128, 127})),
            "dense<[-128, 127]> : tensor<2xi8>");
  EXPECT_EQ(print(Literal::from<int64_t>(Type(ElementType::i4, {2}), {-8, 7})),
            "dense<[-8, 7]> : tensor<2xi4>");
  EXPECT_EQ(print(Literal::from<int64_t>(Type(ElementType::ui32, {2}), {4294967295, 0})),
            "dense<[4294967295, 0]> : tensor<2xui32>");
  EXPECT_EQ(print(Literal::from<int64_t>(Type(ElementType::ui64, {2}), {-1, 1})),
            "dense<[18446744073709551615, 1]> : tensor<2xui64>");
}

TEST(PrintLiteral, EmptyTensors) {
  EXPECT_EQ(print(Literal(f32({0}))), "dense<> : tensor<0xf32>");
  EXPECT_EQ(print(Literal(i32({2, 0}))), "dense<> : tensor<2x0xi32>");
}

TEST(PrintLiteral, NonFiniteFloatsPrintTheirBitsInHex) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(print(Literal::splat(f32({4}), nan)), "dense<0x7FC00000> : tensor<4xf32>");
  EXPECT_EQ(print(Literal::from<double>(f32({3}), {1.0, nan, -inf})),
            "dense<[1.000000e+00, 0x7FC00000, 0xFF800000]> : tensor<3xf32>");
  EXPECT_EQ(print(Literal::scalar(ElementType::f64, inf)),
            "dense<0x7FF0000000000000> : tensor<f64>");
  EXPECT_EQ(print(Literal::scalar(ElementType::bf16, -inf)), "dense<0xFF80> : tensor<bf16>");
  EXPECT_EQ(print(Literal::scalar(ElementType::f8E4M3FN, nan)), "dense<0x7F> : tensor<f8E4M3FN>");
  EXPECT_EQ(print(Literal::scalar(ElementType::f8E5M2, inf)), "dense<0x7C> : tensor<f8E5M2>");
}

// APFloat cuts the exact decimal expansion short before it rounds, so bf16 0.1 (0.10009765625)
// prints as 1.000980e-01, not 1.000980e-01; both read back to the same bits.
TEST(PrintLiteral, NarrowFloatsPrintTheirValue) {
  EXPECT_EQ(print(Literal::from<double>(Type(ElementType::bf16, {3}), {1.0, 0.1, -2.5})),
            "dense<[1.000000e+00, 1.000980e-01, -2.500000e+00]> : tensor<3xbf16>");
  EXPECT_EQ(print(Literal::from<double>(Type(ElementType::f16, {2}), {65504, 0.1})),
            "dense<[6.550400e+04, 9.997550e-02]> : tensor<2xf16>");
  EXPECT_EQ(print(Literal::from<double>(Type(ElementType::f8E4M3FN, {2}), {448, -0.5})),
            "dense<[4.480000e+02, -5.000000e-01]> : tensor<2xf8E4M3FN>");
}

TEST(PrintLiteral, ComplexElementsArePairs) {
  Literal z(Type(ElementType::c64, {2}));
  z.set_complex(0, {1.0, 2.0});
  z.set_complex(1, {0.5, -1.0});
  EXPECT_EQ(print(z),
            "dense<[(1.000000e+00,2.000000e+00), (5.000000e-01,-1.000000e+00)]> : "
            "tensor<2xcomplex<f32>>");
  Literal w(Type(ElementType::c128, {3}));
  for (int64_t i = 0; i < 3; ++i) w.set_complex(i, {1.0, 0.0});
  EXPECT_EQ(print(w), "dense<(1.000000e+00,0.000000e+00)> : tensor<3xcomplex<f64>>");
}

TEST(PrintLiteral, MoreThanAHundredElementsPrintAsRawHex) {
  std::vector<double> values(101);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  std::string text = print(Literal::from_doubles(f32({101}), values));
  EXPECT_EQ(text.substr(0, 31), "dense<\"0x000000000000803F000000");
  EXPECT_EQ(text.size(), std::string("dense<\"0x\"> : tensor<101xf32>").size() + 101 * 8);
  EXPECT_TRUE(text.ends_with("0000C842\"> : tensor<101xf32>")) << text;  // 100.0f

  values.pop_back();  // 100 elements still print one by one
  EXPECT_EQ(print(Literal::from_doubles(f32({100}), values)).substr(0, 34),
            "dense<[0.000000e+00, 1.000000e+00,");

  std::vector<int64_t> bits(102, 1);
  bits[0] = 0;
  EXPECT_EQ(print(Literal::from_ints(i1({102}), bits)),
            "dense<\"0x00" + repeat("01", 101) + "\"> : tensor<102xi1>");

  std::vector<int64_t> nibbles(101, -1);
  nibbles[0] = 0;
  EXPECT_EQ(print(Literal::from_ints(Type(ElementType::i4, {101}), nibbles)),
            "dense<\"0x00" + repeat("0F", 100) + "\"> : tensor<101xi4>");
}

TEST(PrintFloat, SixDigitsWhenTheyReadBack) {
  EXPECT_EQ(f32_text(1.0f), "1.000000e+00");
  EXPECT_EQ(f32_text(0.1f), "1.000000e-01");
  EXPECT_EQ(f32_text(3.14159f), "3.141590e+00");
  EXPECT_EQ(f32_text(1e10f), "1.000000e+10");
  EXPECT_EQ(f32_text(-0.0f), "-0.000000e+00");
  EXPECT_EQ(f32_text(std::numeric_limits<float>::denorm_min()), "1.401300e-45");
  EXPECT_EQ(f64_text(0.1), "1.000000e-01");
  EXPECT_EQ(f64_text(-250.0), "-2.500000e+02");
}

TEST(PrintFloat, RoundTripDigitsOtherwise) {
  EXPECT_EQ(f32_text(static_cast<float>(M_PI)), "3.14159274");
  EXPECT_EQ(f32_text(1.0f / 3.0f), "0.333333343");
  EXPECT_EQ(f32_text(std::numeric_limits<float>::max()), "3.40282347E+38");
  EXPECT_EQ(f64_text(M_PI), "3.1415926535897931");
  EXPECT_EQ(f64_text(1.0 / 3.0), "0.33333333333333331");
  EXPECT_EQ(f64_text(1e-300 / 3), "3.3333333333333334E-301");
  // APFloat rounds the last kept digit half up: 1234567.125 is "1234567.13", not "1234567.12".
  EXPECT_EQ(f32_text(1234567.125f), "1234567.13");
}

TEST(PrintFloat, HexWhenTheRoundTripFormHasNoPoint) {
  EXPECT_EQ(f32_text(123456792.0f), "0x4CEB79A3");
  EXPECT_EQ(print_float(ElementType::f32, 0x7FC00001), "0x7FC00001");  // NaN payloads survive
  EXPECT_EQ(print_float(ElementType::f64, 0xFFF0000000000001), "0xFFF0000000000001");
}

}  // namespace
}  // namespace tessera::stablehlo
