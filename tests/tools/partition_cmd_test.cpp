// `tessera partition` and `tessera run` on a module written the way JAX exports one (sdy.mesh,
// argument and result shardings): the printed local program and report, the outputs written as
// .npy equal to the single-device interpreter, and the errors that name what is wrong.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error_of.h"
#include "common/polymorphic_program.h"
#include "common/temp_dir.h"
#include "interp/interpreter.h"
#include "interp/npy.h"
#include "runtime/sharding_picture.h"
#include "spmd/partition.h"
#include "stablehlo/parser.h"
#include "support/memory.h"
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

using testing::TempDir;

PartitionCommand command(const std::string& file, const std::string& function, const std::string& mesh) {
  PartitionCommand c;
  c.file = file;
  c.function = function;
  c.mesh = mesh;
  return c;
}

ir::Literal filled(const ir::Type& t, double scale) {
  ir::Literal l(t);
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_double(i, scale * std::sin(0.3 * double(i + 1)));
  return l;
}

TEST(PartitionCommand, PrintsTheLocalProgramAndItsReport) {
  TempDir dir;
  std::ostringstream out;
  ASSERT_EQ(partition_command(command(dir.file("m.mlir", kModule), "", ""), out), 0);
  std::string s = out.str();
  EXPECT_NE(s.find("func.func public @main(%arg0: tensor<2x4xf32>, %arg1: tensor<4x3xf32>) -> (tensor<2x3xf32>, tensor<f32>)"),
            std::string::npos) << s;
  EXPECT_NE(s.find("// collectives: 1"), std::string::npos) << s;
  EXPECT_NE(s.find("1 x all_reduce"), std::string::npos) << s;
  EXPECT_NE(s.find("// buffer plan per device: "), std::string::npos) << s;
  // --memory: the table per device; x's piece is 2x4 f32 (32 B) and w whole (48 B).
  PartitionCommand mem = command(dir.file("m.mlir", kModule), "", "");
  mem.memory = true;
  std::ostringstream table;
  ASSERT_EQ(partition_command(mem, table), 0);
  EXPECT_NE(table.str().find("// memory per device (estimated before running):\n//   parameters" + std::string(32, ' ') + "80 B\n"),
            std::string::npos) << table.str();
  EXPECT_NE(table.str().find("(4 devices in this process)"), std::string::npos) << table.str();
  // --mesh resizes the module's mesh: 2 devices, pieces of 4 rows.
  std::ostringstream two;
  ASSERT_EQ(partition_command(command(dir.file("m.mlir", kModule), "", "data=2"), two), 0);
  EXPECT_NE(two.str().find("%arg0: tensor<4x4xf32>"), std::string::npos) << two.str();
}

// A '?' result of an op on static arguments is refined before partitioning (it was an internal
// error); the library refuses a program left dynamic by name.
TEST(PartitionCommand, DynamicResultsOfStaticArgumentsAreRefinedFirst) {
  const char* text = R"(func.func @main(%a: tensor<3xi32>, %b: tensor<3xi32>) -> tensor<?xi1> {
  %0 = stablehlo.compare EQ, %a, %b : (tensor<3xi32>, tensor<3xi32>) -> tensor<?xi1>
  return %0 : tensor<?xi1>
}
)";
  TempDir dir;
  std::ostringstream out;
  ASSERT_EQ(partition_command(command(dir.file("d.mlir", text), "", ""), out), 0);
  EXPECT_NE(out.str().find("-> tensor<3xi1>"), std::string::npos) << out.str();
  auto m = stablehlo::parse(text, "d.mlir");
  ir::Module local;
  try {
    spmd::partition(*m, *m->find_function("main"), local);
    ADD_FAILURE() << "a dynamic program was partitioned";
  } catch (const support::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("@main: stablehlo.compare at line 2 has a dynamic ('?') dimension"),
              std::string::npos) << e.what();
  }
}

