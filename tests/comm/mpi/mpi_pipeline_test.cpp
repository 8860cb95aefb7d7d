// Pipeline stages on MPI ranks (issue #8 items 3 and 5 under MPI): run_pipeline and the
// PipelineTrainer over 2 and 4 ranks give bit for bit the loss, the gradients and three AdamW
// steps' parameters of the same pipeline on host threads (the same programs run in the same order
// on the same inputs; only the transport differs), for GPipe and 1F1B, with one stage per rank and
// with two (then stage 0 -> 1 stays in the rank's Mailbox). A stage rank that fails makes every
// other rank fail at once naming it; a stage rank that never runs makes the others fail within the
// transfer timeout naming it; ranks that do not divide the stages are refused alike on every rank.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>

#include "comm/mpi_communicator.h"
#include "comm/mpi/mpi_test_env.h"
#include "mpmd/generate.h"
#include "mpmd/mpi_transfer.h"
#include "mpmd/runtime.h"
#include "mpmd/stages.h"
#include "mpmd/trainer.h"
#include "nn/model.h"
#include "nn/nn_test_util.h"
#include "mpmd/pipeline_test_util.h"
#include "support/error.h"

namespace tessera::mpmd {
namespace {

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

TEST(PipelineOnRanks, RunEqualsHostThreadsBitwise) {
  comm::MpiWorld world(1);
  MpiRanks ranks(world);
  nn::CausalLM model(pipeline_config());
  const nn::testing::Batch b = batch(1);
  for (int64_t P : stage_counts(ranks.size()))
    for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB}) {
      StagedModel staged(model, P, kMicrobatches);
      Schedule schedule = generate(kind, P, kMicrobatches);
      const std::string what = fmt::format("{} P={} on {} ranks", schedule.name, P, ranks.size());
      PipelineResult host = run_pipeline(staged, schedule, pipeline_initial_parameters(), b.tokens, b.targets);
      RunOptions options;
      options.ranks = &ranks;
      PipelineResult mpi = run_pipeline(staged, schedule, pipeline_initial_parameters(), b.tokens, b.targets, options);
      EXPECT_TRUE(mpi.loss == host.loss) << what << ": loss " << mpi.loss.get_double(0) << " against "
                                         << host.loss.get_double(0);
      // Gradients stay where their parameters are: this rank's stages' are here, bitwise the host's.
      std::vector<bool> mine(staged.parameters().size(), false);
      for (int64_t s : local_stages(P, &ranks))
        for (int64_t vs = s; vs < P; vs += P)
          for (size_t i : staged.stage(vs).parameters) mine[i] = true;
      for (size_t i = 0; i < mine.size(); ++i) {
        if (mine[i]) EXPECT_TRUE(mpi.gradients[i] == host.gradients[i]) << what << ": gradient of " << staged.parameters()[i].name;
        else EXPECT_TRUE(mpi.gradients[i].bytes().empty()) << what << ": another rank's gradient " << i << " is here";
      }
      // Every rank gets every stage's measurements.
      ASSERT_EQ(mpi.stages.size(), static_cast<size_t>(P)) << what;
      for (int64_t s = 0; s < P; ++s) {
        const StageMeasurements& m = mpi.stages[static_cast<size_t>(s)];
        EXPECT_EQ(m.times.size(), schedule.actions[static_cast<size_t>(s)].size()) << what << ": stage " << s;
        EXPECT_EQ(m.peak_saved, host.stages[static_cast<size_t>(s)].peak_saved) << what << ": stage " << s;
      }
    }
  barrier();
}

TEST(PipelineOnRanks, TrainerEqualsHostThreadsBitwise) {
  comm::MpiWorld world(1);
  MpiRanks ranks(world);
  nn::CausalLM model(pipeline_config());
  for (int64_t P : stage_counts(ranks.size()))
    for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB}) {
      StagedModel staged(model, P, kMicrobatches);
      Schedule schedule = generate(kind, P, kMicrobatches);
      const std::string what = fmt::format("{} P={} on {} ranks", schedule.name, P, ranks.size());
      PipelineTrainer host(staged, schedule, pipeline_initial_parameters(), pipeline_adamw());
      RunOptions options;
      options.ranks = &ranks;
      PipelineTrainer mpi(staged, schedule, pipeline_initial_parameters(), pipeline_adamw(), options);
      EXPECT_EQ(static_cast<int64_t>(mpi.stages().size()), P / ranks.size()) << what;
      for (int64_t t = 1; t <= 3; ++t) {
        const nn::testing::Batch b = batch(t);
        ir::Literal want = host.step(b.tokens, b.targets).loss;
        ir::Literal got = mpi.step(b.tokens, b.targets).loss;
        EXPECT_TRUE(got == want) << what << ": loss of step " << t << ": " << got.get_double(0) << " against "
                                 << want.get_double(0);
      }
      std::vector<ir::Literal> want = host.parameters(), got = mpi.parameters();
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_TRUE(got[i] == want[i]) << what << ": parameter " << staged.parameters()[i].name;
        // They trained: equal parameters are not merely the initial ones.
        EXPECT_GT(nn::testing::relative_error(got[i], pipeline_initial_parameters()[i]), 1e-3) << what << ": " << staged.parameters()[i].name;
      }
      std::vector<StageSummary> hs = host.stage_summaries(), ms = mpi.stage_summaries();
      ASSERT_EQ(ms.size(), hs.size());
      for (size_t s = 0; s < ms.size(); ++s) {
        EXPECT_EQ(ms[s].rank, owner_rank(static_cast<int64_t>(s), P, ranks.size()));
        EXPECT_EQ(ms[s].parameter_bytes_per_device, hs[s].parameter_bytes_per_device) << what << ": stage " << s;
        EXPECT_EQ(ms[s].optimizer_bytes_per_device, hs[s].optimizer_bytes_per_device) << what << ": stage " << s;
      }
    }
  barrier();
}

