// Byte accounting through a Session: a data-parallel gradient on 4 host devices, run twice with a
// Traffic counter. The ring model the counters charge equals what the partitioner's report
// predicts per run (both are nccl-tests' accounting), and the bytes measured are those of the
// interpreter's collectives, which exchange whole operands: every device reads its 3 peers'
// gradients, 2x the ring model's 2 (n-1)/n on 4 devices.
#include <gtest/gtest.h>

#include "autodiff/reverse.h"
#include "common/random_literal.h"
#include "ir/builder.h"
#include "runtime/session.h"

namespace tessera::comm {
namespace {

using namespace tessera::ir;

TEST(SessionTraffic, MeasuredBytesBesideTheRingModel) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  Sharding rows{"m", std::vector<DimSharding>(2), {}, {}};
  rows.dims[0] = {"data"};
  Function& loss = build_function(m, "loss", [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({16, 8}), rows);
    Tensor w1 = b.param(f32({8, 8}));
    Tensor w2 = b.param(f32({8, 4}));
    Tensor y = matmul(tanh(matmul(x, w1)), w2);
    return sum(y * y);
  });
  autodiff::ReverseOptions weights;
  weights.wrt = {1, 2};
  autodiff::reverse(m, loss, weights);

  Traffic traffic(4);
  runtime::SessionOptions options;
  options.traffic = &traffic;
  runtime::Session s = runtime::Session::host(4, options);
  runtime::CompiledProgram p = s.compile(m, "loss_grad");
  std::vector<Literal> in = testing::random_inputs(*m.find_function("loss_grad"), 3);
  s.run_sharded(p, in);
  s.run_sharded(p, in);

  int64_t predicted = p.report().bytes_per_device();
  ASSERT_GT(predicted, 0) << p.report().to_string();
  for (int64_t d = 0; d < 4; ++d) {
    TrafficCount t = traffic.device(d).total();
    EXPECT_EQ(t.calls, 2 * static_cast<int64_t>(p.report().collectives.size())) << traffic.table();
    EXPECT_EQ(t.ring, 2 * predicted) << traffic.table();
    EXPECT_EQ(t.received, 2 * t.ring) << traffic.table();
    EXPECT_EQ(t.sent, t.received) << traffic.table();
  }
  EXPECT_NE(traffic.table().find("all_reduce"), std::string::npos);
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
