// The examples' sharded loss printed whole and compared with golden/sharded_loss.mlir.
//
// On a mismatch the test prints both texts line by line. TESSERA_UPDATE_GOLDEN=1 (that value
// only) rewrites the golden file with the current output instead of comparing (common/golden.h).
#include <gtest/gtest.h>

#include "common/golden.h"
#include "common/worked_example.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "ir/builder.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

using namespace ir;

std::string sharded_loss_text() {
  Module m("sharded_loss");
  tessera::testing::build_sharded_loss(m);
  verify(m);
  return print(m);
}

TEST(PrinterGolden, ShardedLossMatchesGoldenFile) {
  const std::string path = std::string(TESSERA_STABLEHLO_GOLDEN_DIR) + "/sharded_loss.mlir";
  const std::string actual = sharded_loss_text();
  tessera::testing::Golden g = tessera::testing::compare_golden(path, actual);
  if (g.rewritten) GTEST_SKIP() << "rewrote " << path;
  EXPECT_EQ(g.mismatch, "") << "(rerun with TESSERA_UPDATE_GOLDEN=1 to accept)";
}

// Only TESSERA_UPDATE_GOLDEN=1 rewrites: with 0 (or anything else) the file is compared, and left alone.
TEST(GoldenFile, OnlyTheValueOneRewrites) {
  const std::string path = ::testing::TempDir() + "tessera_golden_probe.txt";
  const char* saved = std::getenv("TESSERA_UPDATE_GOLDEN");
  std::string before = saved ? saved : "";
  for (const char* value : {"0", "yes", ""}) {
    std::ofstream(path) << "old\n";
    setenv("TESSERA_UPDATE_GOLDEN", value, 1);
    tessera::testing::Golden g = tessera::testing::compare_golden(path, "new\n");
    EXPECT_FALSE(g.rewritten) << value;
    EXPECT_NE(g.mismatch.find("golden: old"), std::string::npos) << value << ": " << g.mismatch;
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, "old\n") << value;
  }
  setenv("TESSERA_UPDATE_GOLDEN", "1", 1);
  EXPECT_TRUE(tessera::testing::compare_golden(path, "new\n").rewritten);
  if (saved) setenv("TESSERA_UPDATE_GOLDEN", before.c_str(), 1);
  else unsetenv("TESSERA_UPDATE_GOLDEN");
  EXPECT_EQ(tessera::testing::compare_golden(path, "new\n").mismatch, "");
}

TEST(PrinterGolden, ShardedLossNamesMeshAndShardings) {
  const std::string text = sharded_loss_text();
  EXPECT_NE(text.find("  sdy.mesh @m = <[\"data\"=4]>\n"), std::string::npos) << text;
  EXPECT_NE(
      text.find("%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@m, [{\"data\"}, {}]>}"),
      std::string::npos)
      << text;
  // w is replicated: its argument carries no attributes at all.
  EXPECT_NE(text.find(", %arg1: tensor<4x3xf32>) -> tensor<f32> {"), std::string::npos) << text;
}

}  // namespace
}  // namespace tessera::stablehlo
