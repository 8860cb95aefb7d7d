// Composite functions get their gradients through their primitives: softmax, RMSNorm, cross
// entropy and scaled dot-product attention, built from ops.def rows only, each checked against
// central finite differences in f64 (the tolerances of autodiff_test_util.h).
#include <gtest/gtest.h>

#include <cmath>

#include "autodiff_test_util.h"
#include "autodiff/forward.h"
#include "autodiff/vmap.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::autodiff::testing {
namespace {

using namespace tessera::ir;

// Along the last dimension of a rank-2 x.
Tensor softmax(const Tensor& x) {
  int64_t n = x.shape()[0], k = x.shape()[1];
  Tensor shifted = x - broadcast_in_dim(reduce_max(x, {1}), {n, k}, {0});
  Tensor e = exp(shifted);
  return e / broadcast_in_dim(reduce_sum(e, {1}), {n, k}, {0});
}

Tensor rms_norm(const Tensor& x, const Tensor& gain) {
  int64_t n = x.shape()[0], k = x.shape()[1];
  Tensor mean_square = reduce_sum(x * x, {1}) / double(k);
  Tensor scale = rsqrt(mean_square + 1e-6);
  return x * broadcast_in_dim(scale, {n, k}, {0}) * gain;
}

// The same with the row maximum a constant to differentiation (ir::stop_gradient), as nn's
// layers and JAX's softmax write it: the gradient is the same function's, since softmax does not
// depend on the shift.
Tensor stopped_softmax(const Tensor& x) {
  int64_t n = x.shape()[0], k = x.shape()[1];
  Tensor e = exp(x - broadcast_in_dim(stop_gradient(reduce_max(x, {1})), {n, k}, {0}));
  return e / broadcast_in_dim(reduce_sum(e, {1}), {n, k}, {0});
}

// Mean over rows of -sum(labels * log softmax(logits)); labels are one-hot rows.
Tensor cross_entropy(const Tensor& logits, const Tensor& labels) {
  int64_t n = logits.shape()[0];
  return sum(-(labels * log(softmax(logits)))) / double(n);
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v) {
  DotDims qk{{}, {}, {1}, {1}};  // q·kᵀ
  Tensor scores = dot_general(q, k, qk) / std::sqrt(double(q.shape()[1]));
  return matmul(softmax(scores), v);
}

struct Composite {
  std::string name;
  std::vector<std::vector<int64_t>> shapes;  // of the float parameters, all differentiated
  std::function<Tensor(const std::vector<Tensor>&)> loss;
};

void check(const Composite& c) {
  Module m(c.name);
  Function& f = build_function(m, "f", [&](FunctionBuilder& b) {
    std::vector<Tensor> params;
    for (const auto& s : c.shapes) params.push_back(b.param(f64(s)));
    return c.loss(params);
  });
  Function& g = reverse(m, f);
  std::vector<Literal> args;
  for (size_t i = 0; i < c.shapes.size(); ++i) args.push_back(random_f64(c.shapes[i], 17 + i, -1, 1));
  std::vector<Literal> grads = interp::evaluate(m, g.name(), args);
  const double h = 1e-6;
  for (size_t p = 0; p < args.size(); ++p)
    for (int64_t i = 0; i < args[p].num_elements(); ++i) {
      auto at = [&](double d) {
        std::vector<Literal> moved = args;
        moved[p].set_double(i, args[p].get_double(i) + d);
        return interp::evaluate(m, "f", moved)[0].get_double(0);
      };
      double fd = (at(h) - at(-h)) / (2 * h);
      EXPECT_NEAR(grads[p].get_double(i), fd, kAbsTolerance + kRelTolerance * std::fabs(fd))
          << c.name << ": parameter " << p << ", element " << i;
    }
}

TEST(Composite, GradientsThroughPrimitives) {
  Literal one_hot(f64({3, 4}));
  for (int64_t r = 0; r < 3; ++r) one_hot.set_double(r * 4 + (r + 1) % 4, 1);
  std::vector<Composite> table = {
      {"softmax", {{3, 4}, {3, 4}},
       [](const std::vector<Tensor>& p) { return sum(softmax(p[0]) * p[1]); }},
      {"rms_norm", {{3, 4}, {4}, {3, 4}},
       [](const std::vector<Tensor>& p) { return sum(rms_norm(p[0], p[1]) * p[2]); }},
      {"cross_entropy", {{3, 4}},
       [&](const std::vector<Tensor>& p) {
         return cross_entropy(p[0], p[0].builder().constant(one_hot));
       }},
      {"attention", {{3, 4}, {5, 4}, {5, 2}, {3, 2}},
       [](const std::vector<Tensor>& p) { return sum(attention(p[0], p[1], p[2]) * p[3]); }},
      {"softmax, its maximum stopped", {{3, 4}, {3, 4}},
       [](const std::vector<Tensor>& p) { return sum(stopped_softmax(p[0]) * p[1]); }},
      {"cross_entropy, its maximum stopped", {{3, 4}},
       [&](const std::vector<Tensor>& p) {
         return sum(-(p[0].builder().constant(one_hot) * log(stopped_softmax(p[0])))) / 3.0;
       }},
  };
  for (const Composite& c : table) check(c);
}

// stop_gradient makes its value a constant to both modes: x - max(x) has gradient 1 everywhere
// (not 1 - n at the maximum) and tangent v (not v - v[argmax]); the mark prints and parses back.
TEST(StopGradient, TheValueIsAConstantInBothModes) {
  Module m("stopped");
  Function& f = build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f64({4}));
    Tensor shifted = x - broadcast_in_dim(stop_gradient(reduce_max(x, {0})), {4}, {});
    return sum(shifted * shifted);
  });
  Function& g = reverse(m, f);
  forward(m, f);
  Literal x = Literal::from_doubles(f64({4}), std::vector<double>{1, 3, 2, 0});
  Literal v = Literal::from_doubles(f64({4}), std::vector<double>{1, 1, 1, 1});
  // shifted = [-2, 0, -1, -3]: d/dx sum(shifted^2) = 2 * shifted with the maximum held.
  Literal grad = interp::evaluate(m, g.name(), {x})[0];
  std::vector<double> want = {-4, 0, -2, -6};
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(grad.get_double(i), want[static_cast<size_t>(i)]) << i;
  EXPECT_EQ(interp::evaluate(m, "f_jvp", {x, v})[1].get_double(0), -12);  // sum of 2 * shifted * v
  std::string text = stablehlo::print(m);
  EXPECT_NE(text.find("tessera.stop_gradient = true"), std::string::npos) << text;
  EXPECT_EQ(stablehlo::print(*stablehlo::parse(text)), text);
  // A parameter has no op to mark: a user error, not an abort.
  Module p("param");
  EXPECT_THROW(build_function(p, "f", [](FunctionBuilder& b) { return stop_gradient(b.param(f64({2}))); }),
               std::exception);
}

