// tessera train --dry-run: the memory each device will hold, estimated from the compiled step
// before anything is staged, against the peak the run really reaches (support's count of every
// array and arena this process holds); and a run that cannot fit refused before it starts.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "common/error_of.h"
#include "common/temp_dir.h"
#include "support/memory.h"
#include "tools/tessera/train_cmd.h"
#include "train_test_util.h"

namespace tessera::tools {
namespace {

namespace fs = std::filesystem;

// The estimate is a plan of the same buffers the run allocates; what it cannot see (which of the
// transient results are alive at once on every device) stays well inside this.
constexpr double kEstimateTolerance = 0.10;

using testing::TempDir;

TrainCommand model(const fs::path& corpus) {
  TrainCommand c;
  c.corpus = corpus.string();
  c.d_model = 128;
  c.layers = 2;
  c.heads = 4;
  c.kv_heads = 2;
  c.ffn = 344;
  c.batch = 8;
  c.seq = 64;
  c.steps = 2;
  c.sample = 0;
  c.devices = 4;
  return c;
}

// "<what>  12.34 MiB" in the output, in bytes.
double bytes_after(const std::string& out, const std::string& what) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(what + " +([0-9.]+) (B|KiB|MiB|GiB)"))) {
    ADD_FAILURE() << "no '" << what << "' in\n" << out;
    return -1;
  }
  double scale = m[2] == "B" ? 1 : m[2] == "KiB" ? 1024 : m[2] == "MiB" ? 1024.0 * 1024 : 1024.0 * 1024 * 1024;
  return std::stod(m[1]) * scale;
}

TEST(TrainMemory, TheDryRunEstimateIsWithinTenPercentOfTheMeasuredPeak) {
  TempDir dir;
  std::ofstream(dir.path / "corpus.txt") << corpus_text();
  std::map<std::string, std::pair<double, double>> held;  // plan: parameters, optimizer state
  for (const char* plan : {"dp", "fsdp", "zero1", "tp", "dp,tp"}) {
    TrainCommand c = model(dir.path / "corpus.txt");
    c.plan = plan;
    c.dry_run = true;
    std::ostringstream dry;
    ASSERT_EQ(train_command(c, dry), 0);
    EXPECT_NE(dry.str().find("memory per device (estimated before running):"), std::string::npos) << dry.str();
    EXPECT_EQ(dry.str().find("step 1/"), std::string::npos) << "a dry run trains nothing\n" << dry.str();
    double estimate = bytes_after(dry.str(), "total per device");
    double parts = 0;
    for (const char* part : {"parameters", "optimizer state", "batch and step inputs", "activations and temporaries \\(plan\\)",
                             "collective buffers"})
      parts += bytes_after(dry.str(), part);
    EXPECT_NEAR(parts, estimate, 0.01 * estimate) << dry.str();  // the table adds up (to its rounding)
    held[plan] = {bytes_after(dry.str(), "parameters"), bytes_after(dry.str(), "optimizer state")};

    c.dry_run = false;
    std::ostringstream run;
    ASSERT_EQ(train_command(c, run), 0);
    double measured = bytes_after(run.str(), "array memory peak");
    EXPECT_GT(measured, 0);
    EXPECT_LE(std::abs(estimate - measured), kEstimateTolerance * measured)
        << plan << ": estimated " << estimate << ", measured " << measured << "\n" << run.str();
  }
  // zero1 holds dp's parameters and fsdp's share of the optimizer state (4 devices).
  EXPECT_NEAR(held["zero1"].first, held["dp"].first, 0.01 * held["dp"].first);
  EXPECT_NEAR(held["zero1"].second, held["dp"].second / 4, 0.02 * held["dp"].second / 4);
}

// --eval-every compiles the loss program too: its arena and the held-out batches it stages stay
// beside the step's for the whole run (the estimate once left them out: 17-21 % under).
TEST(TrainMemory, EvaluationIsInTheEstimate) {
  TempDir dir;
  std::ofstream(dir.path / "corpus.txt") << corpus_text();
  for (const char* plan : {"dp", "fsdp"}) {
    TrainCommand c = model(dir.path / "corpus.txt");
    c.plan = plan;
    c.dry_run = true;
    std::ostringstream plain;
    ASSERT_EQ(train_command(c, plain), 0);
    EXPECT_EQ(plain.str().find("evaluation"), std::string::npos) << plain.str();
    c.eval_every = 1;
    std::ostringstream dry;
    ASSERT_EQ(train_command(c, dry), 0);
    const double estimate = bytes_after(dry.str(), "total per device"), evaluation = bytes_after(dry.str(), "evaluation \\(--eval-every\\)");
    EXPECT_GT(evaluation, 0.05 * estimate) << dry.str();
    EXPECT_NEAR(bytes_after(plain.str(), "total per device") + evaluation, estimate, 0.01 * estimate) << dry.str();

    c.dry_run = false;
    std::ostringstream run;
    ASSERT_EQ(train_command(c, run), 0);
    EXPECT_NE(run.str().find("eval loss"), std::string::npos) << run.str();
    const double measured = bytes_after(run.str(), "array memory peak");
    EXPECT_LE(std::abs(estimate - measured), kEstimateTolerance * measured)
        << plan << ": estimated " << estimate << ", measured " << measured << "\n" << run.str();
  }
}

