// A module written the way JAX exported one with the GSPMD partitioner (mhlo.sharding strings, a
// with_sharding_constraint as custom_call @Sharding, mhlo.num_partitions): `tessera run --devices 2`
// and `tessera partition` give the single-device interpreter's results, with the collectives the
// layouts ask for.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "common/error_of.h"
#include "common/shard_map_modules.h"
#include "common/temp_dir.h"
#include "interp/interpreter.h"
#include "interp/npy.h"
#include "stablehlo/parser.h"
#include "tools/tessera/partition_cmd.h"

namespace tessera::tools {
namespace {

constexpr double kTol = 1e-5;  // float32 sums of a few products of order 1

// x split by rows over 2 devices, tanh, then constrained to split by columns, then x @ w with w
// replicated and the result replicated: the constraint is an all_to_all, and the contraction over
// the split columns gathers them (64 bytes per device) rather than all-reduce the 8x3 partial
// result (96).
constexpr const char* kModule = R"(module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x4xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"}, %arg1: tensor<4x3xf32> {mhlo.sharding = "{replicated}"}) -> (tensor<8x3xf32> {jax.result_info = "", mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.tanh %arg0 : tensor<8x4xf32>
    %1 = stablehlo.custom_call @Sharding(%0) {backend_config = "", mhlo.sharding = "{devices=[1,2]<=[2]}"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %2 = stablehlo.dot_general %1, %arg1, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    return %2 : tensor<8x3xf32>
  }
}
)";

// The same program as Shardy wrote it, but with the @Sharding call kept (its factor rule passes
// the row split through, so no collective is needed before the result).
constexpr const char* kShardyWithCall = R"(module @jit_f {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = "{devices=[2,1]<=[2]}"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %1 = stablehlo.tanh %0 : tensor<8x4xf32>
    return %1 : tensor<8x4xf32>
  }
}
)";

// On 4 devices in an order that is no iota (a mesh with device_ids), x split both ways, w split
// with its replicas, the result split 4 ways.
constexpr const char* kListed = R"(module @jit_f attributes {mhlo.num_partitions = 4 : i32} {
  func.func public @main(%arg0: tensor<8x4xf32> {mhlo.sharding = "{devices=[2,2]0,3,1,2}"}, %arg1: tensor<4x3xf32> {mhlo.sharding = "{devices=[2,1,2]0,3,1,2 last_tile_dim_replicate}"}) -> (tensor<8x3xf32> {mhlo.sharding = "{devices=[4,1]0,3,1,2}"}) {
    %0 = stablehlo.tanh %arg0 : tensor<8x4xf32>
    %1 = stablehlo.custom_call @Sharding(%0) {mhlo.sharding = "{devices=[1,4]0,3,1,2}"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %2 = stablehlo.dot_general %1, %arg1, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    return %2 : tensor<8x3xf32>
  }
}
)";

ir::Literal filled(const ir::Type& t, double scale) {
  ir::Literal l(t);
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_double(i, scale * std::sin(0.3 * double(i + 1)));
  return l;
}

// The unsharded result, by NumPy's rule written out: tanh(x) @ w.
double expected(const ir::Literal& x, const ir::Literal& w, int64_t i, int64_t j) {
  double s = 0;
  for (int64_t k = 0; k < 4; ++k) s += std::tanh(x.get_double(i * 4 + k)) * w.get_double(k * 3 + j);
  return s;
}

