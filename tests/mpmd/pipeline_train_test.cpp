// Training over a pipeline (issue #8 acceptance): for the 4-layer CausalLM, every built-in schedule
// on 2 and 4 stages with 4 and 8 microbatches takes six AdamW steps whose losses are those of the
// unsharded accumulated step (1e-5 relative) and whose parameters after the sixth step are its
// parameters (1e-4). Stages that are themselves SPMD-sharded — pipeline x data parallel and
// pipeline x tensor parallel on 2 x 2 host devices — give the unsharded loss and gradients and the
// same six-step parameters; each stage's moments stay with its parameters on its own devices.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <ostream>

#include "exec/accelerate.h"
#include "interp/interpreter.h"
#include "mpmd/generate.h"
#include "mpmd/runtime.h"
#include "mpmd/sharded_stage.h"
#include "mpmd/stages.h"
#include "mpmd/trainer.h"
#include "nn/capture.h"
#include "nn/nn_test_util.h"
#include "pipeline_reference.h"
#include "pipeline_test_util.h"
#include "support/error.h"

namespace tessera::mpmd {
namespace {

using testing::case_name;
using testing::pipeline_adamw;
using testing::pipeline_config;
using testing::pipeline_initial_parameters;
using testing::ScheduleCase;

constexpr double kStepTolerance = 1e-5;   // one step's loss and gradients
constexpr double kTrainTolerance = 1e-4;  // parameters after six AdamW steps
constexpr int64_t kSteps = 6;

const nn::testing::Batch& batch(int64_t t) { return testing::pipeline_batch(t); }
const testing::Reference& reference(int64_t microbatches) { return testing::pipeline_reference(microbatches, kSteps); }

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

// Six pipeline steps; every step's loss against the reference's, then the parameters.
void expect_six_steps_match(const StagedModel& staged, const Schedule& s, const std::string& what) {
  const testing::Reference& want = reference(s.microbatches);
  PipelineTrainer trainer(staged, s, pipeline_initial_parameters(), pipeline_adamw());
  double worst_loss = 0, worst_param = 0, least_moved = 1e300;
  for (int64_t t = 1; t <= kSteps; ++t) {
    const PipelineResult& r = trainer.step(batch(t).tokens, batch(t).targets);
    double e = nn::testing::relative_error(r.loss, want.losses[static_cast<size_t>(t - 1)]);
    EXPECT_LE(e, kStepTolerance) << what << ": loss of step " << t;
    worst_loss = std::max(worst_loss, e);
  }
  EXPECT_EQ(trainer.steps_taken(), kSteps);
  std::vector<ir::Literal> got = trainer.parameters();
  ASSERT_EQ(got.size(), want.parameters.size());
  for (size_t i = 0; i < got.size(); ++i) {
    double e = nn::testing::relative_error(got[i], want.parameters[i]);
    EXPECT_LE(e, kTrainTolerance) << what << ": parameter " << staged.parameters()[i].name;
    worst_param = std::max(worst_param, e);
    least_moved = std::min(least_moved, nn::testing::relative_error(got[i], pipeline_initial_parameters()[i]));
  }
  // The comparison means something only if training moved every parameter far beyond it.
  EXPECT_GT(least_moved, 10 * kTrainTolerance) << what;
  std::printf("%s: six AdamW steps, worst loss error %.2g, worst parameter error %.2g (each parameter moved >= %.2g)\n",
              what.c_str(), worst_loss, worst_param, least_moved);
}

class PipelineTraining : public ::testing::TestWithParam<ScheduleCase> {};

TEST_P(PipelineTraining, SixAdamWStepsGiveTheAccumulatedStepsParameters) {
  const ScheduleCase& c = GetParam();
  Schedule s = generate(c.kind, c.stages, c.microbatches, c.virtual_per_stage);
  StagedModel staged(nn::CausalLM(pipeline_config()), s.virtual_stages(), c.microbatches);
  expect_six_steps_match(staged, s, fmt::format("{} P={} M={} V={}", s.name, c.stages, c.microbatches,
                                                c.virtual_per_stage));
}

INSTANTIATE_TEST_SUITE_P(Schedules, PipelineTraining, ::testing::ValuesIn(testing::all_schedule_cases()), case_name);

// Stage plans over a group of 2 host devices per stage: 2 stages x 2 devices.
nn::ShardingPlan stage_dp() { return nn::data_parallel(ir::Mesh{"stage", {{"data", 2}}, {}}, "data"); }
nn::ShardingPlan stage_tp() { return nn::tensor_parallel(ir::Mesh{"stage", {{"model", 2}}, {}}, "model"); }

void expect_same_step(const StagedModel& staged, const Schedule& s, const std::string& what, int64_t devices = 2) {
  std::vector<StageState> stages = stage_states(staged, s.stages, pipeline_initial_parameters());
  for (const StageState& st : stages) EXPECT_EQ(st.devices(), devices);
  PipelineResult r = run_pipeline(staged, s, stages, batch(1).tokens, batch(1).targets);
  std::vector<ir::Literal> want = reference_gradients(s.microbatches);
  double worst = nn::testing::relative_error(r.loss, want[0]);
  EXPECT_LE(worst, kStepTolerance) << what << ": loss";
  for (size_t i = 0; i < r.gradients.size(); ++i) {
    double e = nn::testing::relative_error(r.gradients[i], want[1 + i]);
    EXPECT_LE(e, kStepTolerance) << what << ": gradient of " << staged.parameters()[i].name;
    worst = std::max(worst, e);
  }
  std::printf("%s: worst relative error of loss and gradients %.2g\n", what.c_str(), worst);
}

TEST(PipelineTimesDataParallel, EveryScheduleGivesTheUnshardedStep) {
  StagedModel two(nn::CausalLM(pipeline_config()), 2, 4, stage_dp());
  for (ScheduleKind k : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB, ScheduleKind::kZeroBubbleH1})
    expect_same_step(two, generate(k, 2, 4), fmt::format("pp=2 x dp=2 {}", schedule_kind_name(k)));
}

TEST(PipelineTimesDataParallel, SixAdamWStepsOnTwoByTwoDevices) {
  StagedModel staged(nn::CausalLM(pipeline_config()), 2, 4, stage_dp());
  expect_six_steps_match(staged, one_f_one_b(2, 4), "pp=2 x dp=2 1f1b M=4");
}

TEST(PipelineTimesTensorParallel, StepAndSixAdamWStepsOnTwoByTwoDevices) {
  StagedModel staged(nn::CausalLM(pipeline_config()), 2, 4, stage_tp());
  expect_same_step(staged, one_f_one_b(2, 4), "pp=2 x tp=2 1f1b");
  expect_six_steps_match(staged, one_f_one_b(2, 4), "pp=2 x tp=2 1f1b M=4");
  // Each device of a tensor-parallel stage holds less than its stage's whole parameters, and the
  // moments twice that, on the same devices.
  std::vector<StageState> stages = stage_states(staged, 2, pipeline_initial_parameters(), pipeline_adamw());
  for (const StageState& st : stages) {
    int64_t whole = 0;
    for (size_t i : st.parameter_indices()) whole += static_cast<int64_t>(pipeline_initial_parameters()[i].bytes().size());
    EXPECT_LT(st.parameter_bytes_per_device(), whole) << "stage " << st.stage();
    EXPECT_EQ(st.optimizer_bytes_per_device(), 2 * st.parameter_bytes_per_device());
  }
}

TEST(PipelineTimesTensorParallel, StagesOnATwoByTwoGridOfDevices) {
  // Each stage a 2-D group (data 2 x model 2): 2 stages on 8 host devices.
  StagedModel staged(nn::CausalLM(pipeline_config()), 2, 2,
                     nn::tensor_parallel(ir::Mesh{"stage", {{"data", 2}, {"model", 2}}, {}}, "model", "data"));
  expect_same_step(staged, one_f_one_b(2, 2), "pp=2 x (dp=2, tp=2) 1f1b", 4);
}

TEST(PipelineTimesDataParallel, RefusesAMicrobatchTheGroupCannotSplit) {
  // 8 rows in 8 microbatches: one row, which 2 data-parallel devices cannot share.
  try {
    StagedModel(nn::CausalLM(pipeline_config()), 2, 8, stage_dp());
    ADD_FAILURE() << "accepted";
  } catch (const support::UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "mpmd::StagedModel: a microbatch of 1 rows (8 / 8 microbatches) does not split over the 2 devices "
              "that share the batch in stage plan 'dp'");
  }
}

TEST(PipelineTrainerErrors, RefusesAScheduleForAnotherCut) {
  StagedModel staged(nn::CausalLM(pipeline_config()), 4, 4);
  try {
    PipelineTrainer(staged, one_f_one_b(2, 4), pipeline_initial_parameters(), pipeline_adamw());
    ADD_FAILURE() << "accepted";
  } catch (const support::UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "mpmd::PipelineTrainer: schedule '1f1b' has 2 stages x 1 virtual = 2 pieces, the model is cut into 4");
  }
}

}  // namespace
}  // namespace tessera::mpmd
