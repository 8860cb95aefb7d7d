// Each algebraic identity of simplify on a small program, checked by the printed body; and the
// look-alikes that must stay (they are not identities bit for bit).
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"

namespace tessera::transforms::testing {
namespace {

using namespace tessera::ir;

struct Case {
  const char* name;
  std::function<Tensor(Tensor)> fn;
};

const char* kReturnsX = "return %arg0 : tensor<4x3xf32>\n";

std::string simplified_unary(const std::function<Tensor(Tensor)>& fn, Type type = f32({4, 3})) {
  return simplified([&](FunctionBuilder& f) { return std::vector<Tensor>{fn(f.param(type))}; });
}

TEST(Identities, EachFoldsToItsOperand) {
  const Case cases[] = {
      {"x*1", [](Tensor x) { return x * 1.0; }},
      {"1*x", [](Tensor x) { return 1.0 * x; }},
      {"x+0", [](Tensor x) { return x + 0.0; }},
      {"0+x", [](Tensor x) { return 0.0 + x; }},
      {"x+(-0)", [](Tensor x) { return x + -0.0; }},
      {"x-0", [](Tensor x) { return x - 0.0; }},
      {"x/1", [](Tensor x) { return x / 1.0; }},
      {"-(-x)", [](Tensor x) { return -(-x); }},
      {"transpose [0, 1]", [](Tensor x) { return transpose(x, {0, 1}); }},
      {"transpose twice", [](Tensor x) { return transpose(transpose(x, {1, 0}), {1, 0}); }},
      {"reshape to itself", [](Tensor x) { return reshape(x, {4, 3}); }},
      {"reshape there and back", [](Tensor x) { return reshape(reshape(x, {12}), {4, 3}); }},
      {"broadcast to itself", [](Tensor x) { return broadcast_in_dim(x, {4, 3}, {0, 1}); }},
      {"convert to itself", [](Tensor x) { return convert(x, ElementType::f32); }},
      {"reduce add over [] from 0", [](Tensor x) { return reduce_sum(x, {}); }},
      {"reduce max over [] from -inf", [](Tensor x) { return reduce_max(x, {}); }},
      {"reduce min over [] from +inf", [](Tensor x) { return reduce_min(x, {}); }},
      {"chain", [](Tensor x) { return transpose(-(-(x * 1.0)) + 0.0, {0, 1}) / 1.0; }},
  };
  for (const Case& c : cases) EXPECT_EQ(simplified_unary(c.fn), kReturnsX) << c.name;
}

TEST(Identities, IntegerArithmetic) {
  EXPECT_EQ(simplified_unary([](Tensor x) { return (x * 1.0 + 0.0 - 0.0) / 1.0; }, i32({4})),
            "return %arg0 : tensor<4xi32>\n");
}

TEST(Identities, LookAlikesStay) {
  const Case cases[] = {
      {"x-(-0)", [](Tensor x) { return x - -0.0; }},  // -0 - -0 is +0
      {"0-x", [](Tensor x) { return 0.0 - x; }},
      {"1/x", [](Tensor x) { return 1.0 / x; }},
      {"x*2", [](Tensor x) { return x * 2.0; }},
      {"x+1", [](Tensor x) { return x + 1.0; }},
      {"transpose once", [](Tensor x) { return transpose(transpose(transpose(x, {1, 0}), {1, 0}), {1, 0}); }},
      {"reduce add over [] from 1", [&](Tensor x) { return reduce(x, x.builder().scalar(ElementType::f32, 1), {}, OpKind::Add); }},
      {"reduce max over [] from 0", [&](Tensor x) { return reduce(x, x.builder().scalar(ElementType::f32, 0), {}, OpKind::Maximum); }},
  };
  for (const Case& c : cases) EXPECT_NE(simplified_unary(c.fn), kReturnsX) << c.name;
}

TEST(Identities, ComplexIsLeftAlone) {
  // (a+bi)(1+0i) is not exactly a+bi where b is infinite (b*0 is NaN).
  std::string body = simplified_unary([](Tensor x) { return x * 1.0; }, Type(ElementType::c64, {4}));
  EXPECT_NE(body.find("stablehlo.multiply"), std::string::npos) << body;
}

TEST(Identities, TransposeOfTransposeComposes) {
  std::string body = simplified_unary(
      [](Tensor x) { return transpose(transpose(x, {1, 2, 0}), {0, 2, 1}); }, f32({2, 3, 4}));
  // Result dimension i is the inner result's q[i], which is x's p[q[i]]: [1, 0, 2].
  EXPECT_EQ(body,
            "%0 = stablehlo.transpose %arg0, dims = [1, 0, 2] : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>\n"
            "return %0 : tensor<3x2x4xf32>\n");
}

TEST(Identities, BroadcastOfBroadcastComposes) {
  std::string body = simplified_unary(
      [](Tensor x) { return broadcast_in_dim(broadcast_in_dim(x, {3, 5}, {0}), {2, 3, 5}, {1, 2}); },
      f32({3}));
  EXPECT_EQ(body,
            "%0 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<3xf32>) -> tensor<2x3x5xf32>\n"
            "return %0 : tensor<2x3x5xf32>\n");
}

TEST(Identities, ReshapeOfReshapeIsOneReshape) {
  std::string body = simplified_unary([](Tensor x) { return reshape(reshape(x, {12}), {2, 6}); });
  EXPECT_EQ(body,
            "%0 = stablehlo.reshape %arg0 : (tensor<4x3xf32>) -> tensor<2x6xf32>\n"
            "return %0 : tensor<2x6xf32>\n");
}

// The op that replaces a composed pair keeps the outer op's other attributes: marks such as the
// named computation and call an op belongs to (a pipeline's split of the backward reads them).
TEST(Identities, ComposedMovementsKeepTheirAttributes) {
  auto marked = [](Tensor y) {
    y.value()->defining_op()->attrs().set("mark", std::string("stage0"));
    return y;
  };
  for (const std::string& body :
       {simplified_unary([&](Tensor x) { return marked(reshape(reshape(x, {12}), {2, 6})); }),
        simplified_unary([&](Tensor x) { return marked(transpose(transpose(x, {1, 2, 0}), {0, 2, 1})); }, f32({2, 3, 4})),
        simplified_unary([&](Tensor x) { return marked(broadcast_in_dim(broadcast_in_dim(x, {3, 5}, {0}), {2, 3, 5}, {1, 2})); },
                         f32({3}))}) {
    EXPECT_EQ(std::count(body.begin(), body.end(), '\n'), 2) << body;  // composed into one op
    EXPECT_NE(body.find("mark = \"stage0\""), std::string::npos) << body;
  }
}

TEST(Identities, BroadcastOfSplatIsOneConstant) {
  std::string body = simplified([](FunctionBuilder& f) {
    return std::vector<Tensor>{broadcast_in_dim(f.scalar(ElementType::f32, 1), {8, 3}, {})};
  });
  EXPECT_EQ(body,
            "%cst = stablehlo.constant dense<1.000000e+00> : tensor<8x3xf32>\n"
            "return %cst : tensor<8x3xf32>\n");
}

TEST(Identities, LargeBroadcastOfSplatStaysABroadcast) {
  std::string body = simplified([](FunctionBuilder& f) {
    return std::vector<Tensor>{broadcast_in_dim(f.scalar(ElementType::f32, 1), {64, 64}, {})};
  });
  EXPECT_EQ(body,
            "%cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>\n"
            "%0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<64x64xf32>\n"
            "return %0 : tensor<64x64xf32>\n");
}

TEST(Identities, LargeMultiplyByBroadcastOneFolds) {
  // The one is seen through the broadcast, whatever its size.
  std::string body = simplified_unary([](Tensor x) { return x * 1.0; }, f32({64, 64}));
  EXPECT_EQ(body, "return %arg0 : tensor<64x64xf32>\n");
}

}  // namespace
}  // namespace tessera::transforms::testing
