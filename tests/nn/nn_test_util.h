// Shared by the nn tests: the tiny and the acceptance configurations, deterministic batches and
// random arrays, and the one comparison the tests use (scale-relative error of a whole array).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/literal.h"
#include "nn/capture.h"
#include "nn/config.h"
#include "runtime/session.h"

namespace tessera::nn::testing {

// Issue #6's configuration: 78,144 parameters, batch 8 x 16.
Config acceptance_config();
// A model small enough for finite differences in f64 (2 query heads sharing 1 key/value head).
Config tiny_config();

// Tokens i32 [batch, seq] from a fixed seed, and their targets: the next token of the same stream.
struct Batch {
  ir::Literal tokens, targets;
};
Batch make_batch(const Config& c, uint64_t seed);

// Uniform values in [lo, hi] of type t from a fixed seed.
ir::Literal random_literal(const ir::Type& t, uint64_t seed, double lo = -1, double hi = 1);

// The larger of max |got - want| / max |want| over the array (0 when both are zero: entries near
// zero are judged against the array's scale) and, over the entries whose |want| is at least
// kElementFloor of that scale, |got - want| / |want| (each such entry against its own size).
// INFINITY when one side has a NaN the other has not.
inline constexpr double kElementFloor = 0.1;
double relative_error(const ir::Literal& got, const ir::Literal& want);

// A sharded @step's results `got` (the loss, then each gradient) against the unsharded `want`:
// each within `tolerance` (relative_error) and each gradient laid out like its parameter under
// `plan`, as gtest expectations; returns the largest error.
double expect_step_matches(const std::vector<ir::Literal>& got, const std::vector<ir::Literal>& want,
                           const Programs& p, const runtime::CompiledProgram& compiled, const ShardingPlan& plan,
                           double tolerance);

}  // namespace tessera::nn::testing
