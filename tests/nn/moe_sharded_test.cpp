// Expert parallelism on 4 host devices: issue #6's configuration with MoE blocks (4 experts, top-1
// and top-2, capacity factor 0.5, so that tokens are dropped: 16 tokens x k choices per sequence
// meet 4 experts x 8k/4 slots, half as many) under the `ep` plan (experts split 4 ways, the batch
// over the same axis) and `dp,ep` (a 2 x 2 mesh: experts over `expert`, the batch over both).
// The loss and every gradient of @step equal the unsharded step from the reference interpreter,
// and the partitioned step moves tokens with exactly 2 all_to_alls per MoE layer forward and 2
// backward, each moving the capacity slots this device routes to experts on other devices.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "common/error_of.h"
#include "interp/interpreter.h"
#include "nn/capture.h"
#include "nn/moe.h"
#include "nn_test_util.h"
#include "runtime/session.h"

namespace tessera::nn {
namespace {

using namespace tessera::ir;

constexpr double kStepTolerance = 1e-5;  // sharded vs unsharded, one step (DESIGN.md §2)

Config moe_config(int64_t k) {
  Config c = testing::acceptance_config();
  c.experts = 4;
  c.top_k = k;
  c.capacity_factor = 0.5;
  c.aux_loss_coef = 0.1;  // large enough to matter in every router gradient
  return c;
}

struct EpCase {
  ShardingPlan plan;
  int64_t expert_axis;  // devices the experts are split over
};

std::vector<EpCase> ep_plans() {
  return {{expert_parallel(Mesh{"mesh", {{"expert", 4}}, {}}, "expert"), 4},
          {expert_parallel(Mesh{"mesh", {{"data", 2}, {"expert", 2}}, {}}, "expert", "data"), 2}};
}

std::vector<Literal> step_inputs(const Config& c, const testing::Batch& batch) {
  std::vector<Literal> in = init_parameters(c, 42);
  in.push_back(batch.tokens);
  in.push_back(batch.targets);
  return in;
}

void expect_ep_step_equals_unsharded(int64_t k) {
  Config c = moe_config(k);
  std::vector<Literal> in = step_inputs(c, testing::make_batch(c, 7));
  Module ref("reference");
  Programs rp = capture(ref, TrainingStep{CausalLM(c)});
  std::vector<Literal> want = interp::evaluate(ref, rp.step, in);
  runtime::Session s = runtime::Session::host(4);
  for (const EpCase& pc : ep_plans()) {
    SCOPED_TRACE(fmt::format("plan {}, top-{}", pc.plan.name, k));
    Module m("step");
    Programs p = capture(m, TrainingStep{CausalLM(c)}.sharded(pc.plan));
    runtime::CompiledProgram compiled = s.compile(m, p.step);
    std::vector<Literal> got = s.run_sharded(compiled, in);
    double worst = testing::expect_step_matches(got, want, p, compiled, pc.plan, kStepTolerance);

    // 2 all_to_alls per MoE layer forward (dispatch, combine) and 2 backward (their adjoints).
    const spmd::Report& r = compiled.report();
    EXPECT_EQ(r.count("all_to_all"), 4 * c.layers) << r.explain();
    EXPECT_EQ(s.compile(m, p.loss).report().count("all_to_all"), 2 * c.layers) << "the forward alone";
    // Each moves, per device, the capacity slots (filled or padding, as GShard's fixed-size
    // buffers) of this device's sequences bound for the experts of the other devices of its
    // expert group: groups x (E - E / n) x C tokens of d_model values.
    int64_t groups = c.batch / 4, capacity = moe_capacity(c.seq, c.experts, k, c.capacity_factor);
    int64_t off_device = groups * (c.experts - c.experts / pc.expert_axis) * capacity;
    for (const spmd::CollectiveRecord& rec : r.collectives) {
      if (rec.kind != "all_to_all") continue;
      EXPECT_EQ(rec.group_size, pc.expert_axis) << rec.origin;
      EXPECT_EQ(rec.bytes_per_device, off_device * c.d_model * int64_t(sizeof(float))) << rec.origin;
    }
    std::cout << fmt::format("  {:5} top-{}: worst relative error {:.1e}; {} token slots off each device per "
                             "all_to_all; collectives:",
                             pc.plan.name, k, worst, off_device);
    for (const auto& [kind, n] : r.counts()) std::cout << " " << kind << " " << n;
    std::cout << fmt::format(" ({} bytes per device)\n", r.bytes_per_device());
  }
}

TEST(ExpertParallel, Top1StepEqualsUnshardedWithExactAllToAlls) { expect_ep_step_equals_unsharded(1); }
TEST(ExpertParallel, Top2StepEqualsUnshardedWithExactAllToAlls) { expect_ep_step_equals_unsharded(2); }

TEST(ExpertParallel, PlanSplitsOnlyTheExperts) {
  Config c = moe_config(1);
  ShardingPlan ep = ep_plans()[1].plan;
  EXPECT_EQ(ep.name, "dp,ep");
  EXPECT_EQ(ep.expert_axis, "expert");
  std::vector<ParamSpec> specs = parameter_specs(c);
  for (const ParamSpec& p : specs) {
    bool expert = p.name.find(".moe.") != std::string::npos && p.name.find("router") == std::string::npos;
    Sharding s = ep.parameter(p);
    EXPECT_EQ(s.dims[0], expert ? DimSharding{"expert"} : DimSharding{}) << p.name;
  }
  EXPECT_EQ(ep.input({"tokens", i32({8, 16})}).dims[0], (DimSharding{"data", "expert"}));
  std::string e = tessera::testing::error_of([] { expert_parallel(Mesh{"mesh", {{"data", 4}}, {}}, "expert"); });
  EXPECT_NE(e.find("no axis 'expert'"), std::string::npos) << e;
}

}  // namespace
}  // namespace tessera::nn
