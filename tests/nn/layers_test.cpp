// The nn layers one by one: the parameter layout and initializer, values checked against direct
// C++ computations (cross-entropy, RoPE, the causal mask), and every layer's gradient against
// central finite differences in f64 on a tiny configuration.
#include <gtest/gtest.h>

#include <bit>

#include <cmath>
#include <functional>
#include <optional>

#include "autodiff/reverse.h"
#include "common/error_of.h"
#include "interp/interpreter.h"
#include "nn/model.h"
#include "nn/moe.h"
#include "nn_test_util.h"

namespace tessera::nn {
namespace {

using namespace tessera::ir;
using testing::random_literal;

TEST(Config, ParameterCountPinsTheLayout) {
  Config c = testing::acceptance_config();
  EXPECT_EQ(parameter_count(c), 78144);
  std::vector<ParamSpec> specs = parameter_specs(c);
  ASSERT_EQ(specs.size(), 1u + 9 * 2 + 2);
  auto shape_of = [&](const std::string& name) { return specs[parameter_index(specs, name)].shape; };
  using S = std::vector<int64_t>;
  EXPECT_EQ(shape_of("embed"), (S{32, 64}));
  EXPECT_EQ(shape_of("layers.0.attn.q"), (S{64, 64}));
  EXPECT_EQ(shape_of("layers.0.attn.k"), (S{64, 32}));
  EXPECT_EQ(shape_of("layers.1.attn.v"), (S{64, 32}));
  EXPECT_EQ(shape_of("layers.1.attn.o"), (S{64, 64}));
  EXPECT_EQ(shape_of("layers.0.mlp.gate"), (S{64, 128}));
  EXPECT_EQ(shape_of("layers.0.mlp.up"), (S{64, 128}));
  EXPECT_EQ(shape_of("layers.1.mlp.down"), (S{128, 64}));
  EXPECT_EQ(shape_of("layers.1.attn_norm"), (S{64}));
  EXPECT_EQ(shape_of("layers.1.mlp_norm"), (S{64}));
  EXPECT_EQ(shape_of("norm"), (S{64}));
  EXPECT_EQ(shape_of("head"), (S{64, 32}));
  EXPECT_EQ(specs.front().name, "embed");
  EXPECT_EQ(specs.back().name, "head");
}

TEST(Config, RefusesInconsistentShapes) {
  Config c = testing::acceptance_config();
  c.heads = 6;
  std::string e = tessera::testing::error_of([&] { parameter_specs(c); });
  EXPECT_NE(e.find("heads (6) must divide d_model (64)"), std::string::npos) << e;
  c = testing::acceptance_config();
  c.kv_heads = 3;
  e = tessera::testing::error_of([&] { parameter_specs(c); });
  EXPECT_NE(e.find("kv_heads (3)"), std::string::npos) << e;
  e = tessera::testing::error_of([&] { parameter_index(parameter_specs(testing::tiny_config()), "layers.9.attn.q"); });
  EXPECT_NE(e.find("'layers.9.attn.q'"), std::string::npos) << e;
}

TEST(Init, APieceMadeAloneIsTheSliceOfTheWholeBitwise) {
  Config c = testing::acceptance_config();
  for (const ParamSpec& spec : parameter_specs(c)) {
    Literal whole = init_parameter(spec, c, 77);
    // Uneven row blocks (the last one short), and a block of columns for 2-D parameters.
    std::vector<int64_t> start(spec.shape.size(), 0), extent = spec.shape;
    start[0] = spec.shape[0] / 3;
    extent[0] = spec.shape[0] - start[0] - 1;
    if (spec.shape.size() == 2) {
      start[1] = 1;
      extent[1] = spec.shape[1] / 2;
    }
    Literal piece = init_parameter_piece(spec, c, 77, start, extent);
    ASSERT_EQ(piece.shape(), extent) << spec.name;
    std::vector<int64_t> strides = whole.strides();
    for (int64_t k = 0; k < piece.num_elements(); ++k) {
      int64_t at = 0, rest = k;
      for (size_t d = extent.size(); d-- > 0;) {
        at += (start[d] + rest % extent[d]) * strides[d];
        rest /= extent[d];
      }
      // Bits, not values: a NaN or a -0 would be told apart.
      ASSERT_EQ(std::bit_cast<uint32_t>(static_cast<float>(piece.get_double(k))),
                std::bit_cast<uint32_t>(static_cast<float>(whole.get_double(at))))
          << spec.name << " element " << k;
    }
  }
  std::vector<ParamSpec> specs = parameter_specs(c);
  ParamSpec q = specs[parameter_index(specs, "layers.0.attn.q")];
  std::string e = tessera::testing::error_of([&] { init_parameter_piece(q, c, 1, {0, 1}, {1, q.shape[1]}); });
  EXPECT_NE(e.find("is outside parameter '" + q.name + "'"), std::string::npos) << e;
}

TEST(Init, CounterBasedNormalAndOnes) {
  Config c = testing::acceptance_config();
  std::vector<ParamSpec> specs = parameter_specs(c);
  std::vector<Literal> a = init_parameters(c, 1234), b = init_parameters(c, 1234), other = init_parameters(c, 1235);
  double sum = 0, sum_sq = 0;
  int64_t n = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_TRUE(a[i] == b[i]) << specs[i].name;
    // One parameter's values depend on the seed and its name only.
    EXPECT_TRUE(a[i] == init_parameter(specs[i], c, 1234)) << specs[i].name;
    if (specs[i].init == ParamSpec::Init::Ones) {
      for (int64_t k = 0; k < a[i].num_elements(); ++k) ASSERT_EQ(a[i].get_double(k), 1.0) << specs[i].name;
      continue;
    }
    EXPECT_FALSE(a[i] == other[i]) << specs[i].name;
    for (int64_t k = 0; k < a[i].num_elements(); ++k, ++n) {
      sum += a[i].get_double(k);
      sum_sq += a[i].get_double(k) * a[i].get_double(k);
    }
  }
  // Two layers' q (same shape, different names) differ.
  EXPECT_FALSE(a[parameter_index(specs, "layers.0.attn.q")] == a[parameter_index(specs, "layers.1.attn.q")]);
  double mean = sum / double(n), std = std::sqrt(sum_sq / double(n) - mean * mean);
  EXPECT_NEAR(mean, 0, 3 * 0.02 / std::sqrt(double(n)) * 2);
  EXPECT_NEAR(std, 0.02, 0.02 * 0.02);
}

// ---- Values against direct computations ----

TEST(CrossEntropy, MatchesDirectComputation) {
  Literal logits = random_literal(f64({2, 3, 5}), 3, -3, 3);
  Literal targets = Literal::from<int>(i32({2, 3}), {0, 4, 2, 1, 1, 3});
  Module m;
  build_function(m, "ce", [](FunctionBuilder& f) {
    Tensor l = f.param(f64({2, 3, 5}));
    return cross_entropy(l, f.param(i32({2, 3})));
  });
  double want = 0;
  for (int64_t t = 0; t < 6; ++t) {
    double lse = 0;
    for (int64_t v = 0; v < 5; ++v) lse += std::exp(logits.get_double(t * 5 + v));
    want += std::log(lse) - logits.get_double(t * 5 + targets.get_int(t));
  }
  EXPECT_NEAR(interp::evaluate(m, "ce", {logits, targets})[0].get_double(0), want / 6, 1e-12);
  // Logits far beyond exp's range still give finite losses (the stable form).
  Literal big = logits;
  for (int64_t i = 0; i < big.num_elements(); ++i) big.set_double(i, big.get_double(i) + 1000);
  EXPECT_NEAR(interp::evaluate(m, "ce", {big, targets})[0].get_double(0), want / 6, 1e-9);
}

TEST(Rope, RotatesEachPairByPositionTimesFrequency) {
  const int64_t s = 3, hd = 4;
  const double theta = 100;
  Literal x = random_literal(f64({1, s, 1, hd}), 5);
  Module m;
  build_function(m, "rope", [&](FunctionBuilder& f) { return rope(f.param(f64({1, s, 1, hd})), theta); });
  Literal y = interp::evaluate(m, "rope", {x})[0];
  for (int64_t p = 0; p < s; ++p)
    for (int64_t j = 0; j < hd / 2; ++j) {
      double angle = double(p) * std::pow(theta, -2.0 * double(j) / hd);
      double a = x.get_double(p * hd + j), b = x.get_double(p * hd + j + hd / 2);
      EXPECT_NEAR(y.get_double(p * hd + j), a * std::cos(angle) - b * std::sin(angle), 1e-12);
      EXPECT_NEAR(y.get_double(p * hd + j + hd / 2), b * std::cos(angle) + a * std::sin(angle), 1e-12);
    }
}

TEST(CausalLM, EarlierPositionsDoNotSeeLaterTokens) {
  Config c = testing::tiny_config();
  CausalLM model(c);
  Module m;
  build_function(m, "logits", [&](FunctionBuilder& f) {
    std::vector<Tensor> params;
    for (const ParamSpec& p : model.parameters()) params.push_back(f.param(Type(c.dtype, p.shape)));
    return model.logits(Weights(model.parameters(), params), f.param(i32({c.batch, c.seq})));
  });
  std::vector<Literal> args = init_parameters(c, 9);
  args.push_back(testing::make_batch(c, 4).tokens);
  Literal before = interp::evaluate(m, "logits", args)[0];
  const int64_t changed = 2;  // position of the changed token in row 0
  args.back().set_int(changed, (args.back().get_int(changed) + 1) % c.vocab);
  Literal after = interp::evaluate(m, "logits", args)[0];
  for (int64_t pos = 0; pos < c.seq; ++pos) {
    double diff = 0;
    for (int64_t v = 0; v < c.vocab; ++v)
      diff = std::max(diff, std::abs(after.get_double(pos * c.vocab + v) - before.get_double(pos * c.vocab + v)));
    if (pos < changed) EXPECT_EQ(diff, 0) << "position " << pos;
    else EXPECT_GT(diff, 1e-6) << "position " << pos;
  }
}

// ---- Gradients against finite differences ----

// A scalar function of f64 arrays (and integer inputs, not differentiated): the layer's output
// projected on a fixed random array, so that every output element matters.
struct GradCase {
  std::string name;
  std::vector<Literal> inputs;  // float inputs are differentiated
  std::function<Tensor(const std::vector<Tensor>&)> layer;
};

constexpr double kRel = 1e-6, kAbs = 1e-7;  // central differences in f64, h = 1e-6

// `must_contain`: an op the gradient program must have (the rule that the layer's gradient rests on).
void check_gradient(const GradCase& c, std::optional<OpKind> must_contain) {
  Module m(c.name);
  Function& f = build_function(m, "f", [&](FunctionBuilder& b) {
    std::vector<Tensor> xs;
    for (const Literal& x : c.inputs) xs.push_back(b.param(x.type()));
    Tensor y = c.layer(xs);
    if (y.rank() == 0) return y;
    return sum(y * b.constant(random_literal(y.type(), 77)));
  });
  autodiff::ReverseOptions options;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (is_float(c.inputs[i].element())) options.wrt.push_back(i);
  Function& g = autodiff::reverse(m, f, options);
  if (must_contain) {
    bool found = false;
    for (const auto& op : g.body().ops()) found |= op->kind() == *must_contain;
    EXPECT_TRUE(found) << c.name << ": the gradient program has no " << spelling(*must_contain);
  }
  std::vector<Literal> grads = interp::evaluate(m, g.name(), c.inputs);
  ASSERT_EQ(grads.size(), options.wrt.size());
  const double h = 1e-6;
  for (size_t k = 0; k < options.wrt.size(); ++k) {
    size_t p = options.wrt[k];
    for (int64_t i = 0; i < c.inputs[p].num_elements(); ++i) {
      auto at = [&](double d) {
        std::vector<Literal> moved = c.inputs;
        moved[p].set_double(i, c.inputs[p].get_double(i) + d);
        return interp::evaluate(m, "f", moved)[0].get_double(0);
      };
      double fd = (at(h) - at(-h)) / (2 * h);
      ASSERT_NEAR(grads[k].get_double(i), fd, kAbs + kRel * std::abs(fd))
          << c.name << ": input " << p << ", element " << i;
    }
  }
}

TEST(Gradients, Embedding) {
  // Token 1 appears three times: its row's gradient is the sum of three (a scatter-add).
  Literal tokens = Literal::from<int>(i32({2, 3}), {1, 0, 1, 4, 1, 2});
  check_gradient({"embedding", {random_literal(f64({5, 4}), 1), tokens},
                  [](const std::vector<Tensor>& x) { return embedding(x[0], x[1]); }},
                 OpKind::Scatter);
}

TEST(Gradients, RmsNorm) {
  check_gradient({"rms_norm", {random_literal(f64({2, 3, 6}), 2), random_literal(f64({6}), 3)},
                  [](const std::vector<Tensor>& x) { return rms_norm(x[0], x[1], 1e-5); }},
                 OpKind::Rsqrt);
}

TEST(Gradients, Rope) {
  check_gradient({"rope", {random_literal(f64({2, 3, 2, 4}), 4)},
                  [](const std::vector<Tensor>& x) { return rope(x[0], 10000); }},
                 std::nullopt);  // linear in x: its gradient program folds to a constant
}

TEST(Gradients, GroupedQueryAttention) {
  // 4 query heads over 2 key/value heads of dimension 2.
  check_gradient({"attention",
                  {random_literal(f64({2, 3, 6}), 5), random_literal(f64({6, 8}), 6), random_literal(f64({6, 4}), 7),
                   random_literal(f64({6, 4}), 8), random_literal(f64({8, 6}), 9)},
                  [](const std::vector<Tensor>& x) {
                    return attention(x[0], AttentionWeights{x[1], x[2], x[3], x[4]}, 4, 2, 10000);
                  }},
                 OpKind::DotGeneral);
}

TEST(Gradients, SwiGlu) {
  check_gradient({"swiglu",
                  {random_literal(f64({2, 3, 4}), 10), random_literal(f64({4, 5}), 11), random_literal(f64({4, 5}), 12),
                   random_literal(f64({5, 4}), 13)},
                  [](const std::vector<Tensor>& x) { return swiglu(x[0], x[1], x[2], x[3]); }},
                 OpKind::Logistic);
}

TEST(Gradients, CrossEntropy) {
  check_gradient({"cross_entropy",
                  {random_literal(f64({2, 3, 5}), 14, -2, 2), Literal::from<int>(i32({2, 3}), {0, 4, 2, 1, 1, 3})},
                  [](const std::vector<Tensor>& x) { return cross_entropy(x[0], x[1]); }},
                 OpKind::Exponential);
}

TEST(Gradients, MoeTop2WithDroppedTokens) {
  // Capacity 2 of 6 tokens x 2 choices over 3 experts: some choices dropped. The output, and the
  // load-balancing loss (through the mean router probabilities).
  std::vector<Literal> in = {random_literal(f64({2, 6, 4}), 40), random_literal(f64({4, 3}), 41),
                             random_literal(f64({3, 4, 5}), 42), random_literal(f64({3, 4, 5}), 43),
                             random_literal(f64({3, 5, 4}), 44)};
  ASSERT_EQ(moe_capacity(6, 3, 2, 0.5), 2);
  auto layer = [](const std::vector<Tensor>& x) { return moe(x[0], MoeWeights{x[1], x[2], x[3], x[4]}, 2, 0.5); };
  check_gradient({"moe", in, [&](const std::vector<Tensor>& x) { return layer(x).y; }}, OpKind::Logistic);
  check_gradient({"moe_aux", in, [&](const std::vector<Tensor>& x) { return *layer(x).aux; }}, OpKind::Exponential);
}

TEST(Gradients, MoeCausalLMLoss) {
  Config c = testing::tiny_config();
  c.experts = 3;
  c.top_k = 2;
  c.capacity_factor = 0.75;  // 2 slots per expert for 4 tokens x 2 choices: some dropped
  c.aux_loss_coef = 0.5;
  CausalLM model(c);
  testing::Batch batch = testing::make_batch(c, 22);
  std::vector<Literal> inputs = init_parameters(c, 6);
  size_t n = inputs.size();
  inputs.push_back(batch.tokens);
  inputs.push_back(batch.targets);
  check_gradient({"moe_causal_lm", inputs,
                  [&](const std::vector<Tensor>& x) {
                    std::vector<Tensor> params(x.begin(), x.begin() + long(n));
                    return model.loss(Weights(model.parameters(), params), x[n], x[n + 1]);
                  }},
                 OpKind::Logistic);
}

TEST(Gradients, CausalLMLoss) {
  Config c = testing::tiny_config();
  CausalLM model(c);
  testing::Batch batch = testing::make_batch(c, 21);
  std::vector<Literal> inputs = init_parameters(c, 5);
  // Norm gains away from one, so that their gradients are not special.
  for (size_t i = 0; i < inputs.size(); ++i)
    if (model.parameters()[i].init == ParamSpec::Init::Ones) inputs[i] = random_literal(inputs[i].type(), 30 + i, 0.5, 1.5);
  size_t n = inputs.size();
  inputs.push_back(batch.tokens);
  inputs.push_back(batch.targets);
  check_gradient({"causal_lm", inputs,
                  [&](const std::vector<Tensor>& x) {
                    std::vector<Tensor> params(x.begin(), x.begin() + long(n));
                    return model.loss(Weights(model.parameters(), params), x[n], x[n + 1]);
                  }},
                 OpKind::Scatter);
}

}  // namespace
}  // namespace tessera::nn
