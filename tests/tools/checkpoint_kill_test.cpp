// `tessera train --save` killed or failing in the middle of its save (the fault hook of
// runtime/durable_file.h, TESSERA_CHECKPOINT_FAULT): every time, `--resume` finds a whole
// checkpoint, the previous one or the new one (never a mix), and continues exactly: its next loss
// is bitwise the uninterrupted run's. A save that hits ENOSPC or EIO exits 1 with the errno's text,
// and the previous checkpoint still resumes. Killed from outside (SIGKILL) at delays spread over a
// slowed save, likewise. `--save` under a regular file is a named error.
// These run the CLI (TESSERA_CLI, the built `tessera`) as a child process.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "common/temp_dir.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

using tessera::testing::TempDir;

std::string read(const fs::path& p) { return tessera::testing::read_file(p); }

struct Result {
  int exit_code = -1;  // -1 when killed
  int signal = 0;
  std::string output;  // stdout and stderr
};

// A `tessera train` child process with the small model, `args` added, TESSERA_CHECKPOINT_FAULT=fault
// and `env` added; its stdout and stderr go to run.log.
pid_t start(const fs::path& tmp, const std::vector<std::string>& args, const std::string& fault = "",
            const std::vector<std::string>& env_added = {}) {
  std::vector<std::string> argv = {TESSERA_CLI, "train", "--corpus", (tmp / "corpus.txt").string(), "--d-model", "32",
                                   "--layers", "1", "--heads", "4", "--kv-heads", "2", "--ffn", "64", "--batch", "4",
                                   "--seq", "16", "--sample", "0", "--devices", "2", "--lr", "1e-2",
                                   "--no-progress-bar"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("TESSERA_CHECKPOINT_", 0) != 0) env.push_back(*e);
  if (!fault.empty()) env.push_back("TESSERA_CHECKPOINT_FAULT=" + fault);
  env.insert(env.end(), env_added.begin(), env_added.end());
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(a.data());
  for (auto& e : env) cenv.push_back(e.data());
  cargv.push_back(nullptr);
  cenv.push_back(nullptr);
  std::string log = (tmp / "run.log").string();
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  return pid;
}

Result finish(const fs::path& tmp, pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  Result r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.output = read(tmp / "run.log");
  return r;
}

// Runs `tessera train` (start, then finish).
Result train(const fs::path& tmp, const std::vector<std::string>& args, const std::string& fault = "") {
  return finish(tmp, start(tmp, args, fault));
}

// step -> the hex float of its loss, from a --losses file ("step %.9g %a").
std::map<int64_t, std::string> losses(const fs::path& file) {
  std::ifstream in(file);
  std::map<int64_t, std::string> out;
  int64_t step;
  std::string decimal, hex;
  while (in >> step >> decimal >> hex) out[step] = hex;
  return out;
}

void copy_dir(const fs::path& from, const fs::path& to) {
  fs::remove_all(to);
  fs::copy(from, to, fs::copy_options::recursive);
}

class CheckpointKill : public ::testing::Test {
 protected:
  // Once for the suite: the corpus, the uninterrupted run's losses, the checkpoint of step 2 that
  // each save starts from, and the operations of a save of step 3 over it (listed by the hook).
  static void SetUpTestSuite() {
    tmp_ = new TempDir;
    std::string text;
    for (int i = 0; i < 200; ++i) text += fmt::format("line {} of the corpus: the quick brown fox. ", i);
    std::ofstream(tmp_->path / "corpus.txt") << text;
    Result ref = train(tmp_->path, {"--steps", "4", "--losses", (tmp_->path / "ref.txt").string()});
    ASSERT_EQ(ref.exit_code, 0) << ref.output;
    reference_ = losses(tmp_->path / "ref.txt");
    ASSERT_EQ(reference_.size(), 4u);
    Result saved = train(tmp_->path, {"--steps", "2", "--save", base().string()});
    ASSERT_EQ(saved.exit_code, 0) << saved.output;
    listed_ = tmp_->path / "listed";
    copy_dir(base(), listed_);
    Result listed = save_step_3(listed_, "list");
    ASSERT_EQ(listed.exit_code, 0) << listed.output;
    std::regex line(R"(checkpoint io ([0-9]+): (\w+) (.*))");
    for (std::sregex_iterator it(listed.output.begin(), listed.output.end(), line), end; it != end; ++it)
      ops_.push_back((*it)[2].str() + " " + (*it)[3].str());
  }
  static void TearDownTestSuite() { delete tmp_; }

