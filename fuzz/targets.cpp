// The fuzz targets' contracts (see targets.h), but for `program` (target_program.cpp). Each stage of
// a check runs through one of target_helpers.h's: `refusable` (a UserError means "refused",
// anything else is a Bug) for the reader under test, `must` (any exception is a Bug) for what must
// work on an accepted input.
#include "fuzz/targets.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <map>
#include <memory>
#include <typeinfo>

#include "fuzz/target_helpers.h"
#include "interp/npy.h"
#include "ir/module.h"
#include "runtime/checkpoint.h"
#include "spmd/partition.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "support/error.h"
#include "support/memory.h"
#include "tools/tessera/cli_options.h"

namespace tessera::fuzz {

namespace {

// ---- parser ----

bool check_parser(std::string_view text) {
  std::unique_ptr<ir::Module> m;
  if (!refusable("parse", [&] { m = stablehlo::parse(text, "fuzz.mlir"); })) return false;
  std::string first, second;
  must("print of the parsed module", [&] { first = stablehlo::print(*m); });
  must("re-parse of the printed module", [&] { second = stablehlo::print(*stablehlo::parse(first, "printed.mlir")); });
  if (second != first) {
    size_t at = std::mismatch(first.begin(), first.end(), second.begin(), second.end()).first - first.begin();
    throw Bug(fmt::format("round trip: print(parse(print(m))) != print(m), first difference at byte {}\n"
                          "---- print(m) ----\n{}---- print(parse(print(m))) ----\n{}", at, first, second));
  }
  return true;
}

// ---- npy ----

bool check_npy(std::string_view bytes) {
  ir::Literal x;
  if (!refusable("from_npy", [&] { x = interp::from_npy(bytes, "fuzz.npy"); })) return false;
  ir::Literal back;
  must("to_npy and from_npy of an accepted array", [&] { back = interp::from_npy(interp::to_npy(x), "written.npy"); });
  expect(back == x, fmt::format("npy round trip changed {} into {}", ir::to_string(x.type()), ir::to_string(back.type())));
  return true;
}

// ---- safetensors ----

bool check_safetensors(std::string_view bytes) {
  runtime::NamedArrays arrays;
  std::map<std::string, std::string> metadata;
  if (!refusable("parse_safetensors", [&] { arrays = runtime::parse_safetensors(bytes, "fuzz.safetensors", &metadata); }))
    return false;
  runtime::NamedArrays back;
  std::map<std::string, std::string> back_metadata;
  must("to_safetensors and parse_safetensors of accepted arrays", [&] {
    back = runtime::parse_safetensors(runtime::to_safetensors(arrays, metadata), "written.safetensors", &back_metadata);
  });
  expect(back_metadata == metadata, "safetensors round trip changed the metadata");
  expect(back.size() == arrays.size(), fmt::format("safetensors round trip: {} arrays, then {}", arrays.size(), back.size()));
  for (size_t i = 0; i < arrays.size(); ++i)
    expect(back[i] == arrays[i], fmt::format("safetensors round trip changed array {} (\"{}\")", i, arrays[i].first));
  return true;
}

// ---- checkpoint ----

std::vector<std::string_view> split_files(std::string_view input) {
  std::vector<std::string_view> parts;
  for (size_t at; (at = input.find(kDeviceFileMarker)) != std::string_view::npos;) {
    parts.push_back(input.substr(0, at));
    input.remove_prefix(at + kDeviceFileMarker.size());
  }
  parts.push_back(input);
  return parts;
}

bool check_checkpoint(std::string_view input) {
  std::vector<std::string_view> parts = split_files(input);
  auto read = [&](const std::string& name) -> std::string {
    for (size_t d = 0; d + 1 < parts.size(); ++d)
      if (name == fmt::format("device-{}.safetensors", d)) return std::string(parts[d + 1]);
    support::fail("fuzz/{}: cannot read the file: no such file", name);
  };
  return refusable("load_sharded_from", [&] { runtime::load_sharded_from(parts[0], "fuzz", read); });
}

// ---- mesh_spec ----

// A module whose mesh --mesh resizes (it must size "data"), and one without a mesh, to which
// --mesh adds @mesh.
constexpr std::string_view kShardedModule = R"(sdy.mesh @mesh = <["data"=4]>
func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, %arg1: tensor<4x3xf32>) -> (tensor<8x3xf32>, tensor<f32>) {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %1 = stablehlo.tanh %0 : tensor<8x3xf32>
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x3xf32>, tensor<f32>) -> tensor<f32>
  return %1, %2 : tensor<8x3xf32>, tensor<f32>
}
)";
constexpr std::string_view kPlainModule = R"(func.func public @main(%arg0: tensor<6xf32>) -> tensor<6xf32> {
  %0 = stablehlo.tanh %arg0 : tensor<6xf32>
  return %0 : tensor<6xf32>
}
)";

bool check_mesh_spec(std::string_view spec) {
  ir::Mesh mesh;
  if (!refusable("parse_mesh_spec", [&] { mesh = tools::parse_mesh_spec(std::string(spec)); })) return false;
  for (const auto& a : mesh.axes)
    expect(!a.name.empty() && a.size >= 1, fmt::format("parse_mesh_spec accepted axis \"{}\" of size {}", a.name, a.size));
  bool accepted = false;
  for (std::string_view text : {kShardedModule, kPlainModule}) {
    std::unique_ptr<ir::Module> m;
    must("parse of the fixed module", [&] { m = stablehlo::parse(text, "fixed.mlir"); });
    // What `tessera partition FILE --mesh SPEC` does: resize, verify, print, partition.
    if (!refusable("apply_mesh and verify", [&] {
          tools::apply_mesh(*m, mesh, "fixed.mlir");
          ir::verify(*m);
        }))
      continue;
    accepted = true;
    std::string printed;
    must("print of the module with the --mesh axes", [&] { printed = stablehlo::print(*m); });
    std::string again;
    must("re-parse of that print", [&] { again = stablehlo::print(*stablehlo::parse(printed, "printed.mlir")); });
    expect(again == printed, "a module with the --mesh axes does not round-trip:\n" + printed + "----\n" + again);
    refusable("partition", [&] {
      ir::Module local(m->name);
      spmd::partition(*m, *m->find_function("main"), local);
    });
  }
  return accepted;
}

// ---- input_spec ----

bool check_input_spec(std::string_view input) {
  if (input.empty()) return false;
  size_t parameters = static_cast<unsigned char>(input[0]) % 8;
  std::string spec(input.substr(1));
  tools::InputSpec parsed;
  if (!refusable("parse_input_spec", [&] { parsed = tools::parse_input_spec(spec, "main", parameters); })) return false;
  expect(parsed.parameter < parameters, fmt::format("'{}' gave parameter {} of {}", spec, parsed.parameter, parameters));
  expect(parsed.path == spec.substr(spec.find('=') + 1), fmt::format("'{}' gave the path '{}'", spec, parsed.path));
  return true;
}

constexpr Target kTargets[] = {
    {"parser", check_parser},           {"npy", check_npy},
    {"safetensors", check_safetensors}, {"checkpoint", check_checkpoint},
    {"mesh_spec", check_mesh_spec},     {"input_spec", check_input_spec},
    {"program", check_program},
};

}  // namespace

std::span<const Target> targets() { return kTargets; }

const Target* find_target(std::string_view name) {
  for (const Target& t : kTargets)
    if (name == t.name) return &t;
  return nullptr;
}

void setup() { support::set_memory_limit(int64_t(512) << 20); }

}  // namespace tessera::fuzz
