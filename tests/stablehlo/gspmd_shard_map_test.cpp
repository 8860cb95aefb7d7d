// shard_map as JAX exported it with the GSPMD partitioner: @Sharding, then SPMDFullToShardShape
// {manual}, the per-device body (a call of @shmap_body, or ops written in place), then
// SPMDShardToFullShape. The parser makes each fence an sdy.manual_computation over every mesh axis;
// the interpreter then gives what the body computes on each device's piece, written out below.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "common/mangle.h"
#include "common/parse_error.h"
#include "common/shard_map_modules.h"
#include "interp/interpreter.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

using testing::kCalled;
using testing::kInline;

constexpr double kTol = 1e-5;  // float32 sums of four products of order 1

ir::Literal filled(const ir::Type& t, double scale) {
  ir::Literal l(t);
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_double(i, scale * std::sin(0.3 * double(i + 1)));
  return l;
}

TEST(GspmdShardMap, TheFenceBecomesAManualComputation) {
  auto m = parse(kCalled, "t.mlir");
  std::string s = print(*m);
  EXPECT_EQ(s.find("SPMDFullToShardShape"), std::string::npos) << s;
  EXPECT_EQ(s.find("SPMDShardToFullShape"), std::string::npos) << s;
  EXPECT_EQ(s.find("@Sharding"), std::string::npos) << s;
  EXPECT_NE(s.find("sdy.manual_computation(%0, %1) in_shardings=[<@mesh, [{\"_axis_0\"}, {}]>, <@mesh, [{}, {}]>] "
                   "out_shardings=[<@mesh, [{\"_axis_0\"}, {}]>, <@mesh, [{}]>] manual_axes={\"_axis_0\"}"),
            std::string::npos) << s;
  // The printed form reads back to itself.
  EXPECT_EQ(print(*parse(s, "printed.mlir")), s);
}

// The interpreter runs the body once per device; with no collective on the way, the rows of x @ w
// are exactly the unsharded product (the psum'd result's meaning needs devices: gspmd_cmd_test).
TEST(GspmdShardMap, EachPieceRunsTheBody) {
  auto m = parse(kCalled, "t.mlir");
  ir::Literal x = filled(ir::f32({8, 4}), 1.0), w = filled(ir::f32({4, 6}), 0.5);
  auto r = interp::evaluate(*m, "main", {x, w});
  ASSERT_EQ(r.size(), 2u);
  ASSERT_EQ(r[0].type(), ir::f32({8, 6}));
  ASSERT_EQ(r[1].type(), ir::f32({6}));
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      double want = 0;
      for (int64_t k = 0; k < 4; ++k) want += x.get_double(i * 4 + k) * w.get_double(k * 6 + j);
      EXPECT_NEAR(r[0].get_double(i * 6 + j), want, kTol) << i << "," << j;
    }
}

TEST(GspmdShardMap, ABodyInPlaceCopiesTheConstantsItReads) {
  auto m = parse(kInline, "t.mlir");
  std::string s = print(*m);
  EXPECT_NE(s.find("manual_axes={\"_axis_0\"}"), std::string::npos) << s;
  // The constant and its broadcast are copied into the body; the multiply outside keeps its own.
  size_t body = s.find("sdy.manual_computation");
  ASSERT_NE(body, std::string::npos) << s;
  EXPECT_NE(s.find("stablehlo.constant dense<1.500000e+00>", body), std::string::npos) << s;
  EXPECT_NE(s.find("stablehlo.broadcast_in_dim", body), std::string::npos) << s;
  EXPECT_LT(s.find("stablehlo.constant dense<1.500000e+00>"), body) << s;
  EXPECT_EQ(print(*parse(s, "printed.mlir")), s);
}

TEST(GspmdShardMap, OnOneDeviceTheFencesAreTheIdentity) {
  std::string one = R"(module @jit_h attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32> {mhlo.sharding = "{replicated}"}) -> tensor<4xf32> {
    %0 = stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = "{replicated}"} : (tensor<4xf32>) -> tensor<4xf32>
    %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {mhlo.sharding = "{manual}"} : (tensor<4xf32>) -> tensor<4xf32>
    %2 = stablehlo.exponential %1 : tensor<4xf32>
    %3 = stablehlo.custom_call @Sharding(%2) {mhlo.sharding = "{manual}"} : (tensor<4xf32>) -> tensor<4xf32>
    %4 = stablehlo.custom_call @SPMDShardToFullShape(%3) {mhlo.sharding = "{replicated}"} : (tensor<4xf32>) -> tensor<4xf32>
    return %4 : tensor<4xf32>
  }
}
)";
  auto m = parse(one, "t.mlir");
  EXPECT_EQ(print(*m).find("SPMD"), std::string::npos) << print(*m);
  ir::Literal x = filled(ir::f32({4}), 1.0);
  auto r = interp::evaluate(*m, "main", {x});
  for (int64_t i = 0; i < 4; ++i) EXPECT_NEAR(r[0].get_double(i), std::exp(x.get_double(i)), kTol);
  // An empty body: the fence back reads the fence's own result, so one replacement leads to another.
  std::string empty = one;
  std::string from = "%2 = stablehlo.exponential %1 : tensor<4xf32>\n    %3 = stablehlo.custom_call @Sharding(%2)";
  ASSERT_NE(empty.find(from), std::string::npos);
  empty.replace(empty.find(from), from.size(), "%3 = stablehlo.custom_call @Sharding(%1)");
  std::string tail = "return %4 : tensor<4xf32>";
  empty.replace(empty.find(tail), tail.size(), "%5 = stablehlo.exponential %4 : tensor<4xf32>\n    return %5 : tensor<4xf32>");
  auto e = parse(empty, "t.mlir");
  EXPECT_EQ(print(*e).find("SPMD"), std::string::npos) << print(*e);
  r = interp::evaluate(*e, "main", {x});
  for (int64_t i = 0; i < 4; ++i) EXPECT_NEAR(r[0].get_double(i), std::exp(x.get_double(i)), kTol);
}

