// Rewriting helpers shared by the passes of simplify.
//
// The IR keeps no use lists, so a use is found by walking the function (ir::replace_uses, one walk
// per set of replacements). Passes that replace values as they go walk once with a Renamer: they
// visit ops in program order (an op before the ops of its regions, every definition before its
// uses), rename each op's operands through the replacements recorded so far, then look at the op,
// so a replacement reaches every later use, the function's return included, in the same walk.
#pragma once

#include <functional>
#include <unordered_map>

#include "ir/module.h"

namespace tessera::transforms {

// Calls visit(op) for every op of `block`, in program order, an op before the ops of its regions.
// Each block's ops are listed before visiting, so visit may insert ops before the op it is given
// (they are not visited).
void walk(ir::Block& block, const std::function<void(ir::Op&)>& visit);

// Replacements recorded during one walk; see the top of this file.
class Renamer {
 public:
  void replace(ir::Value* from, ir::Value* to) { map_[from] = to; }
  // v, or what it was replaced by (following chains of replacements).
  ir::Value* resolve(ir::Value* v) const;
  // Renames op's operands; returns whether any changed.
  bool rename_operands(ir::Op& op) const;
  bool empty() const { return map_.empty(); }

 private:
  std::unordered_map<const ir::Value*, ir::Value*> map_;
};

// Walks `f` with a Renamer: each op's operands are renamed, then visit(op, renamer) may record
// replacements of op's results. Returns whether any replacement was recorded or operand renamed.
bool walk_renaming(ir::Function& f, const std::function<void(ir::Op&, Renamer&)>& visit);

// Inserts `kind` of `operands` with one result of type `result` just before `before`; returns the
// result. The caller is responsible for the type being the op's (no shape rule is run).
ir::Value* insert_op(ir::Op& before, ir::OpKind kind, std::vector<ir::Value*> operands,
                     ir::Type result, ir::AttrMap attrs = {});

// An op that states a layout: a Shardy op, or an op carrying an sdy.sharding attribute. Passes
// never remove, merge or replace one (its operands may be renamed to equal values).
bool pinned(const ir::Op& op);

// The op may be removed when unused, or replaced by a value equal to its results: it is pure, not
// pinned, and every op in its regions is pure or a terminator.
bool replaceable(const ir::Op& op);

// Whether `v` is defined inside `op` (a block argument or result of one of its regions' ops).
bool defined_inside(const ir::Value* v, const ir::Op& op);

}  // namespace tessera::transforms
