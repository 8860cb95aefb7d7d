// The C++ builder: the ops it emits, broadcasting, regions, manual computations, and its errors.
#include <gtest/gtest.h>

#include "common/error_of.h"

#include "ir/builder.h"
#include "support/error.h"

namespace tessera::ir {
namespace {

using tessera::testing::error_of;

std::vector<OpKind> kinds(const Block& b) {
  std::vector<OpKind> out;
  for (const auto& op : b.ops()) out.push_back(op->kind());
  return out;
}

Module with_mesh() {
  Module m("t");
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  return m;
}

TEST(Builder, ShardedLossReadsLikeTheMath) {
  Module m = with_mesh();
  Function& f = build_function(m, "sharded_loss", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({8, 4}), Sharding{"m", {{"data"}, {}}, {}, {}});
    Tensor w = b.param(f32({4, 3}));
    Tensor y = tanh(matmul(x, w));
    return sum(y * y);
  });
  EXPECT_EQ(kinds(f.body()), (std::vector{OpKind::DotGeneral, OpKind::Tanh, OpKind::Multiply,
                                          OpKind::Constant, OpKind::Reduce, OpKind::Return}));
  EXPECT_EQ(f.result_types, std::vector{f32({})});
  EXPECT_TRUE(f.arg_sharding(0).has_value());
  EXPECT_FALSE(f.arg_sharding(1).has_value());
  const Op& reduce = *f.body().ops()[4];
  EXPECT_EQ(reduce.attrs().get<std::vector<int64_t>>("dimensions"), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(kinds(reduce.region(0)), (std::vector{OpKind::Add, OpKind::Return}));
  EXPECT_NO_THROW(verify(m));
}

TEST(Builder, NumpyBroadcastingAndScalars) {
  Module m;
  Function& f = build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({2, 3}));
    Tensor row = b.param(f32({3}));
    return (x + row) * 2.0;
  });
  EXPECT_EQ(kinds(f.body()), (std::vector{OpKind::BroadcastInDim, OpKind::Add, OpKind::Constant,
                                          OpKind::BroadcastInDim, OpKind::Multiply, OpKind::Return}));
  EXPECT_EQ(f.body().ops()[0]->attrs().get<std::vector<int64_t>>("broadcast_dimensions"),
            std::vector<int64_t>{1});
  EXPECT_EQ(f.result_types, std::vector{f32({2, 3})});
}

TEST(Builder, MatmulBatchesLeadingDimensions) {
  Module m;
  Function& f = build_function(m, "f", [](FunctionBuilder& b) {
    return matmul(b.param(f32({5, 2, 3})), b.param(f32({5, 3, 4})));
  });
  const DotDims& d = f.body().ops()[0]->attrs().get<DotDims>("dot_dimension_numbers");
  EXPECT_EQ(d, (DotDims{{0}, {0}, {2}, {1}}));
  EXPECT_EQ(f.result_types, std::vector{f32({5, 2, 4})});
}

TEST(Builder, CollectivesCarryGroupsAndChannels) {
  Module m;
  Function& f = build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({4, 2}));
    Tensor r = all_reduce(x, {{0, 1}, {2, 3}});
    Tensor g = all_gather(r, 1, {{0, 1}, {2, 3}});
    return reduce_scatter(g, 0, {{0, 1, 2, 3}});
  });
  const Op& ar = *f.body().ops()[0];
  EXPECT_EQ(ar.attrs().get<IntMatrix>("replica_groups"), (IntMatrix{2, 2, {0, 1, 2, 3}}));
  EXPECT_EQ(ar.attrs().get<ChannelHandle>("channel_handle"), (ChannelHandle{1, 1}));
  EXPECT_TRUE(ar.attrs().get<bool>("use_global_device_ids"));
  EXPECT_EQ(f.body().ops()[1]->attrs().get<ChannelHandle>("channel_handle").handle, 2);
  // Regions build with their own Builder, but channel ids stay unique in the module.
  Function& h = build_function(m, "h", [](FunctionBuilder& b) {
    return all_reduce(b.param(f32({2})), {{0, 1}});
  });
  EXPECT_EQ(h.body().ops()[0]->attrs().get<ChannelHandle>("channel_handle").handle, 4);
  EXPECT_EQ(f.result_types, std::vector{f32({1, 4})});
  EXPECT_EQ(error_of([&] {
              build_function(m, "g", [](FunctionBuilder& b) {
                return all_reduce(b.param(f32({2})), {{0, 1}, {2}});
              });
            }),
            "ragged integer matrix: rows of 2 and 1 elements");
}

TEST(Builder, ManualComputationSeesLocalPieces) {
  Module m = with_mesh();
  Function& f = build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({8, 4}));
    Sharding rows{"m", {{"data"}, {}}, {}, {}};
    return manual({x}, {rows}, {rows}, {"data"}, [](Builder&, const std::vector<Tensor>& in) {
      EXPECT_EQ(in[0].type(), f32({2, 4}));
      return std::vector<Tensor>{all_reduce(in[0], {{0, 1, 2, 3}})};
    })[0];
  });
  const Op& mc = *f.body().ops()[0];
  EXPECT_EQ(mc.kind(), OpKind::ManualComputation);
  EXPECT_EQ(mc.region(0).argument(0)->type(), f32({2, 4}));
  EXPECT_EQ(f.result_types, std::vector{f32({8, 4})});
  EXPECT_NO_THROW(verify(m));
}

