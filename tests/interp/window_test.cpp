// The window ops and sort through text and the reference interpreter: the spec's own examples of
// convolution, reduce_window, select_and_scatter and sort parsed (generic form) and evaluated;
// convolution's pretty form (as JAX and Shardy's tests print it) read, printed and read again with
// the same attributes as the generic form; print -> parse -> print the identity for every op;
// hand-checked feature-group and padding cases; and the shape rules' constraint messages (C1, ...).
#include <gtest/gtest.h>

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

std::vector<int64_t> values(const Literal& l) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < l.num_elements(); ++i) v.push_back(l.get_int(i));
  return v;
}

// print(parse(text)) read again prints the same.
std::string round_trip(const std::string& text) {
  std::string once = stablehlo::print(*stablehlo::parse(text, "t.mlir"));
  std::string twice = stablehlo::print(*stablehlo::parse(once, "printed.mlir"));
  EXPECT_EQ(once, twice);
  return once;
}

// The parse error of `text` (empty when it parses).
using testing::parse_error;

// ---- The spec's examples ----

const std::string kConvolution = R"(
func.func @main() -> tensor<1x2x2x1xi64> {
  %lhs = stablehlo.constant dense<[[[[1], [2], [5], [6]], [[3], [4], [7], [8]], [[10], [11], [14], [15]], [[12], [13], [16], [17]]]]> : tensor<1x4x4x1xi64>
  %rhs = stablehlo.constant dense<1> : tensor<3x3x1x1xi64>
  %result = "stablehlo.convolution"(%lhs, %rhs) {
    window_strides = array<i64: 4, 4>,
    padding = dense<0> : tensor<2x2xi64>,
    lhs_dilation = array<i64: 2, 2>,
    rhs_dilation = array<i64: 1, 1>,
    window_reversal = array<i1: false, false>,
    dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,
    batch_group_count = 1 : i64,
    feature_group_count = 1 : i64,
    precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]
  } : (tensor<1x4x4x1xi64>, tensor<3x3x1x1xi64>) -> tensor<1x2x2x1xi64>
  return %result : tensor<1x2x2x1xi64>
}
)";

const std::string kReduceWindow = R"(
func.func @main() -> tensor<2x2xi64> {
  %input = stablehlo.constant dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi64>
  %init_value = stablehlo.constant dense<0> : tensor<i64>
  %result = "stablehlo.reduce_window"(%input, %init_value) ({
    ^bb0(%arg0: tensor<i64>, %arg1: tensor<i64>):
      %0 = "stablehlo.add"(%arg0, %arg1) : (tensor<i64>, tensor<i64>) -> tensor<i64>
      "stablehlo.return"(%0) : (tensor<i64>) -> ()
  }) {
    window_dimensions = array<i64: 2, 1>,
    window_strides = array<i64: 4, 1>,
    base_dilations = array<i64: 2, 1>,
    window_dilations = array<i64: 3, 1>,
    padding = dense<[[2, 1], [0, 0]]> : tensor<2x2xi64>
  } : (tensor<3x2xi64>, tensor<i64>) -> tensor<2x2xi64>
  return %result : tensor<2x2xi64>
}
)";

const std::string kSelectAndScatter = R"(
func.func @main() -> tensor<4x2xi64> {
  %operand = stablehlo.constant dense<[[1, 5], [2, 5], [3, 6], [4, 4]]> : tensor<4x2xi64>
  %source = stablehlo.constant dense<[[5, 6], [7, 8]]> : tensor<2x2xi64>
  %init_value = stablehlo.constant dense<0> : tensor<i64>
  %result = "stablehlo.select_and_scatter"(%operand, %source, %init_value) ({
    ^bb0(%arg0: tensor<i64>, %arg1: tensor<i64>):
      %0 = "stablehlo.compare"(%arg0, %arg1) {
        comparison_direction = #stablehlo<comparison_direction GE>
      } : (tensor<i64>, tensor<i64>) -> tensor<i1>
      "stablehlo.return"(%0) : (tensor<i1>) -> ()
  }, {
    ^bb0(%arg0: tensor<i64>, %arg1: tensor<i64>):
      %0 = "stablehlo.add"(%arg0, %arg1) : (tensor<i64>, tensor<i64>) -> tensor<i64>
      "stablehlo.return"(%0) : (tensor<i64>) -> ()
  }) {
    window_dimensions = array<i64: 3, 1>,
    window_strides = array<i64: 2, 1>,
    padding = dense<[[0, 1], [0, 0]]> : tensor<2x2xi64>
  } : (tensor<4x2xi64>, tensor<2x2xi64>, tensor<i64>) -> tensor<4x2xi64>
  return %result : tensor<4x2xi64>
}
)";