// --explain: each collective with the op, place, operand or result and dimension that forced it;
// --strict: a gather to more than the piece, where a cheaper way is known, is an error naming them.
TEST(PartitionCommand, ExplainNamesWhatForcedEachCollectiveAndStrictRefusesAvoidableGathers) {
  TempDir dir;
  PartitionCommand c = command(dir.file("m.mlir", kModule), "", "");
  c.explain = c.strict = true;
  std::ostringstream out;
  ASSERT_EQ(partition_command(c, out), 0);  // a split reduce's all_reduce is not a gather: strict passes
  std::string s = out.str();
  EXPECT_NE(s.find("// explain: 1 collectives\n//   all_reduce           group 4"), std::string::npos) << s;
  EXPECT_NE(s.find("for stablehlo.reduce at 7:5, result 0 partial over \"data\"\n"), std::string::npos) << s;
  EXPECT_EQ(s.find("warning:"), std::string::npos) << s;

  // A two-result reduce whose second result reads the first's accumulator (no combiner per
  // result, no selection by an order) reads the split rows whole: a silent full gather; a reshard to a
  // mesh of fewer devices goes through the replicated value (a gather to more than both pieces;
  // between meshes of the same devices each device would take its blocks directly).
  constexpr const char* kGathers = R"(module @g attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @a = <["x"=4]>
  sdy.mesh @b = <["y"=2]>
  func.func public @main(%arg0: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@a, [{"x"}, {}]>}) -> (tensor<4xf32>, tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@b, [{}, {"y"}]>}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0:2 = "stablehlo.reduce"(%arg0, %arg0, %cst, %cst) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>, %d: tensor<f32>):
      %m = stablehlo.maximum %a, %c : tensor<f32>
      %n = stablehlo.minimum %a, %d : tensor<f32>
      stablehlo.return %m, %n : tensor<f32>, tensor<f32>
    }) {dimensions = array<i64: 0>} : (tensor<16x4xf32>, tensor<16x4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
    return %0#0, %arg0 : tensor<4xf32>, tensor<16x4xf32>
  }
}
)";
  std::string file = dir.file("g.mlir", kGathers);
  PartitionCommand g = command(file, "", "");
  g.explain = true;
  std::ostringstream warned;
  ASSERT_EQ(partition_command(g, warned), 0);
  s = warned.str();
  EXPECT_NE(s.find("// warning: all_gather for stablehlo.reduce at 6:5, operand 0 dimension 0 (192 bytes per device): "
                   "silent full gather: stablehlo.reduce reads dimension 0 of operand 0 whole"),
            std::string::npos) << s;
  EXPECT_NE(s.find("// warning: all_gather for result 1 of @main, dimension 0 (192 bytes per device): gathers 256 bytes "
                   "per device, more than the piece it starts from (64) and the one it ends as (128)"),
            std::string::npos) << s;
  g.strict = true;
  std::string e = testing::error_of([&] {
    std::ostringstream ignored;
    partition_command(g, ignored);
  });
  EXPECT_NE(e.find(file + ": --strict: @main has 2 avoidable gathers: all_gather for stablehlo.reduce at 6:5, operand 0 "
                   "dimension 0"),
            std::string::npos) << e;
  EXPECT_NE(e.find("; all_gather for result 1 of @main, dimension 0"), std::string::npos) << e;

  // A slice of rows 2:10 of 16 split in 4 exchanges a halo (rows 6:8 and 8:10 from the left
  // neighbours: 2 rows, 32 bytes) and gathers the 8 sliced rows for the whole result (96 bytes)
  // instead of the 16 (192): no warning, and --strict passes.
  constexpr const char* kSlice = R"(module @s attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @a = <["x"=4]>
  func.func public @main(%arg0: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@a, [{"x"}, {}]>}) -> tensor<8x4xf32> {
    %0 = stablehlo.slice %arg0 [2:10, 0:4] : (tensor<16x4xf32>) -> tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
}
)";
  PartitionCommand h = command(dir.file("s.mlir", kSlice), "", "");
  h.explain = h.strict = true;
  std::ostringstream halo;
  ASSERT_EQ(partition_command(h, halo), 0);
  s = halo.str();
  EXPECT_NE(s.find("collective_permute   group 2           32 bytes per device  for stablehlo.slice at 4:5, operand 0 "
                   "dimension 0 halo\n"),
            std::string::npos) << s;
  EXPECT_NE(s.find("// total bytes moved per device: 128\n"), std::string::npos) << s;
  EXPECT_EQ(s.find("warning:"), std::string::npos) << s;
}