void runs_as_on_one(const char* module, int devices, const std::string& summary) {
  testing::TempDir dir;
  ir::Literal x = filled(ir::f32({8, 4}), 1.0), w = filled(ir::f32({4, 3}), 0.5);
  interp::save_npy(x, (dir.path / "x.npy").string());
  interp::save_npy(w, (dir.path / "w.npy").string());
  RunCommand c;
  c.file = dir.file("m.mlir", module);
  c.devices = devices;
  c.inputs = {"arg0=" + (dir.path / "x.npy").string(), "arg1=" + (dir.path / "w.npy").string()};
  c.output_dir = (dir.path / "out").string();
  std::ostringstream out;
  ASSERT_EQ(run_command(c, out), 0);
  ir::Literal got = interp::load_npy((dir.path / "out" / "result0.npy").string());
  ASSERT_EQ(got.type(), ir::f32({8, 3}));
  std::vector<ir::Literal> one = interp::evaluate(*stablehlo::parse(module), "main", {x, w});
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_NEAR(got.get_double(i * 3 + j), expected(x, w, i, j), kTol) << i << "," << j;
      EXPECT_NEAR(one[0].get_double(i * 3 + j), expected(x, w, i, j), kTol) << i << "," << j;
    }
  EXPECT_NE(out.str().find(summary), std::string::npos) << out.str();
}

TEST(GspmdExport, RunsOnTwoDevicesAsOnOne) { runs_as_on_one(kModule, 2, "ran @main on 2 host devices; 2 collectives"); }

TEST(GspmdExport, RunsOnFourDevicesListedOutOfOrderAsOnOne) {
  runs_as_on_one(kListed, 4, "ran @main on 4 host devices; 4 collectives");
}

// A shard_map export (the fence becomes an sdy.manual_computation): on its 2 devices, the rows
// of x @ w and the psum'd column sums; on 4, device d's rows 2x + 1.5 moved to device d + 1.
TEST(GspmdExport, AShardMapRunsOnItsDevicesAsNumPyWouldGive) {
  testing::TempDir dir;
  ir::Literal x = filled(ir::f32({8, 4}), 1.0), w = filled(ir::f32({4, 6}), 0.5);
  interp::save_npy(x, (dir.path / "x.npy").string());
  interp::save_npy(w, (dir.path / "w.npy").string());
  RunCommand c;
  c.file = dir.file("m.mlir", testing::kCalled);
  c.devices = 2;
  c.inputs = {"arg0=" + (dir.path / "x.npy").string(), "arg1=" + (dir.path / "w.npy").string()};
  c.output_dir = (dir.path / "out").string();
  std::ostringstream out;
  ASSERT_EQ(run_command(c, out), 0);
  EXPECT_NE(out.str().find("1 collectives, 24 bytes moved per device"), std::string::npos) << out.str();
  ir::Literal y = interp::load_npy((dir.path / "out" / "result0.npy").string());
  ir::Literal sums = interp::load_npy((dir.path / "out" / "result1.npy").string());
  ASSERT_EQ(y.type(), ir::f32({8, 6}));
  ASSERT_EQ(sums.type(), ir::f32({6}));
  for (int64_t j = 0; j < 6; ++j) {
    double column = 0;
    for (int64_t i = 0; i < 8; ++i) {
      double want = 0;
      for (int64_t k = 0; k < 4; ++k) want += x.get_double(i * 4 + k) * w.get_double(k * 6 + j);
      EXPECT_NEAR(y.get_double(i * 6 + j), want, kTol) << i << "," << j;
      column += want;
    }
    EXPECT_NEAR(sums.get_double(j), column, kTol) << j;
  }

  ir::Literal v = filled(ir::f32({8, 2}), 1.0);
  interp::save_npy(v, (dir.path / "v.npy").string());
  RunCommand c4;
  c4.file = dir.file("inline.mlir", testing::kInline);
  c4.devices = 4;
  c4.inputs = {"arg0=" + (dir.path / "v.npy").string()};
  c4.output_dir = (dir.path / "out4").string();
  ASSERT_EQ(run_command(c4, out), 0);
  ir::Literal moved = interp::load_npy((dir.path / "out4" / "result0.npy").string());
  ir::Literal square = interp::load_npy((dir.path / "out4" / "result1.npy").string());
  ASSERT_EQ(moved.type(), ir::f32({8, 2}));
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 2; ++j)
      EXPECT_NEAR(moved.get_double(i * 2 + j), 2 * v.get_double(((i + 6) % 8) * 2 + j) + 1.5, kTol) << i << "," << j;
  EXPECT_NEAR(square.get_double(0), 2.25, kTol);
}

