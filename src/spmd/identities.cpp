// Reductions the partitioner combines across devices, and their identities (see identities.h).
#include "spmd/identities.h"

#include <cmath>
#include <vector>

#include "ir/builder_window.h"

namespace tessera::spmd {

using ir::Builder;
using ir::Op;
using ir::OpKind;
using ir::Tensor;
using ir::Value;

// The reduction a body applies, when all_reduce can combine it across devices.
std::optional<OpKind> combiner_of(const Op& op) {
  auto kind = ir::region_combiner(op);
  if (!kind) return std::nullopt;
  switch (*kind) {
    case OpKind::Add: case OpKind::Multiply: case OpKind::Maximum: case OpKind::Minimum:
    case OpKind::And: case OpKind::Or:
      return kind;
    default:
      return std::nullopt;
  }
}

// Each result's combiner, where the body combines each result alone.
std::vector<OpKind> result_combiners(const Op& op) {
  const size_t n = op.num_results();
  if (n == 1) {
    auto c = combiner_of(op);
    return c ? std::vector<OpKind>{*c} : std::vector<OpKind>{};
  }
  if (n == 0 || op.regions().size() != 1) return {};
  const ir::Block& body = op.region(0);
  if (body.arguments().size() != 2 * n || body.ops().size() != n + 1) return {};
  const Op& ret = *body.ops().back();
  if (ret.kind() != OpKind::Return || ret.operands().size() != n) return {};
  std::vector<OpKind> out;
  for (size_t k = 0; k < n; ++k) {
    const Op* d = ret.operand(k)->defining_op();
    if (!d || d->operands().size() != 2 || d->num_results() != 1) return {};
    const Value* acc = body.argument(k);
    const Value* x = body.argument(n + k);
    if (!((d->operand(0) == acc && d->operand(1) == x) || (d->operand(0) == x && d->operand(1) == acc))) return {};
    switch (d->kind()) {
      case OpKind::Add: case OpKind::Multiply: case OpKind::Maximum: case OpKind::Minimum:
      case OpKind::And: case OpKind::Or:
        out.push_back(d->kind());
        break;
      default: return {};
    }
  }
  return out;
}

// Whether v is a constant scalar equal to the identity of `combiner` (0 for a sum, 1 for a
// product, -inf for a float max, ...).
bool identity_constant(OpKind combiner, const Value* v) {
  const Op* d = v->defining_op();
  if (!d || d->kind() != OpKind::Constant) return false;
  const ir::Literal& l = d->attrs().get<ir::Literal>("value");
  if (l.num_elements() != 1 || ir::is_complex(l.element())) return false;
  bool fp = ir::is_float(l.element());
  double x = l.get_double(0);
  switch (combiner) {
    case OpKind::Add: case OpKind::Or: return x == 0;
    case OpKind::Multiply: return x == 1;
    case OpKind::Maximum: return fp && x == -INFINITY;
    case OpKind::Minimum: return fp && x == INFINITY;
    default: return false;  // (folding the init is right for every init; this only saves the work)
  }
}

// The identity of a combinable reduction for x's element type, as a scalar constant.
Tensor identity_of(OpKind combiner, const Tensor& x, Builder& b) {
  switch (combiner) {
    case OpKind::Maximum: return ir::extreme(x, true);
    case OpKind::Minimum: return ir::extreme(x, false);
    case OpKind::Multiply: return b.scalar(x.element(), 1);
    case OpKind::And:  // all bits set: true, or -1 / the largest value of an integer type
      return x.element() == ir::ElementType::i1 ? b.scalar(x.element(), 1)
                                                : b.emit1(OpKind::Not, {b.scalar(x.element(), 0)});
    default: return b.scalar(x.element(), 0);  // Add, Or
  }
}

}  // namespace tessera::spmd
