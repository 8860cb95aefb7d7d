// The ops of the table (issue #17's rows) whose reference kernel is not written yet: a program that
// needs one stops with a UserError naming the op and the layer, as it did when the op was unknown.
// When an op's rule lands in its family's file, its line here goes.
#include "interp/kernels.h"
#include "ir/rule_status.h"

namespace tessera::interp {

namespace {
ir::PendingRules& pending() {
  static ir::PendingRules p;
  return p;
}
}  // namespace

// The refusal, and the mark `tessera ops` reads (kernel_pending).
#define PENDING(e) \
  Results eval_##e(const EvalContext&) { ir::not_implemented(ir::OpKind::e, "reference kernel"); } \
  [[maybe_unused]] const bool pending_##e = pending().mark(ir::OpKind::e);

// tokens, tuples, effects

#undef PENDING

bool kernel_pending(ir::OpKind k) { return pending().has(k); }

}  // namespace tessera::interp
