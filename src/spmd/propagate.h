// Sharding propagation: from the shardings a user wrote (on parameters, results, sharding
// constraints and ops) to one for every value of a function, in Shardy's model.
//
// Each op's factor rule reads the shardings of its operands and results as axes per factor; for
// each factor the candidates are merged (the longest when they agree as prefixes; on a conflict,
// their longest common prefix: the documented rule, so propagation never invents a layout nobody
// asked for) and written back to every open dimension that the merged axes extend. Closed
// dimensions never change. Passes go forward and backward over the ops until nothing changes,
// first with the shardings of user priority p0 only, then p1, ..., then those without priority;
// within a pass, ops propagate in rounds by op priority: element-wise and layout ops first, then
// contractions and reductions, then everything else. The result is deterministic: it depends only
// on the program.
#pragma once

#include <unordered_map>

#include "ir/module.h"

namespace tessera::spmd {

struct ShardingMap {
  std::unordered_map<const ir::Value*, ir::Sharding> values;
  const ir::Sharding& at(const ir::Value* v) const;
};

// Propagates over `fn` (calls must be inlined first). Values nothing reaches are replicated, on
// the function's mesh. A user error names the value whose written sharding is impossible.
ShardingMap propagate(const ir::Module& module, const ir::Function& fn);

// Writes `map` into `fn` as Shardy annotations (parameters, op results, function results), so the
// propagated program prints the way Shardy's would.
void annotate(ir::Function& fn, const ShardingMap& map);

// What the operand of sdy.all_reduce or sdy.reduce_scatter holds: the output's layout without the
// scattered axes, unreduced (partial) along the reduced axes.
ir::Sharding partial_operand(const ir::Op& op);

// The mesh `fn`'s shardings use (the first non-maximal one); empty when it names none.
std::string function_mesh(const ir::Module& module, const ir::Function& fn);

// The devices `fn` runs on: the largest mesh its layouts name (its callees' too; a maximal mesh
// needs its device id), or function_mesh's when it names none. Other meshes of the module play no
// part: Shardy's tests declare meshes of several sizes, and a function on a mesh of 2 must not be
// handed to 4 devices because another mesh has 4.
int64_t devices_needed(const ir::Module& module, const ir::Function& fn);

}  // namespace tessera::spmd