  static fs::path base() { return tmp_->path / "base"; }
  // `tessera train --resume ckpt --steps 1 --save ckpt`: step 3 saved over the checkpoint of step 2.
  static Result save_step_3(const fs::path& ckpt, const std::string& fault) {
    return train(tmp_->path, {"--steps", "1", "--resume", ckpt.string(), "--save", ckpt.string()}, fault);
  }
  // The operation (counted from 1) that `op` is in the list, 0 if none; `path` relative to the
  // checkpoint's directory.
  static size_t operation(const std::string& op, const std::string& path) {
    for (size_t i = 0; i < ops_.size(); ++i)
      if (ops_[i] == op + " " + (listed_ / path).string()) return i + 1;
    return 0;
  }

  // Resumes `ckpt` for one step: the step it resumed at (3 from the previous checkpoint, 4 from
  // the new one), after checking its loss against the uninterrupted run's, bit for bit.
  static int64_t resume_step(const fs::path& ckpt, const std::string& what) {
    fs::path file = tmp_->path / "resumed.txt";
    fs::remove(file);
    Result r = train(tmp_->path, {"--steps", "1", "--resume", ckpt.string(), "--losses", file.string()});
    EXPECT_EQ(r.exit_code, 0) << what << "\n" << r.output;
    auto got = losses(file);
    EXPECT_EQ(got.size(), 1u) << what << "\n" << r.output;
    if (got.size() != 1) return 0;
    auto [step, hex] = *got.begin();
    EXPECT_EQ(hex, reference_[step]) << what << ": step " << step << " resumed with another loss\n" << r.output;
    return step;
  }

  static inline TempDir* tmp_ = nullptr;
  static inline std::map<int64_t, std::string> reference_;
  static inline std::vector<std::string> ops_;  // "rename <path>", in order
  static inline fs::path listed_;
};

TEST_F(CheckpointKill, KilledAtTwentyMomentsOfTheSaveResumesThePreviousOrTheNewCheckpoint) {
  size_t total = ops_.size(), switch_at = operation("rename", "latest");
  ASSERT_GT(switch_at, 1u);
  ASSERT_GE(total, 20u);
  EXPECT_EQ(resume_step(listed_, "the listed save"), 4);
  // 20 moments spread evenly over the save, the switch and the operation before it among them.
  std::set<size_t> moments = {switch_at - 1, switch_at};
  for (size_t j = 0; j < 20; ++j) moments.insert(1 + j * (total - 1) / 19);
  ASSERT_GE(moments.size(), 20u);
  fs::path work = tmp_->path / "work";
  for (size_t k : moments) {
    std::string what = fmt::format("killed after operation {} of {} ({})", k, total, ops_[k - 1]);
    copy_dir(base(), work);
    Result killed = save_step_3(work, fmt::format("kill:{}", k));
    EXPECT_EQ(killed.signal, SIGKILL) << what << "\n" << killed.output;
    // Until `latest` is renamed the previous checkpoint (step 2) is current, from then on the new.
    EXPECT_EQ(resume_step(work, what), k < switch_at ? 3 : 4) << what;
  }
}

