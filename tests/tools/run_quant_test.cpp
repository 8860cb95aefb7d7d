// `tessera run` of a quantized program over two host devices: the ops on quantized values are
// lowered before partitioning, and the quantization dimension of a per-axis type stays whole (its
// factor rule), so a sharding that splits it is gathered first. Values by the spec's formulas
// (NumPy's float32 arithmetic agrees): column 0 of %a quantizes with 0.5:-3 and column 1 with 0.25,
// %b with 0.25:2, their dequantized sum with 0.5:1.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sstream>

#include "common/temp_dir.h"
#include "interp/npy.h"
#include "tools/tessera/partition_cmd.h"

namespace tessera::tools {
namespace {

using testing::TempDir;

std::string quantized_module(const std::string& sharding) {
  const std::string qa = "tensor<4x2x!quant.uniform<i8:f32:1, {0.5:-3, 0.25}>>";
  const std::string qb = "tensor<4x2x!quant.uniform<i8:f32, 0.25:2>>";
  const std::string qc = "tensor<4x2x!quant.uniform<i8:f32, 0.5:1>>";
  const std::string arg = "tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, " + sharding + ">}";
  return "module {\n  sdy.mesh @mesh = <[\"x\"=2]>\n"
         "  func.func @main(%a: " + arg + ", %b: " + arg + ") -> tensor<4x2xf32> {\n"
         "    %0 = stablehlo.uniform_quantize %a : (tensor<4x2xf32>) -> " + qa + "\n"
         "    %1 = stablehlo.uniform_quantize %b : (tensor<4x2xf32>) -> " + qb + "\n"
         "    %2 = stablehlo.add %0, %1 : (" + qa + ", " + qb + ") -> " + qc + "\n"
         "    %3 = stablehlo.uniform_dequantize %2 : (" + qc + ") -> tensor<4x2xf32>\n"
         "    return %3 : tensor<4x2xf32>\n  }\n}\n";
}

TEST(RunQuantized, TwoDevicesGiveTheSpecsValues) {
  for (const auto& [sharding, collectives] : {std::pair<std::string, int>{"[{\"x\"}, {}]", 0}, {"[{}, {\"x\"}]", 1}}) {
    TempDir dir;
    std::string file = dir.file("q.mlir", quantized_module(sharding));
    interp::save_npy(ir::Literal::from_doubles(ir::f32({4, 2}), std::vector<double>{0.5, -1.0, 2.0, 1.25, 0.3, 0.7, -0.6, 1.1}),
                     (dir.path / "a.npy").string());
    interp::save_npy(ir::Literal::from_doubles(ir::f32({4, 2}), std::vector<double>{0.25, 0.75, -4.0, 1.0, 0.1, 0.2, 0.3, -0.4}),
                     (dir.path / "b.npy").string());
    RunCommand c;
    c.file = file;
    c.devices = 2;
    c.inputs = {"arg0=" + (dir.path / "a.npy").string(), "arg1=" + (dir.path / "b.npy").string()};
    c.output_dir = (dir.path / "out").string();
    std::ostringstream out;
    ASSERT_EQ(run_command(c, out), 0) << sharding;
    ir::Literal got = interp::load_npy((dir.path / "out" / "result0.npy").string());
    // Stored [[2, 0], [-3, 6], [2, 3], [0, 2]] at 0.5:1.
    EXPECT_EQ(got, ir::Literal::from_doubles(ir::f32({4, 2}), std::vector<double>{0.5, -0.5, -2.0, 2.5, 0.5, 1.0, -0.5, 0.5}))
        << sharding;
    EXPECT_NE(out.str().find(fmt::format("ran @main on 2 host devices; {} collectives", collectives)), std::string::npos)
        << sharding << "\n" << out.str();
  }
}

}  // namespace
}  // namespace tessera::tools
