// vmap rules of the leaves and the elementwise ops. An elementwise op applies to each example's
// elements alike, so its batched form is the op itself on operands that all carry the batch in
// front: a shared operand is broadcast along the batch, except a shared scalar predicate of select
// or bound of clamp, which stays a scalar. Leaves read no operand, so they never see a batched
// value (the driver copies them as they are); their rules are the copy, for completeness.
#include "autodiff/vmap_rules.h"

namespace tessera::autodiff {

namespace {

// y = op() (no operand, so shared by every example): the op copied as it is.
void leaf(VmapContext& c) {
  std::vector<ir::Type> types;
  for (size_t k = 0; k < c.op.num_results(); ++k) types.push_back(c.result_type(k));
  std::vector<Tensor> ys = c.again({}, std::nullopt, types);
  for (size_t k = 0; k < ys.size(); ++k) c.set(k, ys[k], false);
}

}  // namespace

// constant (stablehlo and sdy), iota, replica_id, partition_id: y[b] = y, shared (never batched).
void vmap_Constant(VmapContext& c) { leaf(c); }
void vmap_SdyConstant(VmapContext& c) { leaf(c); }
void vmap_Iota(VmapContext& c) { leaf(c); }
void vmap_ReplicaId(VmapContext& c) { leaf(c); }
void vmap_PartitionId(VmapContext& c) { leaf(c); }

// Unary: y[b] = op(x[b]), i.e. y = op(x) on [B, ...].
void vmap_Negate(VmapContext& c) { elementwise(c); }
void vmap_Abs(VmapContext& c) { elementwise(c); }
void vmap_Sign(VmapContext& c) { elementwise(c); }
void vmap_Exponential(VmapContext& c) { elementwise(c); }
void vmap_ExponentialMinusOne(VmapContext& c) { elementwise(c); }
void vmap_Log(VmapContext& c) { elementwise(c); }
void vmap_LogPlusOne(VmapContext& c) { elementwise(c); }
void vmap_Tanh(VmapContext& c) { elementwise(c); }
void vmap_Logistic(VmapContext& c) { elementwise(c); }
void vmap_Sqrt(VmapContext& c) { elementwise(c); }
void vmap_Rsqrt(VmapContext& c) { elementwise(c); }
void vmap_Sine(VmapContext& c) { elementwise(c); }
void vmap_Cosine(VmapContext& c) { elementwise(c); }
void vmap_Floor(VmapContext& c) { elementwise(c); }
void vmap_Ceil(VmapContext& c) { elementwise(c); }
void vmap_RoundNearestEven(VmapContext& c) { elementwise(c); }
void vmap_RoundNearestAfz(VmapContext& c) { elementwise(c); }
void vmap_IsFinite(VmapContext& c) { elementwise(c); }
void vmap_Not(VmapContext& c) { elementwise(c); }
// convert(x)[b] = convert(x[b]): the same element type, B in front.
void vmap_Convert(VmapContext& c) { elementwise(c); }
// bitcast_convert changes at most the last dimension, so B in front passes through: y = bitcast(x).
void vmap_BitcastConvert(VmapContext& c) { c.set(0, c.again({c.x()})[0]); }

// Binary: y[b] = op(a[b], b[b]) with a shared operand broadcast along the batch.
void vmap_Add(VmapContext& c) { elementwise(c); }
void vmap_Subtract(VmapContext& c) { elementwise(c); }
void vmap_Multiply(VmapContext& c) { elementwise(c); }
void vmap_Divide(VmapContext& c) { elementwise(c); }
void vmap_Remainder(VmapContext& c) { elementwise(c); }
void vmap_Power(VmapContext& c) { elementwise(c); }
void vmap_Maximum(VmapContext& c) { elementwise(c); }
void vmap_Minimum(VmapContext& c) { elementwise(c); }
void vmap_Atan2(VmapContext& c) { elementwise(c); }
void vmap_And(VmapContext& c) { elementwise(c); }
void vmap_Or(VmapContext& c) { elementwise(c); }
void vmap_Xor(VmapContext& c) { elementwise(c); }
void vmap_ShiftLeft(VmapContext& c) { elementwise(c); }
void vmap_ShiftRightLogical(VmapContext& c) { elementwise(c); }
void vmap_ShiftRightArithmetic(VmapContext& c) { elementwise(c); }
// compare(a, b; dir)[b] = compare(a[b], b[b]; dir)
void vmap_Compare(VmapContext& c) { elementwise(c); }
// clamp(lo, x, hi)[b] = clamp(lo[b], x[b], hi[b]); a batched scalar bound is spread over x's shape
void vmap_Clamp(VmapContext& c) { elementwise(c); }
// select(p, t, f)[b] = select(p[b], t[b], f[b]); a batched scalar predicate is spread likewise
void vmap_Select(VmapContext& c) { elementwise(c); }

}  // namespace tessera::autodiff
