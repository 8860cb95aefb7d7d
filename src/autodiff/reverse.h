// Reverse-mode differentiation of whole programs: f -> f_grad.
//
// f_grad takes f's parameters (with their shardings), plus one cotangent per result of f unless f
// returns a single float scalar (a loss, seeded with 1). It returns the gradient of every
// parameter in `wrt`, each constrained to its parameter's sharding (or the one
// ReverseOptions::gradient_sharding gives), after f's results when
// `return_value` is set. Meshes are module-wide, so they carry over as they are. Collective
// adjoints follow DESIGN.md §2: the loss is the sum of every replica's loss.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/module.h"

namespace tessera::autodiff {

// Rematerialization: which forward values the backward pass reads as computed in the forward (kept
// alive until then) and which it computes again where it needs them (so they die in the forward).
enum class Remat {
  kNone,      // keep every forward value the backward reads
  kSaveDots,  // keep the operands and results of contractions; recompute the element-wise work between
  kSaveKept,  // keep only what ReverseOptions::keep names; recompute every other pure op (contractions too)
};

struct ReverseOptions {
  std::vector<size_t> wrt;    // parameter indices; empty: every float parameter
  bool return_value = false;  // also return f's results, before the gradients
  std::string name;           // empty: f's name + "_grad"
  bool simplify = true;       // run transforms::simplify on the result (off: the raw rule output)
  Remat remat = Remat::kNone;
  // Remat::kSaveKept: the forward values kept for the backward (e.g. a pipeline stage's inputs,
  // mpmd/program.h); parameters, constants and impure ops' results are always kept.
  std::function<bool(const ir::Value&)> keep;
  // Attributes that the ops a VJP rule emits (and the cotangent sums it causes) copy from the
  // forward op they differentiate, e.g. mpmd.name: the backward of a named computation then stays
  // with its computation when the program is cut into per-mesh fragments (mpmd/fragments.h).
  std::vector<std::string> inherit_attrs;
  // Non-empty: those ops also get this attribute set to true, so a later pass can tell the
  // transpose from the forward copy.
  std::string backward_mark;
  // Set: the sharding the gradient of parameter i is constrained to instead of the parameter's
  // (nullopt: no constraint). A weight update sharded where the parameter is whole (nn::zero1)
  // gets each device's share of the summed gradient: a reduce-scatter, not an all-reduce.
  std::function<std::optional<ir::Sharding>(size_t)> gradient_sharding;
};

// Builds the gradient function of `f` in `module` (where f lives) and returns it. A user error
// names the op or parameter that cannot be differentiated.
ir::Function& reverse(ir::Module& module, const ir::Function& f, const ReverseOptions& options = {});

}  // namespace tessera::autodiff
