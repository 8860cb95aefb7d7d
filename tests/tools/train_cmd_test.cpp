// `tessera train` end to end on a small model and corpus: the loss falls, the per-device table is
// printed, and a checkpoint written under FSDP on 4 devices resumes under tensor parallel on 2
// with the same next-step loss as the unbroken run. Pipeline plans (pp=P[,dp=D][,tp=T]) train with
// the losses of the accumulated step on one device, print the per-stage table and the bubble, and
// draw the measured timeline. Context parallelism (ctx=4) trains with one device's losses.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include "common/error_of.h"
#include "common/temp_dir.h"
#include "tools/train_test_util.h"
#include "tools/tessera/train_cmd.h"
#include "tools/tessera/train_data.h"

namespace tessera::tools {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

TEST(TrainData, ABoxOfABatchIsTheSliceOfTheWholeBatch) {
  std::string text = corpus_text();
  Batches data{text, 8, 16, 5};
  auto [x, y] = data.at(3);
  // Rows 2..6 and columns 4..15: what a rank holding those rows builds alone.
  for (bool targets : {false, true}) {
    const ir::Literal& whole = targets ? y : x;
    ir::Literal box = data.box(3, targets, {2, 4}, {5, 12});
    ASSERT_EQ(box.shape(), (std::vector<int64_t>{5, 12}));
    for (int64_t r = 0; r < 5; ++r)
      for (int64_t s = 0; s < 12; ++s)
        ASSERT_EQ(box.get_int(r * 12 + s), whole.get_int((2 + r) * 16 + 4 + s)) << "row " << r << " column " << s;
  }
  EXPECT_NE(testing::error_of([&] { data.box(3, false, {6, 0}, {3, 16}); }).find("is outside a batch of 8x16"),
            std::string::npos);
}

TEST(TrainCommand, LossFallsAndTheTableIsPrinted) {
  TempDir dir;
  TrainCommand c = small(write_corpus(dir.path));
  c.steps = 30;
  std::ostringstream out;
  ASSERT_EQ(train_command(c, out), 0);
  std::string s = out.str();
  EXPECT_LT(loss_at(s, 30), loss_at(s, 1) - 1.0) << s;
  EXPECT_NE(s.find("per device (4 devices, plan dp)"), std::string::npos) << s;
  EXPECT_NE(s.find("all_reduce"), std::string::npos) << s;
}

TEST(TrainCommand, FsdpCheckpointResumesUnderTensorParallelOnTwoDevices) {
  TempDir dir;
  TrainCommand unbroken = small(write_corpus(dir.path));
  unbroken.plan = "fsdp";
  unbroken.steps = 4;
  std::ostringstream a;
  ASSERT_EQ(train_command(unbroken, a), 0);

  TrainCommand first = unbroken;
  first.steps = 3;
  first.save = (dir.path / "ckpt").string();
  std::ostringstream b;
  ASSERT_EQ(train_command(first, b), 0);
  TrainCommand resumed = small(dir.path / "corpus.txt");
  resumed.plan = "tp";
  resumed.devices = 2;
  resumed.steps = 1;
  resumed.resume = first.save;
  std::ostringstream c;
  ASSERT_EQ(train_command(resumed, c), 0);
  EXPECT_NEAR(loss_at(c.str(), 4), loss_at(a.str(), 4), 1e-4 * loss_at(a.str(), 4)) << c.str();
}

// zero1 (the weight update sharded) trains as dp does: its losses equal dp's, and its checkpoint
// (moments saved from their shards) resumes under dp as the unbroken zero1 run continues.
TEST(TrainCommand, Zero1EqualsDataParallelAndItsCheckpointResumesUnderDp) {
  TempDir dir;
  TrainCommand dp = small(write_corpus(dir.path));
  dp.steps = 4;
  const std::string a = run(dp);
  TrainCommand z = dp;
  z.plan = "zero1";
  const std::string b = run(z);
  EXPECT_NE(b.find("reduce_scatter"), std::string::npos) << b;
  for (int step : {1, 4}) EXPECT_NEAR(loss_at(b, step), loss_at(a, step), 1e-5 * loss_at(a, step));

  TrainCommand first = z;
  first.steps = 3;
  first.save = (dir.path / "ckpt").string();
  run(first);
  TrainCommand resumed = small(dir.path / "corpus.txt");
  resumed.steps = 1;
  resumed.resume = first.save;
  const std::string d = run(resumed);
  EXPECT_NEAR(loss_at(d, 4), loss_at(b, 4), 1e-5 * loss_at(b, 4)) << d;
}

// Issue #21: AdamW with weight decay (no-decay norms and embedding), warmup + cosine, clipping;
// saved at step 3 of 6 and resumed, the losses are bit for bit the unbroken run's: the step count
// and the schedule continue. A checkpoint of another model is refused, naming the field.
TEST(TrainCommand, ResumeContinuesTheScheduleBitForBitAndRefusesAnotherModel) {
  TempDir dir;
  TrainCommand unbroken = small(write_corpus(dir.path));
  unbroken.plan = "fsdp";
  unbroken.steps = 6;
  unbroken.weight_decay = 0.1;
  unbroken.lr_schedule = "cosine";
  unbroken.warmup = 2;
  unbroken.min_lr = 1e-3;
  unbroken.clip_norm = 0.5;
  unbroken.losses = (dir.path / "unbroken.txt").string();
  std::ostringstream a;
  ASSERT_EQ(train_command(unbroken, a), 0);
  EXPECT_NE(a.str().find("norm "), std::string::npos) << a.str();  // the pre-clip norm is logged
  EXPECT_NE(a.str().find("lr 5.000e-03"), std::string::npos) << a.str();  // warmup: step 1 at lr / 2

  TrainCommand first = unbroken;
  first.steps = 3;
  first.lr_steps = 6;  // the schedule of the whole run
  first.save = (dir.path / "ckpt").string();
  first.losses = (dir.path / "first.txt").string();
  std::ostringstream b;
  ASSERT_EQ(train_command(first, b), 0);
  TrainCommand resumed = unbroken;
  resumed.steps = 3;
  resumed.resume = first.save;
  resumed.losses = (dir.path / "resumed.txt").string();
  std::ostringstream c;
  ASSERT_EQ(train_command(resumed, c), 0);
  std::vector<std::string> want = loss_lines(unbroken.losses), got = loss_lines(first.losses);
  for (const std::string& l : loss_lines(resumed.losses)) got.push_back(l);
  EXPECT_EQ(got, want);

  TrainCommand other = resumed;
  other.heads = 8;
  std::string e = testing::error_of([&] { train_command(other, c); });
  EXPECT_NE(e.find("model.heads is 4, this run's is 8 (--heads)"), std::string::npos) << e;
  other = resumed;
  other.min_lr = 2e-3;
  e = testing::error_of([&] { train_command(other, c); });
  EXPECT_NE(e.find("schedule.min_lr is 0.001"), std::string::npos) << e;
}

// Issue #21: --eval-every logs the loss on the held-out tail (and its summary), each line shows
// the model FLOPs utilization, --save-every keeps the newest --keep checkpoints, and a run resumed
// from any of them continues bit for bit. Resuming without the held-out split (other batches) is
// refused, naming the field.
TEST(TrainCommand, SaveEveryAndEvalEveryResumeFromAnySavedStepBitForBit) {
  TempDir dir;
  TrainCommand unbroken = small(write_corpus(dir.path));
  unbroken.plan = "fsdp";
  unbroken.devices = 2;
  unbroken.steps = 6;
  unbroken.eval_every = 2;
  unbroken.eval_batches = 2;
  unbroken.save_every = 2;
  unbroken.keep = 3;
  unbroken.lr_schedule = "linear";
  unbroken.save = (dir.path / "ckpt").string();
  unbroken.losses = (dir.path / "unbroken.txt").string();
  std::ostringstream a;
  ASSERT_EQ(train_command(unbroken, a), 0);
  std::string s = a.str();
  std::smatch m;
  EXPECT_TRUE(std::regex_search(s, m, std::regex("step 2  eval loss [0-9.]+ \\(held out\\)\n"))) << s;
  EXPECT_TRUE(std::regex_search(s, m, std::regex("step 6  eval loss [0-9.]+ \\(held out\\)\n"))) << s;
  EXPECT_TRUE(std::regex_search(s, m, std::regex("eval loss [0-9.]+ -> [0-9.]+ on held-out text \\(3 evaluations\\)"))) << s;
  EXPECT_TRUE(std::regex_search(s, m, std::regex("step 6/6  loss [0-9.]+  lr [^ ]+  [0-9]+ tok/s  MFU [0-9.]+ %"))) << s;
  EXPECT_TRUE(std::regex_search(s, m, std::regex("model FLOPs per step [0-9.]+ G"))) << s;
  for (const char* kept : {"step-2", "step-4", "step-6"}) EXPECT_TRUE(fs::exists(dir.path / "ckpt" / kept)) << kept;
  std::vector<std::string> want = loss_lines(unbroken.losses);
  ASSERT_EQ(want.size(), 6u);

  for (int64_t from : {2, 4}) {
    TrainCommand resumed = unbroken;
    resumed.steps = 6 - from;
    resumed.save.clear();
    resumed.save_every = 0;
    resumed.resume = (dir.path / "ckpt" / fmt::format("step-{}", from)).string();
    resumed.losses = (dir.path / "resumed.txt").string();
    std::ostringstream b;
    ASSERT_EQ(train_command(resumed, b), 0) << b.str();
    EXPECT_EQ(loss_lines(resumed.losses), std::vector<std::string>(want.begin() + from, want.end())) << "from " << from;
  }
  TrainCommand other = unbroken;
  other.eval_every = 0;
  other.save.clear();
  other.save_every = 0;
  other.steps = 2;
  other.resume = (dir.path / "ckpt").string();
  std::ostringstream c;
  std::string e = testing::error_of([&] { train_command(other, c); });
  EXPECT_NE(e.find("data.held_out_percent is 10, this run's is 0"), std::string::npos) << e;
  other = unbroken;
  other.save.clear();
  e = testing::error_of([&] { train_command(other, c); });
  EXPECT_NE(e.find("--save-every 2: needs --save"), std::string::npos) << e;
}

TEST(TrainCommand, ErrorsNameTheOption) {
  TempDir dir;
  TrainCommand c = small(dir.path / "missing.txt");
  std::ostringstream out;
  std::string e = testing::error_of([&] { train_command(c, out); });
  EXPECT_NE(e.find("--corpus"), std::string::npos) << e;
  c = small(write_corpus(dir.path));
  c.plan = "pp";
  e = testing::error_of([&] { train_command(c, out); });
  EXPECT_NE(e.find("--plan pp"), std::string::npos) << e;
}

// Runs `a` and `b` for their --steps, each writing its losses under `dir`; their outputs and
// losses, the number of each checked.
struct TwoRuns {
  std::string out_a, out_b;
  std::vector<double> a, b;
};
TwoRuns run_both(TrainCommand a, TrainCommand b, const fs::path& dir) {
  TwoRuns r;
  a.losses = (dir / "a.txt").string();
  b.losses = (dir / "b.txt").string();
  std::ostringstream oa, ob;
  EXPECT_EQ(train_command(a, oa), 0);
  EXPECT_EQ(train_command(b, ob), 0);
  r.out_a = oa.str(), r.out_b = ob.str();
  r.a = read_losses(dir / "a.txt"), r.b = read_losses(dir / "b.txt");
  EXPECT_EQ(r.a.size(), size_t(a.steps)) << r.out_a;
  EXPECT_EQ(r.b.size(), size_t(b.steps)) << r.out_b;
  return r;
}

TEST(TrainCommand, ContextParallelOnFourDevicesGivesOneDevicesLosses) {
  // --plan ctx=4 splits each sequence of 16 over 4 devices (ring attention, the load-balanced
  // layout); the losses, step after step, are one device's.
  TempDir dir;
  TrainCommand ctx = small(write_corpus(dir.path));
  ctx.plan = "ctx=4";
  ctx.steps = 4;
  TrainCommand one = small(dir.path / "corpus.txt");
  one.devices = 1;
  one.steps = 4;
  TwoRuns r = run_both(ctx, one, dir.path);
  EXPECT_NE(r.out_a.find("plan ctx on 4"), std::string::npos) << r.out_a;
  EXPECT_NE(r.out_a.find("collective_permute"), std::string::npos) << r.out_a;
  ASSERT_EQ(r.a.size(), r.b.size());
  for (size_t i = 0; i < r.a.size(); ++i) EXPECT_NEAR(r.a[i], r.b[i], 1e-5 * r.b[i]) << "step " << i + 1;
  EXPECT_LT(r.a.back(), r.a.front());
  ctx.plan = "ctx=2";
  std::ostringstream out;
  std::string e = testing::error_of([&] { train_command(ctx, out); });
  EXPECT_NE(e.find("--plan ctx=2: the ctx axis spans every device, 4 here"), std::string::npos) << e;
}

TEST(TrainCommand, PipelineGivesTheLossesOfTheAccumulatedStep) {
  // A pipeline of 2 one-device stages over 4 microbatches computes what one device computes with
  // gradient accumulation over the same 4 microbatches: the same losses, step after step.
  TempDir dir;
  TrainCommand pipeline = small(write_corpus(dir.path));
  pipeline.layers = 2;
  pipeline.plan = "pp=2";
  pipeline.microbatches = 4;
  pipeline.steps = 4;
  TrainCommand accumulated = small(dir.path / "corpus.txt");
  accumulated.layers = 2;
  accumulated.devices = 1;
  accumulated.accumulate = 4;
  accumulated.steps = 4;
  TwoRuns r = run_both(pipeline, accumulated, dir.path);
  ASSERT_EQ(r.a.size(), 4u);
  ASSERT_EQ(r.b.size(), 4u);
  for (size_t i = 0; i < r.a.size(); ++i) EXPECT_NEAR(r.a[i], r.b[i], 1e-5 * r.b[i]) << "step " << i + 1;
  // One-device stages train on the program form, whose step is accumulate's bit for bit (M = 4).
  EXPECT_EQ(read_loss_bits(dir.path / "a.txt"), read_loss_bits(dir.path / "b.txt"));
  EXPECT_LT(r.a[3], r.a[0]);
}

TEST(TrainCommand, PipelineOfOneDeviceStagesReportsTheProgramFormAndDrawsItsTimeline) {
  TempDir dir;
  TrainCommand c = small(write_corpus(dir.path));
  c.layers = 2;
  c.plan = "pp=2";
  c.schedule = "zb-h1";
  c.microbatches = 4;
  c.steps = 6;
  c.schedule_svg = (dir.path / "timeline.svg").string();
  std::ostringstream out;
  ASSERT_EQ(train_command(c, out), 0);
  std::string s = out.str();
  EXPECT_LT(loss_at(s, 6), loss_at(s, 1)) << s;
  EXPECT_NE(s.find("per stage (2 stages x 1 host device, plan pp=2, schedule zb-h1, 4 microbatches, activations "
                   "saved)"),
            std::string::npos)
      << s;
  EXPECT_TRUE(std::regex_search(s, std::regex("\\n +0  0 +embed 0 "))) << s;
  EXPECT_TRUE(std::regex_search(s, std::regex("\\n +1  1 +1 head "))) << s;
  EXPECT_TRUE(std::regex_search(s, std::regex("transfers per step: [0-9.]+ KiB between stages"))) << s;
  EXPECT_TRUE(std::regex_search(s, std::regex("pipeline bubble over steps 2-6: measured 0\\.\\d+"))) << s;
  // The measured timeline: a background and one box per compute action that ran something: 8 F,
  // stage 1's 4 BI and 8 W (stage 0's BIs are empty: the tokens have no gradient, its transposes
  // are all weight gradient).
  std::ifstream in(c.schedule_svg);
  std::string svg((std::istreambuf_iterator<char>(in)), {});
  size_t rects = 0;
  for (size_t at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1)) ++rects;
  EXPECT_EQ(rects, 1u + 20u) << svg.substr(0, 400);
}