// kInline with each `from` replaced by its `to` (once each).
std::string edited(const std::vector<std::pair<std::string, std::string>>& edits) {
  std::string s = kInline;
  for (const auto& [from, to] : edits) {
    size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
  }
  return s;
}

TEST(GspmdShardMap, MisusesAreRefusedAtTheirPlace) {
  using testing::parse_error;
  // The declared piece is not the operand's layout's piece (rows split 2 ways, not 4).
  std::string e = parse_error(edited({{"@Sharding(%arg0) {mhlo.sharding = \"{devices=[4,1]<=[4]}\"}",
                                       "@Sharding(%arg0) {mhlo.sharding = \"{devices=[2,1,2]<=[4] last_tile_dim_replicate}\"}"}}));
  EXPECT_NE(e.find("t.mlir:5:5: custom_call @SPMDFullToShardShape (shard_map): gives tensor<2x2xf32>, but "
                   "tensor<8x2xf32> split as its operand's layout is tensor<4x2xf32>"), std::string::npos) << e;
  // A per-device value returned without the fence back.
  e = parse_error(edited({{"%8 = stablehlo.multiply %c, %c : tensor<f32>",
                           "%8 = stablehlo.reduce(%5 init: %c) applies stablehlo.add across dimensions = [0, 1] : "
                           "(tensor<2x2xf32>, tensor<f32>) -> tensor<f32>"}}));
  EXPECT_NE(e.find("return (shard_map): a shard_map body's value (per device) is returned without SPMDShardToFullShape"),
            std::string::npos) << e;
  // The body reads a full value that is no constant.
  e = parse_error(edited({{"%4 = stablehlo.add %2, %3 : tensor<2x2xf32>",
                           "%9 = stablehlo.slice %arg0 [0:2, 0:2] : (tensor<8x2xf32>) -> tensor<2x2xf32>\n"
                           "    %4 = stablehlo.add %2, %9 : tensor<2x2xf32>"}}));
  EXPECT_NE(e.find("t.mlir:9:5: stablehlo.add (shard_map): reads a value defined outside its shard_map body"),
            std::string::npos) << e;
  // No layout before the fence.
  e = parse_error(edited({{"@SPMDFullToShardShape(%0)", "@SPMDFullToShardShape(%arg0)"}}));
  EXPECT_NE(e.find("t.mlir:5:5: custom_call @SPMDFullToShardShape (shard_map): its operand has no layout"),
            std::string::npos) << e;
  // A fence back with nothing manual in it.
  e = parse_error(edited({{"@SPMDShardToFullShape(%6) {mhlo.sharding = \"{devices=[4,1]<=[4]}\"} : (tensor<2x2xf32>)",
                           "@SPMDShardToFullShape(%0) {mhlo.sharding = \"{devices=[4,1]<=[4]}\"} : (tensor<8x2xf32>)"}}));
  EXPECT_NE(e.find("reads no value of a shard_map body"), std::string::npos) << e;
  // A partly manual shard_map (auto axes) is named, not misread.
  e = parse_error(edited({{"@SPMDShardToFullShape(%6) {mhlo.sharding = \"{devices=[4,1]<=[4]}\"}",
                           "@SPMDShardToFullShape(%6) {mhlo.sharding = \"{devices=[2,1,2]<=[4] last_tile_dims={manual}}\"}"}}));
  EXPECT_NE(e.find("a manual last tile dimension"), std::string::npos) << e;
  // Pieces of unequal sizes (6 rows over 4 devices) have no manual form.
  e = parse_error(edited({{"-> (tensor<8x2xf32> {mhlo.sharding", "-> (tensor<6x2xf32> {mhlo.sharding"},
                          {"(tensor<2x2xf32>) -> tensor<8x2xf32>", "(tensor<2x2xf32>) -> tensor<6x2xf32>"},
                          {"return %7, %8 : tensor<8x2xf32>", "return %7, %8 : tensor<6x2xf32>"}}));
  EXPECT_NE(e.find("dimension 0 of tensor<6x2xf32> (size 6) does not split evenly into 4 pieces"), std::string::npos) << e;
}

// Random edits anywhere in the text: each is read or refused with a message, never a crash.
TEST(GspmdShardMap, MangledModulesAreReadOrRefused) {
  auto n = testing::read_mangled({kCalled, kInline}, "%#{}[](),=<>:0123456789 @SPMDFullToShardShapexf\"", 16, 1500,
                                 [](const std::string& t) { parse(t, "t.mlir"); });
  EXPECT_GT(n.read, 0);
  EXPECT_GT(n.refused, 0);
}

}  // namespace
}  // namespace tessera::stablehlo
