// `tessera train` end to end on a small model and corpus: the loss falls, the per-device table is
// printed, and a checkpoint written under FSDP on 4 devices resumes under tensor parallel on 2
// with the same next-step loss as the unbroken run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/error_of.h"
#include "tools/tessera/train_cmd.h"

namespace tessera::tools {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("tessera_train_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

TrainCommand small(const fs::path& corpus) {
  TrainCommand c;
  c.corpus = corpus.string();
  c.d_model = 32;
  c.layers = 1;
  c.heads = 4;
  c.kv_heads = 2;
  c.ffn = 64;
  c.batch = 8;
  c.seq = 16;
  c.lr = 1e-2;
  c.sample = 0;
  c.progress_bar = false;
  return c;
}

std::string corpus_text() {
  std::string text;
  for (int i = 0; i < 400; ++i) text += "the quick brown fox jumps over the lazy dog. ";
  return text;
}

// The loss printed for step `t`.
double loss_at(const std::string& out, int64_t t) {
  std::regex line("step " + std::to_string(t) + "/[0-9]+  loss ([0-9.]+)");
  std::smatch m;
  EXPECT_TRUE(std::regex_search(out, m, line)) << out;
  return m.empty() ? -1 : std::stod(m[1]);
}

TEST(TrainCommand, LossFallsAndTheTableIsPrinted) {
  TempDir dir;
  std::ofstream(dir.path / "corpus.txt") << corpus_text();
  TrainCommand c = small(dir.path / "corpus.txt");
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
  std::ofstream(dir.path / "corpus.txt") << corpus_text();
  TrainCommand unbroken = small(dir.path / "corpus.txt");
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

TEST(TrainCommand, ErrorsNameTheOption) {
  TempDir dir;
  TrainCommand c = small(dir.path / "missing.txt");
  std::ostringstream out;
  std::string e = testing::error_of([&] { train_command(c, out); });
  EXPECT_NE(e.find("--corpus"), std::string::npos) << e;
  std::ofstream(dir.path / "corpus.txt") << corpus_text();
  c = small(dir.path / "corpus.txt");
  c.plan = "pp";
  e = testing::error_of([&] { train_command(c, out); });
  EXPECT_NE(e.find("--plan pp"), std::string::npos) << e;
}

}  // namespace
}  // namespace tessera::tools
