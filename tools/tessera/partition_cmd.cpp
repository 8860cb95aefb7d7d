// `tessera partition` and `tessera run` (see partition_cmd.h).
#include "tools/tessera/partition_cmd.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "exec/executable.h"
#include "ir/entry.h"
#include "interp/npy.h"
#include "runtime/checkpoint.h"
#include "runtime/session.h"
#include "runtime/sharding_picture.h"
#include "spmd/mesh_math.h"
#include "spmd/partition.h"
#include "spmd/propagate.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "support/error.h"
#include "support/durable_file.h"
#include "support/memory.h"
#include "tools/tessera/cli_options.h"
#include "tools/tessera/trace_out.h"
#include "tools/tessera/train_memory.h"
#include "transforms/lower_quantized.h"
#include "transforms/refine_shapes.h"

namespace tessera::tools {

namespace {

using support::fail;

std::unique_ptr<ir::Module> load(const std::string& path, const std::string& mesh_spec) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot read the file", path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto m = stablehlo::parse(buffer.str(), path);
  // Ops on quantized values run as dequantize -> op -> quantize, as the spec defines them.
  transforms::lower_quantized(*m);
  if (mesh_spec.empty()) return m;
  // The module's one (non-maximal) mesh takes these axes; without one, @mesh is added.
  apply_mesh(*m, parse_mesh_spec(mesh_spec), path);
  ir::verify(*m);
  return m;
}

const ir::Function& entry(const ir::Module& m, const std::string& name) { return ir::entry_function(m, name); }

// An --input file: .npy (untyped ml_dtypes elements read as the parameter's type), or a
// .safetensors file holding one array, or FILE.safetensors:NAME for one array of several.
ir::Literal load_input(const std::string& path, ir::ElementType parameter_type) {
  static constexpr std::string_view kExt = ".safetensors";
  size_t at = path.rfind(kExt);
  if (at == std::string::npos || (at + kExt.size() != path.size() && path[at + kExt.size()] != ':'))
    return interp::load_npy(path, parameter_type);
  std::string file = path.substr(0, at + kExt.size());
  std::string name = at + kExt.size() < path.size() ? path.substr(at + kExt.size() + 1) : "";
  runtime::NamedArrays arrays = runtime::load_safetensors(file);
  std::vector<std::string> names;
  for (auto& [n, value] : arrays) {
    if (n == name || (name.empty() && arrays.size() == 1)) return std::move(value);
    names.push_back(n);
  }
  if (name.empty()) fail("--input {}: the file holds {} arrays ({}); name one as {}:NAME", path, arrays.size(),
                         fmt::join(names, ", "), file);
  fail("--input {}: {} has no array '{}' (it has {})", path, file, name, fmt::join(names, ", "));
}

// --show and --show-svg: one picture per argument and result of the partitioned function.
void show_layouts(const PartitionCommand& c, const ir::Module& m, const spmd::Partitioned& info, std::ostream& out) {
  const ir::Mesh& mesh = m.mesh(info.mesh);
  struct Item {
    std::string name, file;
    const ir::Type* type;
    const ir::Sharding* sharding;
  };
  std::vector<Item> items;
  for (size_t i = 0; i < info.parameter_types.size(); ++i)
    items.push_back({fmt::format("%arg{}", i), fmt::format("arg{}.svg", i), &info.parameter_types[i],
                     &info.parameter_shardings[i]});
  for (size_t i = 0; i < info.result_types.size(); ++i)
    items.push_back({fmt::format("result {}", i), fmt::format("result{}.svg", i), &info.result_types[i],
                     &info.result_shardings[i]});
  if (!c.show_svg.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(c.show_svg, ec);
    if (ec) fail("--show-svg {}: cannot create the folder: {}", c.show_svg, ec.message());
  }
  for (const Item& item : items) {
    std::string title = runtime::layout_title(item.name, *item.type, *item.sharding, mesh);
    if (c.show) {
      std::stringstream grid(runtime::sharding_grid(title, *item.type, *item.sharding, mesh));
      for (std::string line; std::getline(grid, line);) out << "// " << line << "\n";
    }
    if (!c.show_svg.empty()) {
      std::string path = (std::filesystem::path(c.show_svg) / item.file).string();
      support::write_file_atomically(path, {runtime::sharding_svg(title, *item.type, *item.sharding, mesh)});
      out << fmt::format("// {} -> {}\n", item.name, path);
    }
  }
}

}  // namespace

