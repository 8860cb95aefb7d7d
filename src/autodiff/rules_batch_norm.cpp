// Gradient (VJP), forward-mode (JVP) and vmap rules of the batch-norm ops: each is differentiated
// and batched through its decomposition (ir/batch_norm.h), as composite is through its own: the
// expansion is built as a scratch function of the op's operands, transformed on the rules of the
// ops in it (reduce, broadcast_in_dim, arithmetic, sqrt) and inlined. JAX differentiates its
// batch norm through the same arithmetic, so the gradients are the ones it computes.
#include "autodiff/jvp_rules.h"
#include "autodiff/rules.h"
#include "autodiff/scratch.h"
#include "autodiff/vmap_rules.h"
#include "ir/batch_norm.h"

namespace tessera::autodiff {

namespace {

const ir::Function& expansion(Scratch& s, const ir::Op& op) {
  const ir::Function& f = ir::batch_norm_function(s.m, op, fresh_name(s.m, "tessera.batch_norm"));
  s.fns.push_back(&f);
  return f;
}

void vjp(VjpContext& c) {
  Scratch s{c.b.module(), {}};
  vjp_through(c, expansion(s, c.op));
}
void jvp(JvpContext& c) {
  Scratch s{c.b.module(), {}};
  jvp_through(c, expansion(s, c.op));
}
void batched(VmapContext& c) {
  Scratch s{c.b.module(), {}};
  vmap_through(c, expansion(s, c.op), true);
}

}  // namespace

void vjp_BatchNormInference(VjpContext& c) { vjp(c); }
void vjp_BatchNormTraining(VjpContext& c) { vjp(c); }
void vjp_BatchNormGrad(VjpContext& c) { vjp(c); }
void jvp_BatchNormInference(JvpContext& c) { jvp(c); }
void jvp_BatchNormTraining(JvpContext& c) { jvp(c); }
void jvp_BatchNormGrad(JvpContext& c) { jvp(c); }
void vmap_BatchNormInference(VmapContext& c) { batched(c); }
void vmap_BatchNormTraining(VmapContext& c) { batched(c); }
void vmap_BatchNormGrad(VmapContext& c) { batched(c); }

}  // namespace tessera::autodiff
