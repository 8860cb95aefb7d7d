// `tessera partition` and `tessera run` (see partition_cmd.h).
#include "tools/tessera/partition_cmd.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "interp/npy.h"
#include "runtime/session.h"
#include "spmd/mesh_math.h"
#include "spmd/partition.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "support/error.h"
#include "support/strings.h"

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
  ir::Mesh mesh{"mesh", {}, {}};
  std::stringstream spec(mesh_spec);
  for (std::string item; std::getline(spec, item, ',');) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      fail("--mesh: '{}' is not name=size (e.g. --mesh data=4,model=2)", item);
    std::optional<int64_t> size = support::parse_int(item.substr(eq + 1));
    if (!size || *size < 1)
      fail("--mesh: size of axis \"{}\" is not a positive whole number: '{}'", item.substr(0, eq), item.substr(eq + 1));
    mesh.axes.push_back({item.substr(0, eq), *size});
  }
  // The module's one (non-maximal) mesh takes these axes; without one, @mesh is added.
  ir::Mesh* target = nullptr;
  for (auto& existing : m->meshes)
    if (!spmd::is_maximal(existing)) {
      if (target) fail("--mesh: {} declares several meshes; edit the file instead", path);
      target = &existing;
    }
  if (!target) {
    m->add_mesh(mesh);
  } else {
    for (const auto& a : target->axes)
      if (!mesh.find_axis(a.name))
        fail("--mesh: the file's mesh @{} has axis \"{}\", which --mesh does not size", target->name, a.name);
    target->axes = mesh.axes;
    target->device_ids.clear();
    ir::validate(*target);
  }
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
  return 0;
}

int run_command(const RunCommand& c, std::ostream& out) {
  auto m = load(c.file, c.mesh);
  const ir::Function& f = entry(*m, c.function);
  std::vector<std::optional<ir::Literal>> given(f.num_parameters());
  for (const std::string& spec : c.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos) fail("--input: '{}' is not argN=file.npy", spec);
    std::string name = spec.substr(0, eq);
    if (name.rfind("%", 0) == 0) name = name.substr(1);
    if (name.rfind("arg", 0) == 0) name = name.substr(3);
    std::optional<int64_t> parsed = support::parse_int(name);
    if (!parsed || *parsed < 0) fail("--input: '{}' names no parameter (use argN or N, N from 0)", spec.substr(0, eq));
    size_t index = static_cast<size_t>(*parsed);
    if (index >= given.size())
      fail("--input: @{} has {} parameter{}, no parameter {}", f.name(), given.size(), given.size() == 1 ? "" : "s",
           index);
    given[index] = interp::load_npy(spec.substr(eq + 1));
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
