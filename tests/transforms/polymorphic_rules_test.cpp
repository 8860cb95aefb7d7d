// Shape rules on '?' operands (ir/shape_polymorphic.cpp): ops whose rules compute sizes from
// their operands' dimensions (reduce_window's windows, pad's edges) read a '?' dimension as
// unknown, not as a size: the program parses with the declared '?' results, a declared result that
// contradicts the static dimensions is still refused (naming the inferred '?' type), and once
// refined for a batch size the program evaluates as its static form does; ops whose rules read
// their result from the declared type (convert, bitcast_convert, broadcast_in_dim, reshape, map) have
// its '?' fixed by the refined operand; and an elementwise op may mix a '?' with a static size (the
// spec's "Dynamism" section).
#include <gtest/gtest.h>

#include "common/error_of.h"
#include "interp/interpreter.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "transforms/refine_shapes.h"

namespace tessera::transforms::testing {
namespace {

using ir::Literal;
using tessera::testing::error_of;

// A 2x2 window sum over a '?'-row operand (the spec's reduce_window: result dimension
// (N - 2) / 1 + 1 for N = 8 is 7, and unknown for the '?'), and a pad that cuts one column from each
// side (negative edge padding; dimension 3 + (-1) + (-1) = 1).
constexpr const char* kWindowAndPad = R"(
func.func @main(%x: tensor<?x8xf32>, %y: tensor<?x3xf32>) -> (tensor<?x7xf32>, tensor<?x1xf32>) {
  %z = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%x, %z) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {window_dimensions = array<i64: 2, 2>} : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x7xf32>
  %1 = stablehlo.pad %y, %z, low = [0, -1], high = [0, -1], interior = [0, 0] : (tensor<?x3xf32>, tensor<f32>) -> tensor<?x1xf32>
  return %0, %1 : tensor<?x7xf32>, tensor<?x1xf32>
}
)";

Literal counting(const ir::Type& t) {
  Literal x(t);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.set_double(i, static_cast<double>(i) - 3);
  return x;
}

TEST(PolymorphicRules, WindowAndPadOnADynamicDimensionParseAndRunAtTwoBatchSizes) {
  auto parsed = stablehlo::parse(kWindowAndPad, "poly.mlir");
  // The declared '?' types are kept: the text prints back as it was written.
  std::string printed = stablehlo::print(*parsed);
  EXPECT_NE(printed.find("-> tensor<?x7xf32>"), std::string::npos) << printed;
  EXPECT_NE(printed.find("-> tensor<?x1xf32>"), std::string::npos) << printed;
  for (int64_t b : {2, 5}) {
    auto m = stablehlo::parse(kWindowAndPad, "poly.mlir");
    std::vector<Literal> args = {counting(ir::f32({b, 8})), counting(ir::f32({b, 3}))};
    std::vector<ir::Type> types = {args[0].type(), args[1].type()};
    refine_shapes(*m, "main", types);
    ir::verify(*m);
    std::vector<Literal> r = interp::evaluate(*m, "main", args);
    ASSERT_EQ(r[0].type(), ir::f32({b - 1, 7}));
    ASSERT_EQ(r[1].type(), ir::f32({b, 1}));
    auto x = [&](int64_t i, int64_t j) { return args[0].get_double(i * 8 + j); };
    for (int64_t i = 0; i + 1 < b; ++i)
      for (int64_t j = 0; j < 7; ++j)
        EXPECT_EQ(r[0].get_double(i * 7 + j), x(i, j) + x(i, j + 1) + x(i + 1, j) + x(i + 1, j + 1));
    for (int64_t i = 0; i < b; ++i) EXPECT_EQ(r[1].get_double(i), args[1].get_double(i * 3 + 1));
  }
}

TEST(PolymorphicRules, ADeclaredTypeThatContradictsTheStaticDimensionsIsRefused) {
  std::string text = kWindowAndPad;
  text.replace(text.find("-> tensor<?x7xf32>\n"), 18, "-> tensor<?x6xf32>");
  std::string e = error_of([&] { stablehlo::parse(text, "poly.mlir"); });
  EXPECT_NE(e.find("stablehlo.reduce_window: result types (tensor<?x6xf32>) do not match the operands, which give "
                   "(tensor<?x7xf32>)"),
            std::string::npos)
      << e;
  // A rank or element type that differs is refused as before.
  std::string rank = kWindowAndPad;
  rank.replace(rank.find("-> tensor<?x1xf32>\n"), 18, "-> tensor<?xf32>");
  e = error_of([&] { stablehlo::parse(rank, "poly.mlir"); });
  EXPECT_NE(e.find("stablehlo.pad: result types (tensor<?xf32>) do not match the operands"), std::string::npos) << e;
}

