// Pipelines whose stages are groups of host devices (issue #16): each stage a sub-mesh of 2 (or 4)
// devices, every fragment partitioned by spmd for its stage and run there, values kept on the
// stage's devices as pieces. Pipeline x data parallel and pipeline x tensor parallel on 2 x 2 host
// devices give the unsharded accumulated step's loss and gradients (1e-5 relative: the sharded
// programs sum in another order) under GPipe, 1F1B, interleaved and zero-bubble H1, and six AdamW
// steps its parameters (1e-4); each stage's moments stay with its parameters on its own devices.
// Transfers move shards: the bytes between the stages of pp=2 x dp=2 are the sizes of the pieces
// the destination devices hold, half of each value on each.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "exec/accelerate.h"
#include "interp/interpreter.h"
#include "mpmd/fragment_trainer.h"
#include "nn/capture.h"
#include "nn/nn_test_util.h"
#include "pipeline_reference.h"
#include "pipeline_test_util.h"
#include "runtime/layout.h"
#include "schedule/schedule.h"
#include "support/error.h"

namespace tessera::mpmd {
namespace {

using schedule::Schedule;
using schedule::ScheduleKind;
using schedule::generate;
using schedule::interleaved;
using schedule::one_f_one_b;
using schedule::schedule_kind_name;
using schedule::zero_bubble_h1;

using testing::pipeline_adamw;
using testing::pipeline_config;
using testing::pipeline_initial_parameters;

constexpr double kStepTolerance = 1e-5;   // one step's loss and gradients
constexpr double kTrainTolerance = 1e-4;  // parameters after six AdamW steps
constexpr int64_t kSteps = 6;

const nn::testing::Batch& batch(int64_t t) { return testing::pipeline_batch(t); }

nn::ShardingPlan stage_dp() { return nn::data_parallel(ir::Mesh{"stage", {{"data", 2}}, {}}, "data"); }
nn::ShardingPlan stage_tp() { return nn::tensor_parallel(ir::Mesh{"stage", {{"model", 2}}, {}}, "model"); }
nn::ShardingPlan stage_grid() {
  return nn::tensor_parallel(ir::Mesh{"stage", {{"data", 2}, {"model", 2}}, {}}, "model", "data");
}

// The unsharded step's loss and gradients on step 1's batch.
std::vector<ir::Literal> reference_gradients(int64_t microbatches) {
  nn::CausalLM model(pipeline_config());
  ir::Module m("whole");
  nn::Programs p = nn::capture(m, nn::TrainingStep{model}.accumulate(microbatches));
  std::vector<ir::Literal> in = pipeline_initial_parameters();
  in.push_back(batch(1).tokens);
  in.push_back(batch(1).targets);
  interp::Options o;
  o.accelerate = exec::accelerate;
  return interp::evaluate(m, p.step, in, o);
}

// One step of `s` with every stage on the plan's devices: loss and gradients against the unsharded
// step's; returns the run.
FragmentPipelineRun expect_same_step(const nn::ShardingPlan& plan, const Schedule& s, const std::string& what) {
  ModelStep ms = model_step(nn::CausalLM(pipeline_config()), s.virtual_stages(), s.microbatches, plan);
  FragmentPipelineOptions o;
  for (size_t i = 0; i < ms.parameters.size(); ++i) o.wrt.push_back(i);
  o.split_backward = first_split_action(s).has_value();
  o.stage_mesh = plan.mesh.name;
  FragmentPipeline fp(*ms.module, ms.step(), ms.virtual_stages, s.stages, o);
  EXPECT_EQ(fp.session(0)->num_devices(), plan.mesh.num_devices()) << what;
  std::vector<ir::Literal> in = pipeline_initial_parameters();
  for (ir::Literal& x : ms.batch_inputs(batch(1).tokens, batch(1).targets)) in.push_back(std::move(x));
  FragmentPipelineRun r = fp.run(s, in);
  std::vector<ir::Literal> want = reference_gradients(s.microbatches);
  EXPECT_EQ(r.results.size(), want.size()) << what;
  double worst = 0;
  for (size_t i = 0; i < std::min(want.size(), r.results.size()); ++i) {
    double e = nn::testing::relative_error(r.results[i], want[i]);
    EXPECT_TRUE(e <= kStepTolerance) << what << ": " << (i == 0 ? std::string("loss") : ms.parameters[i - 1].name);
    worst = std::max(worst, e);
  }
  std::printf("%s: worst relative error of loss and gradients %.2g\n", what.c_str(), worst);
  return r;
}

// Six trainer steps; every step's loss against the reference's, then the parameters.
void expect_six_steps_match(const nn::ShardingPlan& plan, const Schedule& s, const std::string& what) {
  const testing::Reference& want = testing::pipeline_reference(s.microbatches, kSteps);
  FragmentTrainer trainer(nn::CausalLM(pipeline_config()), s, pipeline_initial_parameters(), pipeline_adamw(), plan);
  EXPECT_EQ(trainer.pipeline().devices_of(0), plan.mesh.num_devices());
  double worst_loss = 0, worst_param = 0, least_moved = 1e300;
  for (int64_t t = 1; t <= kSteps; ++t) {
    const ir::Literal& loss = trainer.step(batch(t).tokens, batch(t).targets).results.at(0);
    double e = nn::testing::relative_error(loss, want.losses[static_cast<size_t>(t - 1)]);
    EXPECT_TRUE(e <= kStepTolerance) << what << ": loss of step " << t;
    worst_loss = std::max(worst_loss, e);
  }
  std::vector<ir::Literal> got = trainer.parameters();
  ASSERT_EQ(got.size(), want.parameters.size());
  for (size_t i = 0; i < got.size(); ++i) {
    double e = nn::testing::relative_error(got[i], want.parameters[i]);
    EXPECT_TRUE(e <= kTrainTolerance) << what << ": parameter " << i;
    worst_param = std::max(worst_param, e);
    least_moved = std::min(least_moved, nn::testing::relative_error(got[i], pipeline_initial_parameters()[i]));
  }
  // The comparison means something only if training moved every parameter far beyond it.
  EXPECT_GT(least_moved, 10 * kTrainTolerance) << what;
  std::printf("%s: six AdamW steps, worst loss error %.2g, worst parameter error %.2g (each parameter moved >= %.2g)\n",
              what.c_str(), worst_loss, worst_param, least_moved);
}

TEST(PipelineTimesDataParallel, EveryScheduleGivesTheUnshardedStep) {
  for (ScheduleKind k : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB, ScheduleKind::kZeroBubbleH1})
    expect_same_step(stage_dp(), generate(k, 2, 4), fmt::format("pp=2 x dp=2 {}", schedule_kind_name(k)));
  expect_same_step(stage_dp(), interleaved(2, 4, 2), "pp=2 x dp=2 interleaved V=2");
}

TEST(PipelineTimesDataParallel, SixAdamWStepsOnTwoByTwoDevices) {
  expect_six_steps_match(stage_dp(), one_f_one_b(2, 4), "pp=2 x dp=2 1f1b M=4");
  expect_six_steps_match(stage_dp(), zero_bubble_h1(2, 4), "pp=2 x dp=2 zb-h1 M=4");
}

// The bytes between stages are the pieces the destination devices hold: each activation and each
// cotangent split over the two data-parallel devices of the receiving stage, half to each, so the
// sum is each value's size once — not once per device, as whole arrays would be.
TEST(PipelineTimesDataParallel, TransfersMoveShards) {
  Schedule s = one_f_one_b(2, 4);
  FragmentTrainer trainer(nn::CausalLM(pipeline_config()), s, pipeline_initial_parameters(), pipeline_adamw(),
                          stage_dp());
  const FragmentPipelineRun& run = trainer.step(batch(1).tokens, batch(1).targets);
  const FragmentPlan& plan = trainer.pipeline().plan();
  const ir::Mesh& mesh = *trainer.pipeline().stage_mesh();
  int64_t shards = 0, whole = 0;
  ASSERT_FALSE(plan.transfers.empty());
  for (const Transfer& t : plan.transfers) {
    const Fragment& consumer = plan.fragments[t.consumer];
    size_t k = 0;
    while (k < consumer.inputs.size() && !(consumer.inputs[k].kind == Binding::Kind::kValue &&
                                           consumer.inputs[k].index == t.value))
      ++k;
    ASSERT_LT(k, consumer.inputs.size());
    std::optional<ir::Sharding> layout = consumer.fn().arg_sharding(k);
    ASSERT_TRUE(layout.has_value()) << plan.values[t.value].name;
    const ir::Type& type = plan.values[t.value].type;
    EXPECT_EQ(ir::dim_shards(*layout, 0, mesh), 2) << plan.values[t.value].name << " is split over the batch";
    const int64_t element = ir::info(type.element).bytes;
    for (int64_t d = 0; d < mesh.num_devices(); ++d) {
      int64_t n = element;
      for (int64_t e : runtime::piece_box(type, *layout, mesh, d).extent) n *= e;
      shards += n;
    }
    int64_t n = element;
    for (int64_t e : type.shape) n *= e;
    whole += n;
  }
  EXPECT_EQ(run.transferred_bytes, shards);
  EXPECT_EQ(run.transferred_bytes, whole) << "each value's pieces add up to it once";
  // 4 microbatches x (1 activation + 1 cotangent) of f32 [2, 8, 32].
  EXPECT_EQ(run.transferred_bytes, 4 * 2 * 2 * 8 * 32 * 4);
}

TEST(PipelineTimesTensorParallel, StepAndSixAdamWStepsOnTwoByTwoDevices) {
  expect_same_step(stage_tp(), one_f_one_b(2, 4), "pp=2 x tp=2 1f1b");
  expect_six_steps_match(stage_tp(), one_f_one_b(2, 4), "pp=2 x tp=2 1f1b M=4");
  // Each device of a tensor-parallel stage holds less than its stage's whole parameters.
  FragmentTrainer trainer(nn::CausalLM(pipeline_config()), one_f_one_b(2, 4), pipeline_initial_parameters(),
                          pipeline_adamw(), stage_tp());
  for (int64_t st = 0; st < 2; ++st) {
    int64_t whole = 0;
    for (size_t i : trainer.stage_parameters(st))
      whole += static_cast<int64_t>(pipeline_initial_parameters()[i].bytes().size());
    EXPECT_LT(trainer.parameter_bytes(st), whole) << "stage " << st;
  }
}

// 3 devices per stage, which the model's 32 columns and 4 heads do not divide: the stages hold
// uneven (padded) pieces, and the update must hand its parameters and moments back in the
// layouts it took them in (left open, they came back whole and step 2 refused them).
TEST(PipelineTimesTensorParallel, UnevenSplitsOverThreeDevicesTrainSixSteps) {
  const nn::ShardingPlan three = nn::tensor_parallel(ir::Mesh{"stage", {{"model", 3}}, {}}, "model");
  expect_same_step(three, one_f_one_b(2, 4), "pp=2 x tp=3 1f1b");
  expect_six_steps_match(three, one_f_one_b(2, 4), "pp=2 x tp=3 1f1b M=4");
}

TEST(PipelineTimesTensorParallel, StagesOnATwoByTwoGridOfDevices) {
  // Each stage a 2-D group (data 2 x model 2): 2 stages on 8 host devices.
  expect_same_step(stage_grid(), one_f_one_b(2, 2), "pp=2 x (dp=2, tp=2) 1f1b");
}

TEST(PipelineTimesDataParallel, RefusesAMicrobatchTheGroupCannotSplit) {
  // 8 rows in 8 microbatches: one row, which 2 data-parallel devices cannot share.
  try {
    model_step(nn::CausalLM(pipeline_config()), 2, 8, stage_dp());
    ADD_FAILURE() << "accepted";
  } catch (const support::UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "pipeline of the CausalLM: a microbatch of 1 rows (8 / 8 microbatches) does not split over the 2 "
              "devices that share the batch in stage plan 'dp'");
  }
}

TEST(PipelineTimesDataParallel, RefusesAStagePlanThatShardsTheWeightUpdate) {
  try {
    model_step(nn::CausalLM(pipeline_config()), 2, 2, nn::zero1(ir::Mesh{"stage", {{"data", 2}}, {}}, "data"));
    ADD_FAILURE() << "accepted";
  } catch (const support::UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "pipeline of the CausalLM: stage plan 'zero1' shards the weight update apart from the parameters, which "
              "pipeline stages do not do; use dp or tp within stages");
  }
}

TEST(PipelineOfTheCausalLM, RefusesMoeBlocks) {
  // The stages pass the residual stream only: the MoE load-balancing loss would be dropped.
  nn::Config c = pipeline_config();
  c.experts = 2;
  try {
    model_step(nn::CausalLM(c), 2, 2, std::nullopt);
    ADD_FAILURE() << "accepted";
  } catch (const support::UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "pipeline of the CausalLM: MoE blocks (2 experts) are not supported; their load-balancing loss does not "
              "cross stages");
  }
}

}  // namespace
}  // namespace tessera::mpmd
