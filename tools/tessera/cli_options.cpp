// --mesh and --input values (see cli_options.h).
#include "tools/tessera/cli_options.h"

#include <optional>
#include <sstream>

#include "spmd/mesh_math.h"
#include "support/error.h"
#include "support/strings.h"

namespace tessera::tools {

using support::fail;

ir::Mesh parse_mesh_spec(const std::string& spec) {
  ir::Mesh mesh{"mesh", {}, {}};
  std::stringstream items(spec);
  for (std::string item; std::getline(items, item, ',');) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      fail("--mesh: '{}' is not name=size (e.g. --mesh data=4,model=2)", item);
    std::optional<int64_t> size = support::parse_int(item.substr(eq + 1));
    if (!size || *size < 1)
      fail("--mesh: size of axis \"{}\" is not a positive whole number: '{}'", item.substr(0, eq), item.substr(eq + 1));
    mesh.axes.push_back({item.substr(0, eq), *size});
  }
  return mesh;
}

void apply_mesh(ir::Module& m, const ir::Mesh& mesh, const std::string& path) {
  ir::Mesh* target = nullptr;
  for (auto& existing : m.meshes)
    if (!spmd::is_maximal(existing)) {
      if (target) fail("--mesh: {} declares several meshes; edit the file instead", path);
      target = &existing;
    }
  if (!target) {
    m.add_mesh(mesh);
    return;
  }
  for (const auto& a : target->axes)
    if (!mesh.find_axis(a.name))
      fail("--mesh: the file's mesh @{} has axis \"{}\", which --mesh does not size", target->name, a.name);
  target->axes = mesh.axes;
  target->device_ids.clear();
  ir::validate(*target);
}

InputSpec parse_input_spec(const std::string& spec, const std::string& function, size_t num_parameters) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos) fail("--input: '{}' is not argN=file.npy", spec);
  std::string name = spec.substr(0, eq);
  if (name.rfind("%", 0) == 0) name = name.substr(1);
  if (name.rfind("arg", 0) == 0) name = name.substr(3);
  std::optional<int64_t> parsed = support::parse_int(name);
  if (!parsed || *parsed < 0) fail("--input: '{}' names no parameter (use argN or N, N from 0)", spec.substr(0, eq));
  size_t index = static_cast<size_t>(*parsed);
  if (index >= num_parameters)
    fail("--input: @{} has {} parameter{}, no parameter {}", function, num_parameters, num_parameters == 1 ? "" : "s",
         index);
  return {index, spec.substr(eq + 1)};
}

}  // namespace tessera::tools
