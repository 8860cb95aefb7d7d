// The option values of `tessera partition` and `tessera run` that are small languages of their
// own, parsed by pure functions so they can be unit tested and fuzzed (fuzz/README.md) apart from
// files and sessions: `--mesh data=4,model=2` and `--input argN=path.npy`. Every malformed value is
// a support::UserError whose message names the option and the offending text.
#pragma once

#include <cstddef>
#include <string>

#include "ir/module.h"

namespace tessera::tools {

// "--mesh data=4,model=2": the axes, in order, of a mesh named "mesh" (no device ids). Each
// comma-separated item is name=size, the name non-empty and the size a whole number >= 1 read
// strictly (support::parse_int: "4x" is an error). Duplicate names and too many devices are left
// to ir::validate, which apply_mesh runs.
ir::Mesh parse_mesh_spec(const std::string& spec);

// Gives `m` the axes of `mesh`: the module's one non-maximal mesh is resized (every axis it has
// must be sized), or, without one, `mesh` is added. `path` names the module's file in messages.
void apply_mesh(ir::Module& m, const ir::Mesh& mesh, const std::string& path);

// "--input arg1=x.npy" (also "%arg1=..." or "1=..."): parameter 1 of `function` gets the array
// in x.npy. The parameter must exist among the function's `num_parameters`.
struct InputSpec {
  size_t parameter = 0;
  std::string path;
};
InputSpec parse_input_spec(const std::string& spec, const std::string& function, size_t num_parameters);

}  // namespace tessera::tools
