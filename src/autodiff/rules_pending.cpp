// The ops of the table (issue #17's rows) whose gradient (VJP), forward-mode (JVP) or vmap rule is
// not written yet: a program that needs one stops with a UserError naming the op and the layer, as
// it did when the op was unknown. When an op's rules land in its family's file, its line here goes
// (PENDING is all three; PENDING_VJP, PENDING_JVP and PENDING_VMAP are one each).
#include "autodiff/jvp_rules.h"
#include "autodiff/rules.h"
#include "autodiff/vmap_rules.h"
#include "ir/rule_status.h"

namespace tessera::autodiff {

namespace {
ir::PendingRules& pending_vjp() {
  static ir::PendingRules p;
  return p;
}
ir::PendingRules& pending_jvp() {
  static ir::PendingRules p;
  return p;
}
ir::PendingRules& pending_vmap() {
  static ir::PendingRules p;
  return p;
}
}  // namespace

// Each refusal, and the mark `tessera ops` reads (vjp_pending, jvp_pending, vmap_pending).
#define PENDING_VJP(e) \
  void vjp_##e(VjpContext&) { ir::not_implemented(ir::OpKind::e, "gradient (VJP) rule"); } \
  [[maybe_unused]] const bool pending_vjp_##e = pending_vjp().mark(ir::OpKind::e);
#define PENDING_JVP(e) \
  void jvp_##e(JvpContext&) { ir::not_implemented(ir::OpKind::e, "forward-mode (JVP) rule"); } \
  [[maybe_unused]] const bool pending_jvp_##e = pending_jvp().mark(ir::OpKind::e);
#define PENDING_VMAP(e) \
  void vmap_##e(VmapContext&) { ir::not_implemented(ir::OpKind::e, "vmap rule"); } \
  [[maybe_unused]] const bool pending_vmap_##e = pending_vmap().mark(ir::OpKind::e);
#define PENDING(e) PENDING_VJP(e) PENDING_JVP(e) PENDING_VMAP(e)

// tokens, tuples, effects

#undef PENDING
#undef PENDING_VJP
#undef PENDING_JVP
#undef PENDING_VMAP

bool vjp_pending(ir::OpKind k) { return pending_vjp().has(k); }
bool jvp_pending(ir::OpKind k) { return pending_jvp().has(k); }
bool vmap_pending(ir::OpKind k) { return pending_vmap().has(k); }

}  // namespace tessera::autodiff