// Declared '?' results of the ops that take their result type from the text.
constexpr const char* kDeclaredResults = R"(
func.func @main(%x: tensor<?x4xf32>, %y: tensor<?x1xf32>) -> (tensor<?x4x2xi16>, tensor<?x4xf64>, tensor<?x3xf32>, tensor<?x2x2xf32>, tensor<?x4xf32>) {
  %0 = stablehlo.bitcast_convert %x : (tensor<?x4xf32>) -> tensor<?x4x2xi16>
  %1 = stablehlo.convert %x : (tensor<?x4xf32>) -> tensor<?x4xf64>
  %2 = stablehlo.broadcast_in_dim %y, dims = [0, 1] : (tensor<?x1xf32>) -> tensor<?x3xf32>
  %3 = stablehlo.reshape %x : (tensor<?x4xf32>) -> tensor<?x2x2xf32>
  %4 = "stablehlo.map"(%x, %x) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {dimensions = array<i64: 0, 1>} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0, %1, %2, %3, %4 : tensor<?x4x2xi16>, tensor<?x4xf64>, tensor<?x3xf32>, tensor<?x2x2xf32>, tensor<?x4xf32>
}
)";

TEST(PolymorphicRules, ResultsReadFromTheTextAreFixedByTheRefinedOperand) {
  for (int64_t b : {2, 3}) {
    auto m = stablehlo::parse(kDeclaredResults, "declared.mlir");
    std::vector<Literal> args = {counting(ir::f32({b, 4})), counting(ir::f32({b, 1}))};
    std::vector<ir::Type> types = {args[0].type(), args[1].type()};
    refine_shapes(*m, "main", types);
    ir::verify(*m);
    EXPECT_EQ(m->find_function("main")->result_types,
              (std::vector<ir::Type>{ir::Type(ir::ElementType::i16, {b, 4, 2}), ir::f64({b, 4}), ir::f32({b, 3}),
                                     ir::f32({b, 2, 2}), ir::f32({b, 4})}));
    std::vector<Literal> r = interp::evaluate(*m, "main", args);
    for (int64_t i = 0; i < b; ++i)
      for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(r[2].get_double(i * 3 + j), args[1].get_double(i));
    for (int64_t k = 0; k < 4 * b; ++k) {
      EXPECT_EQ(r[1].get_double(k), args[0].get_double(k));
      EXPECT_EQ(r[3].get_double(k), args[0].get_double(k));
      EXPECT_EQ(r[4].get_double(k), 2 * args[0].get_double(k));
    }
  }
}

TEST(PolymorphicRules, AnElementwiseOpMayMixADynamicAndAStaticSize) {
  constexpr const char* kMixed = R"(
func.func @main(%x: tensor<?x4xf32>, %y: tensor<3x4xf32>) -> (tensor<?x4xf32>, tensor<3x4xi1>) {
  %0 = stablehlo.add %x, %y : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
  %1 = stablehlo.compare  LT, %y, %x,  FLOAT : (tensor<3x4xf32>, tensor<?x4xf32>) -> tensor<3x4xi1>
  return %0, %1 : tensor<?x4xf32>, tensor<3x4xi1>
}
)";
  auto m = stablehlo::parse(kMixed, "mixed.mlir");
  std::vector<Literal> args = {counting(ir::f32({3, 4})), counting(ir::f32({3, 4}))};
  std::vector<ir::Type> types = {args[0].type(), args[1].type()};
  refine_shapes(*m, "main", types);
  std::vector<Literal> r = interp::evaluate(*m, "main", args);
  ASSERT_EQ(r[0].type(), ir::f32({3, 4}));
  for (int64_t k = 0; k < 12; ++k) {
    EXPECT_EQ(r[0].get_double(k), 2 * args[0].get_double(k));
    EXPECT_EQ(r[1].get_int(k), 0);
  }
  // The static size fixes the '?': a declared result that contradicts it is refused.
  std::string wrong = kMixed;
  wrong.replace(wrong.find("-> tensor<?x4xf32>\n  %1"), 18, "-> tensor<5x4xf32>");
  std::string e = error_of([&] { stablehlo::parse(wrong, "mixed.mlir"); });
  EXPECT_NE(e.find("stablehlo.add: result types (tensor<5x4xf32>) do not match the operands, which give "
                   "(tensor<3x4xf32>)"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace tessera::transforms::testing
