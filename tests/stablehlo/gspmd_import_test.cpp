// GSPMD's HloSharding text (mhlo.sharding) read and imported as a mesh and sdy shardings: each form
// XLA writes, the mesh several shardings share, and malformed or unmappable texts refused with
// file:line:col and the text quoted. The expected shardings follow from XLA's definition of a tile
// assignment (tile i, row-major, is held by the i-th device of the list or of the transposed iota).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/mangle.h"
#include "common/parse_error.h"
#include "stablehlo/gspmd_sharding.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

// A module whose one argument (tensor<8x4xf32> unless given) carries `sharding`.
std::string module_with(const std::string& sharding, const std::string& type = "tensor<8x4xf32>",
                        int partitions = 4) {
  return "module @jit_f attributes {mhlo.num_partitions = " + std::to_string(partitions) +
         " : i32} {\n  func.func public @main(%arg0: " + type + " {mhlo.sharding = \"" + sharding +
         "\"}) -> " + type + " {\n    return %arg0 : " + type + "\n  }\n}\n";
}

// The printed module's mesh and argument sharding, "mesh | sharding".
std::string imported(const std::string& sharding, const std::string& type = "tensor<8x4xf32>", int partitions = 4) {
  auto m = parse(module_with(sharding, type, partitions), "t.mlir");
  std::string mesh = m->meshes.empty() ? "-" : print(m->meshes[0]);
  auto s = m->functions[0]->arg_sharding(0);
  EXPECT_FALSE(m->functions[0]->arg_attrs[0].has("mhlo.sharding"));
  return mesh + " | " + (s ? print(*s) : "-");
}

