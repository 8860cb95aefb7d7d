// Forward-mode differentiation of whole programs: f -> f_jvp.
//
// f_jvp takes f's parameters (with their argument attributes, shardings included) followed by one
// tangent per float parameter, laid out like its primal; it returns f's results followed by one
// tangent per float result (the Jacobian of f applied to the parameter tangents). Collectives carry
// their tangents through the same collective, and layout ops (sharding_constraint, reshard) give
// the tangent the primal's layout. What reverse refuses, forward refuses in the same words.
#pragma once

#include <string>

#include "ir/module.h"

namespace tessera::autodiff {

struct ForwardOptions {
  std::string name;  // empty: f's name + "_jvp"
};

// Builds the JVP function of `f` in `module` (where f lives) and returns it. A user error names
// the op that cannot be differentiated; no half-built function stays behind.
ir::Function& forward(ir::Module& module, const ir::Function& f, const ForwardOptions& options = {});

}  // namespace tessera::autodiff
