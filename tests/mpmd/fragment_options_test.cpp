// The trainer options pipeline plans take besides the schedule (issue #21, fragment_trainer.h):
// mixed precision (bf16 compute, f32 master weights and AdamW state) takes the accumulated
// mixed-precision step's AdamW steps bit for bit, and what crosses between stages is the residual
// stream and its cotangent, whose type mixed precision keeps f32 (docs/TRAINING.md), counted;
// rematerialization (each backward recomputes its stage's forward) takes the same steps bit for bit
// with fewer activation bytes saved on every stage.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>

#include "mpmd/fragment_trainer.h"
#include "pipeline_reference.h"
#include "pipeline_test_util.h"
#include "schedule/schedule.h"

namespace tessera::mpmd {
namespace {

using schedule::Schedule;
using schedule::ScheduleKind;
using schedule::generate;

using testing::pipeline_adamw;
using testing::pipeline_batch;
using testing::pipeline_config;
using testing::pipeline_initial_parameters;
using testing::ScheduleCase;

constexpr int64_t kSteps = 3;

nn::Config mixed_config() {
  nn::Config c = pipeline_config();
  c.compute = ir::ElementType::bf16;
  return c;
}

Schedule schedule_of(const ScheduleCase& c) { return generate(c.kind, c.stages, c.microbatches, c.virtual_per_stage); }

// Bytes of the values the plan moves between stages, by element type: each transfer moves its
// value once per run (one-device stages: a whole array).
std::map<ir::ElementType, int64_t> planned_transfer_bytes(const FragmentPlan& plan) {
  std::map<ir::ElementType, int64_t> out;
  for (const Transfer& t : plan.transfers) {
    const ir::Type& type = plan.values[t.value].type;
    out[type.element] += type.num_elements() * ir::info(type.element).bytes;
  }
  return out;
}

class MixedPrecisionPipeline : public ::testing::TestWithParam<ScheduleCase> {};

TEST_P(MixedPrecisionPipeline, StepsEqualTheAccumulatedMixedPrecisionStepsBitForBit) {
  const ScheduleCase& c = GetParam();
  const testing::Reference& want = testing::pipeline_reference(c.microbatches, kSteps, ir::ElementType::bf16);
  const testing::Reference& f32 = testing::pipeline_reference(c.microbatches, kSteps);
  FragmentTrainer trainer(nn::CausalLM(mixed_config()), schedule_of(c), pipeline_initial_parameters(),
                          pipeline_adamw());
  // The fragments compute their matrix products in bf16.
  size_t bf16_dots = 0;
  for (const Fragment& f : trainer.pipeline().plan().fragments)
    for (const auto& op : f.fn().body().ops())
      bf16_dots += op->kind() == ir::OpKind::DotGeneral && op->result_types()[0].element == ir::ElementType::bf16;
  EXPECT_GT(bf16_dots, 0u);
  for (int64_t t = 1; t <= kSteps; ++t) {
    const ir::Literal& loss = trainer.step(pipeline_batch(t).tokens, pipeline_batch(t).targets).results[0];
    const auto i = static_cast<size_t>(t - 1);
    EXPECT_TRUE(std::isfinite(loss.get_double(0))) << "step " << t;
    EXPECT_TRUE(loss == want.losses[i]) << "step " << t << ": loss " << loss.get_double(0)
                                        << ", accumulated bf16 step " << want.losses[i].get_double(0);
    EXPECT_FALSE(loss == f32.losses[i]) << "step " << t << ": the f32 step's loss (did it compute in bf16?)";
  }
  std::vector<ir::Literal> got = trainer.parameters();
  ASSERT_EQ(got.size(), want.parameters.size());
  const std::vector<nn::ParamSpec> specs = nn::parameter_specs(pipeline_config());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].type().element, ir::ElementType::f32) << specs[i].name << ": master weights are f32";
    EXPECT_TRUE(got[i] == want.parameters[i]) << specs[i].name << " differs after " << kSteps << " steps";
    EXPECT_FALSE(got[i] == pipeline_initial_parameters()[i]) << specs[i].name << " never moved";
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, MixedPrecisionPipeline,
                         ::testing::Values(ScheduleCase{ScheduleKind::kOneFOneB, 2, 4},
                                           ScheduleCase{ScheduleKind::kInterleaved, 2, 4, 2},
                                           ScheduleCase{ScheduleKind::kZeroBubbleH1, 2, 4}),
                         testing::case_name);

