// The gradient of the worked example, printed: the golden file pins the whole module. The
// gradient keeps the mesh and x's sharding on its parameters, and constrains x's gradient to it.
#include <gtest/gtest.h>

#include "common/golden.h"
#include "common/worked_example.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "autodiff/reverse.h"
#include "ir/builder.h"
#include "stablehlo/printer.h"

namespace tessera::autodiff {
namespace {

using namespace tessera::ir;

TEST(Golden, ShardedLossGrad) {
  Module m("sharded_loss");
  Function& loss = tessera::testing::build_sharded_loss(m);
  reverse(m, loss);
  verify(m);
  std::string text = stablehlo::print(m);
  EXPECT_NE(text.find("func.func public @sharded_loss_grad(%arg0: tensor<8x4xf32> {sdy.sharding = "
                      "#sdy.sharding<@m, [{\"data\"}, {}]>}, %arg1: tensor<4x3xf32>) -> "
                      "(tensor<8x4xf32>, tensor<4x3xf32>)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sdy.sharding_constraint"), std::string::npos);

  const std::string path = std::string(TESSERA_AUTODIFF_GOLDEN_DIR) + "/sharded_loss_grad.mlir";
  tessera::testing::Golden g = tessera::testing::compare_golden(path, text);
  if (g.rewritten) GTEST_SKIP() << "rewrote " << path;
  EXPECT_EQ(g.mismatch, "") << "regenerate with TESSERA_UPDATE_GOLDEN=1 if the change is intended";
}

}  // namespace
}  // namespace tessera::autodiff