const std::string kSort = R"(
func.func @main() -> (tensor<2x3xi64>, tensor<2x3xi64>) {
  %input0 = stablehlo.constant dense<[[1, 2, 3], [3, 2, 1]]> : tensor<2x3xi64>
  %input1 = stablehlo.constant dense<[[3, 2, 1], [1, 2, 3]]> : tensor<2x3xi64>
  %result0, %result1 = "stablehlo.sort"(%input0, %input1) ({
    ^bb0(%arg0: tensor<i64>, %arg1: tensor<i64>, %arg2: tensor<i64>, %arg3: tensor<i64>):
      %predicate = "stablehlo.compare"(%arg0, %arg1) {
        comparison_direction = #stablehlo<comparison_direction GT>
      } : (tensor<i64>, tensor<i64>) -> tensor<i1>
      "stablehlo.return"(%predicate) : (tensor<i1>) -> ()
  }) {
    dimension = 0 : i64,
    is_stable = true
  } : (tensor<2x3xi64>, tensor<2x3xi64>) -> (tensor<2x3xi64>, tensor<2x3xi64>)
  return %result0, %result1 : tensor<2x3xi64>, tensor<2x3xi64>
}
)";

TEST(WindowOps, SpecExampleConvolution) {
  EXPECT_EQ(values(run_main(kConvolution)[0]), (std::vector<int64_t>{10, 26, 46, 62}));
}

// A wider written result type (JAX's preferred_element_type): i8 x i8 summed in i32, where four
// products of 100 would wrap in i8, and bf16 x bf16 summed in f32, where 256 + 1 + 1 would round
// back to 256 in bf16.
TEST(WindowOps, ConvolutionSumsInTheWrittenResultType) {
  auto r = run_main(R"(
func.func @main() -> (tensor<1x3x1xi32>, tensor<1x2x1xf32>) {
  %x = stablehlo.constant dense<[[[100], [100], [100], [100], [100]]]> : tensor<1x5x1xi8>
  %k = stablehlo.constant dense<[[[1]], [[1]], [[1]]]> : tensor<3x1x1xi8>
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x5x1xi8>, tensor<3x1x1xi8>) -> tensor<1x3x1xi32>
  %y = stablehlo.constant dense<[[[256.0], [1.0], [1.0], [1.0]]]> : tensor<1x4x1xbf16>
  %k2 = stablehlo.constant dense<1.0> : tensor<3x1x1xbf16>
  %1 = stablehlo.convolution(%y, %k2) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x1xbf16>, tensor<3x1x1xbf16>) -> tensor<1x2x1xf32>
  return %0, %1 : tensor<1x3x1xi32>, tensor<1x2x1xf32>
}
)");
  EXPECT_EQ(values(r[0]), (std::vector<int64_t>{300, 300, 300}));
  EXPECT_EQ(r[1].get_double(0), 258.0);
  EXPECT_EQ(r[1].get_double(1), 3.0);
}

TEST(WindowOps, SpecExampleReduceWindow) {
  EXPECT_EQ(values(run_main(kReduceWindow)[0]), (std::vector<int64_t>{0, 0, 3, 4}));
}

TEST(WindowOps, SpecExampleSelectAndScatter) {
  EXPECT_EQ(values(run_main(kSelectAndScatter)[0]), (std::vector<int64_t>{0, 0, 0, 0, 5, 14, 7, 0}));
}

TEST(WindowOps, SpecExampleSort) {
  auto r = run_main(kSort);
  EXPECT_EQ(values(r[0]), (std::vector<int64_t>{3, 2, 3, 1, 2, 1}));
  EXPECT_EQ(values(r[1]), (std::vector<int64_t>{1, 2, 1, 3, 2, 3}));
}

// ---- Text ----

