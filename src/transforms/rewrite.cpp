// Walking functions, renaming operands, and the predicates that say what a pass may touch.
#include "transforms/rewrite.h"

namespace tessera::transforms {

using ir::Op;
using ir::Value;

void walk(ir::Block& block, const std::function<void(Op&)>& visit) {
  std::vector<Op*> ops;
  for (const auto& op : block.ops()) ops.push_back(op.get());
  for (Op* op : ops) {
    visit(*op);
    for (const auto& region : op->regions()) walk(*region, visit);
  }
}

Value* Renamer::resolve(Value* v) const {
  for (auto it = map_.find(v); it != map_.end(); it = map_.find(v)) v = it->second;
  return v;
}

bool Renamer::rename_operands(Op& op) const {
  if (map_.empty()) return false;
  bool changed = false;
  for (size_t i = 0; i < op.operands().size(); ++i) {
    Value* to = resolve(op.operand(i));
    if (to == op.operand(i)) continue;
    op.set_operand(i, to);
    changed = true;
  }
  return changed;
}

bool walk_renaming(ir::Function& f, const std::function<void(Op&, Renamer&)>& visit) {
  Renamer renamer;
  bool renamed = false;
  walk(f.body(), [&](Op& op) {
    renamed |= renamer.rename_operands(op);
    visit(op, renamer);
  });
  return renamed || !renamer.empty();
}

Value* insert_op(Op& before, ir::OpKind kind, std::vector<Value*> operands, ir::Type result,
                 ir::AttrMap attrs) {
  auto op = std::make_unique<Op>(kind, std::move(operands), std::vector<ir::Type>{std::move(result)},
                                 std::move(attrs));
  return before.parent->insert_before(&before, std::move(op))->result();
}

bool pinned(const Op& op) {
  return ir::has_trait(op.kind(), ir::kShardy) || op.attrs().has("sdy.sharding");
}

bool replaceable(const Op& op) {
  if (!ir::has_trait(op.kind(), ir::kPure) || pinned(op)) return false;
  for (const auto& region : op.regions())
    for (const auto& inner : region->ops())
      if (!ir::has_trait(inner->kind(), ir::kTerminator) && !replaceable(*inner)) return false;
  return true;
}

bool defined_inside(const Value* v, const Op& op) {
  const ir::Block* block = v->defining_op() ? v->defining_op()->parent : v->owner_block();
  while (block != nullptr && block->parent_op != nullptr) {
    if (block->parent_op == &op) return true;
    block = block->parent_op->parent;
  }
  return false;
}

}  // namespace tessera::transforms
