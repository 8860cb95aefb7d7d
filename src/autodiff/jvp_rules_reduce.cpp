// JVP rules of reduce and dot_general.
//
// reduce with a sum body is linear in (x, init): the same reduce of (dx, dinit). reduce with a max
// or min body follows JAX (lax.py, _reduce_chooser_jvp_rule), the transpose of the VJP rule's even
// split: the tangent is the mean of the tangents at the positions equal to the result, the init
// value counting as one more candidate. dot_general is bilinear: dot(da, b) + dot(a, db), each the
// same op with one operand's tangent in its place.
#include "autodiff/jvp_rules.h"

namespace tessera::autodiff {

using ir::ComparisonDirection;
using ir::OpKind;

namespace {

// dy = (sum(dx * at) + dinit * init_at) / (count(at) + init_at), at: x equal to the result
void reduce_chooser(JvpContext& c) {
  const Tensor &x = c.x(0), &init = c.x(1), &y = c.y();
  const auto& dims = c.op.attrs().get<std::vector<int64_t>>("dimensions");
  Tensor at = indicator(ir::compare(x, ir::broadcast_in_dim(y, x.shape(), kept_dims(x.rank(), dims)),
                                    ComparisonDirection::EQ), x.type());
  Tensor init_at = indicator(ir::compare(ir::broadcast_to(init, y.shape()), y, ComparisonDirection::EQ), y.type());
  std::optional<Tensor> total = sum_of({c.term(0, [&](const Tensor& d) { return ir::reduce_sum(d * at, dims); }),
                                        c.term(1, [&](const Tensor& d) { return ir::broadcast_to(d, y.shape()) * init_at; })});
  c.set(0, *total / (ir::reduce_sum(at, dims) + init_at));
}

}  // namespace

// reduce(x, init; +) -> reduce(dx, dinit; +)
// reduce(x, init; max or min) -> the mean of the tangents of the maxima (minima), init included
void jvp_Reduce(JvpContext& c) {
  OpKind combiner = require_combiner(c.op);
  if (combiner == OpKind::Add) return linear(c);
  reduce_chooser(c);
}

// dot_general(a, b) -> dot_general(da, b) + dot_general(a, db), same dimension numbers and types
void jvp_DotGeneral(JvpContext& c) {
  require_real(c.op);
  c.set(0, sum_of({c.term(0, [&](const Tensor& d) { return c.again({d, c.x(1)})[0]; }),
                   c.term(1, [&](const Tensor& d) { return c.again({c.x(0), d})[0]; })}));
}

}  // namespace tessera::autodiff
