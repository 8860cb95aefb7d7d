// The examples' sharded loss printed whole and compared with golden/sharded_loss.mlir.
//
// On a mismatch the test prints both texts line by line. TESSERA_UPDATE_GOLDEN=1 rewrites the
// golden file with the current output instead of comparing.
#include <gtest/gtest.h>

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

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// "line N: expected ... / actual ..." for each differing line.
std::string line_diff(const std::string& expected, const std::string& actual) {
  std::vector<std::string> e = lines_of(expected), a = lines_of(actual);
  std::string out;
  for (size_t i = 0; i < std::max(e.size(), a.size()); ++i) {
    std::string el = i < e.size() ? e[i] : "<end of file>";
    std::string al = i < a.size() ? a[i] : "<end of file>";
    if (el != al)
      out += "line " + std::to_string(i + 1) + ":\n  golden: " + el + "\n  actual: " + al + "\n";
  }
  return out;
}

TEST(PrinterGolden, ShardedLossMatchesGoldenFile) {
  const std::string path = std::string(TESSERA_STABLEHLO_GOLDEN_DIR) + "/sharded_loss.mlir";
  const std::string actual = sharded_loss_text();
  const char* update = std::getenv("TESSERA_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << actual;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path << " (TESSERA_UPDATE_GOLDEN=1 writes it)";
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(golden.str(), actual) << "printed module differs from " << path << ":\n"
                                  << line_diff(golden.str(), actual)
                                  << "(rerun with TESSERA_UPDATE_GOLDEN=1 to accept)";
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