TEST(HloShardingText, ReadsEachForm) {
  HloSharding r = parse_hlo_sharding("{replicated}");
  EXPECT_EQ(r.kind, HloSharding::Kind::kReplicated);
  HloSharding x = parse_hlo_sharding("{maximal device=3}");
  EXPECT_EQ(x.kind, HloSharding::Kind::kMaximal);
  EXPECT_EQ(x.maximal_device, 3);
  EXPECT_EQ(parse_hlo_sharding("{manual}").kind, HloSharding::Kind::kManual);
  HloSharding t = parse_hlo_sharding("{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  EXPECT_EQ(t.tiles, (std::vector<int64_t>{2, 1, 2}));
  EXPECT_TRUE(t.last_replicated);
  EXPECT_EQ(t.device_list(), (std::vector<int64_t>{0, 1, 2, 3}));
  // iota(4) as [2,2], transposed: [[0,2],[1,3]].
  EXPECT_EQ(parse_hlo_sharding("{devices=[2,2]<=[2,2]T(1,0)}").device_list(), (std::vector<int64_t>{0, 2, 1, 3}));
  // iota(8) as [2,2,2] transposed (2,0,1): element (a,b,c) = 4b + 2c + a.
  EXPECT_EQ(parse_hlo_sharding("{devices=[8]<=[2,2,2]T(2,0,1)}").device_list(),
            (std::vector<int64_t>{0, 2, 4, 6, 1, 3, 5, 7}));
  EXPECT_EQ(parse_hlo_sharding("{devices=[2,2]0,2,1,3}").device_list(), (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_TRUE(parse_hlo_sharding("{devices=[2,1,2]<=[4] last_tile_dims={replicated}}").last_replicated);
  EXPECT_TRUE(parse_hlo_sharding("{devices=[2,1,2]<=[4] last_tile_dims={manual}}").manual_subgroup);
  EXPECT_EQ(parse_hlo_sharding("{devices=[2,1]<=[2] metadata={op_name=\"a}b\"}}").tiles.size(), 2u);
}

TEST(HloShardingText, MalformedTextsAreNamed) {
  auto error = [](const std::string& text) { return testing::error_of([&] { parse_hlo_sharding(text); }); };
  EXPECT_EQ(error("{devices=[2,x]<=[2]}"), "mhlo.sharding \"{devices=[2,x]<=[2]}\": expected a number at character 13");
  EXPECT_EQ(error("{devices=[2,1]<=[3]}"),
            "mhlo.sharding \"{devices=[2,1]<=[3]}\": the iota has 3 devices but the tiles [2,1] need 2 at character 20");
  EXPECT_NE(error("{devices=[2,2]<=[2,2]T(1,1)}").find("not a permutation"), std::string::npos);
  EXPECT_NE(error("{devices=[2,1]0,0}").find("not each of 0..1 once"), std::string::npos);
  EXPECT_NE(error("{devices=[2,1]0,1,2}").find("3 devices listed for the 2 tiles"), std::string::npos);
  EXPECT_NE(error("{devices=[0]<=[1]}").find("a tile count of 0"), std::string::npos);
  EXPECT_NE(error("{devices=[99999999999]<=[1]}").find("a number over 1048576"), std::string::npos);
  EXPECT_NE(error("{devices=[1024,1024,2]<=[2097152]}").find("more than 1048576 devices"), std::string::npos);
  EXPECT_NE(error("{{replicated}, {replicated}}").find("a tuple sharding"), std::string::npos);
  EXPECT_NE(error("{replicated").find("expected '}'"), std::string::npos);
  EXPECT_NE(error("{replicated} x").find("text after the closing '}'"), std::string::npos);
  EXPECT_NE(error("").find("expected '{'"), std::string::npos);
  EXPECT_NE(error("{tiled}").find("expected 'replicated', 'manual', 'unknown', 'maximal' or 'devices='"), std::string::npos);
  EXPECT_NE(error("{devices=[2] last_tile_dim_replicate}").find("expected a number"), std::string::npos);
  EXPECT_NE(error("{devices=[2]<=[2] last_tile_dim_replicate}").find("besides the last"), std::string::npos);
  EXPECT_NE(error("{devices=[2,1]<=[2] metadata={").find("unbalanced"), std::string::npos);
}

TEST(GspmdImport, EachFormBecomesAMeshAndAShardyShardings) {
  EXPECT_EQ(imported("{devices=[2,1]<=[2]}", "tensor<8x4xf32>", 2),
            "sdy.mesh @mesh = <[\"_axis_0\"=2]> | #sdy.sharding<@mesh, [{\"_axis_0\"}, {}]>");
  EXPECT_EQ(imported("{devices=[2,2]<=[4]}"),
            "sdy.mesh @mesh = <[\"_axis_0\"=2, \"_axis_1\"=2]> | #sdy.sharding<@mesh, [{\"_axis_0\"}, {\"_axis_1\"}]>");
  // The replicated last tile takes the minor axis, which no dimension names.
  EXPECT_EQ(imported("{devices=[2,1,2]<=[4] last_tile_dim_replicate}"),
            "sdy.mesh @mesh = <[\"_axis_0\"=2, \"_axis_1\"=2]> | #sdy.sharding<@mesh, [{\"_axis_0\"}, {}]>");
  // Tile (i, j) on device 2j + i: dimension 0 by the minor axis.
  EXPECT_EQ(imported("{devices=[2,2]<=[2,2]T(1,0)}"),
            "sdy.mesh @mesh = <[\"_axis_0\"=2, \"_axis_1\"=2]> | #sdy.sharding<@mesh, [{\"_axis_1\"}, {\"_axis_0\"}]>");
  // Tile i on device [0,2,1,3][i]: both axes on dimension 0, minor first.
  EXPECT_EQ(imported("{devices=[4,1]<=[2,2]T(1,0)}"),
            "sdy.mesh @mesh = <[\"_axis_0\"=2, \"_axis_1\"=2]> | #sdy.sharding<@mesh, [{\"_axis_1\", \"_axis_0\"}, {}]>");
  // A tile count that splits an iota dimension: [4] cut into 2 x 2.
  EXPECT_EQ(imported("{devices=[2,2]<=[4]}"), imported("{devices=[2,2]0,1,2,3}"));
  // A list that is a transposed iota is read as one (older exports wrote lists).
  EXPECT_EQ(imported("{devices=[2,2]0,2,1,3}"), imported("{devices=[2,2]<=[2,2]T(1,0)}"));
  EXPECT_EQ(imported("{devices=[4,2]0,4,1,5,2,6,3,7}", "tensor<8x4xf32>", 8),
            imported("{devices=[4,2]<=[2,4]T(1,0)}", "tensor<8x4xf32>", 8));
  // Iota dimensions that stay in order are one: [2,3] untransposed is [6], cut as 3 x 2.
  EXPECT_EQ(imported("{devices=[3,2]<=[2,3]}", "tensor<6x6xf32>", 6), imported("{devices=[3,2]<=[6]}", "tensor<6x6xf32>", 6));
  EXPECT_EQ(imported("{devices=[3,2]<=[6]}", "tensor<6x6xf32>", 6),
            "sdy.mesh @mesh = <[\"_axis_0\"=3, \"_axis_1\"=2]> | #sdy.sharding<@mesh, [{\"_axis_0\"}, {\"_axis_1\"}]>");
  // An order that is no iota: the mesh lists the devices.
  EXPECT_EQ(imported("{devices=[2,2]0,3,1,2}"),
            "sdy.mesh @mesh = <[\"_axis_0\"=2, \"_axis_1\"=2], device_ids=[0, 3, 1, 2]> | "
            "#sdy.sharding<@mesh, [{\"_axis_0\"}, {\"_axis_1\"}]>");
  // Replicated alone needs no mesh: the attribute is dropped.
  EXPECT_EQ(imported("{replicated}"), "- | -");
  // Device 0 of a one-device module holds everything: replicated.
  EXPECT_EQ(imported("{maximal device=0}", "tensor<8x4xf32>", 1), "- | -");
  // Unknown: left to propagation.
  EXPECT_EQ(imported("{unknown}"), "- | -");
  EXPECT_EQ(parse_hlo_sharding("{unknown}").kind, HloSharding::Kind::kUnknown);
}

// One mesh for the module: the shardings' device groups refine each other, and the
// with_sharding_constraint call becomes sdy.sharding_constraint.
TEST(GspmdImport, ShardingsShareOneMeshAndTheCallBecomesAConstraint) {
  auto m = parse(R"(module @jit_f attributes {mhlo.num_partitions = 4 : i32} {
  func.func public @main(%arg0: tensor<8x4xf32> {mhlo.sharding = "{devices=[4,1]<=[4]}"}, %arg1: tensor<8x4xf32> {mhlo.sharding = "{replicated}"}) -> (tensor<8x4xf32> {jax.result_info = "", mhlo.sharding = "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"}) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<8x4xf32>
    %1 = stablehlo.custom_call @Sharding(%0) {backend_config = "", mhlo.sharding = "{devices=[2,2]<=[4]}"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %2 = stablehlo.tanh %1 : tensor<8x4xf32>
    return %2 : tensor<8x4xf32>
  }
}
)", "t.mlir");
  std::string s = print(*m);
  EXPECT_NE(s.find("sdy.mesh @mesh = <[\"_axis_0\"=2, \"_axis_1\"=2]>"), std::string::npos) << s;
  EXPECT_NE(s.find("%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"_axis_0\", \"_axis_1\"}, {}]>}"), std::string::npos) << s;
  EXPECT_NE(s.find("%arg1: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}"), std::string::npos) << s;
  EXPECT_NE(s.find("sdy.sharding_constraint %0 <@mesh, [{\"_axis_0\"}, {\"_axis_1\"}]>"), std::string::npos) << s;
  EXPECT_NE(s.find("sdy.sharding = #sdy.sharding<@mesh, [{\"_axis_0\"}, {}]>"), std::string::npos) << s;
  EXPECT_EQ(s.find("mhlo.sharding"), std::string::npos) << s;
  EXPECT_EQ(s.find("@Sharding"), std::string::npos) << s;
  // The printed form reads back as itself.
  EXPECT_EQ(print(*parse(s, "t.mlir")), s);
}

// For each form, every device holds the tile XLA's definition gives it: the devices the imported
// sharding puts on tile t (each device's mesh coordinates, each dimension's axes read major to
// minor) are exactly the text's list entries t*R .. t*R+R-1 (R the replication group's size).
TEST(GspmdImport, EachDeviceHoldsTheTileTheTextGivesIt) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{devices=[2,4]<=[8]}", "tensor<8x8xf32>"},
      {"{devices=[4,2]<=[2,4]T(1,0)}", "tensor<8x8xf32>"},
      {"{devices=[2,2,2]<=[2,2,2]T(2,0,1)}", "tensor<4x4x4xf32>"},
      {"{devices=[8,1]<=[2,2,2]T(1,2,0)}", "tensor<8x8xf32>"},
      {"{devices=[2,1,4]<=[2,4]T(1,0) last_tile_dim_replicate}", "tensor<8x8xf32>"},
      {"{devices=[1,2,4]<=[8] last_tile_dim_replicate}", "tensor<8x8xf32>"},
      {"{devices=[2,4]0,5,2,7,1,4,3,6}", "tensor<8x8xf32>"},
      {"{devices=[4,2]0,2,4,6,1,3,5,7}", "tensor<8x8xf32>"},
      {"{devices=[3,2]<=[2,3]T(1,0)}", "tensor<6x6xf32>"},
  };
  for (const auto& [text, type] : cases) {
    HloSharding hs = parse_hlo_sharding(text);
    int64_t n = hs.num_devices();
    auto m = parse(module_with(text, type, static_cast<int>(n)), "t.mlir");
    ASSERT_EQ(m->meshes.size(), 1u) << text;
    const ir::Mesh& mesh = m->meshes[0];
    ir::Sharding sh = *m->functions[0]->arg_sharding(0);
    std::vector<int64_t> list = hs.device_list();
    int64_t group = hs.last_replicated ? hs.tiles.back() : 1;
    std::map<int64_t, std::set<int64_t>> held;  // tile -> devices
    for (int64_t pos = 0; pos < n; ++pos) {
      std::map<std::string, int64_t> coord;
      for (int64_t rest = pos, a = static_cast<int64_t>(mesh.axes.size()) - 1; a >= 0; --a) {
        coord[mesh.axes[a].name] = rest % mesh.axes[a].size;
        rest /= mesh.axes[a].size;
      }
      int64_t tile = 0;
      for (size_t d = 0; d < sh.dims.size(); ++d) {
        int64_t index = 0;
        for (const ir::AxisRef& ax : sh.dims[d].axes) index = index * mesh.find_axis(ax.name)->size + coord[ax.name];
        tile = tile * hs.tiles[d] + index;
      }
      held[tile].insert(mesh.device_ids.empty() ? pos : mesh.device_ids[pos]);
    }
    for (int64_t t = 0; t * group < n; ++t)
      EXPECT_EQ(held[t], std::set<int64_t>(list.begin() + t * group, list.begin() + (t + 1) * group))
          << text << " tile " << t << " mesh " << print(mesh) << " sharding " << print(sh);
  }
}

