// Whole programs: evaluate()'s argument checks, the Shardy ops (identities, and manual_computation
// run per device of its manual axes), and the worked example of the design — the sum of
// tanh(x·w)² for x sharded by rows over a 4-device mesh — against NumPy.
#include <gtest/gtest.h>

#include "common/worked_example.h"

#include <cmath>

#include "numpy_oracle.h"
#include "test_util.h"

namespace tessera::interp::testing {
namespace {

using E = ElementType;
using ir::Sharding;

// A sharding on mesh "m".
Sharding on_m(std::vector<ir::DimSharding> dims) { return Sharding{"m", std::move(dims), {}, {}}; }

TEST(Evaluate, ChecksArgumentCountAndTypes) {
  ir::Module m("m");
  ir::Function& fn = ir::build_function(m, "f", [](ir::FunctionBuilder& f) {
    return f.param(Type(E::f32, {4, 3})) + f.param(Type(E::f32, {4, 3}));
  });
  Literal a(Type(E::f32, {4, 3}));
  EXPECT_EQ(message_of([&] { evaluate(fn, {a}); }), "@f takes 2 arguments, got 1");
  EXPECT_EQ(message_of([&] { evaluate(fn, {a, Literal(Type(E::f32, {3}))}); }),
            "@f: argument 1 has type tensor<3xf32>, but parameter 1 has type tensor<4x3xf32>");
  EXPECT_EQ(message_of([&] { evaluate(fn, {a, Literal(Type(E::f64, {4, 3}))}); }),
            "@f: argument 1 has type tensor<4x3xf64>, but parameter 1 has type tensor<4x3xf32>");
  EXPECT_EQ(message_of([&] { evaluate(m, "g", {a, a}); }), "no function @g in the module");
  Literal one = Literal::splat(Type(E::f32, {4, 3}), 1);
  EXPECT_TRUE(same(evaluate(m, "f", {one, one}).at(0), Literal::splat(Type(E::f32, {4, 3}), 2)));
}

TEST(Shardy, ConstraintsAndReshardsAreIdentities) {
  ir::Module m("m");
  m.add_mesh(ir::Mesh{"m", {{"data", 2}}, {}});
  Literal x = random_literal(Type(E::f32, {4, 2}), 1);
  std::vector<Literal> got = run_in(m, {x}, [](ir::FunctionBuilder&, const std::vector<Tensor>& p) {
    Tensor a = ir::constrain(p[0], on_m({{"data"}, {}}));
    return std::vector<Tensor>{a, ir::reshard(a, on_m({{}, {"data"}}))};
  });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(same(got[0], x));
  EXPECT_TRUE(same(got[1], x));
}

// Shardy's explicit collectives only move the layout: on the whole array each is the identity.
// sdy.constant is its value.
TEST(Shardy, ExplicitCollectivesAreIdentitiesOnTheGlobalValue) {
  ir::Module m("m");
  m.add_mesh(ir::Mesh{"m", {{"data", 2}, {"model", 2}}, {}});
  Literal x = random_literal(Type(E::f32, {4, 4, 2}), 3);
  Literal c = random_literal(Type(E::f32, {4, 4, 2}), 4);
  std::vector<Literal> got = run_in(m, {x}, [&](ir::FunctionBuilder& b, const std::vector<Tensor>& p) {
    Tensor a = ir::constrain(p[0], on_m({{"data"}, {"model"}, {}}));
    Tensor g = ir::sdy_all_gather(a, {{"data"}, {}, {}}, on_m({{}, {"model"}, {}}));
    Tensor s = ir::sdy_all_slice(g, {{}, {}, {"data"}}, on_m({{}, {"model"}, {"data"}}));
    Tensor r = ir::sdy_all_reduce(s, {"data"}, on_m({{}, {"model"}, {"data"}}));
    Tensor rs = ir::sdy_reduce_scatter(r, {{}, {}, {}}, on_m({{}, {"model"}, {"data"}}));
    Tensor t = ir::sdy_all_to_all(rs, {{{"model"}, 1, 0}}, on_m({{"model"}, {}, {"data"}}));
    Tensor q = ir::sdy_collective_permute(t, on_m({{"data"}, {}, {"model"}}));
    return std::vector<Tensor>{g, s, r, rs, t, q, ir::sdy_constant(b, c, on_m({{"data"}, {}, {}}))};
  });
  ASSERT_EQ(got.size(), 7u);
  for (size_t i = 0; i + 1 < got.size(); ++i) EXPECT_TRUE(same(got[i], x)) << i;
  EXPECT_TRUE(same(got[6], c));
}

using ManualBody = std::function<std::vector<Tensor>(ir::Builder&, const std::vector<Tensor>&)>;

Literal manual_on(ir::Module& m, Literal x, Sharding in, Sharding out, std::vector<std::string> axes,
                  const ManualBody& body) {
  return run_in(m, {std::move(x)}, [&](ir::FunctionBuilder&, const std::vector<Tensor>& p) {
    return ir::manual(p, {in}, {out}, axes, body);
  }).at(0);
}

TEST(Shardy, ManualComputationWithoutCollectivesGivesTheGlobalResult) {
  ir::Module m("m");
  m.add_mesh(ir::Mesh{"m", {{"data", 4}}, {}});
  Literal x = random_literal(Type(E::f32, {8, 4}), 2);
  Sharding rows = on_m({{"data"}, {}});
  Literal got = manual_on(m, x, rows, rows, {"data"}, [](ir::Builder&, const std::vector<Tensor>& p) {
    EXPECT_EQ(p[0].shape(), (std::vector<int64_t>{2, 4}));
    return std::vector<Tensor>{ir::tanh(p[0])};
  });
  EXPECT_TRUE(same(got, apply(ir::OpKind::Tanh, {x})));
}

TEST(Shardy, ManualComputationWithAPsumGivesDeviceZerosValueTimesTheGroup) {
  ir::Module m("m");
  m.add_mesh(ir::Mesh{"m", {{"data", 4}}, {}});
  Literal x = random_literal(Type(E::f64, {8, 4}), 3, Domain::Halves);
  Literal got = manual_on(m, x, on_m({{"data"}, {}}), on_m({}), {"data"},
                          [](ir::Builder&, const std::vector<Tensor>& p) {
                            return std::vector<Tensor>{ir::all_reduce(ir::sum(p[0]), {{0, 1, 2, 3}})};
                          });
  EXPECT_TRUE(same(got, numpy("np.sum(a0[0:2]) * 4", {x})));
}

TEST(Shardy, ManualComputationLeavesFreeAxesWhole) {
  ir::Module m("m");
  m.add_mesh(ir::Mesh{"m", {{"data", 2}, {"model", 2}}, {}});
  Literal x = random_literal(Type(E::f32, {4, 6}), 4);
  Sharding s = on_m({{"data"}, {"model"}});
  Literal got = manual_on(m, x, s, s, {"data"}, [](ir::Builder&, const std::vector<Tensor>& p) {
    EXPECT_EQ(p[0].shape(), (std::vector<int64_t>{2, 6}));
    return std::vector<Tensor>{p[0] * 2.0};
  });
  EXPECT_TRUE(close(got, numpy("a0 * 2", {x})));
}

TEST(Shardy, ManualComputationMapsSubAxes) {
  // Device c of "data" (size 4) reads piece c % 2 ("data":(2)2) and writes piece c / 2
  // ("data":(1)2); piece 0 is written by device 0 and piece 1 by device 2, both from input piece 0.
  ir::Module m("m");
  m.add_mesh(ir::Mesh{"m", {{"data", 4}}, {}});
  Literal x = ints(Type(E::i32, {4}), {10, 11, 12, 13});
  ir::DimSharding minor, major;
  minor.axes = {ir::AxisRef("data", ir::SubAxis{2, 2})};
  major.axes = {ir::AxisRef("data", ir::SubAxis{1, 2})};
  Literal got = manual_on(m, x, on_m({minor}), on_m({major}), {"data"},
                          [](ir::Builder&, const std::vector<Tensor>& p) { return p; });
  EXPECT_TRUE(same(got, ints(Type(E::i32, {4}), {10, 11, 10, 11})));
}

TEST(Shardy, ManualComputationNeedsTheModule) {
  ir::Module m("m");
  m.add_mesh(ir::Mesh{"m", {{"data", 2}}, {}});
  Sharding rows = on_m({{"data"}});
  ir::Function& fn = ir::build_function(m, "f", [&](ir::FunctionBuilder& f) {
    return ir::manual({f.param(Type(E::f32, {4}))}, {rows}, {rows}, {"data"},
                      [](ir::Builder&, const std::vector<Tensor>& p) { return p; })[0];
  });
  EXPECT_EQ(message_of([&] { evaluate(fn, {Literal(Type(E::f32, {4}))}); }),
            "sdy.manual_computation: needs the module's meshes: evaluate it with evaluate(module, name, ...) "
            "or Options.module");
}

// DESIGN.md's worked example: mesh "m" with data=4, x f32[8,4] split by rows, w f32[4,3] whole,
// loss = sum(tanh(x·w)²); x = sin(0.1 (i+1)) and w = cos(0.2 (j+1)) over flat indices.
TEST(WorkedExample, ShardedLossMatchesNumpy) {
  ir::Module m("sharded_loss");
  ir::Function& fn = tessera::testing::build_sharded_loss(m);
  ir::verify(m);
  Literal x(ir::f32({8, 4})), w(ir::f32({4, 3}));
  for (int64_t i = 0; i < 32; ++i) x.set_double(i, std::sin(0.1 * static_cast<double>(i + 1)));
  for (int64_t j = 0; j < 12; ++j) w.set_double(j, std::cos(0.2 * static_cast<double>(j + 1)));
  Literal loss = evaluate(fn, {x, w}).at(0);
  ASSERT_EQ(loss.type(), ir::f32({}));
  Literal want = numpy("np.sum(np.tanh(a0.astype(np.float64) @ a1.astype(np.float64)) ** 2)", {x, w});
  ASSERT_EQ(want.type(), ir::f64({}));
  double got = loss.get_double(0), expected = want.get_double(0);
  EXPECT_GT(expected, 1.0);  // a degenerate oracle (zeros) cannot pass
  EXPECT_LE(std::fabs(got - expected), kLossRelTolerance * std::fabs(expected))
      << "interpreter " << got << ", NumPy " << expected;
}

}  // namespace
}  // namespace tessera::interp::testing