TEST(TrainCommand, PipelineTimesDataParallelTrainsAndDrawsItsTimeline) {
  TempDir dir;
  TrainCommand c = small(write_corpus(dir.path));
  c.layers = 2;
  c.plan = "pp=2,dp=2";
  c.microbatches = 4;
  c.steps = 20;
  c.schedule_svg = (dir.path / "timeline.svg").string();
  std::ostringstream out;
  ASSERT_EQ(train_command(c, out), 0);
  std::string s = out.str();
  EXPECT_LT(loss_at(s, 20), loss_at(s, 1) - 1.0) << s;
  EXPECT_NE(s.find("plan pp=2,dp=2 on 4 host devices (2 stages x 2), schedule 1f1b, 4 microbatches"), std::string::npos) << s;
  EXPECT_NE(s.find("per stage (2 stages x 2 host devices, plan pp=2,dp=2, schedule 1f1b, 4 microbatches, activations "
                   "saved)"),
            std::string::npos) << s;
  // Shards between stages: 4 activations and 4 cotangents of f32 [2, 16, 32], each split over the
  // receiving stage's 2 devices, 4 KiB each in all.
  EXPECT_NE(s.find("transfers per step: 32.00 KiB between stages"), std::string::npos) << s;
  EXPECT_TRUE(std::regex_search(s, std::regex("\\n +0  0-1 +embed 0 "))) << s;
  EXPECT_TRUE(std::regex_search(s, std::regex("\\n +1  2-3 +1 head "))) << s;
  EXPECT_TRUE(std::regex_search(s, std::regex("pipeline bubble over steps 2-20: measured 0\\.\\d+, simulator with "
                                              "the measured median fragment times 0\\.\\d+")))
      << s;
  // The measured timeline: a background and one box per compute action (2 stages x 4 F and 4 B).
  std::ifstream in(c.schedule_svg);
  std::string svg((std::istreambuf_iterator<char>(in)), {});
  size_t rects = 0;
  for (size_t at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1)) ++rects;
  EXPECT_EQ(rects, 1u + 16u) << svg.substr(0, 400);
}

