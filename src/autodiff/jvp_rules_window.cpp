// JVP rules of the window ops and sort.
//
// convolution is bilinear: conv(dl, r) + conv(l, dr). reduce_window with add is linear in (x, init)
// together. With max or min it follows JAX (_reduce_window_chooser_jvp_rule): the tangent at the
// position each window chooses, the first in window order among equals, which is what the VJP's
// select_and_scatter sends dy to; init's tangent is not carried (JAX does not differentiate it).
// select_and_scatter with an add scatter is linear in (source, init) for a fixed operand. sort
// carries the tangents along as extra operands of the same sort.
#include "autodiff/jvp_rules.h"
#include "autodiff/window_rules.h"

namespace tessera::autodiff {

using ir::ComparisonDirection;
using ir::OpKind;

// convolution(l, r) -> convolution(dl, r) + convolution(l, dr)
void jvp_Convolution(JvpContext& c) {
  require_real(c.op);
  c.set(0, sum_of({c.term(0, [&](const Tensor& d) { return c.again({d, c.x(1)})[0]; }),
                   c.term(1, [&](const Tensor& d) { return c.again({c.x(0), d})[0]; })}));
}

// reduce_window(x, init; +) -> reduce_window(dx, dinit; +)
// reduce_window(x, init; max or min) -> dx at the first maximum (minimum) of each window
void jvp_ReduceWindow(JvpContext& c) {
  if (c.num_operands() != 2)
    c.fail("a reduce_window of {} inputs at once is not differentiated", c.num_operands() / 2);
  std::optional<OpKind> k = body_combiner(c.op.region(0));
  if (k == OpKind::Add) return linear(c);
  if (k != OpKind::Maximum && k != OpKind::Minimum)
    c.fail("a reduce_window whose body is {} has no gradient rule; only add, maximum and minimum do",
           describe_body(c.op.region(0)));
  require_real(c.op);
  if (!c.has_tangent(0)) return;
  c.set(0, window_pick(c.x(0), *c.tangent(0), window_of(c.op),
                       k == OpKind::Maximum ? ComparisonDirection::GE : ComparisonDirection::LE));
}

// select_and_scatter(x, s, init; select, +) -> select_and_scatter(x, ds, dinit; select, +)
void jvp_SelectAndScatter(JvpContext& c) {
  if (body_combiner(c.op.region(1)) != OpKind::Add)
    c.fail("a scatter region of {} has no gradient rule; only add does", describe_body(c.op.region(1)));
  require_real(c.op);
  if (!c.has_tangent(1) && !c.has_tangent(2)) return;
  c.set(0, c.again({c.x(0), c.dx(1), c.dx(2)})[0]);
}

// sort(xs) -> the tangents sorted along with xs
void jvp_Sort(JvpContext& c) {
  size_t n = c.num_operands();
  std::vector<Tensor> xs, tangents;
  std::vector<size_t> which;
  for (size_t i = 0; i < n; ++i) {
    xs.push_back(c.x(i));
    if (c.has_tangent(i)) {
      tangents.push_back(*c.tangent(i));
      which.push_back(i);
    }
  }
  if (tangents.empty()) return;
  std::vector<Tensor> sorted = sort_with(c.op, xs, tangents);
  for (size_t j = 0; j < which.size(); ++j) c.set(which[j], sorted[n + j]);
}

}  // namespace tessera::autodiff
