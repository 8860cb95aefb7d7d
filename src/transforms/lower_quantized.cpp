// Quantized ops lowered to dequantize -> float op -> quantize (see lower_quantized.h).
#include "transforms/lower_quantized.h"

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

}  // namespace

bool lower_quantized(ir::Module& module) {
  bool changed = false;
  for (const auto& fn : module.functions) {
    if (!any_in_block(fn->body())) continue;
    std::unordered_set<const Op*> lowered;
    walk_renaming(*fn, [&](Op& op, Renamer& renamer) {
      if (!ir::needs_quantized_lowering(op)) return;
      lower(op, renamer);
      lowered.insert(&op);
    });
    // The old ops go once every use reads their replacements (the walk renamed them all).
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
