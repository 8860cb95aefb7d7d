// The pipeline runtime on host threads: every built-in schedule, on 2 and 4 stages and 4 and 8
// microbatches, gives the loss and gradients of the unsharded gradient-accumulation step (the
// interpreter on the whole model, nn::TrainingStep::accumulate(M)) within 1e-5 relative; each
// stage's measured peak of saved activations is the simulator's peak in flight; a schedule that
// drops a SEND fails within its timeout naming the RECV that waited for it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <ostream>
#include <regex>

#include "exec/accelerate.h"
#include "interp/interpreter.h"
#include "mpmd/generate.h"
#include "mpmd/runtime.h"
#include "mpmd/simulate.h"
#include "mpmd/stages.h"
#include "mpmd/svg.h"
#include "nn/capture.h"
#include "nn/nn_test_util.h"
#include "pipeline_test_util.h"
#include "support/error.h"

namespace tessera::mpmd {
namespace {

using testing::case_name;
using testing::pipeline_config;
using testing::ScheduleCase;

constexpr double kTolerance = 1e-5;


struct Data {
  std::vector<ir::Literal> parameters;
  ir::Literal tokens, targets;
};

const Data& data() {
  static const Data d = [] {
    nn::Config c = pipeline_config();
    nn::testing::Batch b = nn::testing::make_batch(c, 11);
    return Data{nn::init_parameters(c, 5), b.tokens, b.targets};
  }();
  return d;
}

// The unsharded twin: (loss, gradients...) of the accumulated step over M microbatches.
const std::vector<ir::Literal>& reference(int64_t microbatches) {
  static std::map<int64_t, std::vector<ir::Literal>> cache;
  auto it = cache.find(microbatches);
  if (it != cache.end()) return it->second;
  nn::CausalLM model(pipeline_config());
  ir::Module m("whole");
  nn::Programs p = nn::capture(m, nn::TrainingStep{model}.accumulate(microbatches));
  std::vector<ir::Literal> in = data().parameters;
  in.push_back(data().tokens);
  in.push_back(data().targets);
  interp::Options o;
  o.accelerate = exec::accelerate;
  return cache[microbatches] = interp::evaluate(m, p.step, in, o);
}

const StagedModel& staged(int64_t pieces, int64_t microbatches) {
  static std::map<std::pair<int64_t, int64_t>, std::unique_ptr<StagedModel>> cache;
  auto& slot = cache[{pieces, microbatches}];
  if (!slot) slot = std::make_unique<StagedModel>(nn::CausalLM(pipeline_config()), pieces, microbatches);
  return *slot;
}

class PipelineRun : public ::testing::TestWithParam<ScheduleCase> {};

TEST_P(PipelineRun, SameLossAndGradientsAsTheAccumulatedStep) {
  const ScheduleCase& c = GetParam();
  Schedule s = generate(c.kind, c.stages, c.microbatches, c.virtual_per_stage);
  const StagedModel& model = staged(s.virtual_stages(), c.microbatches);
  PipelineResult r = run_pipeline(model, s, data().parameters, data().tokens, data().targets);
  const std::vector<ir::Literal>& want = reference(c.microbatches);

  double worst = nn::testing::relative_error(r.loss, want[0]);
  EXPECT_LE(worst, kTolerance) << "loss";
  ASSERT_EQ(r.gradients.size() + 1, want.size());
  for (size_t i = 0; i < r.gradients.size(); ++i) {
    double e = nn::testing::relative_error(r.gradients[i], want[1 + i]);
    EXPECT_LE(e, kTolerance) << "gradient of " << model.parameters()[i].name;
    worst = std::max(worst, e);
  }

  // The measured peaks are the simulator's: both follow from each stage's order alone.
  Simulation sim = simulate(s, Costs{});
  std::string peaks, bytes;
  for (int64_t st = 0; st < c.stages; ++st) {
    const StageMeasurements& m = r.stages[static_cast<size_t>(st)];
    EXPECT_EQ(m.peak_saved, sim.peak_in_flight[static_cast<size_t>(st)]) << "stage " << st;
    if (c.kind == ScheduleKind::kGPipe) {
      EXPECT_EQ(m.peak_saved, c.microbatches) << "stage " << st;
    }
    if (c.kind == ScheduleKind::kOneFOneB) {
      EXPECT_LE(m.peak_saved, c.stages - st) << "stage " << st;
    }
    EXPECT_GT(m.peak_saved_bytes, 0);
    peaks += " " + std::to_string(m.peak_saved);
    bytes += " " + std::to_string(m.peak_saved_bytes);
  }
  std::printf("%s P=%ld M=%ld V=%ld: peak saved per stage%s; bytes%s; worst relative error %.2g\n", s.name.c_str(),
              long(c.stages), long(c.microbatches), long(c.virtual_per_stage), peaks.c_str(), bytes.c_str(), worst);
}

INSTANTIATE_TEST_SUITE_P(Schedules, PipelineRun, ::testing::ValuesIn(testing::all_schedule_cases()), case_name);

// Saved activations are what separates the schedules: GPipe holds every microbatch's input on
// every stage, 1F1B at most P - s, and the bytes follow (all inputs of one piece have one size).
TEST(PipelineMeasurements, OneFOneBHoldsFewerActivationBytesThanGPipe) {
  const StagedModel& model = staged(4, 8);
  PipelineResult g = run_pipeline(model, gpipe(4, 8), data().parameters, data().tokens, data().targets);
  PipelineResult f = run_pipeline(model, one_f_one_b(4, 8), data().parameters, data().tokens, data().targets);
  // One microbatch of 8 rows / 8 is one row: tokens i32 [1, 8] on stage 0, activations f32 [1, 8, 32].
  const std::vector<int64_t> one = {1 * 8 * 4, 1 * 8 * 32 * 4, 1 * 8 * 32 * 4, 1 * 8 * 32 * 4};
  for (size_t s = 0; s < 4; ++s) {
    EXPECT_EQ(g.stages[s].peak_saved_bytes, 8 * one[s]) << "stage " << s;
    EXPECT_EQ(f.stages[s].peak_saved_bytes, int64_t(4 - s) * one[s]) << "stage " << s;
  }
}

// The measured times are a timeline: in order on each stage, every RECV ending after its SEND
// started, and the SVG drawn from them has a box per compute action.
TEST(PipelineMeasurements, MeasuredTimesFormATimelineAndDraw) {
  Schedule s = one_f_one_b(2, 4);
  PipelineResult r = run_pipeline(staged(2, 4), s, data().parameters, data().tokens, data().targets);
  std::map<std::tuple<Payload, int64_t, int64_t>, Interval> sent;
  size_t compute = 0;
  for (size_t st = 0; st < 2; ++st) {
    const auto& times = r.stages[st].times;
    ASSERT_EQ(times.size(), s.actions[st].size());
    for (size_t i = 0; i < times.size(); ++i) {
      EXPECT_LE(times[i].start, times[i].end);
      if (i > 0) {
        EXPECT_LE(times[i - 1].end, times[i].start) << describe_at(int64_t(st), int64_t(i), s.actions[st][i]);
      }
      const Action& a = s.actions[st][i];
      if (a.kind == ActionKind::kSend) sent[{a.payload, a.microbatch, a.virtual_stage}] = times[i];
      if (a.is_compute()) ++compute;
    }
  }
  for (size_t st = 0; st < 2; ++st)
    for (size_t i = 0; i < s.actions[st].size(); ++i) {
      const Action& a = s.actions[st][i];
      if (a.kind != ActionKind::kRecv) continue;
      EXPECT_GE(r.stages[st].times[i].end, sent.at({a.payload, a.microbatch, a.virtual_stage}).start)
          << describe_at(int64_t(st), int64_t(i), a);
    }
  Simulation measured = measured_simulation(s, r);
  EXPECT_GT(measured.makespan, 0);
  EXPECT_GE(measured.bubble, 0);
  EXPECT_LT(measured.bubble, 1);
  EXPECT_EQ(measured.peak_in_flight, (std::vector<int64_t>{2, 1}));
  std::string svg = timeline_svg(s, measured, "1f1b measured");
  size_t rects = 0;
  for (size_t at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1)) ++rects;
  EXPECT_EQ(rects, 1 + compute);  // the background and one box per action
}

TEST(PipelineFailures, DroppedSendFailsNamingTheReceive) {
  // GPipe: stage 0 runs all its forwards before it waits, so stage 1's receive times out first.
  Schedule s = gpipe(2, 8);
  auto& list = s.actions[0];
  Action dropped{ActionKind::kSend, 0, 0, Payload::kActivation, 1};
  auto it = std::find(list.begin(), list.end(), dropped);
  ASSERT_NE(it, list.end());
  list.erase(it);

  // The validator refuses it before anything runs ...
  try {
    run_pipeline(staged(2, 8), s, data().parameters, data().tokens, data().targets);
    ADD_FAILURE() << "the validator accepted a schedule without a SEND";
  } catch (const support::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("RECV act(mb 0, vs 0) from stage 0"), std::string::npos) << e.what();
  }
  // ... and unvalidated, the runtime fails at the RECV within its timeout instead of hanging.
  RunOptions o;
  o.validate = false;
  o.transfer_timeout = std::chrono::milliseconds(300);
  auto start = std::chrono::steady_clock::now();
  try {
    run_pipeline(staged(2, 8), s, data().parameters, data().tokens, data().targets, o);
    ADD_FAILURE() << "a run without a SEND succeeded";
  } catch (const support::UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "stage 1 step 0 RECV act(mb 0, vs 0) from stage 0: no value arrived within 300 ms; stage 0 has no "
              "matching SEND in its list");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(PipelineFailures, DeadlockFailsNamingWhereTheSenderWaits) {
  // Stage 0 waits for a gradient before sending any activation: both stages wait on each other.
  Schedule s = gpipe(2, 4);
  auto& list = s.actions[0];
  auto recv = std::find_if(list.begin(), list.end(), [](const Action& a) { return a.kind == ActionKind::kRecv; });
  ASSERT_NE(recv, list.end());
  std::rotate(list.begin(), recv, recv + 1);
  RunOptions o;
  o.validate = false;
  o.transfer_timeout = std::chrono::milliseconds(200);
  try {
    run_pipeline(staged(2, 4), s, data().parameters, data().tokens, data().targets, o);
    ADD_FAILURE() << "a deadlocked schedule finished";
  } catch (const support::UserError& e) {
    // Either stage may time out first; whichever does names the other's stuck receive.
    std::printf("%s\n", e.what());
    EXPECT_TRUE(std::regex_search(std::string(e.what()),
                                  std::regex("^stage [01] step 0 RECV (act|grad)\\(mb \\d, vs [01]\\) from stage [01]: "
                                             "no value arrived within 200 ms; stage [01] is (stopped )?at step 0 RECV "
                                             "(act|grad)\\(mb \\d, vs [01]\\) from stage [01], before its SEND at "
                                             "step \\d+$")))
        << e.what();
  }
}

TEST(PipelineFailures, MissingInputStopsEveryStageAtOnce) {
  // Stage 1 loses the RECV of microbatch 0's activation: its forward fails naming what is missing,
  // and stage 0, waiting for a gradient that will never come, is stopped instead of timing out.
  Schedule s = gpipe(2, 4);
  auto& list = s.actions[1];
  list.erase(std::find(list.begin(), list.end(), Action{ActionKind::kRecv, 0, 0, Payload::kActivation, 0}));
  RunOptions o;
  o.validate = false;  // the validator would name it too; this is the runtime's own guard
  auto start = std::chrono::steady_clock::now();
  try {
    run_pipeline(staged(2, 4), s, data().parameters, data().tokens, data().targets, o);
    ADD_FAILURE() << "ran without an input";
  } catch (const support::UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "stage 1 step 0 F(mb 0, vs 1): the activation of F(mb 0, vs 0) is not on this stage (no action before "
              "it produced or received it)");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));  // the timeout is 60 s
}