TEST(TrainCommand, EveryPipelinePlanRuns) {
  // Each plan's losses are those of one device accumulating the same 4 microbatches (DESIGN.md: a
  // schedule never changes results), not merely positive.
  TempDir dir;
  TrainCommand accumulated = small(write_corpus(dir.path));
  accumulated.layers = 4;
  accumulated.devices = 1;
  accumulated.accumulate = 4;
  accumulated.steps = 3;
  accumulated.losses = (dir.path / "acc.txt").string();
  std::ostringstream acc_out;
  ASSERT_EQ(train_command(accumulated, acc_out), 0) << acc_out.str();
  const std::vector<double> want = read_losses(dir.path / "acc.txt");
  ASSERT_EQ(want.size(), 3u) << acc_out.str();
  constexpr double kTolerance = 1e-5;  // relative, per step
  struct Run {
    std::string plan, schedule;
    int64_t virtual_stages, devices;
  };
  for (const Run& r : {Run{"pp=4", "gpipe", 1, 4}, Run{"pp=2,tp=2", "zb-h1", 1, 4}, Run{"pp=2", "interleaved", 2, 2}}) {
    TrainCommand c = small(dir.path / "corpus.txt");
    c.layers = 4;
    c.plan = r.plan;
    c.schedule = r.schedule;
    c.virtual_stages = r.virtual_stages;
    c.microbatches = 4;
    c.steps = 3;
    c.losses = (dir.path / "pp.txt").string();
    std::ostringstream out;
    ASSERT_EQ(train_command(c, out), 0) << r.plan;
    std::vector<double> got = read_losses(dir.path / "pp.txt");
    ASSERT_EQ(got.size(), want.size()) << r.plan;
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(std::abs(got[i] - want[i]) <= kTolerance * std::abs(want[i]))
          << r.plan << " " << r.schedule << " step " << i + 1 << ": " << got[i] << ", accumulated " << want[i];
    std::string s = out.str();
    EXPECT_NE(s.find(fmt::format("plan {} on {} host devices", r.plan, r.devices)), std::string::npos) << s;
    EXPECT_NE(s.find("schedule " + std::string(r.schedule == "interleaved" ? "interleaved" : r.schedule)),
              std::string::npos) << s;
    EXPECT_GT(loss_at(s, 3), 0) << s;
  }
}

