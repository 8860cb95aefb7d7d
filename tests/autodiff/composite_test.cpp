// Composite functions get their gradients through their primitives: softmax, RMSNorm, cross
// entropy and scaled dot-product attention, built from ops.def rows only, each checked against
// central finite differences in f64 (the tolerances of autodiff_test_util.h).
#include <gtest/gtest.h>

#include <cmath>

#include "autodiff_test_util.h"

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
  };
  for (const Composite& c : table) check(c);
}

}  // namespace
}  // namespace tessera::autodiff::testing