TEST(WindowOps, PrintParsePrintIsTheIdentity) {
  for (const std::string* text : {&kConvolution, &kReduceWindow, &kSelectAndScatter, &kSort}) round_trip(*text);
  // The ops without a pretty form print generically, regions included.
  std::string rw = round_trip(kReduceWindow);
  EXPECT_NE(rw.find("\"stablehlo.reduce_window\"(%"), std::string::npos) << rw;
  EXPECT_NE(rw.find("padding = dense<[[2, 1], [0, 0]]> : tensor<2x2xi64>"), std::string::npos) << rw;
  EXPECT_NE(round_trip(kSelectAndScatter).find("\"stablehlo.select_and_scatter\"(%"), std::string::npos);
  EXPECT_NE(round_trip(kSort).find("\"stablehlo.sort\"(%"), std::string::npos);
}

TEST(WindowOps, ConvolutionPrintsItsPrettyFormAndReadsBothForms) {
  std::string printed = round_trip(kConvolution);
  EXPECT_NE(printed.find("stablehlo.convolution(%c, %c_0) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], "
                         "window = {stride = [4, 4], pad = [[0, 0], [0, 0]], lhs_dilate = [2, 2], "
                         "rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, "
                         "feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, "
                         "#stablehlo<precision DEFAULT>]} : (tensor<1x4x4x1xi64>, tensor<3x3x1x1xi64>) -> "
                         "tensor<1x2x2x1xi64>"),
            std::string::npos)
      << printed;
  // The pretty form carries the generic form's attributes, and computes the same.
  auto generic = stablehlo::parse(kConvolution, "t.mlir");
  auto pretty = stablehlo::parse(printed, "p.mlir");
  auto conv_of = [](const ir::Module& m) -> const ir::Op& {
    for (const auto& op : m.find_function("main")->body().ops())
      if (op->kind() == ir::OpKind::Convolution) return *op;
    throw std::runtime_error("no convolution");
  };
  EXPECT_EQ(conv_of(*generic).attrs(), conv_of(*pretty).attrs());
  EXPECT_EQ(values(evaluate(*pretty, "main", {})[0]), (std::vector<int64_t>{10, 26, 46, 62}));
  // The raw dimension-number form reads as the compact one.
  std::string raw = kConvolution;
  raw.replace(raw.find("#stablehlo.conv<"), std::string("#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>").size(),
              "#stablehlo.conv<raw input_batch_dimension = 0, input_feature_dimension = 3, "
              "input_spatial_dimensions = [1, 2], kernel_input_feature_dimension = 2, "
              "kernel_output_feature_dimension = 3, kernel_spatial_dimensions = [0, 1], output_batch_dimension = 0, "
              "output_feature_dimension = 3, output_spatial_dimensions = [1, 2]>");
  EXPECT_EQ(conv_of(*stablehlo::parse(raw, "r.mlir")).attrs(), conv_of(*generic).attrs());
}

// Shardy's pretty form: window fields left out when absent; NCHW layouts.
TEST(WindowOps, ConvolutionPrettyFormWithFewWindowFields) {
  std::string text = R"(
func.func @f(%a: tensor<2x3x5x5xf32>, %k: tensor<4x3x3x3xf32>) -> tensor<2x4x2x3xf32> {
  %0 = stablehlo.convolution(%a, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x3x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x2x3xf32>
  return %0 : tensor<2x4x2x3xf32>
}
)";
  std::string printed = round_trip(text);
  EXPECT_NE(printed.find("dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 1], "
                         "pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]}"),
            std::string::npos)
      << printed;
}

// ---- Kernels, hand-checked ----

// Depthwise: two feature groups of one feature each; padding of one on the left.
TEST(WindowOps, ConvolutionFeatureGroupsAndPadding) {
  std::string text = R"(
func.func @main() -> tensor<1x3x2xf32> {
  %x = stablehlo.constant dense<[[[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]]]> : tensor<1x3x2xf32>
  %k = stablehlo.constant dense<[[[1.0, 100.0]], [[2.0, 1000.0]]]> : tensor<2x1x2xf32>
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[1, 0]]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<1x3x2xf32>, tensor<2x1x2xf32>) -> tensor<1x3x2xf32>
  return %0 : tensor<1x3x2xf32>
}
)";
  Literal y = run_main(text)[0];
  // feature 0: y[i] = 1*x[i-1] + 2*x[i]; feature 1: y[i] = 100*x[i-1] + 1000*x[i].
  std::vector<double> want{2, 10000, 1 + 4, 1000 + 20000, 2 + 6, 2000 + 30000};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(y.get_double(i), want[static_cast<size_t>(i)]) << i;
}

