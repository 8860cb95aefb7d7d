// Shardy's round-trip form, as jax.export writes a Shardy module: meshes, shardings and shard_map's
// attributes as strings in mhlo.frontend_attributes, shard_map as GlobalToLocalShape / a call of
// the body / LocalToGlobalShape, result shardings as FuncResultSharding calls. The parser reads it
// back into sdy meshes, shardings, constraints and manual computations (import_sdy_round_trip.cpp).
#include <gtest/gtest.h>


#include "common/mangle.h"
#include "common/parse_error.h"
#include "common/shard_map_modules.h"
#include "interp/interpreter.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

using testing::kRoundTripShardMap;

constexpr const char* kAttrs = R"(module @jit_f attributes {mhlo.frontend_attributes = {xla.sdy.meshes = "{mesh = #sdy.mesh<[\22x\22=2, \22y\22=2]>, maximal_mesh = #sdy.mesh<[], device_ids=[0]>}"}, mhlo.num_partitions = 4 : i32} {
  func.func public @main(%arg0: tensor<8x4xf32> {mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding<@mesh, [{\22x\22}, {\22y\22, ?}p0]>"}, mhlo.sharding = "{devices=[2,2]<=[4]}"}, %arg1: tensor<8x4xf32>) -> (tensor<8x4xf32> {jax.result_info = "[0]", mhlo.sharding = "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"}, tensor<8x4xf32>) {
    %0 = stablehlo.add %arg0, %arg1 {mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, [{\22x\22}, {}]>]>"}} : tensor<8x4xf32>
    %1 = stablehlo.custom_call @Sharding(%0) {mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, [{}, {\22x\22}]>]>"}, mhlo.sharding = "{devices=[1,2,2]<=[4] last_tile_dim_replicate}"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %2 = stablehlo.custom_call @xla.sdy.FuncResultSharding(%1) {has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, [{\22x\22}, {}]>]>"}} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %3 = stablehlo.custom_call @local_xla.sdy.FuncResultSharding(%0) {mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, [{}, {\22y\22}]>]>"}} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %4 = stablehlo.multiply %3, %2 : tensor<8x4xf32>
    return %2, %4 : tensor<8x4xf32>, tensor<8x4xf32>
  }
}
)";

TEST(SdyRoundTrip, MeshesShardingsAndResultShardingsAreRead) {
  auto m = parse(kAttrs, "t.mlir");
  std::string s = print(*m);
  EXPECT_NE(s.find("sdy.mesh @mesh = <[\"x\"=2, \"y\"=2]>"), std::string::npos) << s;
  EXPECT_EQ(s.find("maximal_mesh"), std::string::npos) << s;  // places nothing
  EXPECT_EQ(s.find("frontend_attributes"), std::string::npos) << s;
  EXPECT_EQ(s.find("mhlo.sharding"), std::string::npos) << s;  // Shardy's layouts win over GSPMD's
  EXPECT_EQ(s.find("FuncResultSharding"), std::string::npos) << s;
  EXPECT_NE(s.find("%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {\"y\", ?}p0]>}"),
            std::string::npos) << s;
  // The returned call gives result 0 its layout; the one the multiply reads is kept as a constraint.
  EXPECT_NE(s.find("-> (tensor<8x4xf32> {jax.result_info = \"[0]\", sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {}]>}, "
                   "tensor<8x4xf32>)"), std::string::npos) << s;
  EXPECT_NE(s.find("sdy.sharding_constraint %0 <@mesh, [{}, {\"x\"}]>"), std::string::npos) << s;
  EXPECT_NE(s.find("sdy.sharding_constraint %0 <@mesh, [{}, {\"y\"}]>"), std::string::npos) << s;
  EXPECT_EQ(print(*parse(s, "printed.mlir")), s);
}