TEST(PartitionCommand, ShowDrawsWhichDeviceHoldsWhichBlock) {
  TempDir dir;
  PartitionCommand c = command(dir.file("m.mlir", kModule), "", "");
  c.show = true;
  c.show_svg = (dir.path / "svg").string();
  std::ostringstream out;
  ASSERT_EQ(partition_command(c, out), 0);
  std::string s = out.str();
  // x's rows over "data": one block of 2 rows per device.
  const char* x_grid =
      "// %arg0: tensor<8x4xf32> [{\"data\"}, {}] on @mesh [\"data\"=4]\n"
      "//       0:4\n"
      "//     ┌─────┐\n"
      "// 0:2 │  0  │\n"
      "//     ├─────┤\n"
      "// 2:4 │  1  │\n"
      "//     ├─────┤\n"
      "// 4:6 │  2  │\n"
      "//     ├─────┤\n"
      "// 6:8 │  3  │\n"
      "//     └─────┘\n";
  EXPECT_NE(s.find(x_grid), std::string::npos) << s;
  // w replicated: one block held by every device; the scalar result likewise.
  EXPECT_NE(s.find("// %arg1: tensor<4x3xf32> [{}, {}] on @mesh [\"data\"=4]\n"
                   "//       0:3\n"
                   "//     ┌─────┐\n"
                   "// 0:4 │ 0-3 │\n"),
            std::string::npos) << s;
  EXPECT_NE(s.find("// result 1: tensor<f32> [] on @mesh [\"data\"=4]\n// ┌─────┐\n// │ 0-3 │\n// └─────┘\n"),
            std::string::npos) << s;
  // The SVG of x: a background and one block per device, each labelled with its device.
  std::ifstream svg(dir.path / "svg" / "arg0.svg");
  std::stringstream text;
  text << svg.rdbuf();
  std::string picture = text.str();
  size_t rects = 0;
  for (size_t at = picture.find("<rect"); at != std::string::npos; at = picture.find("<rect", at + 1)) ++rects;
  EXPECT_EQ(rects, 5u) << picture;
  for (const char* label : {">0<", ">1<", ">2<", ">3<", ">0:2<", ">6:8<"})
    EXPECT_NE(picture.find(label), std::string::npos) << label << "\n" << picture;
  EXPECT_NE(picture.find("&quot;data&quot;"), std::string::npos) << picture;  // the title, escaped
  EXPECT_TRUE(fs::exists(dir.path / "svg" / "result1.svg"));
}