// Batched by vmap, the value stays a constant: the gradient of the batched function is each
// row's, with its maximum held. The maximum's init is batched too, so vmap's rule builds the
// batched reduce anew (a reduce, then the maximum with the init), which the mark must follow; and
// a mark on an op whose batched result the rule passes through unchanged (a reshape to the same
// shape) stops that result alone, not the value it came from.
TEST(StopGradient, VmapKeepsTheValueAConstant) {
  Module m("stopped");
  Function& f = build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f64({3})), init = b.param(f64({}));
    Tensor top = stop_gradient(reduce(x, init, {0}, OpKind::Maximum));
    Tensor shifted = x - broadcast_in_dim(top, {3}, {});
    Tensor held = stop_gradient(reshape(x, {3}));
    return sum(shifted * shifted) + sum(held * x);
  });
  VmapOptions o;
  o.out_axes = {0};
  o.batch_size = 2;
  Function& g = reverse(m, vmap(m, f, o));  // takes x, init and the cotangent of the 2 results
  Literal x = Literal::from_doubles(f64({2, 3}), std::vector<double>{1, 3, 2, 0, -1, 4});
  Literal init = Literal::from_doubles(f64({2}), std::vector<double>{-100, -100});
  std::vector<Literal> grads = interp::evaluate(m, g.name(), {x, init, Literal::splat(f64({2}), 1.0)});
  // Row [1, 3, 2]: shifted [-2, 0, -1]; row [0, -1, 4]: [-4, -5, 0]. d/dx = 2 * shifted + held (= x).
  std::vector<double> want = {-4 + 1, 0 + 3, -2 + 2, -8 + 0, -10 - 1, 0 + 4};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(grads[0].get_double(i), want[static_cast<size_t>(i)]) << i;
  for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(grads[1].get_double(i), 0) << "init " << i;
}

}  // namespace
}  // namespace tessera::autodiff::testing