// Batch groups: the batch splits in two, each half with its half of the output features.
TEST(WindowOps, ConvolutionBatchGroups) {
  std::string text = R"(
func.func @main() -> tensor<1x1x2xf32> {
  %x = stablehlo.constant dense<[[[1.0]], [[5.0]]]> : tensor<2x1x1xf32>
  %k = stablehlo.constant dense<[[[3.0, 7.0]]]> : tensor<1x1x2xf32>
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {} {batch_group_count = 2 : i64, feature_group_count = 1 : i64} : (tensor<2x1x1xf32>, tensor<1x1x2xf32>) -> tensor<1x1x2xf32>
  return %0 : tensor<1x1x2xf32>
}
)";
  Literal y = run_main(text)[0];
  EXPECT_EQ(y.get_double(0), 3.0);   // batch 0 with output feature 0
  EXPECT_EQ(y.get_double(1), 35.0);  // batch 1 with output feature 1
}

// A max-pool with padding: padding holds the init value (-inf), never the maximum.
TEST(WindowOps, ReduceWindowMaxPoolWithPadding) {
  std::string text = R"(
func.func @main() -> tensor<3xf32> {
  %x = stablehlo.constant dense<[-5.0, -1.0, -7.0, -2.0]> : tensor<4xf32>
  %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%x, %init) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) {window_dimensions = array<i64: 2>, window_strides = array<i64: 2>, padding = dense<[[1, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
)";
  Literal y = run_main(text)[0];
  EXPECT_EQ(y.get_double(0), -5.0);
  EXPECT_EQ(y.get_double(1), -1.0);
  EXPECT_EQ(y.get_double(2), -2.0);
}

// A negative dimension counts from the end; equal keys keep their order.
TEST(WindowOps, SortIsStableAndReadsNegativeDimensions) {
  std::string text = R"(
func.func @main() -> (tensor<5xi32>, tensor<5xi32>) {
  %k = stablehlo.constant dense<[2, 1, 2, 1, 0]> : tensor<5xi32>
  %v = stablehlo.constant dense<[0, 1, 2, 3, 4]> : tensor<5xi32>
  %0:2 = "stablehlo.sort"(%k, %v) <{dimension = -1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>, %c: tensor<i32>, %d: tensor<i32>):
    %p = stablehlo.compare  LT, %a, %b : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }) : (tensor<5xi32>, tensor<5xi32>) -> (tensor<5xi32>, tensor<5xi32>)
  return %0#0, %0#1 : tensor<5xi32>, tensor<5xi32>
}
)";
  auto r = run_main(text);
  EXPECT_EQ(values(r[0]), (std::vector<int64_t>{0, 1, 1, 2, 2}));
  EXPECT_EQ(values(r[1]), (std::vector<int64_t>{4, 1, 3, 0, 2}));
}

// ---- Constraints ----

