// JVP rules of the data-movement ops (broadcast, reshape, transpose, slices, concatenate, pad,
// reverse, gather, scatter), of control flow and calls, and of the check ops. Movement ops are
// linear in their float operands, so each one's tangent is the op itself applied to the tangents,
// with the same attributes and the same integer operands (start indices, gather/scatter indices):
// a slice of the tangent, a gather from the tangent at the same indices. Scatter with a replace
// body is linear in (x, updates) together: the same updates win the same places. Loops and calls
// are refused in the words reverse uses (refusals.cpp).
#include "autodiff/jvp_rules.h"
#include "ir/effects.h"

namespace tessera::autodiff {

// broadcast_in_dim(x) -> broadcast_in_dim(dx)
void jvp_BroadcastInDim(JvpContext& c) { linear(c); }
// reshape(x) -> reshape(dx)
void jvp_Reshape(JvpContext& c) { linear(c); }
// transpose(x, p) -> transpose(dx, p)
void jvp_Transpose(JvpContext& c) { linear(c); }
// slice(x) -> slice(dx), same start, limit and strides
void jvp_Slice(JvpContext& c) { linear(c); }
// dynamic_slice(x, s) -> dynamic_slice(dx, s), clamped alike
void jvp_DynamicSlice(JvpContext& c) { linear(c); }
// dynamic_update_slice(x, u, s) -> dynamic_update_slice(dx, du, s); an absent dx or du is a
// broadcast scalar 0 (the piece it stands for), never a zero literal of the whole shape
void jvp_DynamicUpdateSlice(JvpContext& c) { linear(c); }
// concatenate(x_0, ..., x_n-1; d) -> concatenate(dx_0, ..., dx_n-1; d), zeros (a broadcast scalar
// 0) only for the pieces without a tangent, as XLA does
void jvp_Concatenate(JvpContext& c) { linear(c); }
// pad(x, v) -> pad(dx, dv), same edges and interior; no dv: pad(dx, 0) with the scalar 0 itself
void jvp_Pad(JvpContext& c) {
  Tensor dv = c.has_tangent(1) ? *c.tangent(1) : c.b.scalar(c.x(1).element(), 0);
  c.set(0, c.again({c.dx(0), dv})[0]);
}
// reverse(x, dims) -> reverse(dx, dims)
void jvp_Reverse(JvpContext& c) { linear(c); }
// gather(x, i) -> gather(dx, i), clamped alike
void jvp_Gather(JvpContext& c) { linear(c); }
// scatter(x, i, u; add) -> scatter(dx, i, du; add);  scatter(x, i, u; replace) -> scatter(dx, i, du; replace)
void jvp_Scatter(JvpContext& c) {
  require_combiner(c.op);
  linear(c);
}

// while: refused, in reverse's words (a loop off the tangents' path is no error: never asked).
void jvp_While(JvpContext& c) { refuse_outright(c.op); }
// optimization_barrier(x_0, ...) -> optimization_barrier(dx_0, ...) of the tangents present
void jvp_OptimizationBarrier(JvpContext& c) { map_tangents(c); }
// The terminator is not an op of the program's dataflow: forward never applies a rule to it.
void jvp_Return(JvpContext&) {}

// Calls are refused: their callee (or custom target) has no rule here.
void jvp_Call(JvpContext& c) { refuse_outright(c.op); }
// custom_call @Sharding (GSPMD's sharding annotation) is the identity: its tangent passes through.
void jvp_CustomCall(JvpContext& c) {
  if (ir::is_identity_call(c.op)) return map_tangents(c);
  refuse_outright(c.op);
}
void jvp_RunParallel(JvpContext& c) { refuse_outright(c.op); }

// The check ops have no results, so no tangent leaves them.
void jvp_ExpectEqConst(JvpContext&) {}
void jvp_ExpectAlmostEqConst(JvpContext&) {}
void jvp_ExpectEq(JvpContext&) {}
void jvp_ExpectAlmostEq(JvpContext&) {}
void jvp_ExpectClose(JvpContext&) {}

}  // namespace tessera::autodiff
