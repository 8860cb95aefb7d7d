// VJP rules of the leaves and the elementwise ops. x, y: primal operands and results; dy: the
// result's cotangent; the comment on each rule is its math.
#include "autodiff/rules.h"

namespace tessera::autodiff {

using ir::ComparisonDirection;

namespace {

Tensor zero_like(VjpContext& c, const Tensor& t) { return zeros_like(c.b, t.type()); }

// The gradient of the operand of a bound that may be a scalar: summed over the broadcast.
Tensor fit(const Tensor& g, const Tensor& operand) {
  if (g.shape() == operand.shape()) return g;
  return ir::sum(g);  // operand is a scalar bound
}

void none(VjpContext&) {}

}  // namespace

// Leaves carry no gradient.
void vjp_Constant(VjpContext& c) { none(c); }
void vjp_SdyConstant(VjpContext& c) { none(c); }
void vjp_Iota(VjpContext& c) { none(c); }
void vjp_ReplicaId(VjpContext& c) { none(c); }
void vjp_PartitionId(VjpContext& c) { none(c); }

// d(-x) = -dy
void vjp_Negate(VjpContext& c) { c.add(0, -c.dy()); }
// d|x| = dy * sign(x)
void vjp_Abs(VjpContext& c) {
  require_real(c.op);
  c.add(0, c.dy() * ir::sign(c.x()));
}
// sign, floor, ceil and rounding are flat almost everywhere: no gradient.
void vjp_Sign(VjpContext& c) { none(c); }
void vjp_Floor(VjpContext& c) { none(c); }
void vjp_Ceil(VjpContext& c) { none(c); }
void vjp_RoundNearestEven(VjpContext& c) { none(c); }
void vjp_RoundNearestAfz(VjpContext& c) { none(c); }
void vjp_IsFinite(VjpContext& c) { none(c); }
void vjp_Not(VjpContext& c) { none(c); }
// d exp(x) = dy * y
void vjp_Exponential(VjpContext& c) { c.add(0, c.dy() * c.y()); }
// d (exp(x) - 1) = dy * (y + 1)
void vjp_ExponentialMinusOne(VjpContext& c) { c.add(0, c.dy() * (c.y() + 1.0)); }
// d log(x) = dy / x
void vjp_Log(VjpContext& c) { c.add(0, c.dy() / c.x()); }
// d log(1 + x) = dy / (1 + x)
void vjp_LogPlusOne(VjpContext& c) { c.add(0, c.dy() / (c.x() + 1.0)); }
// d tanh(x) = dy * (1 - y^2)
void vjp_Tanh(VjpContext& c) { c.add(0, c.dy() * (1.0 - c.y() * c.y())); }
// d logistic(x) = dy * y * (1 - y)
void vjp_Logistic(VjpContext& c) { c.add(0, c.dy() * c.y() * (1.0 - c.y())); }
// d sqrt(x) = dy / (2 y)
void vjp_Sqrt(VjpContext& c) { c.add(0, c.dy() / (c.y() * 2.0)); }
// d x^(-1/2) = dy * (-1/2) * y / x
void vjp_Rsqrt(VjpContext& c) { c.add(0, c.dy() * c.y() / c.x() * -0.5); }
// d sin(x) = dy * cos(x)
void vjp_Sine(VjpContext& c) { c.add(0, c.dy() * ir::cos(c.x())); }
// d cos(x) = -dy * sin(x)
void vjp_Cosine(VjpContext& c) { c.add(0, -(c.dy() * ir::sin(c.x()))); }
// d convert(x) = convert(dy) back to x's type, between float types
void vjp_Convert(VjpContext& c) {
  require_real(c.op);
  if (is_differentiable(c.x().type()) && is_differentiable(c.y().type()))
    c.add(0, ir::convert(c.dy(), c.x().element()));
}
// Reinterpreting bits has no derivative.
void vjp_BitcastConvert(VjpContext& c) { none(c); }

// d(a + b) = (dy, dy)
void vjp_Add(VjpContext& c) {
  c.add(0, c.dy());
  c.add(1, c.dy());
}
// d(a - b) = (dy, -dy)
void vjp_Subtract(VjpContext& c) {
  c.add(0, c.dy());
  c.add(1, -c.dy());
}
// d(a * b) = (dy * b, dy * a)
void vjp_Multiply(VjpContext& c) {
  c.add(0, c.dy() * c.x(1));
  c.add(1, c.dy() * c.x(0));
}
// d(a / b) = (dy / b, -dy * y / b)
void vjp_Divide(VjpContext& c) {
  c.add(0, c.dy() / c.x(1));
  c.add(1, -(c.dy() * c.y() / c.x(1)));
}
// rem(a, b) = a - trunc(a / b) * b:  d = (dy, -dy * trunc(a / b))
void vjp_Remainder(VjpContext& c) {
  Tensor q = c.x(0) / c.x(1);
  Tensor trunc = ir::sign(q) * ir::floor(ir::abs(q));
  c.add(0, c.dy());
  c.add(1, -(c.dy() * trunc));
}
// d a^b = (dy * b * a^(b-1), dy * y * log(a)), with log(a) taken as 0 where a = 0
void vjp_Power(VjpContext& c) {
  const Tensor &a = c.x(0), &e = c.x(1);
  c.add(0, c.dy() * e * ir::pow(a, e - 1.0));
  Tensor is_zero = ir::compare(a, zero_like(c, a), ComparisonDirection::EQ);
  Tensor log_a = ir::select(is_zero, zero_like(c, a), ir::log(a));
  c.add(1, c.dy() * c.y() * log_a);
}
// max and min send dy to the winning operand (`wins` compares it with the other), half to each on
// a tie, as JAX does.
static void chooser(VjpContext& c, ComparisonDirection wins) {
  Tensor half = c.dy() * 0.5, zero = zero_like(c, c.dy());
  Tensor tie = ir::compare(c.x(0), c.x(1), ComparisonDirection::EQ);
  for (size_t i : {0, 1}) {
    Tensor won = ir::compare(c.x(i), c.x(1 - i), wins);
    c.add(i, ir::select(won, c.dy(), ir::select(tie, half, zero)));
  }
}
// d max(a, b): dy to the larger operand, half to each on a tie
void vjp_Maximum(VjpContext& c) { chooser(c, ComparisonDirection::GT); }
// d min(a, b): dy to the smaller operand, half to each on a tie
void vjp_Minimum(VjpContext& c) { chooser(c, ComparisonDirection::LT); }
// d atan2(a, b) = (dy * b / (a^2 + b^2), -dy * a / (a^2 + b^2))
void vjp_Atan2(VjpContext& c) {
  Tensor r2 = c.x(0) * c.x(0) + c.x(1) * c.x(1);
  c.add(0, c.dy() * c.x(1) / r2);
  c.add(1, -(c.dy() * c.x(0) / r2));
}
// Bitwise ops, shifts and comparisons have boolean or integer values: no gradient.
void vjp_And(VjpContext& c) { none(c); }
void vjp_Or(VjpContext& c) { none(c); }
void vjp_Xor(VjpContext& c) { none(c); }
void vjp_ShiftLeft(VjpContext& c) { none(c); }
void vjp_ShiftRightLogical(VjpContext& c) { none(c); }
void vjp_ShiftRightArithmetic(VjpContext& c) { none(c); }
void vjp_Compare(VjpContext& c) { none(c); }
// clamp(lo, x, hi): dy flows to x inside [lo, hi], to lo below it, to hi above it
void vjp_Clamp(VjpContext& c) {
  const Tensor &lo = c.x(0), &x = c.x(1), &hi = c.x(2);
  Tensor zero = zero_like(c, c.dy());
  Tensor below = ir::compare(x, ir::broadcast_to(lo, x.shape()), ComparisonDirection::LT);
  Tensor above = ir::compare(x, ir::broadcast_to(hi, x.shape()), ComparisonDirection::GT);
  c.add(1, ir::select(below | above, zero, c.dy()));
  c.add(0, fit(ir::select(below, c.dy(), zero), lo));
  c.add(2, fit(ir::select(above, c.dy(), zero), hi));
}
// select(p, a, b): dy flows to a where p, to b elsewhere
void vjp_Select(VjpContext& c) {
  Tensor zero = zero_like(c, c.dy());
  Tensor p = ir::broadcast_to(c.x(0), c.dy().shape());
  c.add(1, ir::select(p, c.dy(), zero));
  c.add(2, ir::select(p, zero, c.dy()));
}

}  // namespace tessera::autodiff
