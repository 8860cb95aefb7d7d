// The MPMD program form (Shardy:MPMD's model): one step program whose parts are *named
// computations*, and an *assignment* of those names to meshes.
//
// A named computation is a `func.call` in the step, named by its `mpmd.name` attribute (else its
// callee); a call inside a microbatch loop also carries `mpmd.call_counter`. Both are plain
// attributes, so the step prints and parses as ordinary StableHLO:
//
//   %0 = call @policy(%arg0, %arg1) {mpmd.call_counter = 0 : i64, mpmd.name = "policy"} : ...
//
// `flatten` inlines every call, marking each op with its outermost call's name and counter;
// `whole_step` differentiates that whole, and the backward ops inherit their forward op's marks
// (plus `mpmd.transpose`), so a computation's backward is assigned to its forward's mesh.
// fragments.h cuts the result into per-mesh programs.
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
// On a transpose op of the weight-gradient part (FragmentPipelineOptions::split_backward).
inline constexpr char kWeightAttr[] = "mpmd.weight";

// A mesh of the program: a named group of host devices. With `spmd_mesh` (an ir::Mesh of the
// module with `devices` devices) its fragments are partitioned over them; without, `devices` is 1.
struct MeshSpec {
  std::string name;
  int64_t devices = 1;
  std::string spmd_mesh;
};

// Named computation -> mesh name.
using Assignment = std::map<std::string, std::string>;

// Emits `call @callee(args)` named `name` (default: the callee's), with the call counter if given.
std::vector<ir::Tensor> named_call(ir::Builder& b, const ir::Function& callee,
                                   const std::vector<ir::Tensor>& args,
                                   std::optional<int64_t> call_counter = std::nullopt,
                                   const std::string& name = "");

// `count` calls of `callee` with counters 0 … count−1: call i takes (carry..., inputs(i)...) and
// returns (carry'..., ys...).
struct ScanResult {
  std::vector<ir::Tensor> carry;
  std::vector<std::vector<ir::Tensor>> ys;  // [call][y]
};
ScanResult scan_calls(ir::Builder& b, const ir::Function& callee, int64_t count,
                      std::vector<ir::Tensor> carry,
                      const std::function<std::vector<ir::Tensor>(int64_t)>& inputs,
                      const std::string& name = "");

// The name and call counter of a named computation's call or of an op flatten marked.
struct Origin {
  std::string name;
  int64_t call_counter = -1;  // −1: none
  bool transpose = false;
  bool weight = false;  // the weight-gradient part of the transpose (kWeightAttr)
  bool operator==(const Origin&) const = default;
  std::string to_string() const;  // policy#0, policy#0ᵀ (the transpose), policy#0ᵀw (its weight part), reward
};
std::optional<Origin> origin_of(const ir::Op& op);
// Erases `op`'s kNameAttr, kCallCounterAttr and kTransposeAttr: it then belongs to no call.
void strip_marks(ir::Op& op);

// @step copied into @name with every call inlined and marked (UserError: an undefined callee or
// recursion).
ir::Function& flatten(ir::Module& module, const ir::Function& step, const std::string& name);

// The whole step: the flattened forward and its transpose in one function (autodiff::reverse with
// return_value: step's results, then the gradients of `wrt`, default every float parameter; a
// scalar loss is seeded with 1, else cotangents follow the parameters). With `remat` each call's
// backward recomputes its forward from the values crossing into the call, which alone are kept.
ir::Function& whole_step(ir::Module& module, const ir::Function& step, const std::vector<size_t>& wrt = {},
                         const std::string& name = "", bool remat = false);

// The values `op` reads from outside itself, each once: operands, then its regions' captures.
std::vector<const ir::Value*> outer_uses(const ir::Op& op);

}  // namespace tessera::mpmd
