// Collectives per training step for the four plans of issue #6's configuration on 4 host devices,
// as the partitioner reports them, pinned (docs/TRAINING.md compares them with XLA's counts):
// data parallel moves only gradients, combined into one all-reduce with the loss; FSDP gathers
// each parameter once for use and reduce-scatters its gradient, never an activation; tensor
// parallel stays within Megatron's two all-reduces per layer each way, plus embedding and head.
// With AdamW (the whole training step), zero1 moves what data parallel moves, as a reduce-scatter
// of each gradient and an all-gather of each updated parameter.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "nn/capture.h"
#include "nn/plan.h"
#include "nn_test_util.h"
#include "runtime/session.h"

namespace tessera::nn {
namespace {

struct Expected {
  std::string plan;
  std::map<std::string, int64_t> counts;
};

spmd::Report report_of(const ShardingPlan& plan) {
  CausalLM model(testing::acceptance_config());
  ir::Module m("step");
  Programs p = capture(m, TrainingStep{model}.sharded(plan));
  return runtime::Session::host(4).compile(m, p.step).report();
}

std::string counts_string(const spmd::Report& r) {
  std::string s;
  for (const auto& [k, n] : r.counts()) s += fmt::format("{} {}; ", k, n);
  return s;
}

TEST(Collectives, PerPlanArePinned) {
  ir::Mesh line{"mesh", {{"data", 4}}, {}}, model{"mesh", {{"model", 4}}, {}},
      square{"mesh", {{"data", 2}, {"model", 2}}, {}};
  struct Case {
    ShardingPlan plan;
    std::map<std::string, int64_t> counts;
  };
  std::vector<Case> cases = {
      {data_parallel(line, "data"), {{"all_reduce", 1}}},
      {fsdp(line, "data"), {{"all_gather", 21}, {"reduce_scatter", 21}, {"all_reduce", 1}}},
      // zero1's gradients come out split, as its optimizer state is: each reduce-scattered.
      {zero1(line, "data"), {{"reduce_scatter", 21}, {"all_reduce", 1}}},
      // Megatron's 2 layers x (2 forward + 2 backward) all-reduces plus 4 for the vocabulary-split
      // head and its cross-entropy (row max, sum of exponentials, target logit; backward, the
      // head's input gradient summed over the vocabulary pieces; the max is a constant to
      // differentiation, ir::stop_gradient, so no count of its ties is reduced in the backward);
      // where a dot_general's small operand gathered moves fewer bytes than all-reducing its
      // partial result (the cost model's choice), 18 all-gathers and 7 all-reduces move 536,838
      // bytes per device.
      {tensor_parallel(model, "model"), {{"all_gather", 18}, {"all_reduce", 7}}},
      // The same on the 2-way model axis, and the gradients of the whole (norm, embedding) weights
      // over the 2-way data axis, combined into one (366,598 bytes per device).
      {tensor_parallel(square, "model", "data"), {{"all_gather", 10}, {"all_reduce", 12}}},
  };
  for (const Case& c : cases) {
    spmd::Report r = report_of(c.plan);
    fmt::print("{}: {}({} bytes per device)\n", c.plan.name, counts_string(r), r.bytes_per_device());
    EXPECT_EQ(r.counts(), c.counts) << c.plan.name << "\n" << r.to_string();
  }
}

// The whole AdamW training step: data parallel all-reduces the gradients (with the loss, one
// combined all-reduce); zero1 reduce-scatters each gradient, updates its shard of every parameter
// and moment, and all-gathers each parameter: per device the same bytes, give or take the loss.
TEST(Collectives, WeightUpdateShardingMovesWhatDataParallelMoves) {
  ir::Mesh line{"mesh", {{"data", 4}}, {}};
  auto report = [](const ShardingPlan& plan) {
    CausalLM model(testing::acceptance_config());
    ir::Module m("train");
    Programs p = capture(m, TrainingStep{model}.with(AdamW{}).sharded(plan));
    return runtime::Session::host(4).compile(m, p.train_step).report();
  };
  spmd::Report dp = report(data_parallel(line, "data")), z = report(zero1(line, "data"));
  fmt::print("dp: {}({} bytes per device)\nzero1: {}({} bytes per device)\n", counts_string(dp),
             dp.bytes_per_device(), counts_string(z), z.bytes_per_device());
  EXPECT_EQ(dp.counts(), (std::map<std::string, int64_t>{{"all_reduce", 1}})) << dp.to_string();
  EXPECT_EQ(z.counts(), (std::map<std::string, int64_t>{{"all_gather", 21}, {"reduce_scatter", 21}, {"all_reduce", 1}}))
      << z.to_string();
  EXPECT_NEAR(double(z.bytes_per_device()), double(dp.bytes_per_device()), 64.0);
}

}  // namespace
}  // namespace tessera::nn
