// Quantized ops lowered to dequantize -> float op -> quantize (see lower_quantized.h).
#include "transforms/lower_quantized.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "ir/quantize.h"
#include "transforms/rewrite.h"

namespace tessera::transforms {
namespace {

using ir::Op;
using ir::OpKind;
using ir::Type;
using ir::Value;

Type expressed_view(const Type& t) { return t.quant ? t.with_element(t.quant->expressed) : t; }

Value* insert(Op& before, OpKind kind, std::vector<Value*> operands, std::vector<Type> results,
              ir::AttrMap attrs = {}) {
  auto op = std::make_unique<Op>(kind, std::move(operands), results, std::move(attrs));
  op->loc = before.loc;
  return before.parent->insert_before(&before, std::move(op))->result();
}

// `region` rebuilt to take and return float values where it took and returned quantized ones: each
// quantized argument is quantized again from its float value (exact: the float value is a
// dequantized one), so the body, already lowered, runs as written; each quantized returned value is
// dequantized.
std::unique_ptr<ir::Block> float_region(ir::Block& region) {
  auto out = std::make_unique<ir::Block>();
  std::unordered_map<const Value*, Value*> args;
  for (const auto& a : region.arguments()) args[a.get()] = out->add_argument(expressed_view(a->type()));
  for (const auto& a : region.arguments())
    if (a->type().is_quantized()) {
      auto q = std::make_unique<Op>(OpKind::UniformQuantize, std::vector<Value*>{args[a.get()]},
                                    std::vector<Type>{a->type()});
      args[a.get()] = out->append(std::move(q))->result();
    }
  for (auto& op : region.take_ops()) out->append(std::move(op));
  // Uses of the old arguments, in this block and the regions inside it, read the new values.
  std::function<void(ir::Block&)> rename = [&](ir::Block& b) {
    for (const auto& op : b.ops()) {
      for (size_t i = 0; i < op->operands().size(); ++i)
        if (auto it = args.find(op->operand(i)); it != args.end()) op->set_operand(i, it->second);
      for (const auto& r : op->regions()) rename(*r);
    }
  };
  rename(*out);
  Op* ret = out->terminator();
  std::vector<Value*> returned;
  for (Value* v : ret->operands())
    returned.push_back(v->type().is_quantized() ? insert(*ret, OpKind::UniformDequantize, {v}, {expressed_view(v->type())}) : v);
  auto new_ret = std::make_unique<Op>(ret->kind(), returned, std::vector<Type>{}, ret->attrs());
  new_ret->loc = ret->loc;
  out->append(std::move(new_ret));
  out->erase_if([&](const Op& o) { return &o == ret; });
  return out;
}

// Rewrites `op` before itself; records its results' replacements.
void lower(Op& op, Renamer& renamer) {
  bool quantized_result = false;
  for (size_t i = 0; i < op.num_results(); ++i) quantized_result |= op.result(i)->type().is_quantized();
  // Integer sums of products (dot_general, convolution) accumulate in f64; see the header.
  const bool wide = quantized_result && (op.kind() == OpKind::DotGeneral || op.kind() == OpKind::Convolution);
  auto widen = [&](const Type& t) {
    return wide && ir::is_float(t.element) && t.element != ir::ElementType::f64 ? t.with_element(ir::ElementType::f64) : t;
  };
  std::vector<Value*> operands;
  for (Value* v : op.operands()) {
    Value* x = v;
    if (v->type().is_quantized()) x = insert(op, OpKind::UniformDequantize, {v}, {expressed_view(v->type())});
    if (widen(x->type()) != x->type()) x = insert(op, OpKind::Convert, {x}, {widen(x->type())});
    operands.push_back(x);
  }
  std::vector<Type> float_types;
  for (size_t i = 0; i < op.num_results(); ++i) float_types.push_back(widen(expressed_view(op.result(i)->type())));
  auto fop = std::make_unique<Op>(op.kind(), operands, float_types, op.attrs());
  fop->loc = op.loc;
  for (const auto& region : op.regions()) fop->adopt_region(float_region(*region));
  Op* placed = op.parent->insert_before(&op, std::move(fop));
  for (size_t i = 0; i < op.num_results(); ++i) {
    const Type& want = op.result(i)->type();
    Value* y = placed->result(i);
    if (y->type() != expressed_view(want)) y = insert(op, OpKind::Convert, {y}, {expressed_view(want)});
    if (want.is_quantized()) y = insert(op, OpKind::UniformQuantize, {y}, {want});
    renamer.replace(op.result(i), y);
  }
}

bool any_in_block(const ir::Block& block) {
  for (const auto& op : block.ops()) {
    if (ir::needs_quantized_lowering(*op)) return true;
    for (const auto& region : op->regions())
      if (any_in_block(*region)) return true;
  }
  return false;
}

// Lowers the ops of `block` in program order, the bodies of an op's regions before the op (whose
// rewrite moves them into float regions); operands are renamed through the replacements so far.
void lower_block(ir::Block& block, Renamer& renamer, std::unordered_set<const Op*>& lowered) {
  std::vector<Op*> ops;
  for (const auto& op : block.ops()) ops.push_back(op.get());
  for (Op* op : ops) {
    renamer.rename_operands(*op);
    for (const auto& region : op->regions()) lower_block(*region, renamer, lowered);
    if (!ir::needs_quantized_lowering(*op)) continue;
    lower(*op, renamer);
    lowered.insert(op);
  }
}

}  // namespace

bool lower_quantized(ir::Module& module) {
  bool changed = false;
  for (const auto& fn : module.functions) {
    if (!any_in_block(fn->body())) continue;
    Renamer renamer;
    std::unordered_set<const Op*> lowered;
    lower_block(fn->body(), renamer, lowered);
    // The old ops go once every use reads their replacements.
    std::unordered_set<ir::Block*> blocks;
    for (const Op* op : lowered) blocks.insert(op->parent);
    for (ir::Block* b : blocks) b->erase_if([&](const Op& op) { return lowered.count(&op) != 0; });
    changed = changed || !lowered.empty();
  }
  return changed;
}

bool has_quantized_ops(const ir::Module& module) {
  for (const auto& fn : module.functions)
    if (any_in_block(fn->body())) return true;
  return false;
}

}  // namespace tessera::transforms
