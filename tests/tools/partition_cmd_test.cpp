// `tessera partition` and `tessera run` on a module written the way JAX exports one (sdy.mesh,
// argument and result shardings): the printed local program and report, the outputs written as
// .npy equal to the single-device interpreter, and the errors that name what is wrong.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error_of.h"
#include "interp/interpreter.h"
#include "interp/npy.h"
#include "stablehlo/parser.h"
#include "tools/tessera/partition_cmd.h"

namespace tessera::tools {
namespace {

namespace fs = std::filesystem;

constexpr const char* kModule = R"(module @jit_loss attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["data"=4]>
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, %arg1: tensor<4x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> (tensor<8x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, tensor<f32>) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %1 = stablehlo.tanh %0 : tensor<8x3xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x3xf32>, tensor<f32>) -> tensor<f32>
    return %1, %2 : tensor<8x3xf32>, tensor<f32>
  }
}
)";

struct TempDir {
  fs::path path;
  TempDir() : path(fs::temp_directory_path() / fs::path("tessera_cmd_" + std::to_string(::getpid()))) {
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

ir::Literal filled(const ir::Type& t, double scale) {
  ir::Literal l(t);
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_double(i, scale * std::sin(0.3 * double(i + 1)));
  return l;
}

TEST(PartitionCommand, PrintsTheLocalProgramAndItsReport) {
  TempDir dir;
  std::ostringstream out;
  ASSERT_EQ(partition_command({dir.file("m.mlir", kModule), "", ""}, out), 0);
  std::string s = out.str();
  EXPECT_NE(s.find("func.func public @main(%arg0: tensor<2x4xf32>, %arg1: tensor<4x3xf32>) -> (tensor<2x3xf32>, tensor<f32>)"),
            std::string::npos) << s;
  EXPECT_NE(s.find("// collectives: 1"), std::string::npos) << s;
  EXPECT_NE(s.find("1 x all_reduce"), std::string::npos) << s;
  EXPECT_NE(s.find("// buffer plan per device: "), std::string::npos) << s;
  // --mesh resizes the module's mesh: 2 devices, pieces of 4 rows.
  std::ostringstream two;
  ASSERT_EQ(partition_command({dir.file("m.mlir", kModule), "", "data=2"}, two), 0);
  EXPECT_NE(two.str().find("%arg0: tensor<4x4xf32>"), std::string::npos) << two.str();
}

TEST(RunCommand, WritesResultsEqualToOneDevice) {
  TempDir dir;
  std::string file = dir.file("m.mlir", kModule);
  ir::Literal x = filled(ir::f32({8, 4}), 1.0), w = filled(ir::f32({4, 3}), 0.5);
  interp::save_npy(x, (dir.path / "x.npy").string());
  interp::save_npy(w, (dir.path / "w.npy").string());
  RunCommand c;
  c.file = file;
  c.devices = 4;
  c.inputs = {"arg0=" + (dir.path / "x.npy").string(), "1=" + (dir.path / "w.npy").string()};
  c.output_dir = (dir.path / "out").string();
  std::ostringstream out;
  ASSERT_EQ(run_command(c, out), 0);
  auto m = stablehlo::parse(kModule);
  std::vector<ir::Literal> want = interp::evaluate(*m, "main", {x, w});
  for (size_t r = 0; r < want.size(); ++r) {
    ir::Literal got = interp::load_npy((dir.path / "out" / ("result" + std::to_string(r) + ".npy")).string());
    ASSERT_EQ(got.type(), want[r].type());
    for (int64_t i = 0; i < got.num_elements(); ++i) EXPECT_NEAR(got.get_double(i), want[r].get_double(i), 1e-5);
  }
  EXPECT_NE(out.str().find("ran @main on 4 host devices; 1 collectives"), std::string::npos) << out.str();
}

TEST(RunCommand, ErrorsNameWhatIsWrong) {
  TempDir dir;
  RunCommand c;
  c.file = dir.file("m.mlir", kModule);
  c.devices = 4;
  std::ostringstream out;
  std::string e = testing::error_of([&] { run_command(c, out); });
  EXPECT_NE(e.find("parameter 0 of @main (tensor<8x4xf32>) has no --input"), std::string::npos) << e;
  c.devices = 2;
  interp::save_npy(filled(ir::f32({8, 4}), 1), (dir.path / "x.npy").string());
  interp::save_npy(filled(ir::f32({4, 3}), 1), (dir.path / "w.npy").string());
  c.inputs = {"arg0=" + (dir.path / "x.npy").string(), "arg1=" + (dir.path / "w.npy").string()};
  e = testing::error_of([&] { run_command(c, out); });
  EXPECT_NE(e.find("mesh @mesh of 4 devices, but the session has 2"), std::string::npos) << e;
  e = testing::error_of([&] { partition_command({c.file, "", "data=two"}, out); });
  EXPECT_NE(e.find("size of axis \"data\" is not a positive whole number: 'two'"), std::string::npos) << e;
  e = testing::error_of([&] { partition_command({c.file, "nope", ""}, out); });
  EXPECT_NE(e.find("no function @nope"), std::string::npos) << e;
}

}  // namespace
}  // namespace tessera::tools
