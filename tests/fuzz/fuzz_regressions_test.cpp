// Every file under fuzz/regressions/<target>/ (inputs that once crashed a reader or broke its
// contract) replayed through that target's check (fuzz/targets.h) with the regular build: each must
// be accepted or refused with a UserError, never a Bug. A folder that names no target fails, so no
// finding goes unreplayed; the seeds must all be accepted, so a check cannot pass by refusing all.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fuzz/targets.h"

namespace tessera::fuzz {

// Test names and failure messages show the target's name, not its bytes.
void PrintTo(const Target& t, std::ostream* os) { *os << t.name; }

namespace {

namespace fs = std::filesystem;

fs::path regressions_dir() {
  const char* src = std::getenv("TESSERA_SOURCE_DIR");
  return fs::path(src ? src : ".") / "fuzz" / "regressions";
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class FuzzTarget : public testing::TestWithParam<Target> {};

TEST_P(FuzzTarget, RegressionsAreAcceptedOrRefusedWithAUserError) {
  setup();
  fs::path dir = regressions_dir() / GetParam().name;
  if (!fs::exists(dir)) return;  // no findings yet: nothing to replay
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().extension() == ".md") continue;
    ++files;
    try {
      GetParam().check(read(e.path()));
    } catch (const Bug& bug) {
      ADD_FAILURE() << e.path().string() << ": " << bug.what();
    }
  }
  EXPECT_GT(files, 0) << dir;
}

TEST_P(FuzzTarget, SeedsAreAccepted) {
  setup();
  auto seeds = tessera::fuzz::seeds(GetParam().name);
  EXPECT_FALSE(seeds.empty());
  for (const auto& [name, bytes] : seeds) {
    bool accepted = false;
    try {
      accepted = GetParam().check(bytes);
    } catch (const Bug& bug) {
      ADD_FAILURE() << name << ": " << bug.what();
    }
    EXPECT_TRUE(accepted) << name << " is refused";
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzTarget, testing::ValuesIn(targets().begin(), targets().end()),
                         [](const testing::TestParamInfo<Target>& info) { return std::string(info.param.name); });

TEST(FuzzRegressions, EveryFolderNamesATarget) {
  for (const auto& e : fs::directory_iterator(regressions_dir())) {
    if (e.is_directory())
      EXPECT_NE(find_target(e.path().filename().string()), nullptr) << e.path() << " names no fuzz target";
    else
      EXPECT_EQ(e.path().extension(), ".md") << e.path() << ": regressions go in fuzz/regressions/<target>/";
  }
}

}  // namespace
}  // namespace tessera::fuzz