// A refusal names the option it comes from: a plan the model cannot take names --plan (it used to
// be blamed on --no-decay, whatever it was), a no-decay typo names --no-decay.
TEST(TrainCommand, SpmdErrorsNameTheOption) {
  TempDir dir;
  std::ofstream(dir.path / "corpus.txt") << corpus_text();
  std::ostringstream out;
  TrainCommand c = small(dir.path / "corpus.txt");
  c.plan = "ctx=4";
  c.devices = 4;
  c.seq = 12;  // 8 chunks of a causal ring over 4 devices do not divide 12
  std::string e = testing::error_of([&] { train_command(c, out); });
  EXPECT_EQ(e.rfind("--plan ctx=4: ", 0), 0u) << e;
  EXPECT_NE(e.find("12 does not divide"), std::string::npos) << e;
  c = small(dir.path / "corpus.txt");
  c.no_decay = "*norm,embd";
  e = testing::error_of([&] { train_command(c, out); });
  EXPECT_EQ(e.rfind("--no-decay *norm,embd: no-decay pattern 'embd' matches no parameter", 0), 0u) << e;
}

TEST(TrainCommand, PipelineErrorsNameTheOption) {
  TempDir dir;
  std::ofstream(dir.path / "corpus.txt") << corpus_text();
  std::ostringstream out;
  auto error = [&](auto change) {
    TrainCommand c = small(dir.path / "corpus.txt");
    c.layers = 2;
    c.plan = "pp=2";
    c.microbatches = 4;
    change(c);
    return testing::error_of([&] { train_command(c, out); });
  };
  EXPECT_EQ(error([](TrainCommand& c) { c.plan = "pp=2,xp=2"; }),
            "--plan pp=2,xp=2: unknown axis 'xp' (expected pp, dp or tp)");
  EXPECT_EQ(error([](TrainCommand& c) { c.plan = "pp=0"; }),
            "--plan pp=0: 'pp=0' is not axis=N with N >= 1 (expected pp=P[,dp=D][,tp=T])");
  EXPECT_EQ(error([](TrainCommand& c) { c.plan = "pp=2,dp=2", c.devices = 2; }),
            "--devices 2: --plan pp=2,dp=2 runs on 4 host devices (2 stages x 2)");
  EXPECT_EQ(error([](TrainCommand& c) { c.plan = "pp=4"; }),
            "--plan pp=4 --microbatches 4: pipeline of the CausalLM: 2 layers do not split into 4 pipeline stages of "
            "whole layers");
  EXPECT_EQ(error([](TrainCommand& c) { c.plan = "pp=4,dp=2", c.devices = 0; }),
            "--plan pp=4,dp=2 --microbatches 4: pipeline of the CausalLM: 2 layers do not split into 4 pipeline stages of "
            "whole layers");
  EXPECT_NE(error([](TrainCommand& c) { c.schedule = "2f2b"; }).find("--schedule 2f2b"), std::string::npos);
  EXPECT_EQ(error([](TrainCommand& c) { c.plan = "dp", c.schedule_svg = "x.svg"; }),
            "--schedule-svg x.svg: needs a pipeline plan (--plan pp=P...)");
  // The pipeline's own options are refused with another plan, not ignored.
  EXPECT_EQ(error([](TrainCommand& c) { c.plan = "dp", c.microbatches = 8, c.schedule = "gpipe"; }),
            "--schedule gpipe: needs a pipeline plan (--plan pp=P...)");
  EXPECT_EQ(error([](TrainCommand& c) { c.plan = "fsdp"; }),
            "--microbatches 4: needs a pipeline plan (--plan pp=P...); under --plan fsdp, --accumulate N splits each "
            "step's batch into N microbatches");
  EXPECT_EQ(error([](TrainCommand& c) { c.plan = "tp", c.microbatches = 8, c.virtual_stages = 2; }),
            "--virtual 2: needs a pipeline plan (--plan pp=P... --schedule interleaved)");
}

}  // namespace
}  // namespace tessera::tools