// What crosses between stages is the residual stream (forward) and its cotangent (backward), which
// mixed precision keeps in f32 (docs/TRAINING.md: its sums lose bits in bf16; the matmuls' bf16
// values stay inside the stages): the same bytes as f32 training, counted value by value. A stage
// boundary moved to a bf16 value would show here as a bf16 transfer and fewer bytes.
TEST(MixedPrecisionPipeline, TransfersCarryTheF32ResidualStream) {
  const ScheduleCase c{ScheduleKind::kOneFOneB, 2, 4};
  FragmentTrainer f32(nn::CausalLM(pipeline_config()), schedule_of(c), pipeline_initial_parameters(), pipeline_adamw());
  FragmentTrainer bf16(nn::CausalLM(mixed_config()), schedule_of(c), pipeline_initial_parameters(), pipeline_adamw());
  const int64_t f32_bytes = f32.step(pipeline_batch(1).tokens, pipeline_batch(1).targets).transferred_bytes;
  const int64_t bf16_bytes = bf16.step(pipeline_batch(1).tokens, pipeline_batch(1).targets).transferred_bytes;
  const nn::Config cfg = pipeline_config();
  // M activations forward and M cotangents backward of f32 [batch / M, seq, d_model].
  const int64_t residual = (cfg.batch / c.microbatches) * cfg.seq * cfg.d_model * 4;
  const std::map<ir::ElementType, int64_t> want{{ir::ElementType::f32, 2 * c.microbatches * residual}};
  EXPECT_EQ(planned_transfer_bytes(f32.pipeline().plan()), want);
  EXPECT_EQ(planned_transfer_bytes(bf16.pipeline().plan()), want);
  EXPECT_EQ(f32_bytes, 2 * c.microbatches * residual);
  EXPECT_EQ(bf16_bytes, 2 * c.microbatches * residual);
}

class RematPipeline : public ::testing::TestWithParam<ScheduleCase> {};

TEST_P(RematPipeline, RecomputesTheForwardBitForBitAndSavesLess) {
  const ScheduleCase& c = GetParam();
  const testing::Reference& want = testing::pipeline_reference(c.microbatches, kSteps);
  FragmentTrainerOptions remat;
  remat.remat = true;
  FragmentTrainer saving(nn::CausalLM(pipeline_config()), schedule_of(c), pipeline_initial_parameters(),
                         pipeline_adamw());
  FragmentTrainer recomputing(nn::CausalLM(pipeline_config()), schedule_of(c), pipeline_initial_parameters(),
                              pipeline_adamw(), std::nullopt, nullptr, remat);
  // The recomputation is in the backward fragments: they hold more matrix products than without it.
  auto backward_dots = [](const FragmentPipeline& fp) {
    size_t n = 0;
    for (size_t f = 0; f < fp.plan().fragments.size(); ++f)
      if (fp.role(f).kind != FragmentRole::Kind::kForward && fp.role(f).kind != FragmentRole::Kind::kGlue)
        for (const auto& op : fp.plan().fragments[f].fn().body().ops()) n += op->kind() == ir::OpKind::DotGeneral;
    return n;
  };
  EXPECT_GT(backward_dots(recomputing.pipeline()), backward_dots(saving.pipeline()));
  std::vector<int64_t> peak_saving, peak_recomputing;
  for (int64_t t = 1; t <= kSteps; ++t) {
    const FragmentPipelineRun& a = saving.step(pipeline_batch(t).tokens, pipeline_batch(t).targets);
    peak_saving = a.peak_saved_bytes;
    const FragmentPipelineRun& b = recomputing.step(pipeline_batch(t).tokens, pipeline_batch(t).targets);
    peak_recomputing = b.peak_saved_bytes;
    const auto i = static_cast<size_t>(t - 1);
    EXPECT_TRUE(b.results[0] == want.losses[i]) << "step " << t << ": loss " << b.results[0].get_double(0)
                                               << ", accumulated step " << want.losses[i].get_double(0);
  }
  // What a stage still saves is its virtual stages' input activations, f32 [batch / M, seq, d_model]
  // each (none for virtual stage 0, whose input is the tokens, a step input).
  const nn::Config cfg = pipeline_config();
  const int64_t activation = (cfg.batch / c.microbatches) * cfg.seq * cfg.d_model * 4;
  ASSERT_EQ(peak_recomputing.size(), static_cast<size_t>(c.stages));
  for (size_t st = 0; st < peak_recomputing.size(); ++st) {
    std::cout << "stage " << st << ": peak saved activations " << peak_saving[st] << " B, with remat "
              << peak_recomputing[st] << " B\n";
    EXPECT_EQ(peak_recomputing[st] % activation, 0) << "stage " << st;
    EXPECT_EQ(peak_recomputing[st] == 0, st == 0 && c.virtual_per_stage == 1) << "stage " << st;
    EXPECT_LT(peak_recomputing[st], peak_saving[st]) << "stage " << st;
  }
  std::vector<ir::Literal> got = recomputing.parameters();
  ASSERT_EQ(got.size(), want.parameters.size());
  const std::vector<nn::ParamSpec> specs = nn::parameter_specs(pipeline_config());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(got[i] == want.parameters[i]) << specs[i].name << " differs after " << kSteps << " steps";
}

INSTANTIATE_TEST_SUITE_P(Schedules, RematPipeline,
                         ::testing::Values(ScheduleCase{ScheduleKind::kGPipe, 2, 4},
                                           ScheduleCase{ScheduleKind::kOneFOneB, 2, 4},
                                           ScheduleCase{ScheduleKind::kInterleaved, 2, 4, 2},
                                           ScheduleCase{ScheduleKind::kZeroBubbleH1, 2, 4}),
                         testing::case_name);

}  // namespace
}  // namespace tessera::mpmd