int partition_command(const PartitionCommand& c, std::ostream& out) {
  auto m = load(c.file, c.mesh);
  // A program with '?' dimensions inside, but static arguments, is refined for those.
  if (ir::Function& poly = const_cast<ir::Function&>(entry(*m, c.function)); transforms::has_dynamic_types(poly)) {
    std::vector<ir::Type> types;
    for (size_t i = 0; i < poly.num_parameters(); ++i) types.push_back(poly.parameter(i)->type());
    if (std::all_of(types.begin(), types.end(), [](const ir::Type& t) { return t.is_static(); })) {
      const std::string name = poly.name();  // refining replaces the function
      transforms::refine_shapes(*m, name, types);
    }
  }
  const ir::Function& f = entry(*m, c.function);
  ir::Module local(m->name);
  spmd::Partitioned info = spmd::partition(*m, f, local);
  out << stablehlo::print(local);
  out << fmt::format("// @{} on {} devices (mesh @{})\n", info.function, info.num_devices, info.mesh);
  std::stringstream report(info.report.to_string());
  for (std::string line; std::getline(report, line);) out << "// " << line << "\n";
  // What each device holds while it runs the program: the buffer plan of its executable.
  if (const ir::Function* lf = local.find_function(info.function)) {
    auto e = exec::Executable::compile(*lf, exec::CompileOptions{&local});
    out << fmt::format("// buffer plan per device: {} arena, {} peak with arguments and results{}\n",
                       support::format_bytes(e->arena_bytes()), support::format_bytes(e->peak_bytes()),
                       e->planned() ? "" : " (not counting while bodies and calls)");
  }
  if (c.memory) {
    if (const ir::Function* lf = local.find_function(info.function)) {
      std::stringstream table(estimate_memory(local, *lf, info.report, lf->num_parameters(), 0, info.num_devices).table());
      for (std::string line; std::getline(table, line);) out << "// " << line << "\n";
    }
  }
  if (c.show || !c.show_svg.empty()) show_layouts(c, *m, info, out);
  if (c.explain) {
    std::stringstream explained(info.report.explain());
    for (std::string line; std::getline(explained, line);) out << "// " << line << "\n";
  }
  if (c.strict) {
    std::vector<std::string> warnings = info.report.warnings();
    if (!warnings.empty())
      fail("{}: --strict: @{} has {} avoidable gather{}: {}", c.file, f.name(), warnings.size(),
           warnings.size() == 1 ? "" : "s", fmt::join(warnings, "; "));
  }
  return 0;
}

namespace {

// `tessera run` without --devices on host devices: the devices the partitioner needs for `fn`
// (spmd::devices_needed: the largest mesh its layouts name), or 1 without any.
int64_t mesh_devices(const ir::Module& m, const ir::Function& fn, const std::string& file) {
  const int64_t n = spmd::devices_needed(m, fn);
  // As many as `--devices` takes without --force (main.cpp); a larger mesh is run only on request.
  constexpr int64_t kMaxDefault = 64;
  if (n > kMaxDefault)
    fail("{}: @{} runs on {} devices (its mesh @{}), more than {} host devices in one process; pass --devices {} "
         "(with --force) to run it so, or --mesh to run it on fewer",
         file, fn.name(), n, spmd::function_mesh(m, fn), kMaxDefault, n);
  return n;
}

}  // namespace

