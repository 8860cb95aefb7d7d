// Common-subexpression elimination: a replaceable op (pure, not pinned) equal to an earlier op of
// the same block is replaced by that op's results.
//
// Two ops are equal when they have the same kind, the same operands in the same order, the same
// result types and equal attributes (AttrMap ==; constants compare their literals bitwise), and
// their regions are equal structurally: same argument types, and op for op equal, where a value
// defined inside one region corresponds to the value at the same place in the other. Sound because
// a pure op's results are a function of exactly these things, and the earlier op dominates every
// use of the later one (same block, earlier). Operands of commutative ops are not reordered: a+b
// and b+a may differ in the payload of a NaN.
#include <unordered_map>

#include "ir/clone.h"
#include "transforms/rewrite.h"
#include "transforms/simplify.h"

namespace tessera::transforms {
namespace {

using ir::Op;

const ir::Value* corresponding(const ir::ValueMap& map, const ir::Value* v) {
  auto it = map.find(v);
  return it == map.end() ? v : it->second;
}

// Whether b is an op equal to a; `map` takes values defined inside a's regions to b's.
bool equivalent(const Op& a, const Op& b, ir::ValueMap& map) {
  if (a.kind() != b.kind() || a.operands().size() != b.operands().size() ||
      a.regions().size() != b.regions().size() || a.result_types() != b.result_types() ||
      !(a.attrs() == b.attrs()))
    return false;
  for (size_t i = 0; i < a.operands().size(); ++i)
    if (corresponding(map, a.operand(i)) != b.operand(i)) return false;
  for (size_t r = 0; r < a.regions().size(); ++r) {
    const ir::Block& ra = a.region(r);
    const ir::Block& rb = b.region(r);
    if (ra.arguments().size() != rb.arguments().size() || ra.ops().size() != rb.ops().size())
      return false;
    for (size_t i = 0; i < ra.arguments().size(); ++i) {
      if (ra.argument(i)->type() != rb.argument(i)->type()) return false;
      map[ra.argument(i)] = rb.argument(i);
    }
    for (size_t i = 0; i < ra.ops().size(); ++i) {
      if (!equivalent(*ra.ops()[i], *rb.ops()[i], map)) return false;
      for (size_t k = 0; k < ra.ops()[i]->num_results(); ++k)
        map[ra.ops()[i]->result(k)] = rb.ops()[i]->result(k);
    }
  }
  return true;
}

// A hash of what equal ops share: block, kind and operands.
size_t bucket(const Op& op) {
  size_t h = std::hash<const void*>()(op.parent) ^ (static_cast<size_t>(op.kind()) << 1);
  for (const ir::Value* v : op.operands()) h = h * 1000003u ^ std::hash<const void*>()(v);
  return h;
}

}  // namespace

bool eliminate_common_subexpressions(ir::Function& f) {
  std::unordered_map<size_t, std::vector<Op*>> seen;
  return walk_renaming(f, [&](Op& op, Renamer& renamer) {
    if (!replaceable(op) || op.num_results() == 0) return;
    std::vector<Op*>& candidates = seen[bucket(op)];
    for (Op* earlier : candidates) {
      ir::ValueMap map;
      if (earlier->parent != op.parent || !equivalent(*earlier, op, map)) continue;
      for (size_t k = 0; k < op.num_results(); ++k) renamer.replace(op.result(k), earlier->result(k));
      return;
    }
    candidates.push_back(&op);
  });
}

}  // namespace tessera::transforms
