// custom_call @Sharding, GSPMD's with_sharding_constraint, where the parser leaves it (a module
// that already has an sdy.mesh, import_gspmd.h): the identity in the interpreter, its shape rule,
// its gradient (VJP and JVP) and its batched form.
#include <gtest/gtest.h>

#include <cmath>

#include "autodiff/forward.h"
#include "autodiff/reverse.h"
#include "autodiff/vmap.h"
#include "common/parse_error.h"
#include "interp/interpreter.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

constexpr double kTol = 1e-6;  // float32 arithmetic on values of order 1

// sum(@Sharding(x * x)): its gradient is 2x.
const char* kModule = R"(module {
  sdy.mesh @m = <["x"=2]>
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<f32> {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<4xf32>
    %1 = stablehlo.custom_call @Sharding(%0) {backend_config = "", mhlo.sharding = "{devices=[2]<=[2]}"} : (tensor<4xf32>) -> tensor<4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
)";

ir::Literal vec(std::vector<float> v) {
  ir::Literal l(ir::f32({static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) l.set_double(static_cast<int64_t>(i), v[i]);
  return l;
}

TEST(ShardingCall, RunsAsTheIdentity) {
  auto m = parse(kModule, "t.mlir");
  // Left as the call: the module's own sdy.mesh makes it Shardy's.
  EXPECT_NE(print(*m).find("stablehlo.custom_call @Sharding"), std::string::npos) << print(*m);
  auto r = interp::evaluate(*m, "main", {vec({1, 2, 3, -4})});
  EXPECT_NEAR(r[0].get_double(0), 1 + 4 + 9 + 16, kTol);
}

TEST(ShardingCall, ShapeRuleIsTheOperandsType) {
  std::string bad = kModule;
  bad.replace(bad.find("(tensor<4xf32>) -> tensor<4xf32>"), 32, "(tensor<4xf32>) -> tensor<2xf32>");
  std::string e = testing::parse_error(bad);
  EXPECT_NE(e.find("t.mlir:5:"), std::string::npos) << e;
  EXPECT_NE(e.find("tensor<4xf32>"), std::string::npos) << e;
}

TEST(ShardingCall, GradientIsTheIdentity) {
  auto m = parse(kModule, "t.mlir");
  const ir::Function& g = autodiff::reverse(*m, *m->find_function("main"));
  auto dx = interp::evaluate(*m, g.name(), {vec({1, 2, 3, -4})});
  std::vector<double> want = {2, 4, 6, -8};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(dx[0].get_double(i), want[i], kTol);
  const ir::Function& j = autodiff::forward(*m, *m->find_function("main"));
  auto jv = interp::evaluate(*m, j.name(), {vec({1, 2, 3, -4}), vec({1, 0, 0, 1})});
  EXPECT_NEAR(jv[1].get_double(0), 2 * 1 + 2 * -4, kTol);  // d sum(x^2) . t = 2x . t
}

TEST(ShardingCall, BatchesAsTheIdentity) {
  auto m = parse(kModule, "t.mlir");
  autodiff::VmapOptions o;
  o.in_types = {ir::f32({2, 4})};
  const ir::Function& v = autodiff::vmap(*m, *m->find_function("main"), o);
  ir::Literal x(ir::f32({2, 4}));
  for (int64_t i = 0; i < 8; ++i) x.set_double(i, double(i));
  auto r = interp::evaluate(*m, v.name(), {x});
  EXPECT_NEAR(r[0].get_double(0), 0 + 1 + 4 + 9, kTol);
  EXPECT_NEAR(r[0].get_double(1), 16 + 25 + 36 + 49, kTol);
}

TEST(ShardingCall, AnotherTargetIsStillRefusedByName) {
  std::string other = kModule;
  other.replace(other.find("@Sharding"), 9, "@Shardingz");
  auto m = parse(other, "t.mlir");
  std::string e = testing::error_of([&] { interp::evaluate(*m, "main", {vec({1, 2, 3, 4})}); });
  EXPECT_NE(e.find("@Shardingz is not a call target the interpreter knows"), std::string::npos) << e;
  e = testing::error_of([&] { autodiff::reverse(*m, *m->find_function("main")); });
  EXPECT_NE(e.find("custom call target 'Shardingz'"), std::string::npos) << e;
}

// JAX's memories API marks where a value is kept (annotate_device_placement, MoveToHost,
// MoveToDevice); host devices have one kind of memory, so each is the identity in every layer.
TEST(ShardingCall, PlacementAnnotationsAreTheIdentityToo) {
  for (std::string call : {std::string("@annotate_device_placement(%0) {has_side_effect = true, mhlo.frontend_attributes = "
                                       "{_xla_buffer_placement = \"pinned_host\"}}"),
                           std::string("@MoveToHost(%0) {backend_config = \"\"}"),
                           std::string("@MoveToDevice(%0) {backend_config = \"\"}")}) {
    std::string text = kModule;
    std::string from = "@Sharding(%0) {backend_config = \"\", mhlo.sharding = \"{devices=[2]<=[2]}\"}";
    text.replace(text.find(from), from.size(), call);
    auto m = parse(text, "t.mlir");
    auto r = interp::evaluate(*m, "main", {vec({1, 2, 3, -4})});
    EXPECT_NEAR(r[0].get_double(0), 1 + 4 + 9 + 16, kTol) << call;
    const ir::Function& g = autodiff::reverse(*m, *m->find_function("main"));
    auto dx = interp::evaluate(*m, g.name(), {vec({1, 2, 3, -4})});
    EXPECT_NEAR(dx[0].get_double(3), -8, kTol) << call;
    const ir::Function& j = autodiff::forward(*m, *m->find_function("main"));
    auto jv = interp::evaluate(*m, j.name(), {vec({1, 2, 3, -4}), vec({1, 0, 0, 1})});
    EXPECT_NEAR(jv[1].get_double(0), 2 * 1 + 2 * -4, kTol) << call;
    autodiff::VmapOptions o;
    o.in_types = {ir::f32({2, 4})};
    const ir::Function& v = autodiff::vmap(*m, *m->find_function("main"), o);
    ir::Literal x(ir::f32({2, 4}));
    for (int64_t i = 0; i < 8; ++i) x.set_double(i, double(i));
    EXPECT_NEAR(interp::evaluate(*m, v.name(), {x})[0].get_double(1), 16 + 25 + 36 + 49, kTol) << call;
  }
}

}  // namespace
}  // namespace tessera::stablehlo
