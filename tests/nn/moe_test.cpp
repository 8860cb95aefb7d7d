// The MoE layer (nn/moe.h) against a per-token loop written directly in C++ (routing, slots,
// capacity with dropped tokens, gates, experts, the load-balancing loss), for top-1 and top-2, in
// f64; the capacity formula; and the Config's MoE fields (parameters, refusals).
#include <gtest/gtest.h>

#include <cmath>

#include "common/error_of.h"
#include "interp/interpreter.h"
#include "nn/model.h"
#include "nn/moe.h"
#include "nn_test_util.h"

namespace tessera::nn {
namespace {

using namespace tessera::ir;
using testing::random_literal;

constexpr double kTolerance = 1e-12;  // f64, relative to the array's scale (testing::relative_error)

struct Sizes {
  int64_t G, S, M, E, F;
};

struct Oracle {
  Literal y;
  double aux = 0;
  int64_t dropped = 0;  // choices beyond capacity
};

// The layer token by token, as moe.h describes it.
Oracle per_token(const Sizes& z, const Literal& x, const Literal& router, const Literal& gate, const Literal& up,
                 const Literal& down, int64_t k, int64_t capacity) {
  Oracle out{Literal(f64({z.G, z.S, z.M}))};
  auto X = [&](int64_t g, int64_t s, int64_t m) { return x.get_double((g * z.S + s) * z.M + m); };
  std::vector<double> fraction(size_t(z.E), 0), mean_prob(size_t(z.E), 0);
  const double n = double(z.G * z.S);
  for (int64_t g = 0; g < z.G; ++g) {
    std::vector<std::vector<double>> probs(size_t(z.S), std::vector<double>(size_t(z.E)));
    std::vector<int64_t> first(size_t(z.S)), second(size_t(z.S));
    for (int64_t s = 0; s < z.S; ++s) {
      std::vector<double>& p = probs[size_t(s)];
      double mx = -INFINITY, total = 0;
      for (int64_t e = 0; e < z.E; ++e) {
        double l = 0;
        for (int64_t m = 0; m < z.M; ++m) l += X(g, s, m) * router.get_double(m * z.E + e);
        p[size_t(e)] = l;
        mx = std::max(mx, l);
      }
      for (double& v : p) total += (v = std::exp(v - mx));
      for (double& v : p) v /= total;
      auto argmax = [&](int64_t skip) {
        int64_t best = -1;
        for (int64_t e = 0; e < z.E; ++e)
          if (e != skip && (best < 0 || p[size_t(e)] > p[size_t(best)])) best = e;
        return best;
      };
      first[size_t(s)] = argmax(-1);
      second[size_t(s)] = argmax(first[size_t(s)]);
      fraction[size_t(first[size_t(s)])] += 1 / n;
      for (int64_t e = 0; e < z.E; ++e) mean_prob[size_t(e)] += p[size_t(e)] / n;
    }
    // Slots: first choices in token order, then second choices after all first choices.
    std::vector<int64_t> used(size_t(z.E), 0);
    std::vector<std::vector<std::pair<int64_t, double>>> kept(size_t(z.S));  // (expert, gate)
    for (int pass = 0; pass < k; ++pass)
      for (int64_t s = 0; s < z.S; ++s) {
        const std::vector<double>& p = probs[size_t(s)];
        int64_t e = pass == 0 ? first[size_t(s)] : second[size_t(s)];
        double w = p[size_t(e)];
        if (k == 2) w /= p[size_t(first[size_t(s)])] + p[size_t(second[size_t(s)])];
        if (used[size_t(e)]++ < capacity) kept[size_t(s)].push_back({e, w});
        else ++out.dropped;
      }
    for (int64_t s = 0; s < z.S; ++s)
      for (auto [e, w] : kept[size_t(s)]) {
        std::vector<double> act(size_t(z.F));
        for (int64_t f = 0; f < z.F; ++f) {
          double h = 0, u = 0;
          for (int64_t m = 0; m < z.M; ++m) {
            h += X(g, s, m) * gate.get_double((e * z.M + m) * z.F + f);
            u += X(g, s, m) * up.get_double((e * z.M + m) * z.F + f);
          }
          act[size_t(f)] = h / (1 + std::exp(-h)) * u;
        }
        for (int64_t m = 0; m < z.M; ++m) {
          double v = 0;
          for (int64_t f = 0; f < z.F; ++f) v += act[size_t(f)] * down.get_double((e * z.F + f) * z.M + m);
          int64_t at = (g * z.S + s) * z.M + m;
          out.y.set_double(at, out.y.get_double(at) + w * v);
        }
      }
  }
  for (int64_t e = 0; e < z.E; ++e) out.aux += double(z.E) * fraction[size_t(e)] * mean_prob[size_t(e)];
  return out;
}

void check_against_loop(int64_t k, double capacity_factor, int64_t want_capacity) {
  const Sizes z{2, 8, 4, 4, 3};
  ASSERT_EQ(moe_capacity(z.S, z.E, k, capacity_factor), want_capacity);
  Literal x = random_literal(f64({z.G, z.S, z.M}), 1);
  // A router that prefers expert 0, so that its slots overflow.
  Literal router = random_literal(f64({z.M, z.E}), 2, -1, 1);
  for (int64_t m = 0; m < z.M; ++m) router.set_double(m * z.E, router.get_double(m * z.E) + 0.8);
  Literal gate = random_literal(f64({z.E, z.M, z.F}), 3), up = random_literal(f64({z.E, z.M, z.F}), 4);
  Literal down = random_literal(f64({z.E, z.F, z.M}), 5);
  Module mod;
  build_function(mod, "moe", [&](FunctionBuilder& f) {
    Tensor xs = f.param(x.type()), r = f.param(router.type()), g = f.param(gate.type()), u = f.param(up.type());
    MoeOutput o = moe(xs, MoeWeights{r, g, u, f.param(down.type())}, k, capacity_factor);
    return std::vector<Tensor>{o.y, *o.aux};
  });
  std::vector<Literal> got = interp::evaluate(mod, "moe", {x, router, gate, up, down});
  Oracle want = per_token(z, x, router, gate, up, down, k, want_capacity);
  EXPECT_GT(want.dropped, 0) << "the case must drop tokens";
  EXPECT_LE(testing::relative_error(got[0], want.y), kTolerance) << "top-" << k;
  EXPECT_NEAR(got[1].get_double(0), want.aux, kTolerance) << "top-" << k;
  // Dropped choices change the result: with room for every token the output differs.
  Oracle roomy = per_token(z, x, router, gate, up, down, k, z.S);
  EXPECT_EQ(roomy.dropped, 0);
  EXPECT_GT(testing::relative_error(roomy.y, want.y), 1e-3);
}

TEST(Moe, Top1MatchesPerTokenLoopWithDroppedTokens) { check_against_loop(1, 1.0, 2); }
TEST(Moe, Top2MatchesPerTokenLoopWithDroppedTokens) { check_against_loop(2, 0.75, 3); }

TEST(Moe, Capacity) {
  EXPECT_EQ(moe_capacity(16, 4, 1, 1.25), 5);   // ceil(1.25 * 16 / 4)
  EXPECT_EQ(moe_capacity(16, 4, 2, 1.0), 8);    // ceil(2 * 16 / 4)
  EXPECT_EQ(moe_capacity(16, 4, 2, 10.0), 16);  // never more than the group's tokens
  EXPECT_EQ(moe_capacity(4, 64, 1, 0.01), 1);   // never fewer than one slot
  std::string e = tessera::testing::error_of([] { moe_capacity(16, 4, 3, 1.0); });
  EXPECT_NE(e.find("k = 3"), std::string::npos) << e;
  e = tessera::testing::error_of([] { moe_capacity(16, 4, 1, -1.0); });
  EXPECT_NE(e.find("capacity factor -1"), std::string::npos) << e;
}

TEST(Moe, ConfigAddsExpertParametersAndRefusesBadFields) {
  Config c = testing::acceptance_config();
  c.experts = 4;
  std::vector<ParamSpec> specs = parameter_specs(c);
  auto shape_of = [&](const std::string& name) { return specs[parameter_index(specs, name)].shape; };
  using S = std::vector<int64_t>;
  EXPECT_EQ(shape_of("layers.0.moe.router"), (S{64, 4}));
  EXPECT_EQ(shape_of("layers.1.moe.gate"), (S{4, 64, 128}));
  EXPECT_EQ(shape_of("layers.1.moe.up"), (S{4, 64, 128}));
  EXPECT_EQ(shape_of("layers.0.moe.down"), (S{4, 128, 64}));
  EXPECT_NE(tessera::testing::error_of([&] { parameter_index(specs, "layers.0.mlp.gate"); }), "<no error>");
  // The dense model's 78,144 less its 2 x 3 x 64 x 128 MLP weights, plus 4 experts' and routers.
  EXPECT_EQ(parameter_count(c), 78144 - 2 * 3 * 64 * 128 + 2 * (4 * 3 * 64 * 128 + 64 * 4));
  c.top_k = 2;
  c.experts = 1;
  std::string e = tessera::testing::error_of([&] { c.validate(); });
  EXPECT_NE(e.find("top_k (2) exceeds experts (1)"), std::string::npos) << e;
  c.experts = 4;
  c.capacity_factor = 0;
  e = tessera::testing::error_of([&] { c.validate(); });
  EXPECT_NE(e.find("capacity_factor must be a positive number, got 0"), std::string::npos) << e;
  c.capacity_factor = 1;
  c.experts = -2;
  e = tessera::testing::error_of([&] { c.validate(); });
  EXPECT_NE(e.find("experts must be 0"), std::string::npos) << e;
}

}  // namespace
}  // namespace tessera::nn
