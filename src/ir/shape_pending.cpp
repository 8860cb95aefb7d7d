// The ops of the table (issue #17's rows) whose shape rule is not written yet: a program that
// needs one stops with a UserError naming the op and the layer, as it did when the op was unknown.
// When an op's rule lands in its family's file, its line here goes.
#include "ir/shape_rules.h"

namespace tessera::ir::shape_rules {

#define PENDING(e) \
  std::vector<Type> infer_##e(const ShapeQuery&) { not_implemented(OpKind::e, "shape rule"); }

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

}  // namespace tessera::ir::shape_rules