// SIGKILL from outside at moments spread over a save slowed to about 0.6 s (150 ms before each of
// its 4 files: the 2 device files, index.json, latest), counted from the moment its step directory
// appears: always a whole checkpoint that resumes exactly; the earliest kill leaves the previous.
TEST_F(CheckpointKill, KilledFromOutsideAtSpreadDelaysIntoTheSaveResumesExactly) {
  fs::path work = tmp_->path / "work";
  std::map<int, int64_t> resumed;  // delay -> the step resumed at
  for (int delay_ms : {0, 100, 200, 300, 400, 500, 650}) {
    copy_dir(base(), work);
    pid_t pid = start(tmp_->path, {"--steps", "1", "--resume", work.string(), "--save", work.string()}, "",
                      {"TESSERA_CHECKPOINT_FILE_DELAY_MS=150"});
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    int status = 0;
    pid_t ended = 0;
    while (!fs::exists(work / "step-3") && std::chrono::steady_clock::now() < deadline &&
           (ended = ::waitpid(pid, &status, WNOHANG)) == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(ended, 0) << "the run ended before its save began\n" << read(tmp_->path / "run.log");
    ASSERT_TRUE(fs::exists(work / "step-3")) << "no save began within 60 s";
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(pid, SIGKILL);
    Result killed = finish(tmp_->path, pid);
    std::string what = fmt::format("killed {} ms into the save", delay_ms);
    EXPECT_TRUE(killed.signal == SIGKILL || killed.exit_code == 0) << what << "\n" << killed.output;
    resumed[delay_ms] = resume_step(work, what);
    EXPECT_TRUE(resumed[delay_ms] == 3 || resumed[delay_ms] == 4) << what;
    std::cout << what << ": resumed at step " << resumed[delay_ms] << "\n";
  }
  EXPECT_EQ(resumed[0], 3) << "killed before its first file, the save cannot have switched";
}

TEST_F(CheckpointKill, AFullDiskOrAnIoErrorExitsNonZeroAndThePreviousCheckpointResumes) {
  fs::path work = tmp_->path / "work";
  const std::pair<std::string, std::string> faults[] = {  // {op, file} of the listed save
      {"write", "step-3/device-0.safetensors.tmp"},
      {"fsync", "step-3/device-1.safetensors.tmp"},
      {"write", "step-3/index.json.tmp"}};
  int n = 0;
  for (const auto& [op, file] : faults) {
    size_t k = operation(op, file);
    ASSERT_GT(k, 0u) << op << " " << file;
    std::string fault = fmt::format("{}:{}", n++ % 2 == 0 ? "enospc" : "eio", k);
    copy_dir(base(), work);
    Result r = save_step_3(work, fault);
    EXPECT_EQ(r.exit_code, 1) << fault << "\n" << r.output;
    std::string message = fmt::format("error: --save {}: {}: {} failed: {}", work.string(), (work / file).string(), op,
                                      fault[0] == 'e' && fault[1] == 'n' ? "No space left on device" : "Input/output error");
    EXPECT_NE(r.output.find(message), std::string::npos) << message << "\n" << r.output;
    EXPECT_FALSE(fs::exists(work / "step-3")) << r.output;
    EXPECT_EQ(read(work / "latest"), "step-2\n");
    EXPECT_EQ(resume_step(work, fault), 3);
  }
}

TEST_F(CheckpointKill, SaveUnderARegularFileIsANamedError) {
  std::ofstream(tmp_->path / "file") << "x";
  fs::path target = tmp_->path / "file" / "ckpt";
  Result r = train(tmp_->path, {"--steps", "1", "--save", target.string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(fmt::format("error: --save {}: {} is not a directory", target.string(),
                                      (tmp_->path / "file").string())),
            std::string::npos)
      << r.output;
  // A corrupt device file: the resume names it (device 0's: under dp both devices read their
  // replicated pieces from it).
  fs::path work = tmp_->path / "work";
  copy_dir(base(), work);
  fs::path dev = work / "step-2" / "device-0.safetensors";
  std::string bytes = read(dev);
  bytes[bytes.size() / 2] ^= 1;
  std::ofstream(dev, std::ios::binary) << bytes;
  r = train(tmp_->path, {"--steps", "1", "--resume", work.string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("error: --resume " + work.string() + ": " + dev.string() + ": CRC-32C"), std::string::npos)
      << r.output;
}

}  // namespace
