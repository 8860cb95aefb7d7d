// Fragmentation: the whole step (program.h) cut into per-mesh programs, the *fragments*, with
// *transfers* where a value made on one mesh is used on another. The rules, in order:
//   1. An op of a named computation (forward or backward) runs on the mesh its name is assigned
//      to; a name without a mesh, or an assignment naming an unknown computation or mesh, is a
//      UserError.
//   2. Cheap values (constant, iota, sdy.constant, and broadcast_in_dim / reshape / convert /
//      transpose of cheap values) belong to no mesh: each fragment using one clones it.
//   3. Parameters never move: a parameter's mesh is that of the computations whose forward reads
//      it (two meshes: UserError). A transpose op may still read one of another mesh (a simplified
//      cotangent, e.g. of k in x·k): it gets a copy by a transfer.
//   4. An unnamed op (glue, e.g. the loss) runs on the mesh of the parameters it reads (two:
//      UserError); else of its first consumer; else of its first operand that has one; else on the
//      first mesh. A parameter read only by unnamed ops takes its last reader's mesh.
//   5. A fragment is a maximal run of consecutive ops on one mesh from one call (name, counter,
//      forward or transpose); an unnamed op joins the fragment before it on its mesh, unless
//      FragmentOptions::glue_joins is off (then each is a glue fragment of its own).
//   6. Any other value a fragment reads is an input: a parameter, a value of an earlier fragment on
//      the mesh, or one moved by a transfer, one per (value, destination mesh).
//   7. With spmd meshes, the whole step's shardings are propagated once and every fragment's
//      boundary values take their layouts from it (closed, reductions done), so producer and
//      consumer agree and values cross fragments piece for piece.
#pragma once

#include <cstdint>
#include <functional>
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
  std::vector<Binding> inputs;    // one per parameter of the function
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
  size_t from = 0, to = 0;            // meshes
  size_t producer = 0, consumer = 0;  // fragments (producer: unused for a parameter)
};

struct FragmentPlan {
  std::vector<MeshSpec> meshes;
  std::vector<Fragment> fragments;  // program order: a topological order of the dependencies
  std::vector<PlanValue> values;
  std::vector<Transfer> transfers;
  std::vector<Binding> results;          // one per result of the whole step
  std::vector<ir::Type> parameter_types;  // of the whole step
  std::vector<std::optional<size_t>> parameter_mesh;  // none: read by no fragment

  // Fragments (each line ending in note(f), if given) and transfers, one a line.
  std::string summary(const std::function<std::string(size_t)>& note = nullptr) const;
  size_t count(size_t mesh, ir::OpKind kind) const;  // ops of `kind` on mesh `mesh`
};

struct FragmentOptions {
  // Rule 5's joining. A pipeline turns it off: it runs each glue op as soon as its own inputs
  // exist, so glue must not be tied to an action nor wait for unrelated glue.
  bool glue_joins = true;
};

// Cuts @whole (of `module`, e.g. from whole_step) by the rules above; an spmd mesh of `meshes` is
// copied into the fragments' modules.
FragmentPlan fragment(const ir::Module& module, const ir::Function& whole, const std::vector<MeshSpec>& meshes,
                      const Assignment& assignment, const FragmentOptions& options = {});

}  // namespace tessera::mpmd
