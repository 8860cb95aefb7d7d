// Training on the program form (fragment_trainer.h, issue #16): the CausalLM's step as named
// computations, differentiated once, cut into fragments and run under GPipe, 1F1B, interleaved
// (V = 2) and zero-bubble H1 (split backward) takes AdamW steps whose losses and parameters are
// bit for bit those of nn::TrainingStep{model}.accumulate(M).with(adamw), without compiling
// anything after the trainer is made. A counting test: every op of the whole step — each forward op
// of each microbatch and each transposed op — runs exactly once per step (nothing is recomputed).
#include <gtest/gtest.h>

#include <cmath>

#include "exec/executable.h"
#include "mpmd/fragment_trainer.h"
#include "pipeline_reference.h"
#include "pipeline_test_util.h"
#include "schedule/schedule.h"
#include "support/memory.h"

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

Schedule schedule_of(const ScheduleCase& c) { return generate(c.kind, c.stages, c.microbatches, c.virtual_per_stage); }

class ProgramFormTraining : public ::testing::TestWithParam<ScheduleCase> {};

TEST_P(ProgramFormTraining, StepsEqualTheAccumulatedStepsBitForBit) {
  const ScheduleCase& c = GetParam();
  const testing::Reference& want = testing::pipeline_reference(c.microbatches, kSteps);
  FragmentTrainer trainer(nn::CausalLM(pipeline_config()), schedule_of(c), pipeline_initial_parameters(),
                          pipeline_adamw());
  const int64_t compiled = exec::Executable::compilations();
  for (int64_t t = 1; t <= kSteps; ++t) {
    const ir::Literal& loss = trainer.step(pipeline_batch(t).tokens, pipeline_batch(t).targets).results[0];
    EXPECT_TRUE(std::isfinite(loss.get_double(0))) << "step " << t;
    EXPECT_TRUE(loss == want.losses[static_cast<size_t>(t - 1)])
        << "step " << t << ": loss " << loss.get_double(0) << ", accumulated " << want.losses[t - 1].get_double(0);
  }
  EXPECT_EQ(exec::Executable::compilations(), compiled) << "a step compiled something";
  EXPECT_EQ(trainer.steps_taken(), kSteps);
  std::vector<ir::Literal> got = trainer.parameters();
  ASSERT_EQ(got.size(), want.parameters.size());
  const std::vector<nn::ParamSpec> specs = nn::parameter_specs(pipeline_config());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(got[i] == want.parameters[i]) << specs[i].name << " differs after " << kSteps << " steps";
    EXPECT_FALSE(got[i] == pipeline_initial_parameters()[i]) << specs[i].name << " never moved";
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, ProgramFormTraining,
                         ::testing::Values(ScheduleCase{ScheduleKind::kGPipe, 2, 4},
                                           ScheduleCase{ScheduleKind::kOneFOneB, 2, 4},
                                           ScheduleCase{ScheduleKind::kOneFOneB, 4, 8},
                                           ScheduleCase{ScheduleKind::kInterleaved, 2, 4, 2},
                                           ScheduleCase{ScheduleKind::kZeroBubbleH1, 2, 4},
                                           ScheduleCase{ScheduleKind::kZeroBubbleH1, 4, 8}),
                         testing::case_name);

bool cheap_kind(ir::OpKind k) {
  using K = ir::OpKind;
  return k == K::Constant || k == K::Iota || k == K::SdyConstant || k == K::BroadcastInDim || k == K::Reshape ||
         k == K::Convert || k == K::Transpose;
}

size_t dots(const ir::Function& fn) {
  size_t n = 0;
  for (const auto& op : fn.body().ops()) n += op->kind() == ir::OpKind::DotGeneral;
  return n;
}

