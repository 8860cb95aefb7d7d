// The ops of the table (issue #17's rows) whose factor rule is not written yet: a program that
// needs one stops with a UserError naming the op and the layer, as it did when the op was unknown.
// When an op's rule lands in its family's file, its line here goes.
#include "ir/rule_status.h"
#include "spmd/factor_rule.h"

namespace tessera::spmd {
namespace factor_rules {

namespace {
ir::PendingRules& pending() {
  static ir::PendingRules p;
  return p;
}
}  // namespace

// The refusal, and the mark `tessera ops` reads (factor_rule_pending).
#define PENDING(e) \
  FactorRule rule_##e(const ir::Op&) { ir::not_implemented(ir::OpKind::e, "factor rule (sharding propagation)"); } \
  [[maybe_unused]] const bool pending_##e = pending().mark(ir::OpKind::e);

// tokens, tuples, effects

#undef PENDING

}  // namespace factor_rules

bool factor_rule_pending(ir::OpKind k) { return factor_rules::pending().has(k); }

}  // namespace tessera::spmd
