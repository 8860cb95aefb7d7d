// VJP, JVP and vmap rules of get_dimension_size and the dynamic ops. get_dimension_size gives an
// integer (no gradient, no tangent) and does not depend on the batch. The dynamic ops are refused
// with the way out: shape refinement (transforms/refine_shapes.h, which `tessera run` applies
// from its inputs) turns each into its static op, whose rules apply.
#include "autodiff/jvp_rules.h"
#include "autodiff/rules.h"
#include "autodiff/vmap_rules.h"

namespace tessera::autodiff {

namespace {

std::string refine_first() {
  return fmt::format("its shapes come from operand values; refine shapes for concrete inputs first "
                     "(transforms::refine_shapes, as `tessera run` does), which makes it a static op");
}

}  // namespace

// An integer result: no gradient, no tangent.
void vjp_GetDimensionSize(VjpContext&) {}
void jvp_GetDimensionSize(JvpContext&) {}
// The size of a per-example dimension: the batched operand's dimension one further in; unbatched.
void vmap_GetDimensionSize(VmapContext& c) {
  ir::AttrMap attrs = c.op.attrs();
  if (c.batched()) attrs.set("dimension", c.op.attrs().get<int64_t>("dimension") + 1);
  c.set(0, c.again({c.x()}, attrs, std::vector<ir::Type>{c.result_type()})[0], false);
}

#define REFUSED(e)                                                          \
  void vjp_##e(VjpContext& c) { refuse(c.op, refine_first()); }         \
  void jvp_##e(JvpContext& c) { refuse(c.op, refine_first()); }         \
  void vmap_##e(VmapContext& c) { c.fail("{}", refine_first()); }

REFUSED(DynamicBroadcastInDim)
REFUSED(DynamicConv)
REFUSED(DynamicGather)
REFUSED(DynamicIota)
REFUSED(DynamicPad)
REFUSED(DynamicReshape)
REFUSED(RealDynamicSlice)

#undef REFUSED

}  // namespace tessera::autodiff
