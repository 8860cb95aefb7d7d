// capture and the optimizers on the tiny configuration in f64: the programs' signatures and
// output aliases, SGD and AdamW updates against their formulas computed here, and the refusals.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error_of.h"
#include "interp/interpreter.h"
#include "nn/capture.h"
#include "nn_test_util.h"

namespace tessera::nn {
namespace {

using namespace tessera::ir;

std::vector<Literal> step_args(const std::vector<Literal>& params, const testing::Batch& b) {
  std::vector<Literal> in = params;
  in.push_back(b.tokens);
  in.push_back(b.targets);
  return in;
}

TEST(Capture, SignaturesAndOutputAliases) {
  Config c = testing::tiny_config();
  Module m;
  Programs p = capture(m, TrainingStep(CausalLM(c)).with(AdamW{}));
  size_t n = p.num_parameters();
  ASSERT_EQ(n, parameter_specs(c).size());
  const Function& loss = *m.find_function(p.loss);
  const Function& step = *m.find_function(p.step);
  const Function& train = *m.find_function(p.train_step);
  EXPECT_EQ(loss.num_parameters(), n + 2);
  EXPECT_EQ(loss.result_types, std::vector<Type>{f64()});
  ASSERT_EQ(step.result_types.size(), 1 + n);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(step.result_types[1 + i], step.parameter(i)->type()) << i;
  EXPECT_EQ(train.num_parameters(), 3 * n + 3);
  EXPECT_EQ(train.parameter(p.step_input())->type(), Type(c.dtype, {3}));  // the AdamW scalars
  EXPECT_EQ(train.parameter(p.tokens_input())->type(), i32({c.batch, c.seq}));
  ASSERT_EQ(p.output_aliases.size(), 3 * n);
  for (auto [in, out] : p.output_aliases) {
    EXPECT_EQ(out, in + 1);
    EXPECT_EQ(train.parameter(in)->type(), train.result_types.at(out)) << in;
  }
}

TEST(Capture, SgdStepIsParameterMinusLrTimesGradient) {
  Config c = testing::tiny_config();
  Module m;
  const double lr = 0.125;
  Programs p = capture(m, TrainingStep(CausalLM(c)).with(Sgd{lr}));
  EXPECT_EQ(p.state_per_parameter, 0u);
  std::vector<Literal> params = init_parameters(c, 3);
  testing::Batch batch = testing::make_batch(c, 5);
  std::vector<Literal> grads = interp::evaluate(m, p.step, step_args(params, batch));
  std::vector<Literal> out = interp::evaluate(m, p.train_step, train_step_inputs(p, params, 1, batch.tokens, batch.targets));
  ASSERT_EQ(out.size(), 1 + params.size());
  EXPECT_EQ(out[0].get_double(0), grads[0].get_double(0));
  for (size_t i = 0; i < params.size(); ++i)
    for (int64_t k = 0; k < params[i].num_elements(); ++k)
      ASSERT_NEAR(out[1 + i].get_double(k), params[i].get_double(k) - lr * grads[1 + i].get_double(k), 1e-15)
          << p.parameters[i].name << " " << k;
}

TEST(Capture, AdamWTwoStepsFollowTheFormula) {
  Config c = testing::tiny_config();
  Module m;
  const AdamW o{0.01, 0.8, 0.9, 1e-3, 0.5};
  Programs p = capture(m, TrainingStep(CausalLM(c)).with(o));
  std::vector<Literal> params = init_parameters(c, 3);
  testing::Batch batch = testing::make_batch(c, 5);
  size_t n = params.size();

  // The same two steps computed here, element by element, from @step's gradients.
  std::vector<Literal> want_p = params, want_m, want_v;
  for (const Literal& x : params) want_m.emplace_back(x.type()), want_v.emplace_back(x.type());
  std::vector<Literal> in = train_step_inputs(p, params, 1, batch.tokens, batch.targets), out;
  for (int t = 1; t <= 2; ++t) {
    std::vector<Literal> grads = interp::evaluate(m, p.step, step_args(want_p, batch));
    for (size_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < params[i].num_elements(); ++k) {
        double g = grads[1 + i].get_double(k);
        double mk = o.beta1 * want_m[i].get_double(k) + (1 - o.beta1) * g;
        double vk = o.beta2 * want_v[i].get_double(k) + (1 - o.beta2) * g * g;
        double m_hat = mk / (1 - std::pow(o.beta1, t)), v_hat = vk / (1 - std::pow(o.beta2, t));
        double pk = want_p[i].get_double(k) * (1 - o.lr * o.weight_decay) - o.lr * m_hat / (std::sqrt(v_hat) + o.eps);
        want_m[i].set_double(k, mk), want_v[i].set_double(k, vk), want_p[i].set_double(k, pk);
      }
    out = interp::evaluate(m, p.train_step, in);
    for (size_t i = 0; i < 3 * n; ++i) in[i] = out[1 + i];
    in[p.step_input()] = p.step_scalars(t + 1);
  }
  for (size_t i = 0; i < n; ++i) {
    EXPECT_LE(testing::relative_error(out[1 + i], want_p[i]), 1e-12) << p.parameters[i].name;
    EXPECT_LE(testing::relative_error(out[1 + n + i], want_m[i]), 1e-12) << "m of " << p.parameters[i].name;
    EXPECT_LE(testing::relative_error(out[1 + 2 * n + i], want_v[i]), 1e-12) << "v of " << p.parameters[i].name;
  }
}

TEST(Capture, Refusals) {
  Config c = testing::tiny_config();
  Module m("twice");
  capture(m, TrainingStep(CausalLM(c)));
  std::string e = tessera::testing::error_of([&] { capture(m, TrainingStep(CausalLM(c))); });
  EXPECT_NE(e.find("module 'twice' already has a function @loss"), std::string::npos) << e;
  Module other;
  Programs p = capture(other, TrainingStep(CausalLM(c)));
  e = tessera::testing::error_of([&] { train_step_inputs(p, {}, 1, Literal(), Literal()); });
  EXPECT_NE(e.find("without an optimizer"), std::string::npos) << e;
  // A plan whose mesh does not divide a parameter is refused when its share is asked for.
  Config odd = testing::acceptance_config();
  odd.vocab = 30;
  e = tessera::testing::error_of([&] { parameter_share(tensor_parallel(Mesh{"mesh", {{"model", 4}}, {}}, "model"), odd); });
  EXPECT_NE(e.find("parameter 'head'"), std::string::npos) << e;
}

}  // namespace
}  // namespace tessera::nn
