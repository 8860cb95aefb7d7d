// Collectives through a Session, and their byte accounting. A data-parallel gradient on 4 host
// devices, run twice with a Traffic counter: the ring model the counters charge equals what the
// partitioner's report predicts per run (both are nccl-tests' accounting). The bytes measured are
// those of the host communicator's algorithm: small operands (up to 4 KiB) are exchanged whole,
// every device reading its 3 peers' (2x the ring model on 4 devices); large ones go by the
// in-place reduce-scatter + all-gather, which moves exactly the ring model's bytes. The typed
// collectives are also checked on dimensions other than the first and on subgroups, where the
// operand's blocks must be rearranged into the communicator's chunks.
#include <gtest/gtest.h>

#include "autodiff/reverse.h"
#include "common/random_literal.h"
#include "ir/builder.h"
#include "runtime/session.h"

namespace tessera::comm {
namespace {

using namespace tessera::ir;

// The gradient of sum((tanh(x w1) w2)^2) with x split by rows over 4 devices, w1 [8, hidden].
Module data_parallel_gradient(int64_t hidden) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  Sharding rows{"m", std::vector<DimSharding>(2), {}, {}};
  rows.dims[0] = {"data"};
  Function& loss = build_function(m, "loss", [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({16, 8}), rows);
    Tensor w1 = b.param(f32({8, hidden}));
    Tensor w2 = b.param(f32({hidden, 4}));
    Tensor y = matmul(tanh(matmul(x, w1)), w2);
    return sum(y * y);
  });
  autodiff::ReverseOptions weights;
  weights.wrt = {1, 2};
  autodiff::reverse(m, loss, weights);
  return m;
}

// Runs loss_grad twice on 4 host devices; returns the counter and the report's bytes per run.
std::pair<std::unique_ptr<Traffic>, int64_t> measure(const Module& m, size_t* collectives) {
  auto traffic = std::make_unique<Traffic>(4);
  runtime::SessionOptions options;
  options.traffic = traffic.get();
  runtime::Session s = runtime::Session::host(4, options);
  runtime::CompiledProgram p = s.compile(m, "loss_grad");
  std::vector<Literal> in = testing::random_inputs(*m.find_function("loss_grad"), 3);
  s.run_sharded(p, in);
  s.run_sharded(p, in);
  *collectives = p.report().collectives.size();
  return {std::move(traffic), p.report().bytes_per_device()};
}

TEST(SessionTraffic, SmallGradientsAreExchangedWhole) {
  Module m = data_parallel_gradient(8);  // gradients of 256 and 128 bytes
  size_t collectives = 0;
  auto [traffic, predicted] = measure(m, &collectives);
  ASSERT_GT(predicted, 0);
  for (int64_t d = 0; d < 4; ++d) {
    TrafficCount t = traffic->device(d).total();
    EXPECT_EQ(t.calls, 2 * static_cast<int64_t>(collectives)) << traffic->table();
    EXPECT_EQ(t.ring, 2 * predicted) << traffic->table();
    EXPECT_EQ(t.received, 2 * t.ring) << traffic->table();
    EXPECT_EQ(t.sent, t.received) << traffic->table();
  }
  EXPECT_NE(traffic->table().find("all_reduce"), std::string::npos);
}

TEST(SessionTraffic, LargeGradientsMoveTheRingModelsBytes) {
  Module m = data_parallel_gradient(512);  // gradients of 16 KiB and 8 KiB
  size_t collectives = 0;
  auto [traffic, predicted] = measure(m, &collectives);
  ASSERT_GT(predicted, 0);
  for (int64_t d = 0; d < 4; ++d) {
    TrafficCount t = traffic->device(d).total();
    EXPECT_EQ(t.ring, 2 * predicted) << traffic->table();
    EXPECT_EQ(t.received, t.ring) << traffic->table();
    EXPECT_EQ(t.sent, t.ring) << traffic->table();
  }
}

// Every device's x is [3, 8] with x[d][i][j] = 100 d + 8 i + j (integers: sums are exact, so the
// expected values below need no tolerance but still check the group order of the blocks).
TEST(SessionCollectives, TypedCollectivesOnInnerDimensionsAndSubgroups) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  Sharding rows{"m", std::vector<DimSharding>(2), {}, {}};
  rows.dims[0] = {"data"};
  build_function(m, "f", [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({12, 8}), rows);
    return manual({x}, {rows}, {rows, rows, rows, rows}, {"data"}, [](Builder&, const std::vector<Tensor>& in) {
      return std::vector<Tensor>{all_gather(in[0], 1, {{0, 2}, {1, 3}}),
                                 reduce_scatter(in[0], 1, {{0, 1, 2, 3}}),
                                 all_to_all(in[0], 1, 0, {{0, 1}, {2, 3}}),
                                 all_reduce(in[0], {{0, 1, 2, 3}}, OpKind::Maximum)};
    });
  });
  runtime::Session s = runtime::Session::host(4);
  runtime::CompiledProgram p = s.compile(m, "f");
  auto x = [](int64_t d, int64_t i, int64_t j) { return static_cast<double>(100 * d + 8 * i + j); };
  std::vector<std::vector<Literal>> inputs;
  for (int64_t d = 0; d < 4; ++d) {
    Literal l(f32({3, 8}));
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 8; ++j) l.set_double(8 * i + j, x(d, i, j));
    inputs.push_back({std::move(l)});
  }
  std::vector<std::vector<Literal>> out = s.run_per_device(p, inputs);
  for (int64_t d = 0; d < 4; ++d) {
    const std::vector<Literal>& o = out[static_cast<size_t>(d)];
    ASSERT_EQ(o.size(), 4u);
    int64_t pair_a = d % 2;  // groups {0,2},{1,3}
    int64_t pair_b = d / 2, pos_b = d % 2;  // groups {0,1},{2,3}
    ASSERT_EQ(o[0].type(), f32({3, 16}));
    ASSERT_EQ(o[1].type(), f32({3, 2}));
    ASSERT_EQ(o[2].type(), f32({6, 4}));
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 16; ++j)
        EXPECT_EQ(o[0].get_double(16 * i + j), x(pair_a + 2 * (j / 8), i, j % 8)) << d << " " << i << " " << j;
      for (int64_t j = 0; j < 2; ++j)
        EXPECT_EQ(o[1].get_double(2 * i + j), x(0, i, 2 * d + j) + x(1, i, 2 * d + j) + x(2, i, 2 * d + j) +
                                               x(3, i, 2 * d + j));
      for (int64_t j = 0; j < 8; ++j) EXPECT_EQ(o[3].get_double(8 * i + j), x(3, i, j));
    }
    for (int64_t k = 0; k < 2; ++k)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j)
          EXPECT_EQ(o[2].get_double(4 * (3 * k + i) + j), x(2 * pair_b + k, i, 4 * pos_b + j)) << d;
  }
}

TEST(SessionTraffic, CounterForAnotherDeviceCountIsRefused) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 2}}, {}});
  build_function(m, "f", [](FunctionBuilder& b) { return b.param(f32({4})) * 2.0; });
  Traffic traffic(3);
  runtime::SessionOptions options;
  options.traffic = &traffic;
  runtime::Session s = runtime::Session::host(2, options);
  runtime::CompiledProgram p = s.compile(m, "f");
  try {
    s.run_sharded(p, {Literal(f32({4}))});
    FAIL() << "ran with a counter of 3 devices on 2";
  } catch (const support::UserError& e) {
    EXPECT_STREQ(e.what(), "run_parallel: byte accounting for 3 devices, but 2 processes run");
  }
}

}  // namespace
}  // namespace tessera::comm
