// JVP rules of the leaves and the elementwise ops. x, y: primal operands and results; dx: an
// operand's tangent; the comment on each rule is its math. Where an operand has no tangent its term
// is left out (term() gives nothing), so f(x, const) differentiates without building zeros. The
// choosers (max, min, clamp) send the tangent of the operand that won, and split ties evenly as the
// VJP rules do, so that forward and reverse mode are each other's transposes.
#include "autodiff/jvp_rules.h"

namespace tessera::autodiff {

using ir::ComparisonDirection;

namespace {

using T = const Tensor&;

void none(JvpContext&) {}

// The share of a chooser's result that operand i (0 or 1) gets: 1 where it wins (`wins`, x_i
// against the other), 1/2 on a tie, 0 where it loses.
Tensor share(JvpContext& c, size_t i, ComparisonDirection wins) {
  Tensor tie = ir::compare(c.x(0), c.x(1), ComparisonDirection::EQ);
  Tensor won = ir::compare(c.x(i), c.x(1 - i), wins);
  return indicator(won, c.y().type()) + indicator(tie, c.y().type()) * 0.5;
}

void chooser(JvpContext& c, ComparisonDirection wins) {
  c.set(0, sum_of({c.term(0, [&](T d) { return d * share(c, 0, wins); }),
                   c.term(1, [&](T d) { return d * share(c, 1, wins); })}));
}

}  // namespace

// Leaves carry no tangent.
void jvp_Constant(JvpContext& c) { none(c); }
void jvp_SdyConstant(JvpContext& c) { none(c); }
void jvp_Iota(JvpContext& c) { none(c); }
void jvp_ReplicaId(JvpContext& c) { none(c); }
void jvp_PartitionId(JvpContext& c) { none(c); }

// d(-x) = -dx
void jvp_Negate(JvpContext& c) { c.set(0, -c.dx()); }
// d|x| = dx * sign(x)
void jvp_Abs(JvpContext& c) {
  require_real(c.op);
  scaled(c, [](JvpContext& c) { return ir::sign(c.x()); });
}
// sign, floor, ceil and rounding are flat almost everywhere: zero tangent.
void jvp_Sign(JvpContext& c) { none(c); }
void jvp_Floor(JvpContext& c) { none(c); }
void jvp_Ceil(JvpContext& c) { none(c); }
void jvp_RoundNearestEven(JvpContext& c) { none(c); }
void jvp_RoundNearestAfz(JvpContext& c) { none(c); }
void jvp_IsFinite(JvpContext& c) { none(c); }
void jvp_Not(JvpContext& c) { none(c); }
// d exp(x) = dx * y
void jvp_Exponential(JvpContext& c) { scaled(c, [](JvpContext& c) { return c.y(); }); }
// d (exp(x) - 1) = dx * (y + 1)
void jvp_ExponentialMinusOne(JvpContext& c) { scaled(c, [](JvpContext& c) { return c.y() + 1.0; }); }
// d log(x) = dx / x
void jvp_Log(JvpContext& c) { c.set(0, c.dx() / c.x()); }
// d log(1 + x) = dx / (1 + x)
void jvp_LogPlusOne(JvpContext& c) { c.set(0, c.dx() / (c.x() + 1.0)); }
// d tanh(x) = dx * (1 - y^2)
void jvp_Tanh(JvpContext& c) { scaled(c, [](JvpContext& c) { return 1.0 - c.y() * c.y(); }); }
// d logistic(x) = dx * y * (1 - y)
void jvp_Logistic(JvpContext& c) { scaled(c, [](JvpContext& c) { return c.y() * (1.0 - c.y()); }); }
// d sqrt(x) = dx / (2 y)
void jvp_Sqrt(JvpContext& c) { c.set(0, c.dx() / (c.y() * 2.0)); }
// d x^(-1/2) = dx * (-1/2) * y / x
void jvp_Rsqrt(JvpContext& c) { scaled(c, [](JvpContext& c) { return c.y() / c.x() * -0.5; }); }
// d sin(x) = dx * cos(x)
void jvp_Sine(JvpContext& c) { scaled(c, [](JvpContext& c) { return ir::cos(c.x()); }); }
// d cos(x) = -dx * sin(x)
void jvp_Cosine(JvpContext& c) { scaled(c, [](JvpContext& c) { return -ir::sin(c.x()); }); }
// d convert(x) = convert(dx) to y's type, between float types
void jvp_Convert(JvpContext& c) {
  require_real(c.op);
  if (is_differentiable(c.x().type()) && is_differentiable(c.y().type()))
    c.set(0, ir::convert(c.dx(), c.y().element()));
}
// Reinterpreting bits has no derivative.
void jvp_BitcastConvert(JvpContext& c) { none(c); }

// d(a + b) = da + db
void jvp_Add(JvpContext& c) { c.set(0, sum_of({c.tangent(0), c.tangent(1)})); }
// d(a - b) = da - db
void jvp_Subtract(JvpContext& c) { c.set(0, sum_of({c.tangent(0), c.term(1, [](T d) { return -d; })})); }
// d(a * b) = da * b + a * db
void jvp_Multiply(JvpContext& c) {
  c.set(0, sum_of({c.term(0, [&](T d) { return d * c.x(1); }), c.term(1, [&](T d) { return c.x(0) * d; })}));
}
// d(a / b) = da / b - db * y / b
void jvp_Divide(JvpContext& c) {
  c.set(0, sum_of({c.term(0, [&](T d) { return d / c.x(1); }),
                   c.term(1, [&](T d) { return -(d * c.y() / c.x(1)); })}));
}
// rem(a, b) = a - trunc(a / b) * b:  d = da - db * trunc(a / b)
void jvp_Remainder(JvpContext& c) {
  c.set(0, sum_of({c.tangent(0), c.term(1, [&](T d) {
                     Tensor q = c.x(0) / c.x(1);
                     return -(d * (ir::sign(q) * ir::floor(ir::abs(q))));
                   })}));
}
// d a^b = da * b * a^(b-1) + db * y * log(a), with log(a) taken as 0 where a = 0
void jvp_Power(JvpContext& c) {
  const Tensor &a = c.x(0), &e = c.x(1);
  c.set(0, sum_of({c.term(0, [&](T d) { return d * e * ir::pow(a, e - 1.0); }), c.term(1, [&](T d) {
                     Tensor zero = zeros_like(c.b, a.type());
                     Tensor log_a = ir::select(ir::compare(a, zero, ComparisonDirection::EQ), zero, ir::log(a));
                     return d * c.y() * log_a;
                   })}));
}
// d max(a, b): the tangent of the larger operand, the mean of both on a tie (as the VJP)
void jvp_Maximum(JvpContext& c) { chooser(c, ComparisonDirection::GT); }
// d min(a, b): the tangent of the smaller operand, the mean of both on a tie
void jvp_Minimum(JvpContext& c) { chooser(c, ComparisonDirection::LT); }
// d atan2(a, b) = (da * b - db * a) / (a^2 + b^2)
void jvp_Atan2(JvpContext& c) {
  Tensor r2 = c.x(0) * c.x(0) + c.x(1) * c.x(1);
  c.set(0, sum_of({c.term(0, [&](T d) { return d * c.x(1) / r2; }),
                   c.term(1, [&](T d) { return -(d * c.x(0) / r2); })}));
}
// Bitwise ops, shifts and comparisons have boolean or integer values: no tangent.
void jvp_And(JvpContext& c) { none(c); }
void jvp_Or(JvpContext& c) { none(c); }
void jvp_Xor(JvpContext& c) { none(c); }
void jvp_ShiftLeft(JvpContext& c) { none(c); }
void jvp_ShiftRightLogical(JvpContext& c) { none(c); }
void jvp_ShiftRightArithmetic(JvpContext& c) { none(c); }
void jvp_Compare(JvpContext& c) { none(c); }
// clamp(lo, x, hi): dlo below lo, dhi above hi, dx inside [lo, hi] (bounds broadcast to x)
void jvp_Clamp(JvpContext& c) {
  const Tensor& x = c.x(1);
  Tensor below = ir::compare(x, ir::broadcast_to(c.x(0), x.shape()), ComparisonDirection::LT);
  Tensor above = ir::compare(x, ir::broadcast_to(c.x(2), x.shape()), ComparisonDirection::GT);
  auto where = [&](const Tensor& mask) { return [&, mask](T d) { return ir::broadcast_to(d, x.shape()) * indicator(mask, x.type()); }; };
  c.set(0, sum_of({c.term(0, where(below)), c.term(1, where(!(below | above))), c.term(2, where(above))}));
}
// select(p, a, b) = select(p, da, db); a branch without a tangent reads a broadcast scalar 0, and
// with neither there is no term
void jvp_Select(JvpContext& c) {
  if (!c.has_tangent(1) && !c.has_tangent(2)) return;
  Tensor p = ir::broadcast_to(c.x(0), c.y().shape());
  c.set(0, ir::select(p, c.dx(1), c.dx(2)));
}

}  // namespace tessera::autodiff