TEST(ShardingPicture, TwoAxesSubAxesUnevenAndUnreduced) {
  ir::Mesh mesh{"m", {{"data", 2}, {"model", 2}}, {}};
  // Both dimensions split: a 2x2 grid; device = data * 2 + model.
  std::string both = runtime::sharding_grid("t", ir::f32({4, 6}), ir::Sharding{"m", {{"data"}, {"model"}}, {}, {}}, mesh);
  EXPECT_NE(both.find("0:2 │  0  │  1  │"), std::string::npos) << both;
  EXPECT_NE(both.find("2:4 │  2  │  3  │"), std::string::npos) << both;
  // Rows over "model" only: devices 0 and 2 (model 0) share the first block.
  std::string model = runtime::sharding_grid("t", ir::f32({4, 6}), ir::Sharding{"m", {{"model"}, {}}, {}, {}}, mesh);
  EXPECT_NE(model.find("0:2 │ 0,2 │"), std::string::npos) << model;
  EXPECT_NE(model.find("2:4 │ 1,3 │"), std::string::npos) << model;
  // A sub-axis: "x":(1)2 is the major half of x, so devices 0,1 hold the first rows.
  ir::Mesh x4{"m", {{"x", 4}}, {}};
  std::string sub = runtime::sharding_grid(
      "t", ir::f32({8}), ir::Sharding{"m", {{ir::AxisRef("x", ir::SubAxis{1, 2})}}, {}, {}}, x4);
  EXPECT_NE(sub.find("│ 0,1 │ 2,3 │"), std::string::npos) << sub;
  // 7 rows over 4 devices: the last block is shorter.
  std::string uneven = runtime::sharding_grid("t", ir::f32({7}), ir::Sharding{"m", {{"x"}}, {}, {}}, x4);
  EXPECT_NE(uneven.find("  0:2   2:4   4:6   6:7\n"), std::string::npos) << uneven;
  EXPECT_NE(uneven.find("│  0  │  1  │  2  │  3  │"), std::string::npos) << uneven;
  // Partial sums are said.
  std::string partial = runtime::sharding_grid("t", ir::f32({4}), ir::Sharding{"m", {{}}, {}, {"x"}}, x4);
  EXPECT_NE(partial.find("unreduced over \"x\": each block holds a partial sum"), std::string::npos) << partial;
  // Rank 3 is refused with the array named, as JAX refuses it.
  std::string e = testing::error_of(
      [&] { runtime::sharding_grid("t", ir::f32({2, 2, 2}), ir::Sharding{"m", {{}, {}, {}}, {}, {}}, x4); });
  EXPECT_NE(e.find("tensor<2x2x2xf32> has rank 3"), std::string::npos) << e;
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

// Without --devices a sharded module runs on as many host devices as its mesh has (it used to run
// on 1 and be refused: "sharded over mesh @mesh of 4 devices, but the session has 1"), with the
// same results; a mesh of more than 64 devices needs them asked for.
TEST(RunCommand, WithoutDevicesTheMeshSaysHowMany) {
  TempDir dir;
  std::string file = dir.file("m.mlir", kModule);
  ir::Literal x = filled(ir::f32({8, 4}), 1.5), w = filled(ir::f32({4, 3}), 0.25);
  interp::save_npy(x, (dir.path / "x.npy").string());
  interp::save_npy(w, (dir.path / "w.npy").string());
  RunCommand c;
  c.file = file;
  c.inputs = {"arg0=" + (dir.path / "x.npy").string(), "arg1=" + (dir.path / "w.npy").string()};
  c.output_dir = (dir.path / "out").string();
  std::ostringstream out;
  ASSERT_EQ(run_command(c, out), 0);
  EXPECT_NE(out.str().find("ran @main on 4 host devices"), std::string::npos) << out.str();
  std::vector<ir::Literal> want = interp::evaluate(*stablehlo::parse(kModule), "main", {x, w});
  ir::Literal got = interp::load_npy((dir.path / "out" / "result0.npy").string());
  ASSERT_EQ(got.type(), want[0].type());
  for (int64_t i = 0; i < got.num_elements(); ++i) EXPECT_NEAR(got.get_double(i), want[0].get_double(i), 1e-5);
  // --mesh resizes the mesh, and the default follows it.
  c.mesh = "data=2";
  std::ostringstream two;
  ASSERT_EQ(run_command(c, two), 0);
  EXPECT_NE(two.str().find("ran @main on 2 host devices"), std::string::npos) << two.str();
  c.mesh = "data=128";
  std::string e = testing::error_of([&] { run_command(c, out); });
  EXPECT_NE(e.find("@main runs on 128 devices (its mesh @mesh), more than 64 host devices in one process; pass "
                   "--devices 128 (with --force)"),
            std::string::npos)
      << e;
}

// A module may declare meshes of several sizes (Shardy's tests do): a function runs on the devices
// of the meshes its layouts name, not on the module's largest (the extra devices were handed
// arguments of no shape, and a run stopped there).
TEST(RunCommand, AFunctionRunsOnItsOwnMeshNotTheModulesLargest) {
  const char* text = R"(sdy.mesh @small = <["x"=2]>
sdy.mesh @big = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<4xf32> {sdy.sharding = #sdy.sharding<@small, [{"x"}]>}) -> tensor<4xf32> {
  %0 = stablehlo.negate %arg0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";
  TempDir dir;
  ir::Literal x = filled(ir::Type(ir::ElementType::f32, {4}), 1.0);
  interp::save_npy(x, (dir.path / "x.npy").string());
  RunCommand c;
  c.file = dir.file("m.mlir", text);
  c.inputs = {"arg0=" + (dir.path / "x.npy").string()};
  c.output_dir = (dir.path / "out").string();
  std::ostringstream out;
  ASSERT_EQ(run_command(c, out), 0);
  EXPECT_NE(out.str().find("ran @main on 2 host devices"), std::string::npos) << out.str();
  ir::Literal got = interp::load_npy((dir.path / "out" / "result0.npy").string());
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(got.get_double(i), -x.get_double(i));
  std::ostringstream printed;
  ASSERT_EQ(partition_command(command(c.file, "", ""), printed), 0);
  EXPECT_NE(printed.str().find("// @main on 2 devices (mesh @small)"), std::string::npos) << printed.str();
}

TEST(RunCommand, ARunThatCannotFitIsRefusedBeforeItStarts) {
  TempDir dir;
  RunCommand c;
  c.file = dir.file("m.mlir", kModule);
  c.devices = 4;
  interp::save_npy(filled(ir::f32({8, 4}), 1), (dir.path / "x.npy").string());
  interp::save_npy(filled(ir::f32({4, 3}), 1), (dir.path / "w.npy").string());
  c.inputs = {"arg0=" + (dir.path / "x.npy").string(), "arg1=" + (dir.path / "w.npy").string()};
  c.output_dir = (dir.path / "out").string();
  support::set_memory_limit(256);  // bytes: 4 devices each need more than 64
  std::ostringstream out;
  std::string e = testing::error_of([&] { run_command(c, out); });
  support::set_memory_limit(0);
  EXPECT_NE(e.find("per device (its buffer plan's peak with arguments and results)"), std::string::npos) << e;
  EXPECT_NE(e.find("for the 4 devices of this process, more than the limit of 256 B"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(dir.path / "out" / "result0.npy"));
}

// A multi-platform jax.export's first argument is the platform index JAX fills in: named as such.
TEST(RunCommand, APlatformIndexArgumentIsNamed) {
  TempDir dir;
  RunCommand c;
  c.file = dir.file("m.mlir", R"(module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<i32> {jax.global_constant = "_platform_index"}, %arg1: tensor<2xf32>) -> tensor<2xf32> {
    return %arg1 : tensor<2xf32>
  }
}
)");
  std::ostringstream out;
  std::string e = testing::error_of([&] { run_command(c, out); });
  EXPECT_NE(e.find("parameter 0 of @main (tensor<i32>) is JAX's platform index (jax.global_constant = "
                   "\"_platform_index\"): give --input arg0=FILE.npy holding the index of \"cpu\" in the export's "
                   "platforms"), std::string::npos) << e;
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
  e = testing::error_of([&] { partition_command(command(c.file, "", "data=two"), out); });
  EXPECT_NE(e.find("size of axis \"data\" is not a positive whole number: 'two'"), std::string::npos) << e;
  e = testing::error_of([&] { partition_command(command(c.file, "nope", ""), out); });
  EXPECT_NE(e.find("no function @nope"), std::string::npos) << e;
}

// A loop whose condition never turns false stops at --max-while-iterations, named with its line,
// on each of 2 host devices.
TEST(RunCommand, AnEndlessLoopIsRefusedAtTheIterationLimit) {
  TempDir dir;
  RunCommand c;
  c.file = dir.file("loop.mlir", R"(func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.while(%a = %arg0) : tensor<2xf32>
  cond {
    %t = stablehlo.constant dense<true> : tensor<i1>
    stablehlo.return %t : tensor<i1>
  } do {
    %b = stablehlo.add %a, %a : tensor<2xf32>
    stablehlo.return %b : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}
)");
  c.devices = 2;
  interp::save_npy(filled(ir::f32({2}), 1), (dir.path / "x.npy").string());
  c.inputs = {"arg0=" + (dir.path / "x.npy").string()};
  c.output_dir = (dir.path / "out").string();
  c.max_while_iterations = 1000;
  std::ostringstream out;
  std::string e = testing::error_of([&] { run_command(c, out); });
  EXPECT_NE(e.find("stablehlo.while at 2:3: its condition still holds after 1000 iterations, the limit "
                   "(max_while_iterations)"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(dir.path / "out" / "result0.npy"));
}

// A shape-polymorphic JAX export (a '?' batch dimension) runs with two batch sizes: the module is
// refined for each input's shape, so the same file serves both; a batch its assertion refuses stops
// with JAX's message.
TEST(RunCommand, APolymorphicProgramRunsWithTwoBatchSizes) {
  TempDir dir;
  std::string file = dir.file("poly.mlir", testing::kPolymorphicProgram);
  for (int64_t b : {2, 5}) {
    ir::Literal x = filled(ir::f32({b, 4}), 1.0);
    std::string in = (dir.path / fmt::format("x{}.npy", b)).string();
    interp::save_npy(x, in);
    RunCommand c;
    c.file = file;
    c.devices = 2;
    c.inputs = {"arg0=" + in};
    c.output_dir = (dir.path / fmt::format("out{}", b)).string();
    std::ostringstream out;
    ASSERT_EQ(run_command(c, out), 0);
    ir::Literal y = interp::load_npy((fs::path(c.output_dir) / "result0.npy").string());
    ir::Literal iota = interp::load_npy((fs::path(c.output_dir) / "result1.npy").string());
    ASSERT_EQ(y.type(), ir::f32({b, 4}));
    ASSERT_EQ(iota.type(), ir::i32({b}));
    for (int64_t i = 0; i < y.num_elements(); ++i) EXPECT_EQ(y.get_double(i), 2 * x.get_double(i)) << i;
    for (int64_t i = 0; i < b; ++i) EXPECT_EQ(iota.get_int(i), i);
    EXPECT_NE(out.str().find(fmt::format("result 0: tensor<{}x4xf32>", b)), std::string::npos) << out.str();
  }
  interp::save_npy(ir::Literal(ir::f32({0, 4})), (dir.path / "x0.npy").string());
  RunCommand c;
  c.file = file;
  c.inputs = {"arg0=" + (dir.path / "x0.npy").string()};
  c.output_dir = (dir.path / "out0").string();
  std::ostringstream out;
  std::string e = testing::error_of([&] { run_command(c, out); });
  EXPECT_NE(e.find("shape assertion failed: Input shapes do not match the polymorphic shapes specification. "
                   "Expected value >= 1 for dimension variable 'b'. Obtained dimension variables: 'b' = 0 "),
            std::string::npos)
      << e;
  interp::save_npy(filled(ir::f32({3, 5}), 1.0), (dir.path / "x35.npy").string());
  c.inputs = {"arg0=" + (dir.path / "x35.npy").string()};
  e = testing::error_of([&] { run_command(c, out); });
  EXPECT_NE(e.find("argument 0 of @main is tensor<3x5xf32>, which does not fit its parameter type tensor<?x4xf32>"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace tessera::tools
