// Helpers of nn_test_util.h.
#include "nn_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace tessera::nn::testing {

Config acceptance_config() {
  Config c;
  c.vocab = 32, c.d_model = 64, c.layers = 2, c.heads = 8, c.kv_heads = 4, c.ffn = 128, c.seq = 16, c.batch = 8;
  return c;
}

Config tiny_config() {
  Config c;
  c.vocab = 7, c.d_model = 8, c.layers = 1, c.heads = 2, c.kv_heads = 1, c.ffn = 6, c.seq = 4, c.batch = 2;
  c.init_std = 0.5;  // large enough that every nonlinearity is exercised
  c.dtype = ir::ElementType::f64;
  return c;
}

namespace {
uint64_t next(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace

Batch make_batch(const Config& c, uint64_t seed) {
  uint64_t state = seed;
  Batch b{ir::Literal(ir::i32({c.batch, c.seq})), ir::Literal(ir::i32({c.batch, c.seq}))};
  for (int64_t r = 0; r < c.batch; ++r) {
    std::vector<int64_t> stream;
    for (int64_t i = 0; i <= c.seq; ++i) stream.push_back(static_cast<int64_t>(next(state) % uint64_t(c.vocab)));
    for (int64_t i = 0; i < c.seq; ++i) {
      b.tokens.set_int(r * c.seq + i, stream[size_t(i)]);
      b.targets.set_int(r * c.seq + i, stream[size_t(i) + 1]);
    }
  }
  return b;
}

ir::Literal random_literal(const ir::Type& t, uint64_t seed, double lo, double hi) {
  uint64_t state = seed * 7919 + 1;
  ir::Literal out(t);
  for (int64_t i = 0; i < out.num_elements(); ++i)
    out.set_double(i, lo + (hi - lo) * double(next(state) >> 11) * 0x1.0p-53);
  return out;
}

double relative_error(const ir::Literal& got, const ir::Literal& want) {
  EXPECT_EQ(got.type(), want.type());
  if (got.type() != want.type()) return INFINITY;
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    diff = std::max(diff, std::abs(got.get_double(i) - want.get_double(i)));
    scale = std::max(scale, std::abs(want.get_double(i)));
    if (std::isnan(got.get_double(i)) != std::isnan(want.get_double(i))) return INFINITY;
  }
  if (diff == 0) return 0;
  // Entries of at least kElementFloor of the array's scale are also judged against their own size,
  // so a wrong small entry is not hidden by a large one elsewhere (smaller ones hold only rounding).
  double worst = diff / scale;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    double w = std::abs(want.get_double(i));
    if (std::isnan(w) || w < kElementFloor * scale) continue;
    worst = std::max(worst, std::abs(got.get_double(i) - want.get_double(i)) / w);
  }
  return worst;
}

double expect_step_matches(const std::vector<ir::Literal>& got, const std::vector<ir::Literal>& want,
                           const Programs& p, const runtime::CompiledProgram& compiled, const ShardingPlan& plan,
                           double tolerance) {
  EXPECT_EQ(got.size(), want.size());
  if (got.size() != want.size() || got.size() != 1 + p.num_parameters()) return INFINITY;
  double worst = relative_error(got[0], want[0]);
  EXPECT_LE(worst, tolerance) << "loss";
  for (size_t i = 0; i < p.num_parameters(); ++i) {
    double e = relative_error(got[1 + i], want[1 + i]);
    worst = std::max(worst, e);
    EXPECT_LE(e, tolerance) << p.parameters[i].name;
    // Each gradient comes out laid out like its parameter's optimizer state (like the parameter,
    // unless the plan shards the weight update).
    EXPECT_EQ(compiled.info.result_shardings[1 + i].dims, state_sharding(plan, p.parameters[i]).dims) << p.parameters[i].name;
  }
  return worst;
}

}  // namespace tessera::nn::testing
