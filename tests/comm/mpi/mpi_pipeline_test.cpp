// Pipeline stages on MPI ranks (issue #16): the FragmentTrainer over 2 and 4 ranks gives bit for
// bit the losses and three AdamW steps' parameters of the same pipeline on host threads (the same
// fragments run in the same order on the same inputs; only the transport differs), for GPipe, 1F1B
// and zero-bubble H1, with one stage per rank and with two (then stage 0 -> 1 stays in the process),
// with stages of 2 host devices each, and (4 ranks) with each stage's 2 devices on a pair of ranks
// (pp=2 x dp=2 and pp=2 x tp=2), where each rank sends and receives exactly its pieces. A stage rank
// that fails makes every other rank fail at once naming it, also inside a stage of two ranks.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "comm/mpi/mpi_test_env.h"
#include "comm/mpi_communicator.h"
#include "mpmd/fragment_trainer.h"
#include "mpmd/pipeline_test_util.h"
#include "nn/model.h"
#include "nn/nn_test_util.h"
#include "schedule/schedule.h"
#include "support/error.h"

namespace tessera::mpmd {
namespace {

using schedule::ActionKind;
using schedule::Schedule;
using schedule::ScheduleKind;
using schedule::generate;
using schedule::one_f_one_b;

using testing::pipeline_adamw;
using testing::pipeline_config;
using testing::pipeline_initial_parameters;

constexpr int64_t kMicrobatches = 4;

nn::testing::Batch batch(int64_t t) { return nn::testing::make_batch(pipeline_config(), 100 + static_cast<uint64_t>(t)); }

// The stage counts these ranks divide (1 and 2 stages per rank).
std::vector<int64_t> stage_counts(int ranks) {
  std::vector<int64_t> out;
  for (int64_t p : {2, 4})
    if (p % ranks == 0) out.push_back(p);
  return out;
}

// Ends a test on every rank together: no rank starts the next while another still waits here.
void barrier() {
  comm::MpiWorld world(1);
  world.exchange_ranks("end of test", {});
}

void expect_same_training(const Schedule& schedule, const std::optional<nn::ShardingPlan>& plan, MpiRanks& ranks,
                          const std::string& what) {
  nn::CausalLM model(pipeline_config());
  FragmentTrainer host(model, schedule, pipeline_initial_parameters(), pipeline_adamw(), plan);
  FragmentTrainer mpi(model, schedule, pipeline_initial_parameters(), pipeline_adamw(), plan, &ranks);
  for (int64_t t = 1; t <= 3; ++t) {
    const nn::testing::Batch b = batch(t);
    const FragmentPipelineRun& h = host.step(b.tokens, b.targets);
    ir::Literal want = h.results[0];
    const int64_t want_bytes = h.transferred_bytes;
    const FragmentPipelineRun& r = mpi.step(b.tokens, b.targets);
    EXPECT_TRUE(r.results[0] == want) << what << ": loss of step " << t << ": " << r.results[0].get_double(0)
                                      << " against " << want.get_double(0);
    EXPECT_EQ(r.transferred_bytes, want_bytes) << what << ": bytes between stages in step " << t;
    // Every rank gets every stage's measurements.
    for (size_t s = 0; s < r.times.size(); ++s)
      EXPECT_GT(r.peak_store_bytes[s], 0) << what << ": stage " << s << " has no measurements here";
  }
  std::vector<ir::Literal> want = host.parameters(), got = mpi.parameters();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(got[i] == want[i]) << what << ": parameter " << i;
    EXPECT_FALSE(got[i] == pipeline_initial_parameters()[i]) << what << ": parameter " << i << " never moved";
  }
}

TEST(PipelineOnRanks, TrainerEqualsHostThreadsBitwise) {
  comm::MpiWorld world(1);
  MpiRanks ranks(world);
  for (int64_t P : stage_counts(ranks.size()))
    for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB, ScheduleKind::kZeroBubbleH1}) {
      Schedule schedule = generate(kind, P, kMicrobatches);
      expect_same_training(schedule, std::nullopt, ranks,
                           fmt::format("{} P={} on {} ranks", schedule.name, P, ranks.size()));
    }
  if (2 % ranks.size() == 0)  // stages of 2 host devices each (pp=2, dp=2)
    expect_same_training(one_f_one_b(2, kMicrobatches),
                         nn::data_parallel(ir::Mesh{"stage", {{"data", 2}}, {}}, "data"), ranks,
                         fmt::format("1f1b pp=2 x dp=2 on {} ranks", ranks.size()));
  barrier();
}

// What one rank's stage sent (SEND actions) and received (RECV actions) in the last step: the
// rank's own pieces (a rank sees only its own stage's transfer bytes).
std::pair<int64_t, int64_t> sent_and_received_here(const FragmentTrainer& t, const FragmentPipelineRun& r, int rank,
                                                   int ranks) {
  const Schedule& s = t.schedule();
  const auto st = static_cast<size_t>(stage_ranks(0, s.stages, ranks).count > 1 ? rank / (ranks / s.stages) : 0);
  int64_t sent = 0, received = 0;
  for (size_t k = 0; k < s.actions[st].size(); ++k) {
    if (s.actions[st][k].kind == ActionKind::kSend) sent += r.action_bytes[st][k];
    if (s.actions[st][k].kind == ActionKind::kRecv) received += r.action_bytes[st][k];
  }
  return {sent, received};
}