TEST(Builder, WhileLoopRegions) {
  Module m;
  Function& f = build_function(m, "f", [](FunctionBuilder& b) {
    Tensor i = b.scalar(ElementType::i64, 0);
    Tensor s = b.param(f32({}));
    auto out = while_loop(
        {i, s},
        [](Builder& c, const std::vector<Tensor>& v) {
          return compare(v[0], c.scalar(ElementType::i64, 10), ComparisonDirection::LT);
        },
        [](Builder&, const std::vector<Tensor>& v) {
          return std::vector<Tensor>{v[0] + 1.0, v[1] * 2.0};
        });
    return out[1];
  });
  const Op& w = *f.body().ops()[1];
  ASSERT_EQ(w.regions().size(), 2u);
  EXPECT_EQ(w.region(0).terminator()->operand(0)->type(), i1({}));
  EXPECT_NO_THROW(verify(m));
}

TEST(Builder, Errors) {
  Module m = with_mesh();
  auto fails = [&](const std::function<std::vector<Tensor>(FunctionBuilder&)>& body) {
    static int n = 0;
    return error_of([&] { build_function(m, fmt::format("f{}", n++), body); });
  };
  EXPECT_EQ(fails([](FunctionBuilder& b) { return std::vector{b.param(f32({2, 3})) + b.param(f32({4}))}; }),
            "cannot broadcast tensor<2x3xf32> with tensor<4xf32>");
  EXPECT_EQ(fails([](FunctionBuilder& b) { return std::vector{broadcast_to(b.param(f32({2, 3})), {3})}; }),
            "cannot broadcast tensor<2x3xf32> to shape [3]");
  EXPECT_EQ(fails([](FunctionBuilder& b) { return std::vector{matmul(b.param(f32({})), b.param(f32({3})))}; }),
            "matmul needs operands of rank >= 1, got tensor<f32> and tensor<3xf32>");
  EXPECT_EQ(fails([](FunctionBuilder& b) { return std::vector{matmul(b.param(f32({2, 4})), b.param(f32({3, 2})))}; }),
            "stablehlo.dot_general: contracting dimension 1 of lhs tensor<2x4xf32> has size 4, but "
            "dimension 0 of rhs tensor<3x2xf32> has size 3");
  EXPECT_EQ(error_of([] { concatenate({}, 0); }), "concatenate needs at least one operand");
  EXPECT_EQ(fails([](FunctionBuilder& b) {
              return std::vector{b.param(f32({8, 4}), Sharding{"m", {{"data"}, {"data"}}, {}, {}})};
            }),
            "sharding of argument 0 of @f4: axis \"data\" is used twice (dimension 0 and dimension 1)");
  EXPECT_EQ(fails([](FunctionBuilder& b) {
              return std::vector{constrain(b.param(f32({8})), Sharding{"m", {{"model"}}, {}, {}})};
            }),
            "sharding of a sharding constraint: dimension 0 names axis \"model\", which is not in "
            "mesh @m (axes: data)");
  EXPECT_EQ(fails([](FunctionBuilder& b) {
              return std::vector{reshard(b.param(f32({8})), Sharding{"m", {{}, {}}, {}, {}})};
            }),
            "sharding of a reshard: has 2 dimension shardings for tensor<8xf32> of rank 1");
}

TEST(Builder, WhileLoopErrors) {
  Module m;
  int n = 0;
  auto body_types = [&](auto cond, auto body) {
    return error_of([&] {
      build_function(m, fmt::format("w{}", n++), [&](FunctionBuilder& b) {
        return while_loop({b.param(f32({}))}, cond, body)[0];
      });
    });
  };
  auto same = [](Builder&, const std::vector<Tensor>& v) { return v; };
  auto lt = [](Builder& c, const std::vector<Tensor>& v) {
    return compare(v[0], c.scalar(ElementType::f32, 1), ComparisonDirection::LT);
  };
  EXPECT_EQ(body_types([](Builder&, const std::vector<Tensor>& v) { return v[0]; }, same),
            "while_loop condition returns tensor<f32>, must be tensor<i1>");
  EXPECT_EQ(body_types(lt, [](Builder&, const std::vector<Tensor>& v) {
              return std::vector<Tensor>{convert(v[0], ElementType::i32)};
            }),
            "while_loop body returns tensor<i32> for loop value 0 of type tensor<f32>");
  EXPECT_EQ(body_types(lt, [](Builder&, const std::vector<Tensor>& v) {
              return std::vector<Tensor>{v[0], v[0]};
            }),
            "while_loop body returns 2 values for 1 loop values");
  EXPECT_EQ(error_of([] { while_loop({}, nullptr, nullptr); }),
            "while_loop needs at least one loop-carried value");
}

TEST(Builder, ManualComputationErrors) {
  Module m = with_mesh();
  Sharding rows{"m", {{"data"}, {}}, {}, {}};
  auto run = [&](Type t, std::vector<Sharding> in, std::vector<Sharding> out) {
    static int n = 0;
    return error_of([&] {
      build_function(m, fmt::format("mc{}", n++), [&](FunctionBuilder& b) {
        return manual({b.param(t)}, in, out, {"data"},
                      [](Builder&, const std::vector<Tensor>& v) { return v; });
      });
    });
  };
  EXPECT_EQ(run(f32({8, 4}), {}, {rows}), "manual computation has 0 in_shardings for 1 inputs");
  EXPECT_EQ(run(f32({6, 4}), {rows}, {rows}),
            "manual computation input 0: dimension 0 of size 6 does not divide by 4");
  EXPECT_EQ(run(f32({8, 4}), {rows}, {}), "manual computation body returns 1 values for 0 out_shardings");
  EXPECT_EQ(error_of([] { manual({}, {}, {}, {}, nullptr); }),
            "manual computation needs at least one input");
}

}  // namespace
}  // namespace tessera::ir
