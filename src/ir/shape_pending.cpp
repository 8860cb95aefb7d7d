// The ops of the table (issue #17's rows) whose shape rule is not written yet: a program that
// needs one stops with a UserError naming the op and the layer, as it did when the op was unknown.
// When an op's rule lands in its family's file, its line here goes.
#include "ir/rule_status.h"
#include "ir/shape_rules.h"

namespace tessera::ir {
namespace shape_rules {

namespace {
PendingRules& pending() {
  static PendingRules p;
  return p;
}
}  // namespace

// The refusal, and the mark `tessera ops` reads (shape_rule_pending).
#define PENDING(e) \
  std::vector<Type> infer_##e(const ShapeQuery&) { not_implemented(OpKind::e, "shape rule"); } \
  [[maybe_unused]] const bool pending_##e = pending().mark(OpKind::e);

// tokens, tuples, effects

#undef PENDING

}  // namespace shape_rules

bool shape_rule_pending(OpKind k) { return shape_rules::pending().has(k); }

}  // namespace tessera::ir
