// `tessera partition` and `tessera run` (see partition_cmd.h).
#include "tools/tessera/partition_cmd.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "exec/executable.h"
#include "interp/npy.h"
#include "runtime/session.h"
#include "spmd/partition.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "support/error.h"
#include "support/memory.h"
#include "tools/tessera/cli_options.h"

namespace tessera::tools {

namespace {

using support::fail;

std::unique_ptr<ir::Module> load(const std::string& path, const std::string& mesh_spec) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot read the file", path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto m = stablehlo::parse(buffer.str(), path);
  if (mesh_spec.empty()) return m;
  // The module's one (non-maximal) mesh takes these axes; without one, @mesh is added.
  apply_mesh(*m, parse_mesh_spec(mesh_spec), path);
  ir::verify(*m);
  return m;
}

const ir::Function& entry(const ir::Module& m, const std::string& name) {
  if (!name.empty()) {
    if (const ir::Function* f = m.find_function(name)) return *f;
    fail("no function @{}", name);
  }
  if (const ir::Function* f = m.find_function("main")) return *f;
  for (const auto& f : m.functions)
    if (f->is_public) return *f;
  fail("the module has no public function");
}

}  // namespace

int partition_command(const PartitionCommand& c, std::ostream& out) {
  auto m = load(c.file, c.mesh);
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
  return 0;
}

int run_command(const RunCommand& c, std::ostream& out) {
  auto m = load(c.file, c.mesh);
  const ir::Function& f = entry(*m, c.function);
  std::vector<std::optional<ir::Literal>> given(f.num_parameters());
  for (const std::string& spec : c.inputs) {
    InputSpec input = parse_input_spec(spec, f.name(), given.size());
    given[input.parameter] = interp::load_npy(input.path);
  }
  std::vector<ir::Literal> inputs;
  for (size_t i = 0; i < given.size(); ++i) {
    if (!given[i]) fail("parameter {} of @{} ({}) has no --input", i, f.name(), ir::to_string(f.parameter(i)->type()));
    inputs.push_back(std::move(*given[i]));
  }
  if (c.backend != "host" && c.backend != "mpi") fail("--backend: '{}' is neither host nor mpi", c.backend);
  runtime::SessionOptions options;
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(c.timeout_s * 1000));
  runtime::Session session =
      c.backend == "mpi" ? runtime::Session::mpi(c.devices, options) : runtime::Session::host(c.devices, options);
  runtime::CompiledProgram p = session.compile(*m, f.name());
  std::vector<ir::Literal> results = session.run_sharded(p, inputs);
  if (session.rank() != 0) return 0;  // every rank has the results; rank 0 writes and prints them
  std::error_code ec;
  std::filesystem::create_directories(c.output_dir, ec);
  if (ec) fail("--output-dir {}: cannot create the folder: {}", c.output_dir, ec.message());
  for (size_t i = 0; i < results.size(); ++i) {
    std::string path = (std::filesystem::path(c.output_dir) / fmt::format("result{}.npy", i)).string();
    interp::save_npy(results[i], path);
    out << fmt::format("result {}: {} -> {}\n", i, ir::to_string(results[i].type()), path);
  }
  int64_t ranks = session.num_devices() / c.devices;
  std::string where = session.over_mpi() ? fmt::format("{} devices ({} MPI rank{} of {})", session.num_devices(),
                                                       ranks, ranks == 1 ? "" : "s", c.devices)
                                          : fmt::format("{} host devices", c.devices);
  out << fmt::format("ran @{} on {}; {} collectives, {} bytes moved per device\n", f.name(), where,
                     p.report().collectives.size(), p.report().bytes_per_device());
  return 0;
}

}  // namespace tessera::tools