// The last rank's stage fails (its batch has the wrong shape): it tells the others, whose waits
// on it end at once, long before the transfer timeout, each naming it.
TEST(PipelineOnRanks, FailedStageRankStopsEveryRankNamingIt) {
  comm::MpiWorld world(1);
  MpiRanks ranks(world);
  const int last = ranks.size() - 1;
  const int64_t P = ranks.size() == 1 ? 2 : ranks.size();
  nn::CausalLM model(pipeline_config());
  StagedModel staged(model, P, kMicrobatches);
  Schedule schedule = generate(ScheduleKind::kOneFOneB, P, kMicrobatches);
  nn::testing::Batch b = batch(1);
  if (ranks.rank() == last) b.tokens = ir::Literal(ir::i32({4, 8}));
  RunOptions options;
  options.ranks = &ranks;
  options.transfer_timeout = std::chrono::seconds(20);
  const auto start = std::chrono::steady_clock::now();
  try {
    run_pipeline(staged, schedule, pipeline_initial_parameters(), b.tokens, b.targets, options);
    FAIL() << "the run went through with a failed stage rank";
  } catch (const support::UserError& e) {
    const std::string message = e.what();
    if (ranks.rank() == last) {
      EXPECT_NE(message.find("tokens are tensor<4x8xi32>"), std::string::npos) << message;
    } else {
      EXPECT_NE(message.find(fmt::format("rank {} failed: ", last)), std::string::npos) << message;
      EXPECT_NE(message.find("tokens are tensor<4x8xi32>"), std::string::npos) << message;
    }
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << "the failure took as long as a timeout";
  barrier();
}

// The last rank never runs its stages (it hangs, as far as the others can tell): each other rank
// fails once its receive times out, naming the stage and the rank it waits for (rank r waits for
// the gradient of stage r + 1) — or, when that rank failed first, that rank and its reason. The
// rank next to the missing one names it.
TEST(PipelineOnRanks, MissingStageRankFailsWithinTheTimeoutNamingIt) {
  comm::MpiWorld world(1);
  MpiRanks ranks(world);
  if (ranks.size() == 1) GTEST_SKIP() << "one rank has no peer";
  const int me = ranks.rank(), last = ranks.size() - 1;
  const int64_t P = ranks.size();
  nn::CausalLM model(pipeline_config());
  StagedModel staged(model, P, kMicrobatches);
  Schedule schedule = generate(ScheduleKind::kGPipe, P, kMicrobatches);
  const nn::testing::Batch b = batch(1);
  if (me != last) {
    RunOptions options;
    options.ranks = &ranks;
    // Long enough for the forwards that do arrive, even under ASan on a shared 2-core machine (at
    // 300 ms a slow forward timed out first there, naming the stage before instead of after).
    options.transfer_timeout = std::chrono::milliseconds(2000);
    const auto start = std::chrono::steady_clock::now();
    try {
      run_pipeline(staged, schedule, pipeline_initial_parameters(), b.tokens, b.targets, options);
      FAIL() << "the run went through without its last stage";
    } catch (const support::UserError& e) {
      const std::string message = e.what();
      const std::string waits = fmt::format("vs {}) from stage {} (on rank {})", me + 1, me + 1, me + 1);
      EXPECT_NE(message.find(waits), std::string::npos) << message;
      if (me + 1 == last)
        EXPECT_NE(message.find(fmt::format("from stage {} (on rank {}): no value arrived within 2000 ms; stage {} runs "
                                           "on rank {} and has not sent it",
                                           P - 1, last, P - 1, last)),
                  std::string::npos)
            << message;
      else
        EXPECT_NE(message.find("within 2000 ms"), std::string::npos) << message;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(8));
  }
  barrier();
}

TEST(PipelineOnRanks, RanksThatDoNotDivideTheStagesAreRefused) {
  comm::MpiWorld world(1);
  MpiRanks ranks(world);
  if (2 % ranks.size() == 0) GTEST_SKIP() << "these ranks divide 2 stages";
  nn::CausalLM model(pipeline_config());
  StagedModel staged(model, 2, kMicrobatches);
  RunOptions options;
  options.ranks = &ranks;
  const nn::testing::Batch b = batch(1);
  try {
    run_pipeline(staged, generate(ScheduleKind::kOneFOneB, 2, kMicrobatches), pipeline_initial_parameters(), b.tokens, b.targets, options);
    FAIL() << "2 stages ran on " << ranks.size() << " ranks";
  } catch (const support::UserError& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("2 stages do not split evenly over {} ranks", ranks.size())),
              std::string::npos)
        << e.what();
  }
  barrier();
}

// The message tags of distinct transfers differ, and a field past its bits is refused.
TEST(PipelineOnRanks, TransferTagsAreDistinct) {
  std::set<int64_t> tags;
  for (int64_t from = 0; from < 4; ++from)
    for (Payload p : {Payload::kActivation, Payload::kGradient})
      for (int64_t mb = 0; mb < 8; ++mb)
        for (int64_t vs = 0; vs < 8; ++vs)
          for (uint64_t run : {0, 1, 2})
            EXPECT_TRUE(tags.insert(MpiRanks::tag(run, {from, (from + 1) % 4, p, mb, vs})).second);
  EXPECT_THROW(MpiRanks::tag(0, {0, 1, Payload::kActivation, int64_t{1} << 16, 0}), support::UserError);
}

}  // namespace
}  // namespace tessera::mpmd
