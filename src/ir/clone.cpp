#include "ir/clone.h"

namespace tessera::ir {

namespace {

Value* mapped(const ValueMap& map, Value* v) {
  auto it = map.find(v);
  return it == map.end() ? v : it->second;
}

}  // namespace

void replace_uses(Op& op, const ValueMap& map) {
  for (size_t i = 0; i < op.operands().size(); ++i) {
    Value* v = op.operand(i);
    for (auto it = map.find(v); it != map.end(); it = map.find(v)) v = it->second;
    if (v != op.operand(i)) op.set_operand(i, v);
  }
  for (const auto& region : op.regions()) replace_uses(*region, map);
}

void replace_uses(Block& block, const ValueMap& map) {
  if (map.empty()) return;
  for (const auto& op : block.ops()) replace_uses(*op, map);
}

void erase_ops(Block& block, const std::function<bool(const Op&)>& dead) {
  block.erase_if(dead);
  for (const auto& op : block.ops())
    for (const auto& region : op->regions()) erase_ops(*region, dead);
}

Op* clone_op(Block& into, const Op& op, ValueMap& map) {
  std::vector<Value*> operands;
  for (Value* v : op.operands()) operands.push_back(mapped(map, v));
  auto copy = std::make_unique<Op>(op.kind(), operands, op.result_types(), op.attrs());
  copy->loc = op.loc;
  for (const auto& region : op.regions()) {
    Block& block = copy->add_region();
    for (const auto& arg : region->arguments()) map[arg.get()] = block.add_argument(arg->type());
    for (const auto& inner : region->ops()) clone_op(block, *inner, map);
  }
  Op* placed = into.append(std::move(copy));
  for (size_t i = 0; i < op.num_results(); ++i) map[op.result(i)] = placed->result(i);
  return placed;
}

}  // namespace tessera::ir