TEST(SdyRoundTrip, AShardMapBecomesAManualComputation) {
  auto m = parse(kRoundTripShardMap, "t.mlir");
  std::string s = print(*m);
  EXPECT_EQ(s.find("GlobalToLocalShape"), std::string::npos) << s;
  EXPECT_EQ(s.find("LocalToGlobalShape"), std::string::npos) << s;
  EXPECT_NE(s.find("sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, [{\"x\"}, {}]>, <@mesh, [{}, {}]>] "
                   "out_shardings=[<@mesh, [{\"x\"}, {}]>] manual_axes={\"x\"}"), std::string::npos) << s;
  EXPECT_EQ(print(*parse(s, "printed.mlir")), s);
  // With the attributes on the body's call (newer exports) the same computation results.
  std::string on_call = kRoundTripShardMap;
  std::string attrs = " {mhlo.frontend_attributes = {xla.sdy.in_shardings = \"#sdy.sharding_per_value<[<@mesh, [{\\22x\\22}, {}]>, "
                      "<@mesh, [{}, {}]>]>\", xla.sdy.manual_axes = \"#sdy<manual_axes{\\22x\\22}>\"}}";
  size_t at = on_call.find(attrs);
  ASSERT_NE(at, std::string::npos);
  on_call.erase(at, attrs.size());
  std::string out = " {mhlo.frontend_attributes = {xla.sdy.manual_axes = \"#sdy<manual_axes{\\22x\\22}>\", "
                    "xla.sdy.out_shardings = \"#sdy.sharding_per_value<[<@mesh, [{\\22x\\22}, {}]>]>\"}}";
  at = on_call.find(out);
  ASSERT_NE(at, std::string::npos);
  on_call.erase(at, out.size());
  std::string call = "call @xla.sdy.manual_computation_body(%0#0, %0#1)";
  at = on_call.find(call);
  ASSERT_NE(at, std::string::npos);
  on_call.insert(at + call.size(),
                 " {mhlo.frontend_attributes = {xla.sdy.in_shardings = \"#sdy.sharding_per_value<[<@mesh, [{\\22x\\22}, {}]>, "
                 "<@mesh, [{}, {}]>]>\", xla.sdy.manual_axes = \"#sdy<manual_axes{\\22x\\22}>\", xla.sdy.out_shardings = "
                 "\"#sdy.sharding_per_value<[<@mesh, [{\\22x\\22}, {}]>]>\"}}");
  EXPECT_EQ(print(*parse(on_call, "t.mlir")), s);
}

// Older exports escaped the strings twice (`\\\22` in the text): read as XLA does, unescaped.
TEST(SdyRoundTrip, StringsEscapedTwiceAreReadAlike) {
  std::string twice = kRoundTripShardMap;
  for (size_t at = twice.find("\\22"); at != std::string::npos; at = twice.find("\\22", at + 4))
    twice.replace(at, 3, "\\\\\\22"), at += 2;
  ASSERT_NE(twice.find("[\\\\\\22x\\\\\\22=2]"), std::string::npos) << twice;
  EXPECT_EQ(print(*parse(twice, "t.mlir")), print(*parse(kRoundTripShardMap, "t.mlir")));
}

