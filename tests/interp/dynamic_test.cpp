// get_dimension_size and the dynamic ops through text and the reference interpreter: the spec's
// examples (each runs as its static op with the shape operands' values); the pretty forms that
// stablehlo-opt prints read, print back and read again, and the generic forms read to the same
// ops; '?' dimensions and #stablehlo.bounds in types; and the shape rules' constraint messages.
#include <gtest/gtest.h>

#include "common/error_of.h"
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

void expect_ints(const Literal& got, const ir::Type& type, const std::vector<int64_t>& want) {
  ASSERT_EQ(got.type(), type);
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got.get_int(static_cast<int64_t>(i)), want[i]) << "element " << i;
}

std::string parse_error(const std::string& text) {
  return testing::error_of([&] { stablehlo::parse(text, "t.mlir"); });
}

std::string round_trip(const std::string& text) {
  std::string once = stablehlo::print(*stablehlo::parse(text, "t.mlir"));
  EXPECT_EQ(stablehlo::print(*stablehlo::parse(once, "printed.mlir")), once);
  return once;
}

TEST(GetDimensionSize, SpecExample) {
  auto r = run_main(R"(
func.func @main() -> tensor<i32> {
  %operand = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %result = "stablehlo.get_dimension_size"(%operand) {dimension = 1 : i64} : (tensor<2x3xi64>) -> tensor<i32>
  return %result : tensor<i32>
}
)");
  expect_ints(r[0], ir::i32({}), {3});
}