int run_command(const RunCommand& c_in, std::ostream& out) {
  RunCommand c = c_in;
  auto m = load(c.file, c.mesh);
  if (c.devices == 0) c.devices = c.backend == "mpi" ? 1 : mesh_devices(*m, entry(*m, c.function), c.file);
  const ir::Function* polymorphic = &entry(*m, c.function);
  std::vector<std::optional<ir::Literal>> given(polymorphic->num_parameters());
  for (const std::string& spec : c.inputs) {
    InputSpec input = parse_input_spec(spec, polymorphic->name(), given.size());
    given[input.parameter] = load_input(input.path, polymorphic->parameter(input.parameter)->type().element);
  }
  std::vector<ir::Literal> inputs;
  std::vector<ir::Type> input_types;
  for (size_t i = 0; i < given.size(); ++i) {
    if (!given[i] && polymorphic->parameter(i)->type().is_token()) given[i] = ir::Literal::token();  // no data
    // A multi-platform jax.export takes the platform's index in its list as a first argument,
    // which JAX fills in; the list is in the export's metadata, not in the module.
    if (!given[i] && i < polymorphic->arg_attrs.size() &&
        polymorphic->arg_attrs[i].get_or<std::string>("jax.global_constant", "") == "_platform_index")
      fail("parameter {} of @{} ({}) is JAX's platform index (jax.global_constant = \"_platform_index\"): give "
           "--input arg{}=FILE.npy holding the index of \"cpu\" in the export's platforms",
           i, polymorphic->name(), ir::to_string(polymorphic->parameter(i)->type()), i);
    if (!given[i])
      fail("parameter {} of @{} ({}) has no --input", i, polymorphic->name(),
           ir::to_string(polymorphic->parameter(i)->type()));
    inputs.push_back(std::move(*given[i]));
    input_types.push_back(inputs.back().type());
  }
  // A shape-polymorphic program ('?' dimensions) is made static for these inputs first (their
  // values too: a dimension variable passed as an argument sizes the dynamic ops).
  std::string name = polymorphic->name();
  if (transforms::has_dynamic_types(*polymorphic)) transforms::refine_shapes(*m, name, input_types, inputs);
  const ir::Function& f = *m->find_function(name);
  if (c.backend != "host" && c.backend != "mpi") fail("--backend: '{}' is neither host nor mpi", c.backend);
  if (c.output_format != "npy" && c.output_format != "safetensors")
    fail("--output-format: '{}' is neither npy nor safetensors", c.output_format);
  runtime::SessionOptions options;
  options.timeout = runtime::timeout_from_seconds(c.timeout_s, "--timeout");
  options.max_while_iterations = c.max_while_iterations;
  std::unique_ptr<interp::Trace> trace;
  if (!c.trace.empty() || !c.trace_svg.empty()) {
    trace = std::make_unique<interp::Trace>();
    options.trace = trace.get();
  }
  runtime::Session session =
      c.backend == "mpi" ? runtime::Session::mpi(c.devices, options) : runtime::Session::host(c.devices, options);
  if (trace) trace->set_pid(session.rank());
  runtime::CompiledProgram p = session.compile(*m, f.name());
  // Refused before running when the devices of this process cannot hold their plans' peaks.
  {
    auto e = exec::Executable::compile(p.local_function(), exec::CompileOptions{p.module.get()});
    int64_t here = session.over_mpi() ? c.devices : session.num_devices();
    if (e->peak_bytes() * here > support::memory_limit())
      fail("@{} needs about {} per device (its buffer plan's peak with arguments and results), {} for the {} device{} "
           "of this process, more than the limit of {} (this machine's memory, TESSERA_MAX_BYTES or --max-bytes); not "
           "started",
           f.name(), support::format_bytes(e->peak_bytes()), support::format_bytes(e->peak_bytes() * here), here,
           here == 1 ? "" : "s", support::format_bytes(support::memory_limit()));
  }
  std::vector<ir::Literal> results = session.run_sharded(p, inputs);
  std::vector<std::string> trace_events;  // every rank's, on every rank
  if (trace) trace_events = session.per_rank_bytes(trace->events_json(), "trace");
  if (session.rank() != 0) return 0;  // every rank has the results; rank 0 writes and prints them
  std::error_code ec;
  std::filesystem::create_directories(c.output_dir, ec);
  if (ec) fail("--output-dir {}: cannot create the folder: {}", c.output_dir, ec.message());
  if (c.output_format == "safetensors") {
    std::string path = (std::filesystem::path(c.output_dir) / "results.safetensors").string();
    runtime::NamedArrays named;
    for (size_t i = 0; i < results.size(); ++i) named.emplace_back(fmt::format("result{}", i), results[i]);
    runtime::save_safetensors(path, named);
    for (size_t i = 0; i < results.size(); ++i)
      out << fmt::format("result {}: {} -> {} (result{})\n", i, ir::to_string(results[i].type()), path, i);
  } else {
    for (size_t i = 0; i < results.size(); ++i) {
      if (!results[i].type().is_tensor()) {  // a token holds no data: nothing to write
        out << fmt::format("result {}: {}\n", i, ir::to_string(results[i].type()));
        continue;
      }
      std::string path = (std::filesystem::path(c.output_dir) / fmt::format("result{}.npy", i)).string();
      interp::save_npy(results[i], path);
      out << fmt::format("result {}: {} -> {}\n", i, ir::to_string(results[i].type()), path);
    }
  }
  int64_t ranks = session.num_devices() / c.devices;
  std::string where = session.over_mpi() ? fmt::format("{} devices ({} MPI rank{} of {})", session.num_devices(),
                                                       ranks, ranks == 1 ? "" : "s", c.devices)
                                          : fmt::format("{} host devices", c.devices);
  out << fmt::format("ran @{} on {}; {} collectives, {} bytes moved per device\n", f.name(), where,
                     p.report().collectives.size(), p.report().bytes_per_device());
  if (trace) write_trace(trace_events, c.trace, c.trace_svg, out);
  return 0;
}

}  // namespace tessera::tools