TEST(SdyRoundTrip, MisreadTextsAreRefusedAtTheirPlace) {
  using testing::parse_error;
  auto edited = [](const std::string& from, const std::string& to) {
    std::string s = kAttrs;
    size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? s : s.replace(at, from.size(), to);
  };
  std::string e = parse_error(edited("[{\\22x\\22}, {\\22y\\22, ?}p0]>\"}", "[{\\22x\\22}, {\\22y\\22, ?}p0>\"}"));
  EXPECT_NE(e.find("t.mlir:2:13: a function argument or result: xla.sdy.sharding \"#sdy.sharding<@mesh, [{\"x\"}, "
                   "{\"y\", ?}p0>\": "), std::string::npos) << e;
  e = parse_error(edited("sharding_per_value<[<@mesh, [{}, {\\22x\\22}]>]>", "sharding_per_value<[<@mesh, [{}, {\\22x\\22}]>, <@mesh, [{}, {}]>]>"));
  EXPECT_NE(e.find("t.mlir:4:5: custom_call @Sharding: takes 1 tensor operand and 1 result with 1 sharding"),
            std::string::npos) << e;
  e = parse_error(edited("#sdy.mesh<[\\22x\\22=2, \\22y\\22=2]>", "#sdy.mesh<[\\22x\\22=2, \\22y\\22]>"));
  EXPECT_NE(e.find("the module: xla.sdy.meshes"), std::string::npos) << e;
  e = parse_error(edited("@mesh, [{\\22x\\22}, {}]>]>\"}} : (tensor<8x4xf32>) -> tensor<8x4xf32>\n    %3",
                         "@nomesh, [{\\22x\\22}, {}]>]>\"}} : (tensor<8x4xf32>) -> tensor<8x4xf32>\n    %3"));
  EXPECT_NE(e.find("nomesh"), std::string::npos) << e;
  // A fence with no call of the body after it.
  std::string s = kRoundTripShardMap;
  std::string from = "call @xla.sdy.manual_computation_body(%0#0, %0#1) :";
  s.replace(s.find(from), from.size(), "stablehlo.dot_general %0#0, %0#1, contracting_dims = [1] x [0] :");
  e = parse_error(s);
  EXPECT_NE(e.find("t.mlir:3:5: custom_call @xla.sdy.GlobalToLocalShape: is not followed by a call of the body reading "
                   "exactly its results"), std::string::npos) << e;
}

// Random edits anywhere in the text: each is read or refused with a message, never a crash.
TEST(SdyRoundTrip, MangledModulesAreReadOrRefused) {
  auto n = testing::read_mangled({kAttrs, kRoundTripShardMap}, "%#{}[](),=<>:0123456789 @\\2xyp?\"", 17, 1500,
                                 [](const std::string& t) { parse(t, "t.mlir"); });
  EXPECT_GT(n.read, 0);
  EXPECT_GT(n.refused, 0);
}

