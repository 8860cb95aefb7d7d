// Pipeline plans have what a trainer has (issue #16 item 5, issue #21): checkpoints in the format
// every plan writes — saved under pp=2 and resumed under fsdp and dp, saved under fsdp and resumed
// under pp=2, each with the uninterrupted run's next-step loss — and resumed under the same plan
// bit for bit; --save-every, --eval-every and --profile; --clip-norm (the global norm over every
// stage) and --lr-schedule/--warmup, equal to the fsdp run's; --precision bf16, equal to the
// accumulated mixed-precision step; --accumulate N, N times the microbatches; --remat, the same
// losses.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/error_of.h"
#include "common/temp_dir.h"
#include "schedule/schedule.h"
#include "tools/tessera/train_cmd.h"
#include "tools/train_test_util.h"

namespace tessera::tools {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

// Two plans' losses for the same step from the same state: another plan sums in another order
// (the tolerance of FsdpCheckpointResumesUnderTensorParallelOnTwoDevices and mpi_ckpt_test.py),
// relative. NaN fails it.
constexpr double kCrossPlan = 1e-4;

bool close(double got, double want) { return std::abs(got - want) <= kCrossPlan * std::abs(want); }

TrainCommand pipeline(const fs::path& corpus, const std::string& plan = "pp=2") {
  TrainCommand c = small(corpus);
  c.layers = 2;
  c.plan = plan;
  c.microbatches = 4;
  return c;
}

TrainCommand fsdp(const fs::path& corpus) {
  TrainCommand c = small(corpus);
  c.layers = 2;
  c.plan = "fsdp";
  return c;
}

// The value after `key ` on the line of step t ("norm 1.2345").
double field_at(const std::string& out, int64_t t, const std::string& key) {
  std::regex line("step " + std::to_string(t) + "/[0-9]+  loss [0-9.]+.*  " + key + " ([0-9.e+-]+)");
  std::smatch m;
  EXPECT_TRUE(std::regex_search(out, m, line)) << key << " at step " << t << " in\n" << out;
  return m.empty() ? -1 : std::stod(m[1]);
}

TEST(TrainPipeline, CheckpointResumesUnderFsdpAndDpAndBack) {
  TempDir dir;
  const fs::path corpus = write_corpus(dir.path);

  // pp=2 -> fsdp (and dp): 3 steps saved (every 2 steps too), one step more under the other plan.
  TrainCommand unbroken = pipeline(corpus);
  unbroken.steps = 4;
  unbroken.losses = (dir.path / "pp.txt").string();
  const std::string a = run(unbroken);
  TrainCommand first = unbroken;
  first.steps = 3;
  first.save = (dir.path / "pp_ckpt").string();
  first.save_every = 2;
  first.keep = 3;
  first.losses.clear();
  const std::string b = run(first);
  EXPECT_NE(b.find("saved to " + first.save + "/step-2 (step 2)"), std::string::npos) << b;
  EXPECT_NE(b.find("saved to " + first.save + "/step-3 (step 3)"), std::string::npos) << b;
  for (const char* plan : {"fsdp", "dp"}) {
    TrainCommand resumed = fsdp(corpus);
    resumed.plan = plan;
    resumed.steps = 1;
    resumed.resume = first.save;
    const std::string c = run(resumed);
    EXPECT_TRUE(close(loss_at(c, 4), loss_at(a, 4))) << plan << ": " << loss_at(c, 4) << ", pp=2 unbroken "
                                                     << loss_at(a, 4) << "\n" << c;
  }
  // Under pp=2 again, from the step-2 checkpoint: the unbroken run's losses bit for bit (the
  // parameters, both moments and the step count came back).
  TrainCommand again = unbroken;
  again.steps = 2;
  again.resume = (dir.path / "pp_ckpt" / "step-2").string();
  again.losses = (dir.path / "again.txt").string();
  const std::string d = run(again);
  EXPECT_NE(d.find("resuming from " + again.resume + " at step 3"), std::string::npos) << d;
  const std::vector<std::string> want = loss_lines(unbroken.losses);
  ASSERT_EQ(want.size(), 4u);
  EXPECT_EQ(loss_lines(again.losses), std::vector<std::string>(want.begin() + 2, want.end()));

  // fsdp -> pp=2.
  TrainCommand fsdp_unbroken = fsdp(corpus);
  fsdp_unbroken.steps = 4;
  const std::string e = run(fsdp_unbroken);
  TrainCommand fsdp_first = fsdp_unbroken;
  fsdp_first.steps = 3;
  fsdp_first.save = (dir.path / "fsdp_ckpt").string();
  run(fsdp_first);
  TrainCommand resumed = pipeline(corpus);
  resumed.steps = 1;
  resumed.resume = fsdp_first.save;
  const std::string f = run(resumed);
  EXPECT_TRUE(close(loss_at(f, 4), loss_at(e, 4))) << loss_at(f, 4) << ", fsdp unbroken " << loss_at(e, 4) << "\n" << f;
}

// Stages of two devices (tensor parallel: the parameters split inside a stage): the checkpoint
// holds each stage's pieces and resumes under one-device stages.
TEST(TrainPipeline, CheckpointOfShardedStagesResumesUnderOneDeviceStages) {
  TempDir dir;
  const fs::path corpus = write_corpus(dir.path);
  TrainCommand unbroken = pipeline(corpus, "pp=2,tp=2");
  unbroken.steps = 3;
  const std::string a = run(unbroken);
  TrainCommand first = unbroken;
  first.steps = 2;
  first.save = (dir.path / "ckpt").string();
  run(first);
  std::ifstream index(dir.path / "ckpt" / "step-2" / "index.json");
  std::string text((std::istreambuf_iterator<char>(index)), {});
  EXPECT_NE(text.find("\"devices\": 2"), std::string::npos) << text;  // the stage mesh's devices
  TrainCommand resumed = pipeline(corpus);
  resumed.steps = 1;
  resumed.resume = first.save;
  const std::string b = run(resumed);
  EXPECT_TRUE(close(loss_at(b, 3), loss_at(a, 3))) << loss_at(b, 3) << ", pp=2,tp=2 unbroken " << loss_at(a, 3) << "\n" << b;
}

// --eval-every: the held-out loss, which the fsdp run's equals (the same parameters within the
// plans' rounding); --profile: per stage and per op kind.
TEST(TrainPipeline, EvalEveryAndProfile) {
  TempDir dir;
  const fs::path corpus = write_corpus(dir.path);
  TrainCommand c = pipeline(corpus);
  c.steps = 4;
  c.eval_every = 2;
  c.eval_batches = 2;
  c.profile = true;
  const std::string a = run(c);
  TrainCommand other = fsdp(corpus);
  other.steps = 4;
  other.eval_every = 2;
  other.eval_batches = 2;
  const std::string b = run(other);
  for (int64_t t : {2, 4}) {
    std::regex line("step " + std::to_string(t) + "  eval loss ([0-9.]+) \\(held out\\)\n");
    std::smatch got, want;
    ASSERT_TRUE(std::regex_search(a, got, line)) << a;
    ASSERT_TRUE(std::regex_search(b, want, line)) << b;
    EXPECT_TRUE(close(std::stod(got[1]), std::stod(want[1]))) << "step " << t << ": " << got[1] << ", fsdp " << want[1];
  }
  EXPECT_NE(a.find("eval loss"), std::string::npos);
  EXPECT_TRUE(std::regex_search(a, std::regex("eval loss [0-9.]+ -> [0-9.]+ on held-out text \\(2 evaluations\\)"))) << a;
  EXPECT_NE(a.find("time per stage, ms per step (mean of 3 steps):"), std::string::npos) << a;
  EXPECT_TRUE(std::regex_search(a, std::regex("\n +1  +[0-9.]+  +[0-9.]+  +[0-9.]+  +[0-9.]+\n"))) << a;
  EXPECT_NE(a.find("time per op kind, all stages' devices:"), std::string::npos) << a;
  EXPECT_TRUE(std::regex_search(a, std::regex("\n(stablehlo\\.)?dot_general +[0-9]+ +[0-9.]+"))) << a;
}

// --clip-norm and --lr-schedule/--warmup under pp=2 give the fsdp run's losses and pre-clip norms
// (the norm over every stage's gradients); the norm exceeds the limit, so the clipping acts.
TEST(TrainPipeline, ClipNormAndLrScheduleEqualFsdp) {
  TempDir dir;
  const fs::path corpus = write_corpus(dir.path);
  auto options = [&](TrainCommand c, const char* losses) {
    c.steps = 5;
    c.losses = (dir.path / losses).string();
    c.clip_norm = 0.5;
    c.lr_schedule = "cosine";
    c.warmup = 2;
    c.min_lr = 1e-3;
    c.weight_decay = 0.1;
    return c;
  };
  const std::string b = run(options(fsdp(corpus), "fsdp.txt"));
  const std::vector<double> want = read_losses(dir.path / "fsdp.txt");
  ASSERT_EQ(want.size(), 5u) << b;
  for (const char* plan : {"pp=2", "pp=2,tp=2"}) {  // one-device stages, and stages whose gradients are split
    SCOPED_TRACE(plan);
    const std::string a = run(options(pipeline(corpus, plan), "pp.txt"));
    const std::vector<double> got = read_losses(dir.path / "pp.txt");
    ASSERT_EQ(got.size(), 5u) << a;
    EXPECT_NE(a.find("step 1/5  loss"), std::string::npos) << a;
    EXPECT_GT(field_at(a, 1, "norm"), 0.5) << a;
    EXPECT_EQ(field_at(a, 1, "lr"), 5e-3) << a;  // warmup: step 1 at lr / 2
    for (int64_t t = 1; t <= 5; ++t) {
      const size_t i = static_cast<size_t>(t - 1);
      EXPECT_TRUE(close(got[i], want[i])) << "step " << t << ": " << got[i] << ", fsdp " << want[i];
      // The norm is printed to 4 decimals: one unit of the last one more.
      const double norm = field_at(a, t, "norm"), norm_fsdp = field_at(b, t, "norm");
      EXPECT_TRUE(std::abs(norm - norm_fsdp) <= 1e-4 + kCrossPlan * norm_fsdp)
          << "step " << t << ": norm " << field_at(a, t, "norm") << ", fsdp " << field_at(b, t, "norm");
      EXPECT_EQ(field_at(a, t, "lr"), field_at(b, t, "lr")) << "step " << t;
    }
  }
}

// --schedule-csv: a user's schedule in PyTorch's form. 1F1B's and zero-bubble H1's compute orders
// written by hand (compute_only), and 1F1B as `tessera schedule --csv` writes it (its transfers
// included, compute_comms), give the built-in schedules' losses bit for bit; a bad cell is refused
// naming the file, row and column.
TEST(TrainPipeline, ScheduleCsvRunsAUsersOwnSchedule) {
  TempDir dir;
  const fs::path corpus = write_corpus(dir.path);
  struct Case {
    std::string schedule, csv;
  };
  for (const Case& k : {Case{"1f1b", "0F0,0F1,0B0,0F2,0B1,0F3,0B2,0B3\n1F0,1B0,1F1,1B1,1F2,1B2,1F3,1B3\n"},
                        Case{"zb-h1", "0F0,0F1,0I0,0F2,0I1,0W0,0F3,0I2,0W1,0I3,0W2,0W3\n"
                                      "1F0,1I0,1W0,1F1,1I1,1W1,1F2,1I2,1W2,1F3,1I3,1W3\n"},
                        Case{"1f1b", schedule::print_csv(schedule::one_f_one_b(2, 4))}}) {
    TrainCommand builtin = pipeline(corpus);
    builtin.schedule = k.schedule;
    builtin.steps = 3;
    builtin.losses = (dir.path / "builtin.txt").string();
    run(builtin);
    std::ofstream(dir.path / "mine.csv") << k.csv;
    TrainCommand mine = pipeline(corpus);
    mine.microbatches = 8;  // the file's 4 count, not this
    mine.schedule_csv = (dir.path / "mine.csv").string();
    mine.steps = 3;
    mine.losses = (dir.path / "mine.txt").string();
    const std::string out = run(mine);
    EXPECT_NE(out.find("schedule " + mine.schedule_csv + ", 4 microbatches"), std::string::npos) << out;
    ASSERT_EQ(read_loss_bits(mine.losses).size(), 3u) << out;
    EXPECT_EQ(read_loss_bits(mine.losses), read_loss_bits(builtin.losses)) << k.schedule;
  }
  std::ofstream(dir.path / "bad.csv") << "0F0,0F1,0B0\n1F0,1B0,1F1,1Q1\n";
  TrainCommand bad = pipeline(corpus);
  bad.schedule_csv = (dir.path / "bad.csv").string();
  std::ostringstream out;
  EXPECT_EQ(testing::error_of([&] { train_command(bad, out); }),
            "--schedule-csv: " + bad.schedule_csv + " row 2 column 4: '1Q1' is not an action "
            "[stage][F|I|B|W|SEND_F|RECV_F|SEND_B|RECV_B][microbatch], e.g. 2F0");
  bad.plan = "pp=4";
  bad.layers = 4;
  bad.schedule_csv = (dir.path / "mine.csv").string();
  EXPECT_EQ(testing::error_of([&] { train_command(bad, out); }),
            "--schedule-csv " + bad.schedule_csv + ": 2 rows (one per stage), --plan pp=4 has 4 stages");
}

// --precision bf16 under pp=2: every stage computes as the mixed-precision model does, so the losses
// are the accumulated mixed-precision step's on one device bit for bit (its 4 microbatches are the
// pipeline's), and not the f32 run's.
TEST(TrainPipeline, MixedPrecisionEqualsTheAccumulatedStep) {
  TempDir dir;
  const fs::path corpus = write_corpus(dir.path);
  TrainCommand pp = pipeline(corpus);
  pp.precision = "bf16";
  pp.steps = 3;
  pp.losses = (dir.path / "pp.txt").string();
  const std::string out = run(pp);
  EXPECT_NE(out.find("mixed precision: matmuls and activations in bf16"), std::string::npos) << out;
  TrainCommand one = small(corpus);
  one.layers = 2;
  one.devices = 1;
  one.accumulate = 4;
  one.precision = "bf16";
  one.steps = 3;
  one.losses = (dir.path / "one.txt").string();
  run(one);
  TrainCommand f32 = pp;
  f32.precision = "f32";
  f32.losses = (dir.path / "f32.txt").string();
  run(f32);
  ASSERT_EQ(read_loss_bits(pp.losses).size(), 3u) << out;
  EXPECT_EQ(read_loss_bits(pp.losses), read_loss_bits(one.losses));
  EXPECT_NE(read_loss_bits(pp.losses), read_loss_bits(f32.losses)) << "bf16 trained as f32";
}

// --accumulate N under a pipeline plan is N times --microbatches through one schedule and one
// update: --accumulate 2 --microbatches 2 is --microbatches 4 bit for bit, and --accumulate 4
// under the other plans (one device). With --schedule-csv, whose microbatches are fixed, it is refused.
TEST(TrainPipeline, AccumulateMultipliesTheMicrobatches) {
  TempDir dir;
  const fs::path corpus = write_corpus(dir.path);
  TrainCommand acc = pipeline(corpus);
  acc.microbatches = 2;
  acc.accumulate = 2;
  acc.steps = 3;
  acc.losses = (dir.path / "acc.txt").string();
  const std::string out = run(acc);
  EXPECT_NE(out.find("schedule 1f1b, 4 microbatches (--microbatches 2 --accumulate 2), batch 8x16"), std::string::npos)
      << out;
  TrainCommand four = pipeline(corpus);
  four.steps = 3;
  four.losses = (dir.path / "four.txt").string();
  run(four);
  TrainCommand one = small(corpus);
  one.layers = 2;
  one.devices = 1;
  one.accumulate = 4;
  one.steps = 3;
  one.losses = (dir.path / "one.txt").string();
  run(one);
  ASSERT_EQ(read_loss_bits(acc.losses).size(), 3u) << out;
  EXPECT_EQ(read_loss_bits(acc.losses), read_loss_bits(four.losses));
  EXPECT_EQ(read_loss_bits(acc.losses), read_loss_bits(one.losses));

  TrainCommand odd = pipeline(corpus);
  odd.microbatches = 3;
  odd.accumulate = 2;
  std::ostringstream sink;
  const std::string refused = testing::error_of([&] { train_command(odd, sink); });
  EXPECT_EQ(refused.rfind("--plan pp=2 --microbatches 3 --accumulate 2: ", 0), 0u) << refused;
  std::ofstream(dir.path / "mine.csv") << "0F0,0F1,0B0,0B1\n,1F0,1B0,1F1,1B1\n";
  TrainCommand csv = pipeline(corpus);
  csv.schedule_csv = (dir.path / "mine.csv").string();
  csv.accumulate = 2;
  EXPECT_EQ(testing::error_of([&] { train_command(csv, sink); }),
            "--accumulate 2: --schedule-csv " + csv.schedule_csv +
                " fixes the microbatches of a step (2); write a schedule over 2 times as many instead");
}

// --remat under pp=2 (zero-bubble H1: the recomputation split into BI and W too): each backward
// recomputes its stage's forward, the losses are the saving run's bit for bit (the per-stage peaks
// are compared in tests/mpmd/fragment_options_test.cpp).
TEST(TrainPipeline, RematGivesTheSameLosses) {
  TempDir dir;
  const fs::path corpus = write_corpus(dir.path);
  TrainCommand saving = pipeline(corpus);
  saving.schedule = "zb-h1";
  saving.steps = 3;
  saving.losses = (dir.path / "saving.txt").string();
  run(saving);
  TrainCommand remat = saving;
  remat.remat = true;
  remat.losses = (dir.path / "remat.txt").string();
  const std::string out = run(remat);
  EXPECT_NE(out.find("microbatches, forward recomputed in the backward):"), std::string::npos) << out;
  ASSERT_EQ(read_loss_bits(remat.losses).size(), 3u) << out;
  EXPECT_EQ(read_loss_bits(remat.losses), read_loss_bits(saving.losses));
}

}  // namespace
}  // namespace tessera::tools
