// stablehlo.batch_norm_inference, batch_norm_training and batch_norm_grad through text and the
// reference interpreter: the spec's three examples; training and grad on a 3x4x2 input with the
// features in the middle dimension against NumPy (x.mean/x.var over the other axes, and the
// gradient of normalization written out by hand: scale/σ/N·(N·dy - Σdy - x̂·Σ(dy·x̂)), which is not
// the spec's expansion); the generic form (epsilon printed as the f32 it is) read, printed and read
// back; and the shape rules' constraint messages.
#include <gtest/gtest.h>

#include <cmath>

#include "common/parse_error.h"
#include "interp/interpreter.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "support/error.h"

namespace tessera::interp {
namespace {

using ir::Literal;

constexpr double kTol = 1e-12;  // f64 results of magnitude <= 3 against NumPy's

std::vector<Literal> run_main(const std::string& text) {
  auto m = stablehlo::parse(text, "t.mlir");
  return evaluate(*m, "main", {});
}

void expect_values(const Literal& got, const std::vector<double>& want, double tol = kTol) {
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(std::abs(got.get_double(static_cast<int64_t>(i)) - want[i]) <= tol)
        << "element " << i << ": " << got.get_double(static_cast<int64_t>(i)) << " vs " << want[i];
}

using testing::parse_error;

constexpr const char* kSpecOperands = R"(
  %operand = stablehlo.constant dense<[[[1.0, 2.0], [3.0, 4.0]], [[3.0, 4.0], [1.0, 2.0]]]> : tensor<2x2x2xf64>
  %scale = stablehlo.constant dense<[1.0, 1.0]> : tensor<2xf64>
  %offset = stablehlo.constant dense<[1.0, 1.0]> : tensor<2xf64>
  %mean = stablehlo.constant dense<[2.0, 3.0]> : tensor<2xf64>
  %variance = stablehlo.constant dense<[1.0, 1.0]> : tensor<2xf64>
  %grad_output = stablehlo.constant dense<0.1> : tensor<2x2x2xf64>
)";

TEST(BatchNorm, SpecExamples) {
  auto r = run_main(std::string(R"(
func.func @main() -> (tensor<2x2x2xf64>, tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2x2x2xf64>,
                      tensor<2xf64>, tensor<2xf64>) {)") + kSpecOperands + R"(
  %result = "stablehlo.batch_norm_inference"(%operand, %scale, %offset, %mean, %variance) {
    epsilon = 0.0 : f32,
    feature_index = 2 : i64
  } : (tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>) -> tensor<2x2x2xf64>
  %output, %batch_mean, %batch_var = "stablehlo.batch_norm_training"(%operand, %scale, %offset) {
    epsilon = 0.0 : f32,
    feature_index = 2 : i64
  } : (tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>) -> (tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>)
  %grad_operand, %grad_scale, %grad_offset = "stablehlo.batch_norm_grad"(%operand, %scale, %mean, %variance, %grad_output) {
    epsilon = 0.0 : f32,
    feature_index = 2 : i64
  } : (tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2x2x2xf64>) -> (tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>)
  return %result, %output, %batch_mean, %batch_var, %grad_operand, %grad_scale, %grad_offset
    : tensor<2x2x2xf64>, tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>
}
)");
  ASSERT_EQ(r.size(), 7u);
  expect_values(r[0], {0, 0, 2, 2, 2, 2, 0, 0}, 0);
  expect_values(r[1], {0, 0, 2, 2, 2, 2, 0, 0}, 0);
  expect_values(r[2], {2, 3}, 0);
  expect_values(r[3], {1, 1}, 0);
  expect_values(r[4], {0, 0, 0, 0, 0, 0, 0, 0});
  expect_values(r[5], {0, 0});
  expect_values(r[6], {0.4, 0.4});
}

// x (3x4x2, features at 1), scale, offset, epsilon = f32(1e-3), dy as written below.
const std::string kNumpyProgram = R"(
func.func @main() -> (tensor<3x4x2xf64>, tensor<4xf64>, tensor<4xf64>, tensor<3x4x2xf64>, tensor<4xf64>, tensor<4xf64>) {
  %x = stablehlo.constant dense<[[[0.5, -1.25], [2.0, 0.75], [-0.5, 1.5], [3.0, -2.0]],
                                 [[1.0, 0.25], [-1.5, 2.5], [0.0, -0.75], [1.75, 1.0]],
                                 [[-2.0, 0.5], [0.25, -1.0], [1.25, 2.0], [-0.25, 0.0]]]> : tensor<3x4x2xf64>
  %scale = stablehlo.constant dense<[1.5, -0.5, 2.0, 0.75]> : tensor<4xf64>
  %offset = stablehlo.constant dense<[0.1, 0.2, -0.3, 0.4]> : tensor<4xf64>
  %dy = stablehlo.constant dense<[[[-0.5, -0.25], [0.0, 0.25], [0.5, -0.5], [-0.25, 0.0]],
                                  [[0.25, 0.5], [-0.5, -0.25], [0.0, 0.25], [0.5, -0.5]],
                                  [[-0.25, 0.0], [0.25, 0.5], [-0.5, -0.25], [0.0, 0.25]]]> : tensor<3x4x2xf64>
  %out, %mean, %var = "stablehlo.batch_norm_training"(%x, %scale, %offset) {epsilon = 1.000000e-03 : f32, feature_index = 1 : i64}
    : (tensor<3x4x2xf64>, tensor<4xf64>, tensor<4xf64>) -> (tensor<3x4x2xf64>, tensor<4xf64>, tensor<4xf64>)
  %gx, %gscale, %goffset = "stablehlo.batch_norm_grad"(%x, %scale, %mean, %var, %dy) {epsilon = 1.000000e-03 : f32, feature_index = 1 : i64}
    : (tensor<3x4x2xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<3x4x2xf64>) -> (tensor<3x4x2xf64>, tensor<4xf64>, tensor<4xf64>)
  return %out, %mean, %var, %gx, %gscale, %goffset : tensor<3x4x2xf64>, tensor<4xf64>, tensor<4xf64>, tensor<3x4x2xf64>, tensor<4xf64>, tensor<4xf64>
}
)";

TEST(BatchNorm, TrainingAndGradMatchNumpy) {
  auto r = run_main(kNumpyProgram);
  ASSERT_EQ(r.size(), 6u);
  expect_values(r[0], {1.028187788479363, -1.4083051562789648, -0.3169136742716587, 0.11384772095472356,
                       -2.367506998294818, 1.4494289985571536, 1.5429273204505094, -0.8217498942746825,
                       1.7243286298388854, 0.6801173677996019, 0.8892182323622115, -0.48921823236221157,
                       -1.4132729990818251, -2.8446239979013144, 0.9517580167692113, 0.5970564345604327,
                       -2.452516418318248, 1.028187788479363, 0.28615227904527646, 0.7169136742716586,
                       0.972311998950657, 2.4036629977701467, 0.005887130879134728, 0.1241209916153943});
  expect_values(r[1], {-0.16666666666666666, 0.5, 0.5833333333333334, 0.5833333333333334});
  expect_values(r[2], {1.159722222222222, 2.1041666666666665, 1.097222222222222, 2.513888888888889});
  expect_values(r[3], {-0.7575233840720338, -0.0960429797245344, 0.004127661114597586, -0.07349874121433289,
                       0.4792047485445813, -0.2586757104280315, -0.08982983945229432, -0.03036291930354906,
                       0.19714216834789583, 0.6795311534566876, 0.2003046740109192, 0.08686958947333566,
                       -0.18238236580506828, -0.14423569349358673, 0.25018000760960585, -0.23157047642355966,
                       0.03827558470449623, -0.061382542712511506, -0.07008839052779452, -0.147714792856725,
                       -0.40499915285970317, 0.5110881740418083, -0.009794490097919053, 0.11137771766771624});
  expect_values(r[4], {0.8315015605127627, -0.1723045580905529, -1.9283478734095898, -0.2364677214725192});
  expect_values(r[5], {-0.25, 0.25, -0.5, 0.0});
}

// The ops have no pretty form in StableHLO: they print generically, epsilon as an f32.
TEST(BatchNorm, GenericFormRoundTrips) {
  std::string once = stablehlo::print(*stablehlo::parse(kNumpyProgram, "t.mlir"));
  EXPECT_EQ(stablehlo::print(*stablehlo::parse(once, "printed.mlir")), once);
  EXPECT_NE(once.find("\"stablehlo.batch_norm_training\"(%cst, %cst_0, %cst_1) <{epsilon = 1.000000e-03 : f32, "
                      "feature_index = 1 : i64}>"),
            std::string::npos)
      << once;
  EXPECT_NE(once.find("\"stablehlo.batch_norm_grad\""), std::string::npos) << once;
}

// One op with the given operand types and attributes.
std::string bn_error(const std::string& op, const std::vector<std::string>& in, const std::string& out,
                     const std::string& attrs = "epsilon = 1.0e-3 : f32, feature_index = 1 : i64") {
  std::string params, names, types;
  for (size_t i = 0; i < in.size(); ++i) {
    params += fmt::format("{}%a{}: {}", i ? ", " : "", i, in[i]);
    names += fmt::format("{}%a{}", i ? ", " : "", i);
    types += fmt::format("{}{}", i ? ", " : "", in[i]);
  }
  return parse_error(fmt::format(R"(
func.func @main({0}) {{
  %0{5} = "stablehlo.{1}"({2}) {{{3}}} : ({4}) -> {6}
  return
}}
)", params, op, names, attrs, types, op == "batch_norm_inference" ? "" : ":3", out));
}

TEST(BatchNorm, ShapeRuleMessagesNameTheConstraint) {
  const std::string x = "tensor<2x3xf32>", v3 = "tensor<3xf32>", v2 = "tensor<2xf32>";
  const std::string inf_out = x, three = "(tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)";
  auto has = [](const std::string& msg, const std::string& part) {
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
  };
  has(bn_error("batch_norm_inference", {x, v3, v3, v3, v3}, inf_out, "epsilon = 0.0 : f32, feature_index = 2 : i64"),
      "stablehlo.batch_norm_inference: feature_index 2 is outside [0, 2) of operand tensor<2x3xf32> (C1)");
  has(bn_error("batch_norm_training", {x, v3, v3}, three, "epsilon = 0.0 : f32, feature_index = -1 : i64"),
      "stablehlo.batch_norm_training: feature_index -1 is outside [0, 2) of operand tensor<2x3xf32> (C1)");
  has(bn_error("batch_norm_inference", {x, v3, "tensor<3xf64>", v3, v3}, inf_out),
      "operand 2 is tensor<3xf64>, but the operand is tensor<2x3xf32>: element types must be the same (C2)");
  has(bn_error("batch_norm_inference", {"tensor<2x3xi32>", "tensor<3xi32>", "tensor<3xi32>", "tensor<3xi32>",
                                        "tensor<3xi32>"},
               "tensor<2x3xi32>"),
      "operand 0 is tensor<2x3xi32>, must be a tensor of a floating-point type");
  has(bn_error("batch_norm_inference", {x, v2, v3, v3, v3}, inf_out),
      "scale has 2 entries, but dimension 1 (feature_index) of operand tensor<2x3xf32> is 3 (C3)");
  has(bn_error("batch_norm_inference", {x, v3, v2, v3, v3}, inf_out), "offset has 2 entries, but dimension 1 (feature_index) of operand tensor<2x3xf32> is 3 (C4)");
  has(bn_error("batch_norm_inference", {x, v3, v3, v2, v3}, inf_out), "mean has 2 entries, but dimension 1 (feature_index) of operand tensor<2x3xf32> is 3 (C5)");
  has(bn_error("batch_norm_inference", {x, v3, v3, v3, v2}, inf_out), "variance has 2 entries, but dimension 1 (feature_index) of operand tensor<2x3xf32> is 3 (C6)");
  has(bn_error("batch_norm_inference", {x, "tensor<3x1xf32>", v3, v3, v3}, inf_out),
      "scale is tensor<3x1xf32>, must be 1-dimensional");
  has(bn_error("batch_norm_training", {x, v2, v3}, three), "scale has 2 entries, but dimension 1 (feature_index) of operand tensor<2x3xf32> is 3 (C3)");
  has(bn_error("batch_norm_training", {x, v3, v2}, three), "offset has 2 entries, but dimension 1 (feature_index) of operand tensor<2x3xf32> is 3 (C4)");
  has(bn_error("batch_norm_grad", {x, v2, v3, v3, x}, three), "scale has 2 entries, but dimension 1 (feature_index) of operand tensor<2x3xf32> is 3 (C5)");
  has(bn_error("batch_norm_grad", {x, v3, v2, v3, x}, three), "mean has 2 entries, but dimension 1 (feature_index) of operand tensor<2x3xf32> is 3 (C4)");
  has(bn_error("batch_norm_grad", {x, v3, v3, v3, "tensor<3x3xf32>"}, three),
      "grad_output is tensor<3x3xf32>, but the operand is tensor<2x3xf32>: shapes must be the same (C3)");
  has(bn_error("batch_norm_inference", {x, v3, v3, v3, v3}, inf_out, "feature_index = 1 : i64"),
      "stablehlo.batch_norm_inference: needs an f32 attribute epsilon and an i64 attribute feature_index");
  // The declared results must be the inferred ones (C7 of inference and training).
  EXPECT_NE(bn_error("batch_norm_inference", {x, v3, v3, v3, v3}, "tensor<2x3xf64>"), "<no error>");
  EXPECT_NE(bn_error("batch_norm_training", {x, v3, v3}, "(tensor<2x3xf32>, tensor<2xf32>, tensor<3xf32>)"),
            "<no error>");
  EXPECT_EQ(bn_error("batch_norm_training", {x, v3, v3}, three), "<no error>");
}

}  // namespace
}  // namespace tessera::interp