// The generic form, and a @Sharding inside a region of another function whose result a later op in
// that region reads: converted in place, the read moved to the constraint's result.
TEST(GspmdImport, GenericFormsAndCallsInRegionsAreImported) {
  auto g = parse(R"("builtin.module"() <{sym_name = "jit_f"}> ({
  "func.func"() <{arg_attrs = [{mhlo.sharding = "{devices=[2]<=[2]}"}], function_type = (tensor<4xf32>) -> tensor<4xf32>, res_attrs = [{mhlo.sharding = "{devices=[2]<=[2]}"}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<4xf32>):
    %0 = "stablehlo.custom_call"(%arg0) <{call_target_name = "Sharding"}> {mhlo.sharding = "{replicated}"} : (tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%0) : (tensor<4xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 2 : i32} : () -> ()
)", "t.mlir");
  std::string s = print(*g);
  EXPECT_NE(s.find("%arg0: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"_axis_0\"}]>}"), std::string::npos) << s;
  EXPECT_NE(s.find("%0 = sdy.sharding_constraint %arg0 <@mesh, [{}]> : tensor<4xf32>"), std::string::npos) << s;
  auto r = parse(R"(module attributes {mhlo.num_partitions = 2 : i32} {
  func.func public @main(%arg0: tensor<4xf32> {mhlo.sharding = "{devices=[2]<=[2]}"}) -> tensor<4xf32> {
    %0 = call @inner(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @inner(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%i = %c, %x = %arg0) : tensor<i32>, tensor<4xf32>
     cond {
      %1 = stablehlo.compare LT, %i, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = stablehlo.custom_call @Sharding(%x) {mhlo.sharding = "{devices=[2]<=[2]}"} : (tensor<4xf32>) -> tensor<4xf32>
      %2 = stablehlo.tanh %1 : tensor<4xf32>
      stablehlo.return %i, %2 : tensor<i32>, tensor<4xf32>
    }
    return %0#1 : tensor<4xf32>
  }
}
)", "t.mlir");
  s = print(*r);
  EXPECT_EQ(s.find("@Sharding"), std::string::npos) << s;
  EXPECT_NE(s.find("= sdy.sharding_constraint %iterArg_0 <@mesh, [{\"_axis_0\"}]> : tensor<4xf32>"), std::string::npos) << s;
  EXPECT_EQ(print(*parse(s, "t.mlir")), s);
}

// Mangled sharding texts (characters replaced, inserted, deleted; a fixed seed): each module reads
// or is refused with a UserError, never a crash or another exception.
TEST(GspmdImport, MangledTextsAreReadOrRefused) {
  const std::vector<std::string> texts = {"{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}",
                                          "{devices=[4,1]0,2,1,3}", "{devices=[2,2]<=[4] last_tile_dims={manual}}",
                                          "{maximal device=1}", "{replicated}"};
  auto n = testing::read_mangled(texts, "{}[](),=<>T0123456789 devicsrplatmnuxy_\"", 15, 3000,
                                 [](const std::string& t) { parse(module_with(t, "tensor<8x4xf32>", 4), "t.mlir"); });
  EXPECT_GT(n.read, 0);
  EXPECT_GT(n.refused, 0);
}

TEST(GspmdImport, UnmappableShardingsAreRefusedAtTheirPlace) {
  auto e = [](const std::string& text) { return testing::parse_error(text); };
  EXPECT_EQ(e(module_with("{maximal device=0}")),
            "t.mlir:2:13: argument 0 of @main: mhlo.sharding \"{maximal device=0}\": a maximal sharding (the whole "
            "value on device 0) has no Shardy mesh form; not imported");
  EXPECT_NE(e(module_with("{manual}")).find("t.mlir:2:13: argument 0 of @main: mhlo.sharding \"{manual}\": a manual sharding"),
            std::string::npos);
  EXPECT_NE(e(module_with("{devices=[2,1,2]<=[4] last_tile_dims={manual}}")).find("a manual last tile dimension"),
            std::string::npos);
  EXPECT_EQ(e(module_with("{devices=[2,x]<=[2]}")),
            "t.mlir:2:13: argument 0 of @main: mhlo.sharding \"{devices=[2,x]<=[2]}\": expected a number at character 13");
  EXPECT_NE(e(module_with("{devices=[2,1,1]<=[2]}", "tensor<8x4xf32>", 2)).find("has 3 tile counts for tensor<8x4xf32> of rank 2"),
            std::string::npos);
  EXPECT_NE(e(module_with("{devices=[2,1]<=[2]}")).find("span 2 devices but mhlo.num_partitions is 4"), std::string::npos);
  // Device groups that do not nest (halves and thirds of 6) cannot share one mesh.
  std::string two = R"(module {
  func.func public @main(%arg0: tensor<6x6xf32> {mhlo.sharding = "{devices=[2,3]<=[6]}"}) -> (tensor<6x6xf32> {mhlo.sharding = "{devices=[3,2]<=[6]}"}) {
    return %arg0 : tensor<6x6xf32>
  }
}
)";
  EXPECT_NE(e(two).find("do not nest with the other shardings'"), std::string::npos) << e(two);
  // Two different explicit orders.
  std::string orders = R"(module {
  func.func public @main(%arg0: tensor<4xf32> {mhlo.sharding = "{devices=[4]0,3,1,2}"}) -> (tensor<4xf32> {mhlo.sharding = "{devices=[4]<=[4]}"}) {
    return %arg0 : tensor<4xf32>
  }
}
)";
  EXPECT_NE(e(orders).find("another device order than [0,3,1,2]"), std::string::npos) << e(orders);
  std::string call = R"(module {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = "{maximal device=1}"} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)";
  EXPECT_NE(e(call).find("t.mlir:3:5: custom_call @Sharding: mhlo.sharding \"{maximal device=1}\""), std::string::npos) << e(call);
  std::string no_text = R"(module {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.custom_call @Sharding(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
)";
  EXPECT_NE(e(no_text).find("has no mhlo.sharding string attribute"), std::string::npos) << e(no_text);
  // A token's or tuple's sharding places nothing: dropped unread.
  EXPECT_EQ(imported("{{maximal device=0}, {devices=[2]<=[2]}}", "tuple<!stablehlo.token, tensor<4xf32>>", 2), "- | -");
  EXPECT_EQ(imported("{maximal device=1}", "!stablehlo.token", 2), "- | -");
}

}  // namespace
}  // namespace tessera::stablehlo
