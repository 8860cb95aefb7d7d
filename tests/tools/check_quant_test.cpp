// `tessera check` on a quantized program in the form of JAX's quantized test files: values
// quantized with uniform_quantize, a quantized add and a quantized dot_general (i8 operands, i32
// accumulator, requantized to i8), dequantized and compared with check ops; and JAX's form, whose
// @main returns the i1 of check.eq. The checker lowers the
// quantized ops (dequantize -> op -> quantize) before running; the expected values are worked out
// by hand from the spec's quantize and dequantize (and agree with NumPy's float32 arithmetic).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tools/tessera/check.h"

namespace tessera::tools {
namespace {

namespace fs = std::filesystem;

constexpr const char* kQuantizedFile = R"(// Quantized add and dot_general.
func.func @quantized_add() {
  %a = stablehlo.constant dense<[0.5, -1.0, 2.0, 1.25]> : tensor<4xf32>
  %b = stablehlo.constant dense<[0.25, 0.75, -4.0, 1.0]> : tensor<4xf32>
  %0 = stablehlo.uniform_quantize %a : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 5.000000e-01:-3>>
  %1 = stablehlo.uniform_quantize %b : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 2.500000e-01:2>>
  %2 = stablehlo.add %0, %1 : (tensor<4x!quant.uniform<i8:f32, 5.000000e-01:-3>>, tensor<4x!quant.uniform<i8:f32, 2.500000e-01:2>>) -> tensor<4x!quant.uniform<i8:f32, 5.000000e-01:1>>
  %3 = stablehlo.bitcast_convert %2 : (tensor<4x!quant.uniform<i8:f32, 5.000000e-01:1>>) -> tensor<4xi8>
  check.expect_eq_const %3, dense<[2, 0, -3, 6]> : tensor<4xi8>
  %4 = stablehlo.uniform_dequantize %2 : (tensor<4x!quant.uniform<i8:f32, 5.000000e-01:1>>) -> tensor<4xf32>
  check.expect_eq_const %4, dense<[0.5, -0.5, -2.0, 2.5]> : tensor<4xf32>
  func.return
}

// -----

func.func @quantized_dot_general() {
  %l = stablehlo.constant dense<[[1.0, -0.5, 2.0], [0.0, 1.5, -1.0]]> : tensor<2x3xf32>
  %r = stablehlo.constant dense<[[0.25, -0.5], [1.0, 0.0], [-0.75, 0.5]]> : tensor<3x2xf32>
  %expected = stablehlo.constant dense<[[-2.0, 0.5], [2.0, -0.5]]> : tensor<2x2xf32>
  %0 = stablehlo.uniform_quantize %l : (tensor<2x3xf32>) -> tensor<2x3x!quant.uniform<i8:f32, 5.000000e-01>>
  %1 = stablehlo.uniform_quantize %r : (tensor<3x2xf32>) -> tensor<3x2x!quant.uniform<i8:f32, 2.500000e-01:1>>
  %2 = stablehlo.dot_general %0, %1, contracting_dims = [1] x [0] : (tensor<2x3x!quant.uniform<i8:f32, 5.000000e-01>>, tensor<3x2x!quant.uniform<i8:f32, 2.500000e-01:1>>) -> tensor<2x2x!quant.uniform<i32:f32, 1.250000e-01>>
  %3 = stablehlo.bitcast_convert %2 : (tensor<2x2x!quant.uniform<i32:f32, 1.250000e-01>>) -> tensor<2x2xi32>
  check.expect_eq_const %3, dense<[[-14, 4], [18, -4]]> : tensor<2x2xi32>
  %4 = stablehlo.uniform_quantize %2 : (tensor<2x2x!quant.uniform<i32:f32, 1.250000e-01>>) -> tensor<2x2x!quant.uniform<i8:f32, 5.000000e-01>>
  %5 = stablehlo.uniform_dequantize %4 : (tensor<2x2x!quant.uniform<i8:f32, 5.000000e-01>>) -> tensor<2x2xf32>
  stablehlo.custom_call @check.expect_eq(%5, %expected) {has_side_effect = true} : (tensor<2x2xf32>, tensor<2x2xf32>) -> ()
  func.return
}
)";

std::string write_temp(const std::string& name, const std::string& text) {
  fs::path p = fs::temp_directory_path() / ("tessera_check_quant_" + name);
  std::ofstream(p) << text;
  return p.string();
}

TEST(CheckQuantized, AddAndDotGeneralPass) {
  std::string path = write_temp("q.mlir", kQuantizedFile);
  std::ostringstream out;
  CheckCounts counts = check_file(path, out, {});
  EXPECT_EQ(counts.failed, 0) << out.str();
  EXPECT_EQ(counts.passed, 2) << out.str();
  EXPECT_NE(out.str().find(fmt::format("PASS {}:2 @quantized_add (2 checks)\n", path)), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("@quantized_dot_general (2 checks)\n"), std::string::npos) << out.str();
}

// A wrong expected value fails: half-away-from-zero rounding would give 3 for the tie 2.5.
TEST(CheckQuantized, AWrongExpectedValueFails) {
  std::string text = kQuantizedFile;
  const std::string original = "dense<[2, 0, -3, 6]>";
  text.replace(text.find(original), original.size(), "dense<[3, 0, -3, 6]>");
  std::string path = write_temp("q_wrong.mlir", text);
  std::ostringstream out;
  CheckCounts counts = check_file(path, out, {});
  EXPECT_EQ(counts.failed, 1) << out.str();
  EXPECT_EQ(counts.passed, 1) << out.str();
}

// JAX's quantized test files return the i1 of `custom_call @check.eq(expected, actual)` and run no
// other check: `tessera check` counts it as one. The spec's example: [4.0, 15.0] quantized per axis
// with {0.1:-30, 0.5:-20}, requantized with {0.1:-20, 0.2:-30} ([20, 45]) and dequantized.
std::string jax_style(const std::string& expected) {
  const std::string q1 = "tensor<2x!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>>";
  const std::string q2 = "tensor<2x!quant.uniform<i8:f32:0, {0.1:-20,0.2:-30}>>";
  return "module attributes {jax.uses_shape_polymorphism = true} {\n"
         "  func.func @main() -> tensor<i1> {\n"
         "    %cst = stablehlo.constant dense<[4.000000e+00, 1.500000e+01]> : tensor<2xf32>\n"
         "    %cst_0 = stablehlo.constant dense<" + expected + "> : tensor<2xf32>\n"
         "    %0 = stablehlo.uniform_quantize %cst : (tensor<2xf32>) -> " + q1 + "\n"
         "    %1 = stablehlo.uniform_quantize %0 : (" + q1 + ") -> " + q2 + "\n"
         "    %2 = stablehlo.uniform_dequantize %1 : (" + q2 + ") -> tensor<2xf32>\n"
         "    %3 = stablehlo.custom_call @check.eq(%cst_0, %2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<i1>\n"
         "    return %3 : tensor<i1>\n  }\n}\n";
}

TEST(CheckQuantized, JaxStyleCheckEqIsACheck) {
  std::string path = write_temp("jax_eq.mlir", jax_style("[4.000000e+00, 1.500000e+01]"));
  std::ostringstream out;
  CheckCounts counts = check_file(path, out, {});
  EXPECT_EQ(counts.failed, 0) << out.str();
  EXPECT_NE(out.str().find("@main (1 checks)"), std::string::npos) << out.str();

  std::string wrong = write_temp("jax_eq_wrong.mlir", jax_style("[4.000000e+00, 1.550000e+01]"));
  std::ostringstream out2;
  counts = check_file(wrong, out2, {});
  EXPECT_EQ(counts.failed, 1) << out2.str();
  EXPECT_NE(out2.str().find("stablehlo.custom_call @check.eq at " + wrong + ":8: element [1]: 15 (actual) vs 15.5 (expected)"),
            std::string::npos)
      << out2.str();
}

}  // namespace
}  // namespace tessera::tools