TEST(PipelineFailures, RefusesAScheduleForAnotherCut) {
  try {
    run_pipeline(staged(4, 4), gpipe(2, 4), data().parameters, data().tokens, data().targets);
    ADD_FAILURE() << "accepted";
  } catch (const support::UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "mpmd::run_pipeline: schedule 'gpipe' has 2 stages x 1 virtual = 2 pieces, the model is cut into 4");
  }
}

TEST(StagedModel, EveryParameterBelongsToExactlyOnePiece) {
  const StagedModel& m = staged(4, 4);
  std::vector<int> owners(m.parameters().size(), 0);
  for (int64_t v = 0; v < 4; ++v)
    for (size_t i : m.stage(v).parameters) ++owners[i];
  for (size_t i = 0; i < owners.size(); ++i) EXPECT_EQ(owners[i], 1) << m.parameters()[i].name;
  EXPECT_TRUE(m.stage(0).embeds);
  EXPECT_EQ(m.parameters()[m.stage(0).parameters[0]].name, "embed");
  EXPECT_TRUE(m.stage(3).has_loss);
  EXPECT_EQ(m.parameters()[m.stage(3).parameters.back()].name, "head");
  EXPECT_EQ(m.stage(1).backward_input->num_parameters(), m.stage(1).parameters.size() + 2);  // input, cotangent
  EXPECT_EQ(m.stage(0).backward_input, nullptr);
}

TEST(StagedModel, RefusesACutThroughALayer) {
  try {
    StagedModel(nn::CausalLM(pipeline_config()), 3, 4);
    ADD_FAILURE() << "accepted";
  } catch (const support::UserError& e) {
    EXPECT_EQ(std::string(e.what()), "mpmd::StagedModel: 4 layers do not split into 3 pipeline stages of whole layers");
  }
  EXPECT_THROW(StagedModel(nn::CausalLM(pipeline_config()), 2, 3), support::UserError);
}

TEST(StagedModel, MicrobatchIsEveryMthRow) {
  ir::Literal batch = ir::Literal::from(ir::i32({6, 2}), {0, 1, 10, 11, 20, 21, 30, 31, 40, 41, 50, 51});
  EXPECT_EQ(microbatch_rows(batch, 1, 3), ir::Literal::from(ir::i32({2, 2}), {10, 11, 40, 41}));
  EXPECT_THROW(microbatch_rows(batch, 0, 4), support::UserError);
}

}  // namespace
}  // namespace tessera::mpmd
