// simplify keeps meaning: programs evaluated by the interpreter before and after simplify on fixed
// inputs give bitwise-equal results (folded constants come from the same kernels). The programs:
// the worked example with its sharding, a hand-written gradient-like program full of the clutter
// reverse() produces, the parsed golden gradient of the worked example (whose simplified body is
// pinned here), and programs with loops, reductions and integers.
#include <gtest/gtest.h>

#include "common/worked_example.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "autodiff/reverse.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "test_util.h"
#include "transforms/simplify.h"

namespace tessera::transforms::testing {
namespace {

using namespace tessera::ir;

TEST(Semantics, ShardedLossKeepsItsShardingAndValue) {
  Module m("sharded_loss");
  tessera::testing::build_sharded_loss(m);
  auto [before, after] = expect_same_results(m, "sharded_loss");
  EXPECT_EQ(before, after);  // nothing to simplify
  EXPECT_NE(stablehlo::print(m).find("@sharded_loss(%arg0: tensor<8x4xf32> {sdy.sharding = "
                                     "#sdy.sharding<@m, [{\"data\"}, {}]>}, %arg1: tensor<4x3xf32>)"),
            std::string::npos);
}

// What reverse() writes for d/dx of sum(tanh(x·w)^2) and more: dead init gradients, reductions
// over no dimensions, identity transposes, products with broadcast ones, repeated products.
TEST(Semantics, GradientLikeProgramShrinksAndKeepsItsValue) {
  Module m("g");
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  build_function(m, "g", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 4}), Sharding{"m", {{"data"}, {}}, {}, {}});
    Tensor w = f.param(f32({4, 3}));
    Tensor y = tanh(matmul(x, w));
    (void)sum(y * y);                                    // the primal value, unused
    Tensor one = f.scalar(ElementType::f32, 1);
    (void)reduce_sum(one, {});                           // a dead init gradient
    Tensor seed = broadcast_in_dim(one, {8, 3}, {});
    Tensor dy = seed * y + seed * y + 0.0 * y;
    Tensor dz = dy * (1.0 - y * y) * broadcast_in_dim(reduce_sum(one, {}), {8, 3}, {});
    Tensor dx = transpose(transpose(dot_general(dz, w, DotDims{{}, {}, {1}, {1}}), {1, 0}), {1, 0});
    Tensor dw = transpose(dot_general(dz, x, DotDims{{}, {}, {0}, {0}}), {1, 0});
    Tensor scale = f.constant(Literal::from<double>(f32({3}), {0.5, 1, 2}));
    Tensor dw_scaled = dw * broadcast_in_dim(scale * scale / 1.0, {4, 3}, {1});
    return std::vector<Tensor>{constrain(dx, Sharding{"m", {{"data"}, {}}, {}, {}}), dw_scaled,
                               -(-dw) - 0.0};
  });
  auto [before, after] = expect_same_results(m, "g");
  EXPECT_LT(after, before / 2) << stablehlo::print(m);
  std::string body = body_of(m, "g");
  EXPECT_NE(body.find("sdy.sharding_constraint"), std::string::npos) << body;
  EXPECT_EQ(body.find("dims = [0, 1]"), std::string::npos) << body;
  EXPECT_EQ(body.find("dimensions = []"), std::string::npos) << body;
}

TEST(Semantics, GoldenGradientOfTheWorkedExample) {
  // The raw output of reverse(), before simplification, as text and back.
  Module built("sharded_loss");
  Function& loss = tessera::testing::build_sharded_loss(built);
  autodiff::ReverseOptions raw;
  raw.simplify = false;
  autodiff::reverse(built, loss, raw);
  std::unique_ptr<Module> m = stablehlo::parse(stablehlo::print(built), "raw_grad.mlir");
  expect_same_results(*m, "sharded_loss");
  auto [before, after] = expect_same_results(*m, "sharded_loss_grad");
  EXPECT_EQ(before, 23u);
  EXPECT_EQ(after, 12u);
  std::string text = stablehlo::print(*m);
  EXPECT_NE(text.find("func.func public @sharded_loss_grad(%arg0: tensor<8x4xf32> {sdy.sharding = "
                      "#sdy.sharding<@m, [{\"data\"}, {}]>}, %arg1: tensor<4x3xf32>) -> "
                      "(tensor<8x4xf32>, tensor<4x3xf32>)"),
            std::string::npos)
      << text;
  EXPECT_EQ(body_of(*m, "sharded_loss_grad"),
            "%0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>\n"
            "%1 = stablehlo.tanh %0 : tensor<8x3xf32>\n"
            "%cst = stablehlo.constant dense<1.000000e+00> : tensor<8x3xf32>\n"
            "%2 = stablehlo.add %1, %1 : tensor<8x3xf32>\n"
            "%3 = stablehlo.multiply %1, %1 : tensor<8x3xf32>\n"
            "%4 = stablehlo.subtract %cst, %3 : tensor<8x3xf32>\n"
            "%5 = stablehlo.multiply %2, %4 : tensor<8x3xf32>\n"
            "%6 = stablehlo.dot_general %5, %arg1, contracting_dims = [1] x [1] : (tensor<8x3xf32>, tensor<4x3xf32>) -> tensor<8x4xf32>\n"
            "%7 = stablehlo.dot_general %5, %arg0, contracting_dims = [0] x [0] : (tensor<8x3xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>\n"
            "%8 = stablehlo.transpose %7, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>\n"
            "%9 = sdy.sharding_constraint %6 <@m, [{\"data\"}, {}]> : tensor<8x4xf32>\n"
            "return %9, %8 : tensor<8x4xf32>, tensor<4x3xf32>\n");
}

TEST(Semantics, LoopsReductionsAndIntegers) {
  Module m("l");
  build_function(m, "loop", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({4}));
    Tensor n = f.param(i32({}));
    std::vector<Tensor> out = while_loop(
        {x, n},
        [](Builder& b, const std::vector<Tensor>& v) {
          return compare(v[1] * 1.0, b.scalar(ElementType::i32, 0) + 0.0, ComparisonDirection::GT);
        },
        [](Builder& b, const std::vector<Tensor>& v) {
          Tensor half = b.scalar(ElementType::f32, 0.25) * b.scalar(ElementType::f32, 2);
          Tensor step = reduce_max(v[0] * half, {}) + reduce_sum(v[0], {0}) * 1.0;
          return std::vector<Tensor>{step + step, v[1] - 1.0};
        });
    Tensor k = f.iota(i32({6}), 0);
    Tensor folded = reduce_sum(k * k + 1.0, {0});
    return std::vector<Tensor>{out[0], out[1] + folded, reshape(transpose(reshape(x, {2, 2}), {1, 0}), {4})};
  });
  auto [before, after] = expect_same_results(m, "loop");
  EXPECT_LT(after, before);
}

TEST(Semantics, SpecialValuesThroughIdentities) {
  // x*1, x/1, -(-x), x-0 are exact for NaN, infinities and signed zeros.
  Module m("s");
  Function& f = build_function(m, "s", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({6}));
    return std::vector<Tensor>{x * 1.0, x / 1.0, -(-x), x - 0.0, x + -0.0};
  });
  Literal x = Literal::from<double>(f32({6}), {-0.0, 0.0, INFINITY, -INFINITY, NAN, 1e-40});
  std::vector<Literal> before = interp::evaluate(m, "s", {x});
  transforms::simplify(f);
  std::vector<Literal> after = interp::evaluate(m, "s", {x});
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(before[i] == after[i]) << "result " << i;
}

}  // namespace
}  // namespace tessera::transforms::testing
