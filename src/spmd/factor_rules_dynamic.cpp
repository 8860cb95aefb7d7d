// Factor rules of get_dimension_size and the dynamic ops. get_dimension_size reads only its
// operand's type: no factor ties the operand to its scalar result. The dynamic ops are made static
// by shape refinement before a program is partitioned (`tessera run` refines first), so reaching
// the partitioner with one is refused with that way out.
#include "spmd/factor_rule.h"

namespace tessera::spmd::factor_rules {

FactorRule rule_GetDimensionSize(const ir::Op& op) {
  FactorRule r;
  for (ir::Value* v : op.operands()) r.operands.emplace_back(static_cast<size_t>(v->type().rank()));
  for (ir::Value* v : op.results()) r.results.emplace_back(static_cast<size_t>(v->type().rank()));
  return r;
}

#define REFUSED(e)                                                                                         \
  FactorRule rule_##e(const ir::Op& op) {                                                                  \
    support::fail("{}: its shapes come from operand values, so it cannot be partitioned; refine shapes "  \
                  "for concrete inputs first (transforms::refine_shapes, as `tessera run` does)",         \
                  op.name());                                                                              \
  }

REFUSED(DynamicBroadcastInDim)
REFUSED(DynamicConv)
REFUSED(DynamicGather)
REFUSED(DynamicIota)
REFUSED(DynamicPad)
REFUSED(DynamicReshape)
REFUSED(RealDynamicSlice)

#undef REFUSED

}  // namespace tessera::spmd::factor_rules
