// Dead-code elimination: removes replaceable ops (pure, not pinned; rewrite.h) none of whose
// results is used, and then the ops that only they used.
//
// Sound because a pure op has no effect but its results: if nothing reads them, the program
// computes the same values without it. Only kPure ops qualify, so collectives (they communicate),
// checks, calls, custom calls, while loops and replica/partition ids always stay, and so do Shardy
// ops and ops with a sharding (pinned). The function's return is an op like any other: what it
// returns is used, so it stays.
//
// Uses are counted once over the whole function; then each block is swept from its last op to its
// first, so an op's users are decided before the op is: a chain of dead ops goes in one sweep.
// Removing an op gives back the uses its operands (and the ops of its regions) held.
#include <unordered_map>
#include <unordered_set>

#include "transforms/rewrite.h"
#include "transforms/simplify.h"

namespace tessera::transforms {
namespace {

using ir::Op;
using Uses = std::unordered_map<const ir::Value*, int>;

// Adds `delta` to the use count of every operand of `op` and of the ops of its regions.
void count_operands(const Op& op, Uses& uses, int delta) {
  for (const ir::Value* v : op.operands()) uses[v] += delta;
  for (const auto& region : op.regions())
    for (const auto& inner : region->ops()) count_operands(*inner, uses, delta);
}

bool unused(const Op& op, const Uses& uses) {
  for (const ir::Value* r : op.results()) {
    auto it = uses.find(r);
    if (it != uses.end() && it->second > 0) return false;
  }
  return true;
}

// Marks the dead ops of `block` (and, inside the ops that stay, of their regions).
void sweep(ir::Block& block, Uses& uses, std::unordered_set<const Op*>& dead) {
  const auto& ops = block.ops();
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    Op& op = **it;
    if (replaceable(op) && unused(op, uses)) {
      dead.insert(&op);
      count_operands(op, uses, -1);
      continue;
    }
    for (const auto& region : op.regions()) sweep(*region, uses, dead);
  }
}

void erase_dead(ir::Block& block, const std::unordered_set<const Op*>& dead) {
  block.erase_if([&](const Op& op) { return dead.count(&op) != 0; });
  for (const auto& op : block.ops())
    for (const auto& region : op->regions()) erase_dead(*region, dead);
}

}  // namespace

bool eliminate_dead_code(ir::Function& f) {
  Uses uses;
  for (const auto& op : f.body().ops()) count_operands(*op, uses, +1);
  std::unordered_set<const Op*> dead;
  sweep(f.body(), uses, dead);
  if (dead.empty()) return false;
  erase_dead(f.body(), dead);
  return true;
}

}  // namespace tessera::transforms