TEST(DynamicBroadcastInDim, SpecExample) {
  auto r = run_main(R"(
func.func @main() -> tensor<2x3x2xi64> {
  %operand = stablehlo.constant dense<[[1, 2, 3]]> : tensor<1x3xi64>
  %output_dimensions = stablehlo.constant dense<[2, 3, 2]> : tensor<3xi64>
  %result = "stablehlo.dynamic_broadcast_in_dim"(%operand, %output_dimensions) {
    broadcast_dimensions = array<i64: 2, 1>,
    known_expanding_dimensions = array<i64: 0>,
    known_nonexpanding_dimensions = array<i64: 1>
  } : (tensor<1x3xi64>, tensor<3xi64>) -> tensor<2x3x2xi64>
  return %result : tensor<2x3x2xi64>
}
)");
  expect_ints(r[0], ir::i64({2, 3, 2}), {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
}

TEST(DynamicIota, SpecExample) {
  auto r = run_main(R"(
func.func @main() -> tensor<4x5xi64> {
  %output_shape = stablehlo.constant dense<[4, 5]> : tensor<2xi64>
  %result = "stablehlo.dynamic_iota"(%output_shape) {iota_dimension = 0 : i64} : (tensor<2xi64>) -> tensor<4x5xi64>
  return %result : tensor<4x5xi64>
}
)");
  expect_ints(r[0], ir::i64({4, 5}), {0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3});
}

TEST(DynamicPad, SpecExample) {
  auto r = run_main(R"(
func.func @main() -> tensor<5x9xi64> {
  %operand = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %padding_value = stablehlo.constant dense<0> : tensor<i64>
  %edge_padding_low = stablehlo.constant dense<[0, 1]> : tensor<2xi64>
  %edge_padding_high = stablehlo.constant dense<[2, 1]> : tensor<2xi64>
  %interior_padding = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %result = "stablehlo.dynamic_pad"(%operand, %padding_value, %edge_padding_low, %edge_padding_high, %interior_padding) : (tensor<2x3xi64>, tensor<i64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<5x9xi64>
  return %result : tensor<5x9xi64>
}
)");
  expect_ints(r[0], ir::i64({5, 9}),
              {0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 5, 0, 0, 6, 0,
               0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
}

TEST(DynamicReshape, SpecExample) {
  auto r = run_main(R"(
func.func @main() -> tensor<3x2xi64> {
  %operand = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %output_shape = stablehlo.constant dense<[3, 2]> : tensor<2xi64>
  %result = "stablehlo.dynamic_reshape"(%operand, %output_shape) : (tensor<2x3xi64>, tensor<2xi64>) -> tensor<3x2xi64>
  return %result : tensor<3x2xi64>
}
)");
  expect_ints(r[0], ir::i64({3, 2}), {1, 2, 3, 4, 5, 6});
}

// Not in the spec (the dialect has it; JAX emits it): slice with start, limit and strides as values.
TEST(RealDynamicSlice, AsSliceWithTheOperandValues) {
  auto r = run_main(R"(
func.func @main() -> tensor<2x2xi64> {
  %operand = stablehlo.constant dense<[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]> : tensor<3x4xi64>
  %start = stablehlo.constant dense<[1, 0]> : tensor<2xi64>
  %limit = stablehlo.constant dense<[3, 4]> : tensor<2xi64>
  %strides = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %result = stablehlo.real_dynamic_slice %operand, %start, %limit, %strides : (tensor<3x4xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x2xi64>
  return %result : tensor<2x2xi64>
}
)");
  expect_ints(r[0], ir::i64({2, 2}), {4, 6, 8, 10});
}

TEST(DynamicGather, SpecExample) {
  auto r = run_main(R"(
func.func @main() -> tensor<2x3x2x2xi64> {
  %operand = stablehlo.constant dense<[[[1, 2], [3, 4], [5, 6], [7, 8]], [[9, 10], [11, 12], [13, 14], [15, 16]], [[17, 18], [19, 20], [21, 22], [23, 24]]]> : tensor<3x4x2xi64>
  %start_indices = stablehlo.constant dense<[[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 2]]]> : tensor<2x3x2xi64>
  %slize_sizes = stablehlo.constant dense<[1, 2, 2]> : tensor<3xi64>
  %result = "stablehlo.dynamic_gather"(%operand, %start_indices, %slize_sizes) {
    dimension_numbers = #stablehlo.gather<
      offset_dims = [2, 3],
      collapsed_slice_dims = [0],
      start_index_map = [1, 0],
      index_vector_dim = 2>,
    indices_are_sorted = false
  } : (tensor<3x4x2xi64>, tensor<2x3x2xi64>, tensor<3xi64>) -> tensor<2x3x2x2xi64>
  return %result : tensor<2x3x2x2xi64>
}
)");
  expect_ints(r[0], ir::i64({2, 3, 2, 2}), {1, 2, 3, 4, 3, 4, 5, 6, 13, 14, 15, 16,
                                            9, 10, 11, 12, 11, 12, 13, 14, 17, 18, 19, 20});
}

// The spec's example, with the lhs's spatial dimensions [1, 2] (the spec writes [0, 1], which
// would make dimension 0 both batch and spatial).
TEST(DynamicConv, SpecExample) {
  auto r = run_main(R"(
func.func @main() -> tensor<1x2x2x1xi64> {
  %lhs = stablehlo.constant dense<[[[[1], [2], [5], [6]], [[3], [4], [7], [8]], [[10], [11], [14], [15]], [[12], [13], [16], [17]]]]> : tensor<1x4x4x1xi64>
  %rhs = stablehlo.constant dense<1> : tensor<3x3x1x1xi64>
  %padding = stablehlo.constant dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>
  %result = "stablehlo.dynamic_conv"(%lhs, %rhs, %padding) {
    window_strides = array<i64: 4, 4>,
    lhs_dilation = array<i64: 2, 2>,
    rhs_dilation = array<i64: 1, 1>,
    window_reversal = array<i1: false, false>,
    dimension_numbers = #stablehlo.conv<raw
      input_batch_dimension = 0,
      input_feature_dimension = 3,
      input_spatial_dimensions = [1, 2],
      kernel_input_feature_dimension = 2,
      kernel_output_feature_dimension = 3,
      kernel_spatial_dimensions = [0, 1],
      output_batch_dimension = 0,
      output_feature_dimension = 3,
      output_spatial_dimensions = [1, 2]
    >,
    feature_group_count = 1 : i64,
    batch_group_count = 1 : i64,
    precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
  } : (tensor<1x4x4x1xi64>, tensor<3x3x1x1xi64>, tensor<2x2xi64>) -> tensor<1x2x2x1xi64>
  return %result : tensor<1x2x2x1xi64>
}
)");
  expect_ints(r[0], ir::i64({1, 2, 2, 1}), {1, 5, 10, 14});
}

// dynamic_conv in convolution's pretty form, its padding the third operand (as stablehlo-opt
// prints it): read, run, printed in the same form and read back. With zero padding the strided
// windows land on the 2x2 blocks' first elements, each summing a 3x3 window of the dilated lhs:
// 1+2+3+4, 5+6+7+8, 10+11+12+13, 14+15+16+17.
TEST(DynamicConv, PrettyFormRoundTrips) {
  const std::string text = R"(func.func @main() -> tensor<1x2x2x1xi64> {
  %c = stablehlo.constant dense<[[[[1], [2], [5], [6]], [[3], [4], [7], [8]], [[10], [11], [14], [15]], [[12], [13], [16], [17]]]]> : tensor<1x4x4x1xi64>
  %c_0 = stablehlo.constant dense<1> : tensor<3x3x1x1xi64>
  %c_1 = stablehlo.constant dense<0> : tensor<2x2xi64>
  %0 = stablehlo.dynamic_conv(%c, %c_0, %c_1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [4, 4], lhs_dilate = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x4x1xi64>, tensor<3x3x1x1xi64>, tensor<2x2xi64>) -> tensor<1x2x2x1xi64>
  return %0 : tensor<1x2x2x1xi64>
}
)";
  expect_ints(run_main(text)[0], ir::i64({1, 2, 2, 1}), {10, 26, 46, 62});
  std::string printed = stablehlo::print(*stablehlo::parse(text, "t.mlir"));
  EXPECT_NE(printed.find(text.substr(text.find("%0 = "), text.find("\n  return") - text.find("%0 = "))), std::string::npos)
      << printed;
  EXPECT_EQ(stablehlo::print(*stablehlo::parse(printed, "printed.mlir")), printed);
}

// A shape operand whose value contradicts the declared result: the op names itself.
TEST(DynamicIota, AShapeValueThatContradictsTheResultTypeIsNamed) {
  std::string e = testing::error_of([] {
    run_main(R"(
func.func @main() -> tensor<4x5xi64> {
  %output_shape = stablehlo.constant dense<[4, 6]> : tensor<2xi64>
  %result = stablehlo.dynamic_iota %output_shape, dim = 0 : (tensor<2xi64>) -> tensor<4x5xi64>
  return %result : tensor<4x5xi64>
}
)");
  });
  EXPECT_NE(e.find("stablehlo.dynamic_iota: the shape operand's value [4, 6] contradicts the declared result "
                   "tensor<4x5xi64> in dimension 1"),
            std::string::npos)
      << e;
}

TEST(DynamicReshape, SizesThatDoNotMatchAreTheStaticRulesMessage) {
  std::string e = testing::error_of([] {
    run_main(R"(
func.func @main() -> tensor<?x2xi64> {
  %operand = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %output_shape = stablehlo.constant dense<[2, 2]> : tensor<2xi64>
  %result = stablehlo.dynamic_reshape %operand, %output_shape : (tensor<2x3xi64>, tensor<2xi64>) -> tensor<?x2xi64>
  return %result : tensor<?x2xi64>
}
)");
  });
  EXPECT_NE(e.find("stablehlo.dynamic_reshape with its shape operands' values: stablehlo.reshape: cannot reshape "
                   "tensor<2x3xi64> (6 elements) to tensor<2x2xi64> (4 elements)"),
            std::string::npos)
      << e;
}

// The pretty forms as stablehlo-opt prints them, with '?' and bounded types.
TEST(DynamicOps, PrettyFormsPrintParseAndPrintAgain) {
  std::string text = R"(module {
  func.func public @main(%arg0: tensor<?x4xf32>, %arg1: tensor<?xi64, #stablehlo.bounds<8>>, %arg2: tensor<2xi64>, %arg3: tensor<i32>) -> (tensor<i32>, tensor<?x?xi64>, tensor<?x4xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
    %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
    %1 = stablehlo.dynamic_iota %arg2, dim = 1 : (tensor<2xi64>) -> tensor<?x?xi64>
    %2 = stablehlo.dynamic_broadcast_in_dim %arg0, %arg2, dims = [0, 1] {known_expanding_dimensions = array<i64: 0>, known_nonexpanding_dimensions = array<i64: 1>} : (tensor<?x4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
    %3 = stablehlo.dynamic_reshape %arg0, %arg2 : (tensor<?x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.dynamic_pad %arg0, %cst, %arg2, %arg2, %arg2 : (tensor<?x4xf32>, tensor<f32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x?xf32>
    %5 = stablehlo.real_dynamic_slice %arg0, %arg2, %arg2, %arg2 : (tensor<?x4xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x?xf32>
    return %0, %1, %2, %3, %4, %5 : tensor<i32>, tensor<?x?xi64>, tensor<?x4xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
  }
}
)";
  EXPECT_EQ(round_trip(text), text);
  // The generic forms read to the same ops.
  std::string generic = R"(
func.func @main(%arg0: tensor<?x4xf32>, %arg2: tensor<2xi64>) -> (tensor<i32>, tensor<?x?xi64>, tensor<?x4xf32>) {
  %0 = "stablehlo.get_dimension_size"(%arg0) {dimension = 0 : i64} : (tensor<?x4xf32>) -> tensor<i32>
  %1 = "stablehlo.dynamic_iota"(%arg2) {iota_dimension = 1 : i64} : (tensor<2xi64>) -> tensor<?x?xi64>
  %2 = "stablehlo.dynamic_broadcast_in_dim"(%arg0, %arg2) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<?x4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  return %0, %1, %2 : tensor<i32>, tensor<?x?xi64>, tensor<?x4xf32>
}
)";
  std::string printed = round_trip(generic);
  EXPECT_NE(printed.find("stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("stablehlo.dynamic_iota %arg1, dim = 1 : (tensor<2xi64>) -> tensor<?x?xi64>"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("stablehlo.dynamic_broadcast_in_dim %arg0, %arg1, dims = [0, 1] : "), std::string::npos)
      << printed;
}

TEST(DynamicTypes, QuestionMarksAndBoundsReadAndPrint) {
  std::string text = R"(module {
  func.func public @main(%arg0: tensor<?x?x3xf32, #stablehlo.bounds<16, ?, ?>>, %arg1: tensor<?xi1>) -> tensor<?x?x3xf32, #stablehlo.bounds<16, ?, ?>> {
    return %arg0 : tensor<?x?x3xf32, #stablehlo.bounds<16, ?, ?>>
  }
}
)";
  EXPECT_EQ(round_trip(text), text);
  auto m = stablehlo::parse(text, "t.mlir");
  const ir::Type& t = m->functions[0]->parameter(0)->type();
  EXPECT_EQ(t.shape, (std::vector<int64_t>{ir::kDynamic, ir::kDynamic, 3}));
  EXPECT_EQ(t.bounds, (std::vector<int64_t>{16, ir::kDynamic, ir::kDynamic}));
  EXPECT_FALSE(t.is_static());
}

TEST(DynamicTypes, BadBoundsAreNamed) {
  auto fn = [](const std::string& type) {
    return "func.func @main(%a: " + type + ") -> " + type + " {\n  return %a : " + type + "\n}\n";
  };
  std::string e = parse_error(fn("tensor<?x3xf32, #stablehlo.bounds<4>>"));
  EXPECT_NE(e.find("#stablehlo.bounds has 1 entries for a tensor of rank 2"), std::string::npos) << e;
  e = parse_error(fn("tensor<?x3xf32, #stablehlo.bounds<4, 5>>"));
  EXPECT_NE(e.find("#stablehlo.bounds: dimension 1 is static (3), so its bound must be '?'"), std::string::npos) << e;
  e = parse_error(fn("tensor<?x3xf32, #foo<1>>"));
  EXPECT_NE(e.find("the only tensor encoding read is #stablehlo.bounds<...>"), std::string::npos) << e;
  e = parse_error(fn("tensor<?3xf32>"));
  EXPECT_NE(e.find("expected 'x' after a dimension"), std::string::npos) << e;
  e = parse_error("func.func @main() -> tensor<?xf32> {\n  %0 = stablehlo.constant dense<1.0> : tensor<?xf32>\n"
                  "  return %0 : tensor<?xf32>\n}\n");
  EXPECT_NE(e.find("t.mlir:2:40: a dense literal needs a static type, not tensor<?xf32>"), std::string::npos) << e;
}

// Before refinement a static op may see '?' sizes: reshape checks its element types only.
TEST(DynamicTypes, AReshapeOfUnknownSizesChecksElementTypesOnly) {
  EXPECT_EQ(parse_error("func.func @main(%a: tensor<?x4xf32>) -> tensor<?xf32> {\n"
                        "  %0 = stablehlo.reshape %a : (tensor<?x4xf32>) -> tensor<?xf32>\n  return %0 : tensor<?xf32>\n}\n"),
            "<no error>");
  std::string e = parse_error("func.func @main(%a: tensor<?x4xf32>) -> tensor<?xi32> {\n"
                              "  %0 = stablehlo.reshape %a : (tensor<?x4xf32>) -> tensor<?xi32>\n  return %0 : tensor<?xi32>\n}\n");
  EXPECT_NE(e.find("stablehlo.reshape: cannot reshape tensor<?x4xf32> to tensor<?xi32>: the element types differ"),
            std::string::npos)
      << e;
}

// The spec's constraints, each message with its number.
TEST(DynamicOps, ConstraintMessages) {
  auto one_op = [](const std::string& args, const std::string& op, const std::string& result) {
    return "func.func @main(" + args + ") -> " + result + " {\n  %0 = " + op + "\n  return %0 : " + result + "\n}\n";
  };
  struct Case {
    std::string args, op, result, want;
  };
  std::vector<Case> cases = {
      {"%a: tensor<2x3xf32>", "stablehlo.get_dimension_size %a, dim = 2 : (tensor<2x3xf32>) -> tensor<i32>",
       "tensor<i32>", "stablehlo.get_dimension_size: dimension 2 is out of range for tensor<2x3xf32> (C1)"},
      {"%a: tensor<3xf32>, %s: tensor<2xi64>",
       "stablehlo.dynamic_broadcast_in_dim %a, %s, dims = [0] : (tensor<3xf32>, tensor<2xi64>) -> tensor<?x?xf64>",
       "tensor<?x?xf64>", "stablehlo.dynamic_broadcast_in_dim: result tensor<?x?xf64> and operand tensor<3xf32> have different element types (C1)"},
      {"%a: tensor<3xf32>, %s: tensor<2xi64>",
       "stablehlo.dynamic_broadcast_in_dim %a, %s, dims = [0, 1] : (tensor<3xf32>, tensor<2xi64>) -> tensor<?x?xf32>",
       "tensor<?x?xf32>", "broadcast_dimensions has 2 entries for operand rank 1 (C2)"},
      {"%a: tensor<3xf32>, %s: tensor<2xi64>",
       "stablehlo.dynamic_broadcast_in_dim %a, %s, dims = [2] : (tensor<3xf32>, tensor<2xi64>) -> tensor<?x?xf32>",
       "tensor<?x?xf32>", "broadcast_dimensions has 2, out of range for result rank 2 (C3)"},
      {"%a: tensor<3xf32>, %s: tensor<2xi64>",
       "stablehlo.dynamic_broadcast_in_dim %a, %s, dims = [1] : (tensor<3xf32>, tensor<2xi64>) -> tensor<?x4xf32>",
       "tensor<?x4xf32>", "operand dimension 0 (size 3) cannot broadcast to result dimension 1 (size 4) (C5)"},
      {"%a: tensor<3xf32>, %s: tensor<3xi64>",
       "stablehlo.dynamic_broadcast_in_dim %a, %s, dims = [1] : (tensor<3xf32>, tensor<3xi64>) -> tensor<?x3xf32>",
       "tensor<?x3xf32>", "output_dimensions has 3 values, must have 2 (the result's rank) (C7)"},
      {"%a: tensor<3xf32>, %s: tensor<2xi64>",
       "stablehlo.dynamic_broadcast_in_dim %a, %s, dims = [1] {known_expanding_dimensions = array<i64: 0>, "
       "known_nonexpanding_dimensions = array<i64: 0>} : (tensor<3xf32>, tensor<2xi64>) -> tensor<?x3xf32>",
       "tensor<?x3xf32>", "dimension 0 is repeated in known_nonexpanding_dimensions (C8)"},
      {"%a: tensor<3xf32>, %s: tensor<2xi64>",
       "stablehlo.dynamic_broadcast_in_dim %a, %s, dims = [1] {known_expanding_dimensions = array<i64: 1>} : "
       "(tensor<3xf32>, tensor<2xi64>) -> tensor<?x3xf32>",
       "tensor<?x3xf32>", "known_expanding_dimensions has dimension 1, out of range for rank 1 (C9)"},
      {"%s: tensor<2xi64>", "stablehlo.dynamic_iota %s, dim = 2 : (tensor<2xi64>) -> tensor<?x?xi64>",
       "tensor<?x?xi64>", "stablehlo.dynamic_iota: iota_dimension 2 is out of range for 2 dimensions (C1)"},
      {"%s: tensor<2xi64>", "stablehlo.dynamic_iota %s, dim = 0 : (tensor<2xi64>) -> tensor<?xi64>",
       "tensor<?xi64>", "output_shape has 2 values, must have 1 (the result's rank) (C2)"},
      {"%a: tensor<2x3xf32>, %s: tensor<2xi64>",
       "stablehlo.dynamic_reshape %a, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<?x3xi32>",
       "tensor<?x3xi32>", "have different element types (C1)"},
      {"%a: tensor<2x3xf32>, %s: tensor<2xi64>",
       "stablehlo.dynamic_reshape %a, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<5x1xf32>",
       "tensor<5x1xf32>", "operand tensor<2x3xf32> has 6 elements, result tensor<5x1xf32> has 5 (C2)"},
      {"%a: tensor<2x3xf32>, %s: tensor<2xf32>",
       "stablehlo.dynamic_reshape %a, %s : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<?x3xf32>",
       "tensor<?x3xf32>", "output_shape has type tensor<2xf32>, must be a 1-D integer tensor"},
      {"%a: tensor<2xf32>, %v: tensor<i32>, %s: tensor<1xi64>",
       "stablehlo.dynamic_pad %a, %v, %s, %s, %s : (tensor<2xf32>, tensor<i32>, tensor<1xi64>, tensor<1xi64>, "
       "tensor<1xi64>) -> tensor<?xf32>",
       "tensor<?xf32>", "must have one element type (C1)"},
      {"%a: tensor<2xf32>, %v: tensor<f32>, %s: tensor<2xi64>",
       "stablehlo.dynamic_pad %a, %v, %s, %s, %s : (tensor<2xf32>, tensor<f32>, tensor<2xi64>, tensor<2xi64>, "
       "tensor<2xi64>) -> tensor<?xf32>",
       "tensor<?xf32>", "edge_padding_low has 2 values, must have 1 (the operand's rank) (C2)"},
      {"%a: tensor<3x3xf32>, %s: tensor<2xi64>",
       "\"stablehlo.dynamic_gather\"(%a, %s, %s) {dimension_numbers = #stablehlo.gather<offset_dims = [0], "
       "collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>} : (tensor<3x3xf32>, tensor<2xi64>, "
       "tensor<2xi64>) -> tensor<?xi32>",
       "tensor<?xi32>", "have different element types (C14)"},
      {"%a: tensor<1x4x4x1xf32>, %k: tensor<3x3x1x1xf32>, %p: tensor<3x2xi64>",
       "\"stablehlo.dynamic_conv\"(%a, %k, %p) {dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, "
       "feature_group_count = 1 : i64, batch_group_count = 1 : i64} : (tensor<1x4x4x1xf32>, tensor<3x3x1x1xf32>, "
       "tensor<3x2xi64>) -> tensor<1x?x?x1xf32>",
       "tensor<1x?x?x1xf32>", "padding has type tensor<3x2xi64>, must be an integer tensor of shape [2, 2] (C4)"},
  };
  for (const Case& c : cases) {
    std::string e = parse_error(one_op(c.args, c.op, c.result));
    EXPECT_NE(e.find(c.want), std::string::npos) << c.op << "\n" << e;
  }
}

}  // namespace
}  // namespace tessera::interp