// Pipeline plans: each stage's device holds its parameters, moments and gradients, the run
// contexts of its programs and its store (FragmentTrainer::memory_plan), known before a step runs;
// the process's peak after the run is within the tolerance, and the schedule's memory shows
// before running (1F1B holds less than GPipe).
TEST(TrainMemory, APipelinesDryRunIsWithinTenPercentOfItsPeak) {
  TempDir dir;
  std::ofstream(dir.path / "corpus.txt") << corpus_text();
  std::map<std::string, double> estimates;
  for (const char* plan : {"pp=2", "pp=2,dp=2"})
    for (const char* schedule : {"1f1b", "gpipe"})
      for (int64_t eval : {0, 1}) {
        TrainCommand c = model(dir.path / "corpus.txt");
        c.plan = plan;
        c.devices = 0;
        c.schedule = schedule;
        c.microbatches = 4;
        c.eval_every = eval;
        c.dry_run = true;
        std::ostringstream dry;
        ASSERT_EQ(train_command(c, dry), 0);
        const std::string label = fmt::format("{} {} eval {}", plan, schedule, eval);
        EXPECT_NE(dry.str().find("memory per device of each stage (estimated before running):"), std::string::npos)
            << dry.str();
        EXPECT_NE(dry.str().find("fits: the limit is"), std::string::npos) << dry.str();
        EXPECT_EQ(dry.str().find("step 1/"), std::string::npos) << "a dry run trains nothing\n" << dry.str();
        const double estimate = bytes_after(dry.str(), "total in this process");
        estimates[label] = estimate;

        c.dry_run = false;
        std::ostringstream run;
        ASSERT_EQ(train_command(c, run), 0);
        std::smatch m;
        const std::string out = run.str();
        ASSERT_TRUE(std::regex_search(out, m, std::regex("estimated before running ([0-9.]+) MiB"))) << out;
        EXPECT_NEAR(std::stod(m[1]) * 1024 * 1024, estimate, 0.01 * estimate) << "the run's estimate is the dry run's";
        const double measured = bytes_after(out, "array memory peak ");
        EXPECT_LE(std::abs(estimate - measured), kEstimateTolerance * measured)
            << label << ": estimated " << estimate << ", measured " << measured << "\n" << out;
      }
  EXPECT_LT(estimates["pp=2 1f1b eval 0"], estimates["pp=2 gpipe eval 0"]);
  EXPECT_LT(estimates["pp=2,dp=2 1f1b eval 0"], estimates["pp=2,dp=2 gpipe eval 0"]);
}

TEST(TrainMemory, ARunThatCannotFitIsRefusedBeforeItStarts) {
  TempDir dir;
  std::ofstream(dir.path / "corpus.txt") << corpus_text();
  TrainCommand c = model(dir.path / "corpus.txt");
  c.devices = 16;
  support::set_memory_limit(64 << 20);  // 16 devices of about 8 MiB each do not fit in 64 MiB
  std::ostringstream out;
  std::string e = testing::error_of([&] { train_command(c, out); });
  support::set_memory_limit(0);
  EXPECT_NE(e.find("--plan dp on 16 devices needs about"), std::string::npos) << e;
  EXPECT_NE(e.find("more than the limit of 64.00 MiB"), std::string::npos) << e;
  EXPECT_NE(e.find("not started"), std::string::npos) << e;
  EXPECT_NE(e.find("activations and temporaries (plan)"), std::string::npos) << e;
  EXPECT_NE(e.find("(16 devices in this process)"), std::string::npos) << e;
  EXPECT_EQ(out.str().find("step 1/"), std::string::npos) << out.str();  // refused before any step
  // --dry-run says the same, with the table, and fails the same way.
  c.dry_run = true;
  support::set_memory_limit(64 << 20);
  e = testing::error_of([&] { train_command(c, out); });
  support::set_memory_limit(0);
  EXPECT_NE(e.find("not started"), std::string::npos) << e;
  // A pipeline too: with its stages' table, before its first step.
  c = model(dir.path / "corpus.txt");
  c.plan = "pp=2";
  c.devices = 2;
  support::set_memory_limit(20 << 20);  // above the step's lower bound and what building it holds
  std::ostringstream pipeline;
  e = testing::error_of([&] { train_command(c, pipeline); });
  support::set_memory_limit(0);
  EXPECT_NE(e.find("--plan pp=2 on 2 host devices (2 stages x 1) needs about"), std::string::npos) << e;
  EXPECT_NE(e.find("more than the limit of 20.00 MiB"), std::string::npos) << e;
  EXPECT_NE(e.find("memory per device of each stage"), std::string::npos) << e;
  EXPECT_EQ(pipeline.str().find("step 1/"), std::string::npos) << pipeline.str();
}

}  // namespace
}  // namespace tessera::tools
