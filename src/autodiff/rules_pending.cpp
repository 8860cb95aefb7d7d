// The ops of the table (issue #17's rows) whose gradient (VJP), forward-mode (JVP) or vmap rule is
// not written yet: a program that needs one stops with a UserError naming the op and the layer, as
// it did when the op was unknown. When an op's rules land in its family's file, its line here goes
// (PENDING is all three; PENDING_VJP, PENDING_JVP and PENDING_VMAP are one each).
#include "autodiff/jvp_rules.h"
#include "autodiff/rules.h"
#include "autodiff/vmap_rules.h"

namespace tessera::autodiff {

#define PENDING_VJP(e) \
  void vjp_##e(VjpContext&) { ir::not_implemented(ir::OpKind::e, "gradient (VJP) rule"); }
#define PENDING_JVP(e) \
  void jvp_##e(JvpContext&) { ir::not_implemented(ir::OpKind::e, "forward-mode (JVP) rule"); }
#define PENDING_VMAP(e) \
  void vmap_##e(VmapContext&) { ir::not_implemented(ir::OpKind::e, "vmap rule"); }
#define PENDING(e) PENDING_VJP(e) PENDING_JVP(e) PENDING_VMAP(e)

// tokens, tuples, effects
PENDING(AfterAll)
PENDING(CreateToken)
PENDING(Tuple)
PENDING(GetTupleElement)
PENDING(Infeed)
PENDING(Outfeed)
PENDING(Send)
PENDING(Recv)
PENDING(AsyncStart)
PENDING(AsyncDone)
PENDING(Composite)
PENDING(Map)
PENDING(Scan)
PENDING(Probe)
PENDING(ExpectSerializedEq)
// numerics
PENDING(Rng)
PENDING(RngBitGenerator)
PENDING(BatchNormInference)
PENDING(BatchNormTraining)
PENDING(BatchNormGrad)
PENDING(Mulhi)
PENDING(Polygamma)
PENDING(Zeta)
PENDING(RaggedDot)
// quantization
PENDING(UniformQuantize)
PENDING(UniformDequantize)

#undef PENDING
#undef PENDING_VJP
#undef PENDING_JVP
#undef PENDING_VMAP

}  // namespace tessera::autodiff
