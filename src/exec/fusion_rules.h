// What the element-wise fusion (fusion.cpp) may compute inside a fused loop: the kinds and element
// types it has instructions for, which ops are cheap enough to compute twice, and how a reduce
// folds the blocks of its operand's loop. Plain predicates over one op, kept apart from the planner
// and the loop builder that use them.
#pragma once

#include "exec/fold.h"
#include "ir/module.h"

namespace tessera::exec::fusion_rules {

// Element types a fused loop reads and writes.
bool is_loadable(ir::ElementType e);
// Element-wise kinds with a binary or a unary instruction.
bool is_binary(ir::OpKind k);
bool is_unary(ir::OpKind k);
// Views: a broadcast, a slice or a reverse. A loop reads a view's operand where it lies, through
// strides from an offset (strided.h: view_strides), and never computes it in the loop.
bool is_view(ir::OpKind k);
// Ops worth computing twice rather than storing: a few cycles per element.
bool is_cheap(ir::OpKind k);
// How a reduce folds the blocks of a fused loop over its operand, when it can (fills `f`).
bool fold_shape(const ir::Op& op, FoldShape& f);
// Whether the fused loop computes `op` (its kinds and element types; the reference keeps the rest).
bool fusable(const ir::Op& op);
// Whether `reader` reads operand `v` element by element at its own shape, so `v` can be computed
// inside the reader's loop.
bool reads_in_place(const ir::Op& reader, const ir::Value* v);

}  // namespace tessera::exec::fusion_rules
