// Algebraic identities: a replaceable op (pure, not pinned) that computes one of its operands, or
// something simpler, is replaced by it. Each rule and why it holds:
//   x*1, 1*x, x/1 -> x       multiplying or dividing by one is exact in IEEE arithmetic and in
//                            integers; x-0 -> x likewise (for +0 only: x - (-0) turns -0 into +0).
//   x+0, 0+x -> x            exact for integers and for x + (-0); x + (+0) differs only for
//                            x = -0, giving +0 where x is -0 (equal numbers, as XLA also folds it).
//   -(-x) -> x               negation flips the sign bit only.
//   transpose by the identity permutation, reshape and convert to the operand's own type,
//   broadcast_in_dim to the operand's shape with dims [0, 1, ...] -> the operand (copies).
//   transpose(transpose(x, p), q) -> transpose(x, r), r[i] = p[q[i]]: result dimension i is the
//     inner result's dimension q[i], which is x's dimension p[q[i]].
//   broadcast_in_dim(broadcast_in_dim(x, a), b) -> broadcast_in_dim(x, c), c[i] = b[a[i]]: x's
//     dimension i lands at a[i] in the middle, then at b[a[i]].
//   reshape(reshape(x)) -> reshape(x): a reshape reads and writes elements in row-major order.
//   reduce over no dimensions whose init is a splat of the body's identity (add 0, multiply 1,
//     maximum -inf, minimum +inf) -> the input: each element is body(init, x) = x (with the x+0
//     remark above for add).
//   broadcast_in_dim of a splat -> one splat constant of the result type, when the result has at
//     most kMaxFoldedElements elements: every element of the result is that element.
// An op marked constant to differentiation (ir::kStopGradient) is left as it is, and not looked
// through. Only real element types match the arithmetic rules (constants.h): for complex numbers
// x*(1+0i) is not exact where a part is infinite or a signed zero.
#include <numeric>

#include "transforms/constants.h"
#include "transforms/rewrite.h"
#include "transforms/simplify.h"

namespace tessera::transforms {
namespace {

using ir::Op;
using ir::OpKind;
using ir::Value;
using Dims = std::vector<int64_t>;

// An op marked constant to differentiation (ir::kStopGradient) keeps its place: replaced by its
// operand, or composed into its reader, its value would take a gradient again.
bool stops_gradient(const Op& op) { return op.attrs().has(ir::kStopGradient); }

// The operand's defining op when it is of `kind` and may be looked through (not pinned).
const Op* producer(const Value* v, OpKind kind) {
  const Op* def = v->defining_op();
  return def != nullptr && def->kind() == kind && !pinned(*def) && !stops_gradient(*def) ? def : nullptr;
}

// x with the operand that is the identity of `combiner` dropped, or null.
Value* drop_identity_operand(const Op& op, OpKind combiner, bool commutes) {
  if (is_identity_of(combiner, op.operand(1))) return op.operand(0);
  if (commutes && is_identity_of(combiner, op.operand(0))) return op.operand(1);
  return nullptr;
}

Value* arithmetic(const Op& op) {
  switch (op.kind()) {
    case OpKind::Multiply:
    case OpKind::Add:
      return drop_identity_operand(op, op.kind(), true);
    case OpKind::Divide:
      return drop_identity_operand(op, OpKind::Multiply, false);
    case OpKind::Subtract:
      return is_splat_of(op.operand(1), 0.0) ? op.operand(0) : nullptr;
    case OpKind::Negate: {
      const Op* inner = producer(op.operand(0), OpKind::Negate);
      return inner ? inner->operand(0) : nullptr;
    }
    default:
      return nullptr;
  }
}

bool is_iota(const Dims& dims) {
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// c[i] = outer[inner[i]] (broadcast) or inner[outer[i]] (transpose): see the top of the file.
Dims compose(const Dims& first, const Dims& second) {
  Dims out;
  for (int64_t i : first) out.push_back(second.at(static_cast<size_t>(i)));
  return out;
}

// Replaces op by `kind` of x with dims attribute `name` = dims. The new op keeps op's other
// attributes: marks such as the named computation and call it belongs to (mpmd/program.h), which
// a pipeline's split of the backward reads.
Value* rebuilt(Op& op, Value* x, const std::string& name, Dims dims) {
  ir::AttrMap attrs = op.attrs();
  attrs.set(name, std::move(dims));
  return insert_op(op, op.kind(), {x}, op.result()->type(), std::move(attrs));
}

Value* movement(Op& op) {
  Value* x = op.operand(0);
  const ir::Type& type = op.result()->type();
  switch (op.kind()) {
    case OpKind::Transpose: {
      const Dims& perm = op.attrs().get<Dims>("permutation");
      if (is_iota(perm)) return x;
      const Op* inner = producer(x, OpKind::Transpose);
      if (!inner) return nullptr;
      return rebuilt(op, inner->operand(0), "permutation",
                     compose(perm, inner->attrs().get<Dims>("permutation")));
    }
    case OpKind::BroadcastInDim: {
      const Dims& dims = op.attrs().get<Dims>("broadcast_dimensions");
      if (x->type() == type && is_iota(dims)) return x;
      if (std::optional<ir::Literal> s = splat_value(x); s && type.num_elements() <= kMaxFoldedElements)
        return insert_constant(op, splat_literal(*s, type));
      const Op* inner = producer(x, OpKind::BroadcastInDim);
      if (!inner) return nullptr;
      return rebuilt(op, inner->operand(0), "broadcast_dimensions",
                     compose(inner->attrs().get<Dims>("broadcast_dimensions"), dims));
    }
    case OpKind::Reshape: {
      if (x->type() == type) return x;
      const Op* inner = producer(x, OpKind::Reshape);
      return inner ? insert_op(op, OpKind::Reshape, {inner->operand(0)}, type, op.attrs()) : nullptr;
    }
    case OpKind::Convert:
      return x->type() == type ? x : nullptr;
    case OpKind::Reduce: {
      if (op.operands().size() != 2 || !op.attrs().get<Dims>("dimensions").empty()) return nullptr;
      std::optional<OpKind> combiner = ir::region_combiner(op);
      return combiner && is_identity_of(*combiner, op.operand(1)) ? x : nullptr;
    }
    default:
      return nullptr;
  }
}

}  // namespace

bool fold_identities(ir::Function& f) {
  return walk_renaming(f, [&](Op& op, Renamer& renamer) {
    if (!replaceable(op) || stops_gradient(op) || op.num_results() != 1 || op.operands().empty()) return;
    Value* to = arithmetic(op);
    if (to == nullptr) to = movement(op);
    if (to != nullptr) renamer.replace(op.result(), to);
  });
}

}  // namespace tessera::transforms
