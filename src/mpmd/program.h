// The MPMD program form (Shardy:MPMD's model): one step program whose parts are *named
// computations*, and an *assignment* of those names to meshes.
//
// A named computation is a `func.call` in the step function. Its name is the call's `mpmd.name`
// attribute, or the callee's name when the attribute is absent; a call inside a microbatch loop
// also carries `mpmd.call_counter` (0 … M−1). Both are plain op attributes, so the step prints and
// parses back as ordinary StableHLO text:
//
//   %0 = call @policy(%arg0, %arg1) {mpmd.call_counter = 0 : i64, mpmd.name = "policy"} : ...
//
// `flatten` inlines every call and marks each inlined op with its computation's name and counter
// (nested calls take the outermost name: the assignment is of outermost computations). `whole_step`
// then differentiates the flattened program as a whole with autodiff::reverse, whose backward ops
// inherit the marks of the forward op they transpose (and are marked `mpmd.transpose`): the
// backward of a named computation is thereby assigned to the mesh of its forward. fragments.h cuts
// the result into per-mesh programs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/module.h"

namespace tessera::mpmd {

// Op attributes of the program form.
inline constexpr char kNameAttr[] = "mpmd.name";
inline constexpr char kCallCounterAttr[] = "mpmd.call_counter";
inline constexpr char kTransposeAttr[] = "mpmd.transpose";
// On a transpose op that belongs to the weight-gradient part of its computation's backward (W of a
// zero-bubble schedule; see split_backward in fragment_pipeline.h).
inline constexpr char kWeightAttr[] = "mpmd.weight";

// A mesh of the MPMD program: a named group of host devices. With `spmd_mesh` (the name of an
// ir::Mesh of the module with `devices` devices), the fragments on it are SPMD-partitioned over
// its devices by their shardings; without, `devices` must be 1 and fragments run whole.
struct MeshSpec {
  std::string name;
  int64_t devices = 1;
  std::string spmd_mesh;
};

// Named computation -> mesh name.
using Assignment = std::map<std::string, std::string>;

// ---- Building the step ----

// The explicit per-call form: emits `call @callee(args)` labelled `name` (callee's name when
// empty) with the call counter when given.
std::vector<ir::Tensor> named_call(ir::Builder& b, const ir::Function& callee,
                                   const std::vector<ir::Tensor>& args,
                                   std::optional<int64_t> call_counter = std::nullopt,
                                   const std::string& name = "");

// The scan-like helper over microbatches: `count` calls of `callee` with call_counter 0 … count−1.
// Call i receives (carry..., inputs(i)...) and returns (carry'..., ys...) with as many carried
// values as `carry` has; the last carry and every call's ys are returned.
struct ScanResult {
  std::vector<ir::Tensor> carry;
  std::vector<std::vector<ir::Tensor>> ys;  // [call][y]
};
ScanResult scan_calls(ir::Builder& b, const ir::Function& callee, int64_t count,
                      std::vector<ir::Tensor> carry,
                      const std::function<std::vector<ir::Tensor>(int64_t)>& inputs,
                      const std::string& name = "");

// ---- From the step to the whole program ----

// The name and call counter of a named computation's call (or of an op flatten marked); nothing
// for an unmarked op.
struct Origin {
  std::string name;
  int64_t call_counter = -1;  // −1: none
  bool transpose = false;
  bool weight = false;  // the weight-gradient part of the transpose (kWeightAttr)
  bool operator==(const Origin&) const = default;
  std::string to_string() const;  // policy#0, policy#0ᵀ (the transpose), policy#0ᵀw (its weight part), reward
};
std::optional<Origin> origin_of(const ir::Op& op);

// Copies @step of `module` into @name of `module` with every call inlined, each inlined op marked
// with its outermost call's mpmd.name (or callee name) and call counter. A UserError names a
// call to an undefined function or a recursive call.
ir::Function& flatten(ir::Module& module, const ir::Function& step, const std::string& name);

// The whole step: the flattened forward and its transpose in one function (autodiff::reverse of
// the flattened step with return_value: results are step's results, then the gradients of the
// parameters in `wrt`, every float parameter when empty). A step that returns one float scalar
// (a loss) is seeded with 1; otherwise the whole step takes one cotangent per result after the
// parameters (autodiff::reverse's convention). Backward ops carry their forward op's marks.
// With `remat` the backward of each call (named computation and counter) recomputes that call's
// forward from the values that cross into it (its inputs from other calls, glue and parameters),
// which alone the forward keeps for it; the recomputed ops carry the call's transpose marks.
ir::Function& whole_step(ir::Module& module, const ir::Function& step, const std::vector<size_t>& wrt = {},
                         const std::string& name = "", bool remat = false);

// The values `op` reads from outside itself, each once: its operands, then what its regions
// capture (ir::captures_of), in the order they are first read.
std::vector<const ir::Value*> outer_uses(const ir::Op& op);

// The named computations of a flattened or whole step, in program order of their first op.
std::vector<std::string> computation_names(const ir::Function& fn);

}  // namespace tessera::mpmd