std::string with(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(WindowOps, ConstraintMessagesNameTheSpecsNumbers) {
  struct Case {
    std::string text, message;
  };
  std::vector<Case> cases = {
      {with(kConvolution, "window_strides = array<i64: 4, 4>", "window_strides = array<i64: 4>"),
       "stablehlo.convolution: window_strides has 1 entries, must have 2 (C2)"},
      {with(kConvolution, "window_strides = array<i64: 4, 4>", "window_strides = array<i64: 4, 0>"),
       "stablehlo.convolution: window_strides = [4, 0] must be positive (C3)"},
      {with(kConvolution, "padding = dense<0> : tensor<2x2xi64>", "padding = dense<0> : tensor<3x2xi64>"),
       "stablehlo.convolution: padding has shape [3, 2], must be [2, 2] (C4)"},
      {with(kConvolution, "lhs_dilation = array<i64: 2, 2>", "lhs_dilation = array<i64: 2, -1>"),
       "stablehlo.convolution: lhs_dilation = [2, -1] must be positive (C6)"},
      {with(kConvolution, "window_reversal = array<i1: false, false>", "window_reversal = array<i1: false>"),
       "stablehlo.convolution: window_reversal has 1 entries, must have 2 (C9)"},
      {with(kConvolution, "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 0, f]"),
       "spatial dimension 0 appears twice"},
      {with(kConvolution, "<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>",
            "<raw input_batch_dimension = 7, input_feature_dimension = 3, input_spatial_dimensions = [1, 2], "
            "kernel_input_feature_dimension = 2, kernel_output_feature_dimension = 3, kernel_spatial_dimensions = [0, 1], "
            "output_batch_dimension = 0, output_feature_dimension = 3, output_spatial_dimensions = [1, 2]>"),
       "stablehlo.convolution: input dimension 7 is out of range for rank 4 (C13)"},
      {with(kConvolution, "<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>",
            "<raw input_batch_dimension = 0, input_feature_dimension = 3, input_spatial_dimensions = [1, 2], "
            "kernel_input_feature_dimension = 2, kernel_output_feature_dimension = 2, kernel_spatial_dimensions = [0, 1], "
            "output_batch_dimension = 0, output_feature_dimension = 3, output_spatial_dimensions = [1, 2]>"),
       "stablehlo.convolution: kernel dimensions [0, 1, 2, 2] repeat 2 (C18)"},
      {with(kConvolution, "feature_group_count = 1 : i64", "feature_group_count = 0 : i64"),
       "stablehlo.convolution: feature_group_count = 0 must be positive (C21)"},
      {with(kConvolution, "batch_group_count = 1 : i64", "batch_group_count = 2 : i64"),
       "stablehlo.convolution: input batch dimension 0 of size 1 is not divisible by batch_group_count = 2 (C10)"},
      {with(with(kConvolution, "tensor<3x3x1x1xi64>", "tensor<3x3x2x1xi64>"), "tensor<3x3x1x1xi64>", "tensor<3x3x2x1xi64>"),
       "stablehlo.convolution: kernel input feature dimension 2 has size 2, must be 1 (input features 1 / "
       "feature_group_count 1) (C14)"},
      // C24 writes exactly 2; StableHLO's verifier takes 0 to 2 ("empty or <= 2 elements").
      {with(kConvolution, "precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]",
            "precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision HIGH>, #stablehlo<precision DEFAULT>]"),
       "stablehlo.convolution: precision_config has 3 entries; it has at most 2, one per operand"},
      {with(kReduceWindow, "window_dimensions = array<i64: 2, 1>", "window_dimensions = array<i64: 2>"),
       "stablehlo.reduce_window: window_dimensions has 1 entries, must have 2 (C4)"},
      {with(kReduceWindow, "window_dimensions = array<i64: 2, 1>", "window_dimensions = array<i64: 2, 0>"),
       "stablehlo.reduce_window: window_dimensions = [2, 0] must be positive (C5)"},
      {with(kReduceWindow, "base_dilations = array<i64: 2, 1>", "base_dilations = array<i64: 0, 1>"),
       "stablehlo.reduce_window: base_dilations = [0, 1] must be positive (C9)"},
      {with(kReduceWindow, "window_dilations = array<i64: 3, 1>", "window_dilations = array<i64: 3, 1, 1>"),
       "stablehlo.reduce_window: window_dilations has 3 entries, must have 2 (C10)"},
      {with(kReduceWindow, "dense<[[2, 1], [0, 0]]> : tensor<2x2xi64>", "dense<[2, 1]> : tensor<2xi64>"),
       "stablehlo.reduce_window: padding has shape (not a 2-D integer tensor), must be [2, 2] (C12)"},
      {with(kSelectAndScatter, "window_strides = array<i64: 2, 1>", "window_strides = array<i64: 1, 1>"),
       "stablehlo.select_and_scatter: source tensor<2x2xi64> must have the shape of the windows, [3, 2] (C2)"},
      {with(kSelectAndScatter, "padding = dense<[[0, 1], [0, 0]]> : tensor<2x2xi64>", "padding = dense<0> : tensor<2x3xi64>"),
       "stablehlo.select_and_scatter: padding has shape [2, 3], must be [2, 2] (C8)"},
      {with(kSort, "dimension = 0 : i64", "dimension = 2 : i64"),
       "stablehlo.sort: dimension = 2 is out of range [-2, 2) (C4)"},
  };
  for (const Case& c : cases) {
    std::string error = parse_error(c.text);
    if (c.message.empty()) {
      EXPECT_EQ(error, "<no error>");
    } else {
      EXPECT_NE(error.find(c.message), std::string::npos) << "got: " << error << "\nwant: " << c.message;
    }
  }
}

}  // namespace
}  // namespace tessera::interp
