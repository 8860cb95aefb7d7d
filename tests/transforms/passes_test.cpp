// Dead-code elimination, common-subexpression elimination and constant folding, each on small
// programs; what must survive simplify (collectives, checks, Shardy ops, replica ids, loops); the
// rewriting helpers and the Block/Op editing API they use.
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "ir/clone.h"
#include "test_util.h"
#include "transforms/rewrite.h"
#include "transforms/simplify.h"

namespace tessera::transforms::testing {
namespace {

using namespace tessera::ir;

TEST(DeadCode, UnusedPureChainsGo) {
  std::string body = simplified([](FunctionBuilder& f) {
    Tensor x = f.param(f32({4}));
    Tensor unused = exp(tanh(x) * x);
    (void)sum(unused);
    return std::vector<Tensor>{x};
  });
  EXPECT_EQ(body, "return %arg0 : tensor<4xf32>\n");
}

TEST(DeadCode, WhatMustStaySurvivesUnused) {
  std::string body = simplified([](FunctionBuilder& f) {
    Tensor x = f.param(f32({4}));
    (void)all_reduce(x, {{0, 1}});                     // communicates
    (void)collective_permute(x, {{0, 1}, {1, 0}});
    (void)constrain(x, Sharding{"m", {{"x"}}, {}, {}});  // states a layout
    (void)reshard(x, Sharding{"m", {{"y"}}, {}, {}});
    (void)f.replica_id();
    AttrMap check;
    check.set("value", Literal::splat(f32({4}), 0));
    f.emit(OpKind::ExpectAlmostEqConst, {x}, check);
    (void)while_loop({x}, [](Builder& b, const std::vector<Tensor>&) { return b.constant(Literal::scalar(ElementType::i1, 0)); },
                     [](Builder&, const std::vector<Tensor>& v) { return v; });
    return std::vector<Tensor>{x};
  });
  for (const char* op : {"stablehlo.all_reduce", "stablehlo.collective_permute",
                         "sdy.sharding_constraint", "sdy.reshard", "stablehlo.replica_id",
                         "check.expect_almost_eq_const", "stablehlo.while"})
    EXPECT_NE(body.find(op), std::string::npos) << op << " is gone:\n" << body;
}

TEST(DeadCode, OpWithAShardingStays) {
  std::string body = simplified([](FunctionBuilder& f) {
    Tensor x = f.param(f32({4}));
    Tensor y = tanh(x);
    y.value()->defining_op()->attrs().set("sdy.sharding", ShardingList{Sharding{"m", {{"x"}}, {}, {}}});
    return std::vector<Tensor>{x};
  });
  EXPECT_NE(body.find("stablehlo.tanh"), std::string::npos) << body;
}

TEST(CommonSubexpressions, EqualOpsMerge) {
  std::string body = simplified([](FunctionBuilder& f) {
    Tensor x = f.param(f32({4}));
    Tensor a = tanh(x) * tanh(x);
    Tensor b = tanh(x) * tanh(x);
    return std::vector<Tensor>{a + b};
  });
  EXPECT_EQ(body,
            "%0 = stablehlo.tanh %arg0 : tensor<4xf32>\n"
            "%1 = stablehlo.multiply %0, %0 : tensor<4xf32>\n"
            "%2 = stablehlo.add %1, %1 : tensor<4xf32>\n"
            "return %2 : tensor<4xf32>\n");
}

TEST(CommonSubexpressions, ReductionsWithEqualBodiesMerge) {
  std::string body = simplified([](FunctionBuilder& f) {
    Tensor x = f.param(f32({4, 3}));
    return std::vector<Tensor>{reduce_sum(x, {0}) * reduce_sum(x, {0})};
  });
  EXPECT_EQ(body,
            "%cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
            "%0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : "
            "(tensor<4x3xf32>, tensor<f32>) -> tensor<3xf32>\n"
            "%1 = stablehlo.multiply %0, %0 : tensor<3xf32>\n"
            "return %1 : tensor<3xf32>\n");
}

TEST(CommonSubexpressions, DifferentOpsStayApart) {
  std::string body = simplified([](FunctionBuilder& f) {
    Tensor x = f.param(f32({4}));
    Tensor y = f.param(f32({4}));
    Tensor zero = f.scalar(ElementType::f32, 0);
    Tensor sums = reduce(x, zero, {0}, OpKind::Add) + reduce(x, zero, {0}, OpKind::Maximum);
    return std::vector<Tensor>{x * y, y * x, transpose(reshape(x, {2, 2}), {1, 0}), reshape(x, {4, 1}), sums};
  });
  // Operand order counts (NaN payloads), bodies count, result types count.
  EXPECT_NE(body.find("multiply %arg0, %arg1"), std::string::npos) << body;
  EXPECT_NE(body.find("multiply %arg1, %arg0"), std::string::npos) << body;
  EXPECT_NE(body.find("applies stablehlo.add"), std::string::npos) << body;
  EXPECT_NE(body.find("applies stablehlo.maximum"), std::string::npos) << body;
  EXPECT_NE(body.find("-> tensor<2x2xf32>"), std::string::npos) << body;
  EXPECT_NE(body.find("-> tensor<4x1xf32>"), std::string::npos) << body;
}

TEST(CommonSubexpressions, ConstantsMergeByLiteral) {
  std::string body = simplified([](FunctionBuilder& f) {
    Tensor x = f.param(f32({1024, 2}));
    Tensor a = x * 2.0;
    Tensor b = x * 2.0;
    Tensor c = x * 3.0;
    return std::vector<Tensor>{a + b + c};
  });
  EXPECT_EQ(body,
            "%cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>\n"
            "%0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1024x2xf32>\n"
            "%1 = stablehlo.multiply %arg0, %0 : tensor<1024x2xf32>\n"
            "%cst_0 = stablehlo.constant dense<3.000000e+00> : tensor<f32>\n"
            "%2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<1024x2xf32>\n"
            "%3 = stablehlo.multiply %arg0, %2 : tensor<1024x2xf32>\n"
            "%4 = stablehlo.add %1, %1 : tensor<1024x2xf32>\n"
            "%5 = stablehlo.add %4, %3 : tensor<1024x2xf32>\n"
            "return %5 : tensor<1024x2xf32>\n");
}

TEST(CommonSubexpressions, ShardingConstraintsAreNotMerged) {
  std::string body = simplified([](FunctionBuilder& f) {
    Tensor x = f.param(f32({4}));
    Sharding s{"m", {{"x"}}, {}, {}};
    return std::vector<Tensor>{constrain(x, s), constrain(x, s)};
  });
  EXPECT_EQ(body,
            "%0 = sdy.sharding_constraint %arg0 <@m, [{\"x\"}]> : tensor<4xf32>\n"
            "%1 = sdy.sharding_constraint %arg0 <@m, [{\"x\"}]> : tensor<4xf32>\n"
            "return %0, %1 : tensor<4xf32>, tensor<4xf32>\n");
}

TEST(ConstantFolding, OpsOnConstantsBecomeConstants) {
  std::string body = simplified([](FunctionBuilder& f) {
    Tensor c = f.constant(Literal::from<double>(f32({3}), {1, 2, 3}));
    return std::vector<Tensor>{sum(c * c) + 1.0};
  });
  EXPECT_EQ(body,
            "%cst = stablehlo.constant dense<1.500000e+01> : tensor<f32>\n"
            "return %cst : tensor<f32>\n");
}

TEST(ConstantFolding, LargeResultsAndLeavesStay) {
  std::string body = simplified([](FunctionBuilder& f) {
    Tensor i = f.iota(i32({2048}), 0);
    return std::vector<Tensor>{i + i, f.iota(i32({4}), 0)};
  });
  EXPECT_NE(body.find("stablehlo.add"), std::string::npos) << body;
  EXPECT_EQ(body.find("stablehlo.constant"), std::string::npos) << body;
}

TEST(ConstantFolding, InsideRegions) {
  std::string body = simplified([](FunctionBuilder& f) {
    Tensor x = f.param(f32({}));
    return while_loop(
        {x}, [](Builder& b, const std::vector<Tensor>&) { return b.constant(Literal::scalar(ElementType::i1, 0)); },
        [](Builder& b, const std::vector<Tensor>& v) {
          Tensor two = b.scalar(ElementType::f32, 2);
          return std::vector<Tensor>{v[0] * (two * two) * 1.0};
        });
  });
  EXPECT_NE(body.find("dense<4.000000e+00>"), std::string::npos) << body;
  EXPECT_EQ(body.find("dense<2.000000e+00>"), std::string::npos) << body;
  EXPECT_EQ(body.find("dense<1.000000e+00>"), std::string::npos) << body;
}

TEST(Rewrite, ReplaceUsesReachesRegionsAndTheReturn) {
  Module m("t");
  Function& f = build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({}));
    Tensor y = b.param(f32({}));
    Tensor t = tanh(x);
    return while_loop({t}, [&](Builder& c, const std::vector<Tensor>&) { return compare(c.wrap(t.value()), c.wrap(t.value()), ComparisonDirection::LT); },
                      [&](Builder& s, const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] + s.wrap(t.value())}; })
        .front() * t + y;
  });
  Value* t = f.body().ops()[0]->result();
  ir::replace_uses(f.body(), {{t, f.parameter(1)}});
  eliminate_dead_code(f);
  verify(m);
  EXPECT_EQ(body_of(m, "f").find("tanh"), std::string::npos) << body_of(m, "f");
  ir::replace_uses(f.body(), {{f.body().terminator()->operand(0), f.parameter(0)}});
  EXPECT_EQ(f.body().terminator()->operand(0), f.parameter(0));
}

TEST(Rewrite, BlockAndOpEditing) {
  Module m("t");
  Function& f = build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({2}));
    (void)b.param(f32({3}));
    return exp(x);
  });
  Op& e = *f.body().ops()[0];
  Value* c = insert_op(e, OpKind::Negate, {f.parameter(0)}, f32({2}));
  EXPECT_EQ(f.body().ops()[0]->kind(), OpKind::Negate);
  EXPECT_EQ(c->defining_op()->parent, &f.body());
  e.set_operand(0, c);
  verify(m);
  EXPECT_THROW(e.set_operand(0, f.parameter(1)), support::InternalError);  // changes the type
  e.set_operand(0, f.parameter(0));
  f.body().erase_if([](const Op& op) { return op.kind() == OpKind::Negate; });
  verify(m);
  EXPECT_EQ(f.body().ops().size(), 2u);
}

}  // namespace
}  // namespace tessera::transforms::testing
