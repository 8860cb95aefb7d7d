// Fragmentation: the whole step (program.h: forward and transpose in one function, ops marked with
// their named computation) cut into per-mesh programs, the *fragments*, with *transfers* where a
// value produced on one mesh is used on another.
//
// The rules, in the order they are applied:
//   1. An op of a named computation (forward or backward: the backward inherits the forward's name)
//      runs on the mesh its name is assigned to. A name without a mesh, or an assignment naming a
//      computation or mesh the program lacks, is a UserError.
//   2. Cheap values — constant, iota, sdy.constant, and broadcast_in_dim / reshape / convert /
//      transpose of cheap values — belong to no mesh: each fragment that uses one computes its own
//      copy (cloned), since recomputing it costs less than moving it.
//   3. Parameters never move. A parameter's mesh is that of the named computations whose forward
//      reads it; read by computations on two meshes it is a UserError naming it and both computations.
//      (A transpose op may still read a parameter of another mesh when simplification made a
//      cotangent equal to it, e.g. the cotangent of k in x·k is x: that read gets a copy of the
//      value by a transfer from the parameter's mesh; the parameter itself stays.)
//   4. An unnamed op (glue between computations, e.g. the loss, and its transpose) runs on the mesh
//      of the parameters it reads (two meshes: UserError); else on the mesh of its first consumer in
//      program order; else (only returned) on the mesh of its first operand that has one; else on
//      the first mesh. A parameter read only by unnamed ops takes the mesh of its last reader.
//   5. A fragment is a maximal run of consecutive ops (program order, cheap ops left out) on one mesh
//      from one named computation call (name, call counter, forward or transpose); an unnamed op joins
//      the fragment before it when that is on its mesh (unless FragmentOptions::glue_joins is off:
//      then each unnamed op is a glue fragment of its own).
//   6. Every other value used in a fragment it was not computed in is a fragment input: a parameter,
//      a value from an earlier fragment on the same mesh (kept by the runner while a later reader in
//      its order still needs it: fragment_pipeline_run.cpp), or a value from
//      another mesh, moved by a transfer — one per (value, destination mesh), however many fragments
//      there read it.
//   7. With meshes that have an spmd mesh, the whole step's shardings are propagated once
//      (spmd::propagate) and every fragment on such a mesh takes its boundary values' layouts from
//      it (closed, reductions done): producer and consumer agree, so values cross fragments and
//      meshes of the same shape as they are, piece for piece.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/literal.h"
#include "ir/module.h"
#include "mpmd/program.h"

namespace tessera::mpmd {

// What a fragment parameter (or a step result) is bound to.
struct Binding {
  enum class Kind { kParameter, kValue, kConstant };
  Kind kind = Kind::kValue;
  size_t index = 0;       // step parameter number, or value id (FragmentPlan::values)
  ir::Literal constant;   // kConstant: a cheap result, computed when the plan is made
};

struct Fragment {
  size_t index = 0;
  size_t mesh = 0;                // into FragmentPlan::meshes
  std::optional<Origin> origin;   // the named computation call it comes from; none: unnamed ops only
  std::shared_ptr<ir::Module> module;  // the fragment function and its mesh's ir::Mesh, if any
  std::string function;
  std::vector<Binding> inputs;    // one per parameter of the function (kParameter or kValue)
  std::vector<size_t> outputs;    // value ids, one per result
  std::vector<size_t> ops;        // the ops of the step it holds: positions in the step's body
  size_t num_ops() const { return ops.size(); }
  size_t num_cloned = 0;          // cheap ops cloned into it
  const ir::Function& fn() const;
  std::string describe() const;   // "fragment 2 (policy#0ᵀ)", "fragment 3 (glue)"
};

struct PlanValue {
  std::string name;     // %12 in the whole step's numbering of op results, in program order
  ir::Type type;
  size_t producer = 0;  // fragment
  std::optional<size_t> parameter;  // set: the value is this step parameter (producer unused)
};

struct Transfer {
  size_t value = 0;
  size_t from = 0, to = 0;          // meshes
  // The producing fragment (unused when the value is a parameter, sent when the run starts) and
  // the first fragment reading it.
  size_t producer = 0, consumer = 0;
};

struct FragmentPlan {
  std::vector<MeshSpec> meshes;
  std::vector<Fragment> fragments;  // program order: a topological order of the dependencies
  std::vector<PlanValue> values;
  std::vector<Transfer> transfers;
  std::vector<Binding> results;          // one per result of the whole step
  std::vector<ir::Type> parameter_types;  // of the whole step
  std::vector<std::optional<size_t>> parameter_mesh;  // none: read by no fragment

  // Fragments (mesh, origin, op counts, inputs, outputs) and transfers, one a line.
  std::string summary() const;
  // Number of the ops in fragments on mesh `mesh` that are of `kind` (for tests).
  size_t count(size_t mesh, ir::OpKind kind) const;
};

struct FragmentOptions {
  // Rule 5's joining of unnamed ops to the fragment before them (and of a named op to an unnamed
  // fragment before it). Off, every unnamed op is a fragment of its own, a *glue* fragment: a
  // pipeline schedule (fragment_pipeline.h) runs named fragments as its actions, in its own order,
  // and each glue op as soon as its own inputs exist (a gradient's sum over microbatches adds each
  // term when it arrives), so glue must not be tied to an action nor wait for unrelated glue.
  bool glue_joins = true;
};

// Cuts @whole (of `module`, e.g. from whole_step) by the rules above. `meshes` are the program's
// meshes; a MeshSpec with spmd_mesh names an ir::Mesh of `module` with `devices` devices, copied into
// the fragments' modules.
FragmentPlan fragment(const ir::Module& module, const ir::Function& whole, const std::vector<MeshSpec>& meshes,
                      const Assignment& assignment, const FragmentOptions& options = {});

}  // namespace tessera::mpmd