// 4 ranks, 2 stages: each stage's group of 2 devices split over a pair of ranks (stage 0 on ranks
// 0-1, stage 1 on 2-3), one device each, the stage's collectives among its pair only. Bitwise the
// host devices' training; between stages each rank sends and receives exactly the pieces of its
// device: a quarter of the bytes of the step's transfers with dp (every activation and cotangent
// split over the batch: f32 [2, 8, 32] per microbatch, half to each device), with tp each device's
// piece is the whole value (replicated over the model axis), sent by the replica of its position.
TEST(PipelineOnRanks, StagesOnRankPairsEqualHostDevicesBitwise) {
  comm::MpiWorld world(1);
  MpiRanks ranks(world);
  if (ranks.size() != 4) GTEST_SKIP() << "stages on rank pairs: run with 4 ranks (mpi_pipeline_np4)";
  const struct {
    const char* name;
    nn::ShardingPlan plan;
    int64_t step_bytes;  // transferred between stages in one step, all ranks together
  } cases[] = {
      {"dp", nn::data_parallel(ir::Mesh{"stage", {{"data", 2}}, {}}, "data"), kMicrobatches * 2 * 2 * 8 * 32 * 4},
      {"tp", nn::tensor_parallel(ir::Mesh{"stage", {{"model", 2}}, {}}, "model"),
       2 * kMicrobatches * 2 * 2 * 8 * 32 * 4},
  };
  for (const auto& c : cases) {
    const std::string what = fmt::format("1f1b pp=2 x {}=2 on 4 ranks (stages on rank pairs)", c.name);
    expect_same_training(one_f_one_b(2, kMicrobatches), c.plan, ranks, what);
    FragmentTrainer trainer(nn::CausalLM(pipeline_config()), one_f_one_b(2, kMicrobatches),
                            pipeline_initial_parameters(), pipeline_adamw(), c.plan, &ranks);
    const FragmentPipelineRun& r = trainer.step(batch(1).tokens, batch(1).targets);
    EXPECT_EQ(r.transferred_bytes, c.step_bytes) << what;
    auto [sent, received] = sent_and_received_here(trainer, r, ranks.rank(), ranks.size());
    EXPECT_EQ(sent, c.step_bytes / 4) << what << ": bytes rank " << ranks.rank() << " sent";
    EXPECT_EQ(received, c.step_bytes / 4) << what << ": bytes rank " << ranks.rank() << " received";
  }
  barrier();
}

// The last rank's stage fails (its batch has the wrong shape): it tells the others, whose waits
// on it end at once, long before the transfer timeout, each naming it. On 4 ranks it is done
// twice: one stage per rank, and pp=2 x dp=2 with the failing rank inside a stage of two ranks
// (its stage peer waits for it in the stage's collectives). Each in a world of its own: a world
// keeps the failures reported in it.
void expect_failure_named(int64_t P, const std::optional<nn::ShardingPlan>& plan) {
  comm::MpiWorld world(1);
  MpiRanks ranks(world);
  const int last = ranks.size() - 1;
  FragmentTrainer trainer(nn::CausalLM(pipeline_config()), one_f_one_b(P, kMicrobatches),
                          pipeline_initial_parameters(), pipeline_adamw(), plan, &ranks);
  nn::testing::Batch b = batch(1);
  if (ranks.rank() == last) b.targets = ir::Literal(ir::i32({8, 4}));
  const auto start = std::chrono::steady_clock::now();
  try {
    trainer.step(b.tokens, b.targets);
    FAIL() << "the run went through with a failed stage rank";
  } catch (const support::UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("tensor<2x4xi32>"), std::string::npos) << message;
    if (ranks.rank() != last) {
      EXPECT_NE(message.find(fmt::format("rank {} failed: ", last)), std::string::npos) << message;
    }
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << "the failure took as long as a timeout";
}

TEST(PipelineOnRanks, FailedStageRankStopsEveryRankNamingIt) {
  const int ranks = comm::MpiProcess::get().size();
  expect_failure_named(ranks == 1 ? 2 : ranks, std::nullopt);
  barrier();
}

TEST(PipelineOnRanks, FailedRankInsideAStageOfTwoRanksStopsEveryRankNamingIt) {
  if (comm::MpiProcess::get().size() != 4) GTEST_SKIP() << "stages on rank pairs: run with 4 ranks (mpi_pipeline_np4)";
  expect_failure_named(2, nn::data_parallel(ir::Mesh{"stage", {{"data", 2}}, {}}, "data"));
  barrier();
}

}  // namespace
}  // namespace tessera::mpmd