// The forms XLA's newer exports and its own round-trip tests write, each run against the
// interpreter of the program as read: shard_map as one custom call naming its body
// (`@xla.sdy.ManualComputation`, called_computations), a body called twice on one fence's results,
// a body without inputs (no GlobalToLocalShape) or without results (no LocalToGlobalShape),
// sharding groups (sdy.sharding_group ops now) and a mesh written inline in a frontend string.
TEST(SdyRoundTrip, NewerAndRarerShardMapFormsAreRead) {
  auto m = parse(R"(sdy.mesh @mesh = <["a"=2]>
func.func @main(%arg0: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<4xi64>) {
  %0 = stablehlo.custom_call @local_xla.sdy.ManualComputation(%arg0) {called_computations = [@local_xla.sdy.manual_computation_body], mhlo.frontend_attributes = {xla.sdy.in_shardings = "#sdy.sharding_per_value<[<@mesh, [{\22a\22}, {}]>]>", xla.sdy.manual_axes = "#sdy<manual_axes{\22a\22}>", xla.sdy.out_shardings = "#sdy.sharding_per_value<[<@mesh, [{\22a\22}, {}]>]>"}} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = stablehlo.custom_call @xla.sdy.GlobalToLocalShape(%arg0) {mhlo.frontend_attributes = {xla.sdy.in_shardings = "#sdy.sharding_per_value<[<mesh<[\22a\22=2]>, [{}, {\22a\22}]>]>", xla.sdy.manual_axes = "#sdy<manual_axes{\22a\22}>"}} : (tensor<8x8xf32>) -> tensor<8x4xf32>
  %2 = call @xla.sdy.body(%1) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %3 = stablehlo.custom_call @xla.sdy.LocalToGlobalShape(%2) {mhlo.frontend_attributes = {xla.sdy.manual_axes = "#sdy<manual_axes{\22a\22}>", xla.sdy.out_shardings = "#sdy.sharding_per_value<[<@mesh, [{}, {\22a\22}]>]>"}} : (tensor<8x4xf32>) -> tensor<8x8xf32>
  %4 = call @xla.sdy.body(%1) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %5 = stablehlo.custom_call @xla.sdy.LocalToGlobalShape(%4) {mhlo.frontend_attributes = {xla.sdy.manual_axes = "#sdy<manual_axes{\22a\22}>", xla.sdy.out_shardings = "#sdy.sharding_per_value<[<@mesh, [{}, {\22a\22}]>]>"}} : (tensor<8x4xf32>) -> tensor<8x8xf32>
  %6 = call @xla.sdy.no_inputs() : () -> tensor<2xi64>
  %7 = stablehlo.custom_call @xla.sdy.LocalToGlobalShape(%6) {mhlo.frontend_attributes = {xla.sdy.manual_axes = "#sdy<manual_axes{\22a\22}>", xla.sdy.out_shardings = "#sdy.sharding_per_value<[<@mesh, [{\22a\22}]>]>"}} : (tensor<2xi64>) -> tensor<4xi64>
  stablehlo.custom_call @local_xla.sdy.ShardingGroup(%3, %5) {has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.sharding_group_id = "21 : i64"}} : (tensor<8x8xf32>, tensor<8x8xf32>) -> ()
  return %0, %3, %5, %7 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<4xi64>
}
func.func private @local_xla.sdy.manual_computation_body(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = stablehlo.negate %arg0 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
func.func private @xla.sdy.body(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
func.func private @xla.sdy.no_inputs() -> tensor<2xi64> {
  %c = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  return %c : tensor<2xi64>
}
)",
                 "newer.mlir");
  std::string s = print(*m);
  for (const char* gone : {"ManualComputation", "GlobalToLocalShape", "LocalToGlobalShape", "ShardingGroup"})
    EXPECT_EQ(s.find(gone), std::string::npos) << gone << "\n" << s;
  size_t manuals = 0;
  for (size_t at = s.find("sdy.manual_computation("); at != std::string::npos; at = s.find("sdy.manual_computation(", at + 1))
    ++manuals;
  EXPECT_EQ(manuals, 4u) << s;
  EXPECT_NE(s.find("sdy.sharding_group %"), std::string::npos) << s;
  EXPECT_NE(s.find("group_id=21"), std::string::npos) << s;
  EXPECT_EQ(print(*parse(s, "printed.mlir")), s);
  ir::Literal x(ir::f32({8, 8}));
  for (int64_t i = 0; i < 64; ++i) x.set_double(i, static_cast<double>(i));
  std::vector<ir::Literal> r = interp::evaluate(*m, "main", {x});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].get_double(9), -9.0);
  EXPECT_EQ(r[1].get_double(9), 18.0);
  EXPECT_EQ(r[2], r[1]);
  const std::vector<int64_t> no_inputs = {2, 3, 2, 3};
  EXPECT_EQ(r[3], ir::Literal::from_ints(ir::Type(ir::ElementType::i64, {4}), no_inputs));
}

// A sharding group gives no value: a program that reads its result is refused where it is
// written (it was an internal error, its empty tuple replaced by the grouped tensor).
TEST(SdyRoundTrip, AShardingGroupsResultIsNotRead) {
  EXPECT_NE(testing::parse_error(R"(func.func @main(%arg0: tensor<8x8xf32>) -> tuple<> {
  %0 = stablehlo.custom_call @xla.sdy.ShardingGroup(%arg0) {mhlo.frontend_attributes = {xla.sdy.sharding_group_id = "1 : i64"}} : (tensor<8x8xf32>) -> tuple<>
  return %0 : tuple<>
}
)").find("t.mlir:2:3: custom_call @xla.sdy.ShardingGroup: its result is read, but a sharding group gives no value"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::stablehlo