// Shardy's round-trip form of a shard_map (what jax.export writes): x @ w with the two devices'
// row halves swapped by the body's collective_permute.
TEST(GspmdExport, AShardMapInShardysRoundTripFormRunsOnItsDevices) {
  testing::TempDir dir;
  ir::Literal x = filled(ir::f32({8, 4}), 1.0), w = filled(ir::f32({4, 6}), 0.5);
  interp::save_npy(x, (dir.path / "x.npy").string());
  interp::save_npy(w, (dir.path / "w.npy").string());
  RunCommand c;
  c.file = dir.file("m.mlir", testing::kRoundTripShardMap);
  c.devices = 2;
  c.inputs = {"arg0=" + (dir.path / "x.npy").string(), "arg1=" + (dir.path / "w.npy").string()};
  c.output_dir = (dir.path / "out").string();
  std::ostringstream out;
  ASSERT_EQ(run_command(c, out), 0);
  EXPECT_NE(out.str().find("1 collectives, 96 bytes moved per device"), std::string::npos) << out.str();
  ir::Literal y = interp::load_npy((dir.path / "out" / "result0.npy").string());
  ASSERT_EQ(y.type(), ir::f32({8, 6}));
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      int64_t from = (i + 4) % 8;
      double want = 0;
      for (int64_t k = 0; k < 4; ++k) want += x.get_double(from * 4 + k) * w.get_double(k * 6 + j);
      EXPECT_NEAR(y.get_double(i * 6 + j), want, kTol) << i << "," << j;
    }
}

TEST(GspmdExport, PartitionsWithTheCollectivesItsLayoutsAskFor) {
  testing::TempDir dir;
  PartitionCommand c;
  c.file = dir.file("m.mlir", kModule);
  std::ostringstream out;
  ASSERT_EQ(partition_command(c, out), 0);
  std::string s = out.str();
  EXPECT_NE(s.find("sdy.mesh @mesh = <[\"_axis_0\"=2]>"), std::string::npos) << s;
  EXPECT_NE(s.find("@main(%arg0: tensor<4x4xf32>, %arg1: tensor<4x3xf32>) -> tensor<8x3xf32>"), std::string::npos) << s;
  EXPECT_NE(s.find("// collectives: 2"), std::string::npos) << s;
  EXPECT_NE(s.find("all_to_all           group 2           32 bytes per device  for sdy.sharding_constraint at 4:5"),
            std::string::npos) << s;
  EXPECT_NE(s.find("all_gather           group 2           64 bytes per device  for stablehlo.dot_general at 5:5"),
            std::string::npos) << s;
}

TEST(GspmdExport, AKeptShardingCallPassesTheLayoutThrough) {
  testing::TempDir dir;
  PartitionCommand c;
  c.file = dir.file("m.mlir", kShardyWithCall);
  std::ostringstream out;
  ASSERT_EQ(partition_command(c, out), 0);
  EXPECT_NE(out.str().find("// collectives: 0"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = \"{devices=[2,1]<=[2]}\"} : "
                           "(tensor<4x4xf32>) -> tensor<4x4xf32>"), std::string::npos) << out.str();
}

TEST(GspmdExport, ADeviceCountOtherThanItsPartitionsIsNamed) {
  testing::TempDir dir;
  RunCommand c;
  c.file = dir.file("m.mlir", kModule);
  c.devices = 4;
  interp::save_npy(filled(ir::f32({8, 4}), 1), (dir.path / "x.npy").string());
  interp::save_npy(filled(ir::f32({4, 3}), 1), (dir.path / "w.npy").string());
  c.inputs = {"arg0=" + (dir.path / "x.npy").string(), "arg1=" + (dir.path / "w.npy").string()};
  std::ostringstream out;
  std::string e = testing::error_of([&] { run_command(c, out); });
  EXPECT_NE(e.find("mesh @mesh of 2 devices, but the session has 4"), std::string::npos) << e;
}

}  // namespace
}  // namespace tessera::tools
