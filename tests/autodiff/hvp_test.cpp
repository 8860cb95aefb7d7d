// Transforms compose: forward(reverse(loss)) is a Hessian-vector product, and so is reverse of
// reverse: with g = reverse(f) = grad f, the gradient of h(x, v) = <g(x), v> with respect to x is
// H v (H symmetric). For a 2-layer MLP and for a scalar function of a vector, H·v from the composed
// program equals central finite differences of the gradient program along v.
#include <gtest/gtest.h>

#include <cmath>

#include "autodiff/forward.h"
#include "autodiff/reverse.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "ir/clone.h"

namespace tessera::autodiff {
namespace {

using namespace tessera::ir;

constexpr double kTolerance = 1e-4;  // relative to max(1, |fd|), as the issue asks

Literal wave(Type t, double seed) {
  Literal l(std::move(t));
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_double(i, 0.5 * std::sin(seed * double(i + 1)));
  return l;
}

Literal axpy(const Literal& x, double a, const Literal& v) {
  Literal out = x;
  for (int64_t i = 0; i < x.num_elements(); ++i) out.set_double(i, x.get_double(i) + a * v.get_double(i));
  return out;
}

TEST(Hvp, TwoLayerMlpMatchesFiniteDifferencesOfTheGradient) {
  Module m("mlp");
  Function& loss = build_function(m, "loss", [](FunctionBuilder& f) {
    Tensor x = f.param(f64({6, 4}));
    Tensor w1 = f.param(f64({4, 5}));
    Tensor w2 = f.param(f64({5, 2}));
    Tensor h = tanh(matmul(x, w1));
    Tensor out = matmul(h, w2);
    return sum(out * out) * 0.5;
  });
  ReverseOptions weights;
  weights.wrt = {1, 2};
  Function& grad = reverse(m, loss, weights);  // (x, w1, w2) -> (dw1, dw2)
  Function& hvp = forward(m, grad);            // (x, w1, w2, dx, dw1, dw2) -> (dw1, dw2, H v)
  verify(m);

  Literal x = wave(f64({6, 4}), 0.3), w1 = wave(f64({4, 5}), 0.7), w2 = wave(f64({5, 2}), 1.1);
  Literal v1 = wave(f64({4, 5}), 1.9), v2 = wave(f64({5, 2}), 2.3);
  Literal zero_x(f64({6, 4}));  // x is data: no tangent
  std::vector<Literal> out = interp::evaluate(m, hvp.name(), {x, w1, w2, zero_x, v1, v2});
  ASSERT_EQ(out.size(), 4u);

  const double h = 1e-5;
  auto grad_at = [&](double t) {
    return interp::evaluate(m, grad.name(), {x, axpy(w1, t, v1), axpy(w2, t, v2)});
  };
  std::vector<Literal> plus = grad_at(h), minus = grad_at(-h);
  for (size_t k = 0; k < 2; ++k)
    for (int64_t i = 0; i < out[2 + k].num_elements(); ++i) {
      double fd = (plus[k].get_double(i) - minus[k].get_double(i)) / (2 * h);
      EXPECT_NEAR(out[2 + k].get_double(i), fd, kTolerance * std::max(1.0, std::fabs(fd)))
          << "H v of weight " << k << ", element " << i;
    }
}

// g's body copied into b's block with its parameters read as `args`; returns g's results (reverse
// does not differentiate calls, so h inlines the gradient program instead of calling it).
std::vector<Tensor> inline_body(FunctionBuilder& b, const Function& g, const std::vector<Tensor>& args) {
  ValueMap map;
  for (size_t i = 0; i < args.size(); ++i) map[g.parameter(i)] = args[i].value();
  std::vector<Tensor> results;
  for (const auto& op : g.body().ops()) {
    if (op->kind() != OpKind::Return) {
      clone_op(b.block(), *op, map);
      continue;
    }
    for (Value* v : op->operands()) results.push_back(b.wrap(map.count(v) ? map.at(v) : v));
  }
  return results;
}

TEST(Hvp, ReverseOfReverseMatchesFiniteDifferencesOfTheGradient) {
  Module m("reverse_of_reverse");
  Literal a = wave(f64({3, 4}), 0.9);
  Function& f = build_function(m, "f", [&](FunctionBuilder& b) {
    Tensor x = b.param(f64({4}));
    Tensor t = tanh(matmul(b.constant(a), x));  // couples the entries of x
    return sum(t * t) * 0.5 + sum(sin(x) * x);
  });
  Function& g = reverse(m, f);  // x -> grad f(x)
  Function& h = build_function(m, "h", [&](FunctionBuilder& b) {
    Tensor x = b.param(f64({4}));
    Tensor v = b.param(f64({4}));
    return sum(inline_body(b, g, {x})[0] * v);
  });
  ReverseOptions wrt_x;
  wrt_x.wrt = {0};
  Function& hvp = reverse(m, h, wrt_x);  // (x, v) -> H v
  verify(m);

  Literal x = wave(f64({4}), 0.4), v = wave(f64({4}), 1.3);
  Literal hv = interp::evaluate(m, hvp.name(), {x, v})[0];
  const double step = 1e-5;
  Literal plus = interp::evaluate(m, g.name(), {axpy(x, step, v)})[0];
  Literal minus = interp::evaluate(m, g.name(), {axpy(x, -step, v)})[0];
  double largest = 0;
  for (int64_t i = 0; i < hv.num_elements(); ++i) {
    double fd = (plus.get_double(i) - minus.get_double(i)) / (2 * step);
    largest = std::max(largest, std::fabs(fd));
    EXPECT_NEAR(hv.get_double(i), fd, kTolerance * std::max(1.0, std::fabs(fd))) << "(H v)[" << i << "]";
  }
  EXPECT_GT(largest, 0.1);  // H v is not (nearly) zero: the comparison has something to compare
}

}  // namespace
}  // namespace tessera::autodiff
