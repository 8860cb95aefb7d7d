// Seed inputs for the fuzz targets (targets.h): small valid inputs made by Tessera's own writers,
// so they are valid by construction and follow the formats as the writers change. The fuzzer
// starts from these and mutates; the regression test checks that every one is accepted.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "fuzz/targets.h"
#include "interp/npy.h"
#include "ir/literal.h"
#include "runtime/checkpoint.h"
#include "runtime/layout.h"
#include "support/durable_file.h"

namespace tessera::fuzz {

namespace {

namespace fs = std::filesystem;
using ir::ElementType;
using ir::Literal;
using ir::Type;
using Seeds = std::vector<std::pair<std::string, std::string>>;

// start + scale * i; unsigned types need start >= 0 (set_double does not wrap negative values).
Literal ramp(Type t, double scale = 0.5, double start = -1) {
  Literal l(std::move(t));
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_double(i, start + scale * double(i));
  return l;
}

Seeds parser_seeds() {
  return {{"tanh.mlir", "func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {\n"
                        "  %0 = stablehlo.tanh %arg0 : tensor<8xf32>\n  return %0 : tensor<8xf32>\n}\n"},
          {"sharded_dot.mlir",
           "sdy.mesh @m = <[\"data\"=4]>\n"
           "func.func @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@m, [{\"data\"}, {}]>}, "
           "%arg1: tensor<4x3xf32>) -> tensor<8x3xf32> {\n"
           "  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x4xf32>, "
           "tensor<4x3xf32>) -> tensor<8x3xf32>\n  return %0 : tensor<8x3xf32>\n}\n"},
          {"gspmd.mlir",  // a JAX export of GSPMD's days: mhlo.sharding strings and @Sharding
           "module attributes {mhlo.num_partitions = 4 : i32} {\n"
           "func.func @main(%arg0: tensor<8x4xf32> {mhlo.sharding = \"{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}\"}) "
           "-> (tensor<8x4xf32> {mhlo.sharding = \"{replicated}\"}) {\n"
           "  %0 = stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = \"{devices=[4,1]0,2,1,3}\"} : "
           "(tensor<8x4xf32>) -> tensor<8x4xf32>\n  return %0 : tensor<8x4xf32>\n}\n}\n"},
          {"constant.mlir", "func.func @main() -> tensor<2x2xi32> {\n"
                            "  %0 = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>\n"
                            "  return %0 : tensor<2x2xi32>\n}\n"}};
}

// Small programs that run: element-wise chains the fused loops take, a contraction, a reduction
// with its body, a sort, a conditional and a call, a counted while loop (the parser's seeds, the
// conformance pieces and the regressions join them in make_corpus.sh).
Seeds program_seeds() {
  return {{"softmax.mlir",
           "func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {\n"
           "  %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
           "  %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [1] : "
           "(tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>\n"
           "  %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>\n"
           "  %2 = stablehlo.subtract %arg0, %1 : tensor<4x8xf32>\n"
           "  %3 = stablehlo.exponential %2 : tensor<4x8xf32>\n"
           "  %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
           "  %4 = stablehlo.reduce(%3 init: %cst_0) applies stablehlo.add across dimensions = [1] : "
           "(tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>\n"
           "  %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>\n"
           "  %6 = stablehlo.divide %3, %5 : tensor<4x8xf32>\n"
           "  return %6 : tensor<4x8xf32>\n}\n"},
          {"dot_tanh.mlir",
           "func.func @main(%arg0: tensor<2x3x4xf32>, %arg1: tensor<2x4x5xf32>) -> tensor<2x5x3xf32> {\n"
           "  %0 = stablehlo.dot_general %arg0, %arg1, batching_dims = [0] x [0], contracting_dims = [2] x [1] : "
           "(tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>\n"
           "  %1 = stablehlo.tanh %0 : tensor<2x3x5xf32>\n"
           "  %2 = stablehlo.transpose %1, dims = [0, 2, 1] : (tensor<2x3x5xf32>) -> tensor<2x5x3xf32>\n"
           "  return %2 : tensor<2x5x3xf32>\n}\n"},
          {"sort_select.mlir",
           "func.func @main(%arg0: tensor<6xi32>, %arg1: tensor<6xf32>) -> (tensor<6xi32>, tensor<6xf32>) {\n"
           "  %0:2 = \"stablehlo.sort\"(%arg0, %arg1) <{dimension = 0 : i64, is_stable = true}> ({\n"
           "  ^bb0(%a: tensor<i32>, %b: tensor<i32>, %c: tensor<f32>, %d: tensor<f32>):\n"
           "    %p = stablehlo.compare LT, %a, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
           "    stablehlo.return %p : tensor<i1>\n"
           "  }) : (tensor<6xi32>, tensor<6xf32>) -> (tensor<6xi32>, tensor<6xf32>)\n"
           "  %1 = stablehlo.constant dense<0.000000e+00> : tensor<6xf32>\n"
           "  %2 = stablehlo.compare GT, %0#1, %1, FLOAT : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xi1>\n"
           "  %3 = stablehlo.select %2, %0#1, %1 : tensor<6xi1>, tensor<6xf32>\n"
           "  return %0#0, %3 : tensor<6xi32>, tensor<6xf32>\n}\n"},
          {"if_call.mlir",
           "func.func @main(%arg0: tensor<i1>, %arg1: tensor<3xf32>) -> tensor<3xf32> {\n"
           "  %0 = \"stablehlo.if\"(%arg0) ({\n"
           "    %1 = func.call @twice(%arg1) : (tensor<3xf32>) -> tensor<3xf32>\n"
           "    stablehlo.return %1 : tensor<3xf32>\n"
           "  }, {\n"
           "    %1 = stablehlo.negate %arg1 : tensor<3xf32>\n"
           "    stablehlo.return %1 : tensor<3xf32>\n"
           "  }) : (tensor<i1>) -> tensor<3xf32>\n"
           "  return %0 : tensor<3xf32>\n}\n"
           "func.func private @twice(%arg0: tensor<3xf32>) -> tensor<3xf32> {\n"
           "  %0 = stablehlo.add %arg0, %arg0 : tensor<3xf32>\n"
           "  return %0 : tensor<3xf32>\n}\n"},
          {"counted_while.mlir",
           "func.func @main(%arg0: tensor<i32>, %arg1: tensor<2x3xf32>) -> (tensor<i32>, tensor<2x3xf32>) {\n"
           "  %c = stablehlo.constant dense<0> : tensor<i32>\n"
           "  %0:2 = stablehlo.while(%i = %c, %x = %arg1) : tensor<i32>, tensor<2x3xf32>\n"
           "  cond {\n"
           "    %p = stablehlo.compare LT, %i, %arg0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
           "    stablehlo.return %p : tensor<i1>\n"
           "  } do {\n"
           "    %one = stablehlo.constant dense<1> : tensor<i32>\n"
           "    %j = stablehlo.add %i, %one : tensor<i32>\n"
           "    %y = stablehlo.sine %x : tensor<2x3xf32>\n"
           "    %z = stablehlo.add %y, %x : tensor<2x3xf32>\n"
           "    stablehlo.return %j, %z : tensor<i32>, tensor<2x3xf32>\n"
           "  }\n"
           "  return %0#0, %0#1 : tensor<i32>, tensor<2x3xf32>\n}\n"}};
}

// The same array in .npy format version 2.0 or 3.0: a 4-byte header length instead of 2.
std::string npy_version(const std::string& v1, char major) {
  size_t len = static_cast<unsigned char>(v1[8]) | static_cast<size_t>(static_cast<unsigned char>(v1[9])) << 8;
  std::string out = v1.substr(0, 6) + major + '\0';
  for (int i = 0; i < 4; ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  return out + v1.substr(10);
}

Seeds npy_seeds() {
  Seeds out;
  std::vector<std::pair<std::string, Literal>> arrays = {
      {"f32_2x3", ramp(ir::f32({2, 3}))},
      {"i64_scalar", ramp(ir::i64({}), 7)},
      {"bool_4", Literal::from_ints(ir::i1({4}), std::vector<int64_t>{1, 0, 1, 1})},
      {"f16_0", Literal(Type(ElementType::f16, {0}))},
      {"c64_2", ramp(Type(ElementType::c64, {2}))},
      {"u8_3x1x2", ramp(Type(ElementType::ui8, {3, 1, 2}), 1, 0)},
      {"f64_1", ramp(ir::f64({1}))}};
  for (const auto& [name, l] : arrays) out.push_back({name + ".npy", interp::to_npy(l)});
  out.push_back({"f32_2x3_v2.npy", npy_version(out[0].second, 2)});
  out.push_back({"i64_scalar_v3.npy", npy_version(out[1].second, 3)});
  return out;
}

Seeds safetensors_seeds() {
  return {{"mixed.safetensors",
           runtime::to_safetensors({{"layers.0.w", ramp(ir::f32({3, 5}))},
                                    {"step", ramp(ir::i64({}), 1)},
                                    {"mask", Literal::from_ints(ir::i1({4}), std::vector<int64_t>{1, 0, 1, 1})},
                                    {"b", ramp(Type(ElementType::bf16, {2}))}},
                                   {{"format", "pt"}})},
          {"empty.safetensors", runtime::to_safetensors({})},
          {"zero_size.safetensors", runtime::to_safetensors({{"e", Literal(ir::f32({0, 3}))}, {"s", ramp(ir::f64({}))}})}};
}

// One checkpoint in the checkpoint target's format, made by save_sharded in a scratch directory,
// its index.json as `version` has it: 3 as written (per-piece checksums), 2 (per-file checksums
// only: its files are read whole), or 1, the older layout without sizes or checksums, which lets
// the fuzzer change device files without having to fix their CRC-32C.
std::string checkpoint(const ir::Mesh& mesh, int64_t devices,
                       const std::vector<std::tuple<std::string, Literal, ir::Sharding>>& arrays, int version) {
  fs::path dir = fs::temp_directory_path() / fmt::format("tessera_fuzz_seeds_{}", ::getpid());
  fs::remove_all(dir);
  std::vector<std::string> names;
  std::vector<runtime::ShardedBuffer> buffers;
  for (const auto& [name, whole, sharding] : arrays) {
    names.push_back(name);
    auto pieces = std::make_shared<std::vector<Literal>>(runtime::split(whole, sharding, mesh, devices));
    buffers.push_back({whole.type(), sharding, pieces});
  }
  std::string step = runtime::save_sharded(dir.string(), names, buffers, mesh, 3);
  nlohmann::json index = nlohmann::json::parse(support::read_file_bytes(step + "/index.json"));
  if (version == 1) index.erase("files");
  if (version == 2)
    for (auto& f : index["files"]) f.erase("pieces");
  index["version"] = version;
  std::string out = index.dump(1);
  for (int64_t d = 0; d < int64_t(index["devices"]); ++d)
    out += std::string(kDeviceFileMarker) + support::read_file_bytes(fmt::format("{}/device-{}.safetensors", step, d));
  fs::remove_all(dir);
  return out;
}

Seeds checkpoint_seeds() {
  using ir::Sharding;
  ir::Mesh rows{"m", {{"data", 4}}, {}};
  ir::Mesh grid{"m", {{"data", 2}, {"model", 2}}, {}};
  ir::Mesh sub{"m", {{"x", 4}}, {}};
  ir::Mesh one{"m", {{"data", 1}}, {}};
  std::vector<std::tuple<std::string, Literal, Sharding>> fsdp = {
      {"w", ramp(ir::f32({6, 3})), Sharding{"m", {{"data"}, {}}, {}, {}}},  // 6 rows over 4: uneven
      {"v", ramp(ir::f32({8})), Sharding{"m", {{"data"}}, {}, {}}},
      {"step", ramp(ir::i64({}), 3), Sharding{"m", {}, {}, {}}}};
  std::vector<std::tuple<std::string, Literal, Sharding>> tp = {
      {"a", ramp(ir::f32({4, 6})), Sharding{"m", {{"data"}, {"model"}}, {}, {}}},
      {"b", ramp(ir::i32({3}), 2), Sharding{"m", {{}}, {}, {}}}};
  std::vector<std::tuple<std::string, Literal, Sharding>> sub_axis = {
      {"s", ramp(ir::f32({4, 2})), Sharding{"m", {{ir::AxisRef("x", ir::SubAxis{1, 2})}, {}}, {}, {}}}};
  std::vector<std::tuple<std::string, Literal, Sharding>> single = {
      {"d", ramp(ir::f64({2, 2})), Sharding{"m", {{}, {}}, {}, {}}}};
  Seeds out;
  for (int v : {3, 2, 1}) {
    std::string suffix = v == 3 ? "" : fmt::format("_v{}", v);
    out.push_back({"fsdp4" + suffix + ".ckpt", checkpoint(rows, 4, fsdp, v)});
    out.push_back({"tp2x2" + suffix + ".ckpt", checkpoint(grid, 4, tp, v)});
    out.push_back({"sub_axis" + suffix + ".ckpt", checkpoint(sub, 4, sub_axis, v)});
    out.push_back({"single" + suffix + ".ckpt", checkpoint(one, 1, single, v)});
  }
  return out;
}

Seeds mesh_spec_seeds() {
  return {{"data4", "data=4"}, {"data2_model2", "data=2,model=2"}, {"three_axes", "data=1,b=1,c=3"},
          {"data8", "data=8"}};
}

Seeds input_spec_seeds() {
  return {{"arg0", std::string("\x02") + "arg0=x.npy"}, {"percent_arg2", std::string("\x03") + "%arg2=dir/y.npy"},
          {"number", std::string("\x01") + "0=z.npy"}};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> seeds(std::string_view target) {
  if (target == "parser") return parser_seeds();
  if (target == "npy") return npy_seeds();
  if (target == "safetensors") return safetensors_seeds();
  if (target == "checkpoint") return checkpoint_seeds();
  if (target == "mesh_spec") return mesh_spec_seeds();
  if (target == "input_spec") return input_spec_seeds();
  if (target == "program") return program_seeds();
  return {};
}

}  // namespace tessera::fuzz
