// The predicates of fusion_rules.h: what a fused loop can compute (see fusion.cpp for the plan).
#include "exec/fusion_rules.h"

#include <algorithm>

#include "exec/dims.h"
#include "exec/fused_kernels.h"

namespace tessera::exec::fusion_rules {

using fused::is_real;
using fused::kBlock;
using ir::ElementType;
using ir::Op;
using ir::OpKind;
using ir::Value;

namespace {

// The converts the fast kernels compute with the same bits as the fused instruction.
bool same_convert_as_fast_kernel(ElementType from, ElementType to) {
  using E = ElementType;
  return (from == E::f32 && to == E::f64) || (from == E::f64 && to == E::f32) ||
         ((from == E::i32 || from == E::i1) && is_real(to));
}

}  // namespace

bool is_loadable(ElementType e) {
  return is_real(e) || e == ElementType::i32 || e == ElementType::i64 || e == ElementType::i1;
}

bool is_binary(OpKind k) {
  switch (k) {
    case OpKind::Add: case OpKind::Subtract: case OpKind::Multiply: case OpKind::Divide:
    case OpKind::Maximum: case OpKind::Minimum: case OpKind::Power:
      return true;
    default: return false;
  }
}
bool is_unary(OpKind k) {
  switch (k) {
    case OpKind::Negate: case OpKind::Exponential: case OpKind::Log: case OpKind::Logistic:
    case OpKind::Sqrt: case OpKind::Rsqrt: case OpKind::Tanh:
      return true;
    default: return false;
  }
}
bool is_view(OpKind k) { return k == OpKind::BroadcastInDim || k == OpKind::Slice || k == OpKind::Reverse; }

// Ops worth computing twice rather than storing: a few cycles per element.
bool is_cheap(OpKind k) {
  switch (k) {
    case OpKind::Add: case OpKind::Subtract: case OpKind::Multiply: case OpKind::Maximum:
    case OpKind::Minimum: case OpKind::Negate: case OpKind::BroadcastInDim: case OpKind::Slice:
    case OpKind::Reverse: case OpKind::Iota: case OpKind::Convert: case OpKind::Compare: case OpKind::Select:
      return true;
    default: return false;
  }
}


// How a reduce folds the blocks of a fused loop over its operand (fold.h), when it can: an f32 or
// f64 add, multiply, maximum or minimum that keeps the innermost dimension, or reduces trailing
// dimensions into rows short enough for a block to hold several, into rows of whole blocks (folded
// eight side by side, as the unfused kernel folds), or into fewer rows than the unfused kernel
// folds side by side (then it is no slower). Anything else leaves its operand
// stored and the reduce to the fast kernel.
// Fills `f` (reusing its vectors' storage: this runs per fused reduce and run).
bool fold_shape(const Op& op, FoldShape& f) {
  if (op.kind() != OpKind::Reduce || op.operands().size() != 2 || op.num_results() != 1) return false;
  const ir::Type& x = op.operand(0)->type();
  ElementType e = x.element;
  if (!is_real(e) || op.operand(1)->type() != ir::Type(e, {}) || op.result(0)->type().element != e ||
      op.region(0).argument(0)->type().element != e || x.rank() == 0 || x.num_elements() == 0)
    return false;
  auto kind = ir::region_combiner(op);
  if (!kind || (*kind != OpKind::Add && *kind != OpKind::Multiply && *kind != OpKind::Maximum &&
                *kind != OpKind::Minimum))
    return false;
  const auto& dims = op.attrs().get<std::vector<int64_t>>("dimensions");
  size_t rank = x.shape.size();
  f.rows = false;
  f.row = 0;
  f.shape.assign(x.shape.begin(), x.shape.end());
  f.out_strides.assign(rank, 0);
  RowMajor out(op.result(0)->type().shape);
  for (size_t d = 0, o = 0; d < rank; ++d)
    if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) == dims.end()) f.out_strides[d] = out[o++];
  bool inner_kept = std::find(dims.begin(), dims.end(), static_cast<int64_t>(rank - 1)) == dims.end();
  if (inner_kept) return true;
  for (int64_t d : dims)
    if (d < static_cast<int64_t>(rank - dims.size())) return false;  // not all trailing
  f.rows = true;
  f.row = 1;
  for (int64_t d : dims) f.row *= x.shape[static_cast<size_t>(d)];
  // Rows longer than half a block, when there are many, fold only in whole blocks (a multiple of
  // kBlock: fusion.cpp folds eight such rows side by side); others stay with the unfused kernel.
  int64_t rows = x.num_elements() / f.row;
  return !(f.row > kBlock / 2 && rows >= 8) || f.row % kBlock == 0;
}

// Whether the fused loop computes `op` (its kinds and element types; the reference keeps the rest).
bool fusable(const Op& op) {
  if (op.kind() == OpKind::Reduce) {
    FoldShape f;
    return fold_shape(op, f);
  }
  if (op.num_results() != 1 || !op.regions().empty()) return false;
  const ir::Type& r = op.result(0)->type();
  OpKind k = op.kind();
  if (is_binary(k) || is_unary(k)) {
    for (const Value* v : op.operands())
      if (v->type() != r) return false;
    return is_real(r.element);
  }
  switch (k) {
    case OpKind::Compare: {
      ElementType e = op.operand(0)->type().element;
      auto type = op.attrs().get_or<ir::CompareType>("compare_type", ir::CompareType::NOTYPE);
      return is_loadable(e) && e != ElementType::i1 && type != ir::CompareType::TOTALORDER &&
             op.operand(1)->type() == op.operand(0)->type();
    }
    case OpKind::Select: {
      const ir::Type& p = op.operand(0)->type();
      return is_loadable(r.element) && op.operand(1)->type() == r && op.operand(2)->type() == r &&
             (p.shape == r.shape || p.rank() == 0);
    }
    case OpKind::Convert: return same_convert_as_fast_kernel(op.operand(0)->type().element, r.element);
    case OpKind::BroadcastInDim: case OpKind::Slice: case OpKind::Reverse: return is_loadable(r.element);
    case OpKind::Iota: return is_loadable(r.element) && r.element != ElementType::i1;
    default: return false;
  }
}

// Whether `reader` reads operand `v` element by element at its own shape (a view reads it through
// strides, a scalar predicate is broadcast; a reduce folds its operand as the loop visits it):
// only then can `v` be computed inside its loop.
bool reads_in_place(const Op& reader, const Value* v) {
  if (reader.kind() == OpKind::Reduce) return v == reader.operand(0) && v != reader.operand(1);
  return !is_view(reader.kind()) && v->type().shape == reader.result(0)->type().shape;
}

}  // namespace tessera::exec::fusion_rules