// One step under `c`: how many times each op of the whole step ran (through the fragments that hold
// it, times their runs in the step). Every op runs once but cheap ones (fragments.h rule 2: each
// fragment computes its own copy), and the whole step holds each microbatch's forward and
// transpose once, so "once" is once per microbatch. Returns the matrix products run.
size_t expect_every_op_once(const ScheduleCase& c) {
  FragmentTrainer trainer(nn::CausalLM(pipeline_config()), schedule_of(c), pipeline_initial_parameters(),
                          pipeline_adamw());
  const FragmentPipelineRun& run = trainer.step(pipeline_batch(1).tokens, pipeline_batch(1).targets);
  const FragmentPipeline& fp = trainer.pipeline();
  const auto& ops = fp.whole().body().ops();
  std::vector<int64_t> runs(ops.size(), 0);
  size_t executed_dots = 0;
  for (size_t f = 0; f < fp.plan().fragments.size(); ++f) {
    const Fragment& fr = fp.plan().fragments[f];
    for (size_t pos : fr.ops) runs.at(pos) += run.fragment_runs[f];
    executed_dots += dots(fr.fn()) * static_cast<size_t>(run.fragment_runs[f]);
  }
  size_t forward = 0, transposed = 0, other = 0;
  for (size_t pos = 0; pos + 1 < ops.size(); ++pos) {  // the return left out
    const ir::Op& op = *ops[pos];
    auto o = origin_of(op);
    if (runs[pos] == 0 && cheap_kind(op.kind())) continue;
    EXPECT_EQ(runs[pos], 1) << "op " << pos << " (" << ir::spelling(op.kind()) << ", "
                            << (o ? o->to_string() : std::string("glue")) << ")";
    if (!o) other++;
    else if (o->transpose) transposed++;
    else forward++;
  }
  EXPECT_GT(forward, 0u);
  EXPECT_GT(transposed, forward);  // the backward has more ops than the forward
  EXPECT_EQ(executed_dots, dots(fp.whole())) << "each matrix product of the whole step runs once";
  if (c.kind == ScheduleKind::kZeroBubbleH1) {  // the transposes are split: W holds weight products
    size_t weight_dots = 0, input_dots = 0;
    for (size_t f = 0; f < fp.plan().fragments.size(); ++f) {
      if (fp.role(f).kind == FragmentRole::Kind::kWeight) weight_dots += dots(fp.plan().fragments[f].fn());
      if (fp.role(f).kind == FragmentRole::Kind::kBackward) input_dots += dots(fp.plan().fragments[f].fn());
    }
    EXPECT_GT(weight_dots, 0u);
    EXPECT_GT(input_dots, 0u);
  }
  return executed_dots;
}

TEST(ProgramFormTraining, EveryOpRunsOncePerMicrobatchIn1F1BAndZeroBubble) {
  const ScheduleCase one_f_one_b{ScheduleKind::kOneFOneB, 2, 4};
  size_t program_form = expect_every_op_once(one_f_one_b);
  size_t zero_bubble = expect_every_op_once({ScheduleKind::kZeroBubbleH1, 2, 4});
  EXPECT_EQ(zero_bubble, program_form) << "BI and W together run the transpose once";

}

// Every microbatch's forward of a virtual stage is one program, and so is its backward: they share
// one compiled program and its arena, so the programs compiled, and under 1F1B the bytes held at
// the peak, do not grow with the microbatches (each fragment had its own until 2026-12-07: a 1F1B
// step of 16 microbatches held 113 MiB where 4 held 81).
TEST(ProgramFormTraining, MicrobatchesShareTheirStagesPrograms) {
  std::vector<size_t> programs;
  std::vector<int64_t> compiled, peak;
  for (int64_t m : {2, 4, 8}) {
    support::reset_peak_bytes_held();
    const int64_t held = support::bytes_held(), before = exec::Executable::compilations();
    FragmentTrainer trainer(nn::CausalLM(pipeline_config()), generate(ScheduleKind::kOneFOneB, 2, m),
                            pipeline_initial_parameters(), pipeline_adamw());
    trainer.step(pipeline_batch(1).tokens, pipeline_batch(1).targets);
    programs.push_back(trainer.pipeline().programs_compiled());
    compiled.push_back(exec::Executable::compilations() - before);
    peak.push_back(support::peak_bytes_held() - held);
    EXPECT_LT(programs.back(), trainer.pipeline().plan().fragments.size()) << m << " microbatches";
  }
  EXPECT_EQ(programs[0], programs[1]);
  EXPECT_EQ(programs[1], programs[2]);
  EXPECT_EQ(compiled[0], compiled[2]) << "compiles per trainer, 2 and 8 microbatches";
  EXPECT_LE(peak[2], peak[0]) << "peak bytes held, 8 microbatches against 2 (the batch is the same)";
}

}  // namespace
}  // namespace tessera::mpmd
