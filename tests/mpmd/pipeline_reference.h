// The unsharded twin the pipeline training tests compare with: steps of @train_step of
// nn::TrainingStep{model}.accumulate(M).with(pipeline_adamw()) on the interpreter, on the small
// CausalLM of pipeline_test_util.h (in f32, or mixed precision with bf16 compute), a different
// batch each step.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "exec/accelerate.h"
#include "interp/interpreter.h"
#include "nn/capture.h"
#include "nn/nn_test_util.h"
#include "pipeline_test_util.h"

namespace tessera::mpmd::testing {

// Step t's batch (a different one each step).
inline const nn::testing::Batch& pipeline_batch(int64_t t) {
  static std::map<int64_t, nn::testing::Batch> cache;
  auto it = cache.find(t);
  if (it == cache.end())
    it = cache.emplace(t, nn::testing::make_batch(pipeline_config(), 100 + static_cast<uint64_t>(t))).first;
  return it->second;
}

// Per step the loss, and the parameters after the last step.
struct Reference {
  std::vector<ir::Literal> losses, parameters;
};

// `steps` steps from pipeline_initial_parameters() (cached per (microbatches, steps, compute));
// `compute`: Config::compute (bf16: mixed precision), none for f32 throughout.
inline const Reference& pipeline_reference(int64_t microbatches, int64_t steps,
                                           std::optional<ir::ElementType> compute = std::nullopt) {
  static std::map<std::tuple<int64_t, int64_t, std::optional<ir::ElementType>>, Reference> cache;
  auto it = cache.find({microbatches, steps, compute});
  if (it != cache.end()) return it->second;
  nn::Config config = pipeline_config();
  config.compute = compute;
  nn::CausalLM model(config);
  ir::Module m("whole");
  nn::Programs p = nn::capture(m, nn::TrainingStep{model}.accumulate(microbatches).with(pipeline_adamw()));
  interp::Options o;
  o.accelerate = exec::accelerate;
  const size_t n = p.num_parameters();
  std::vector<ir::Literal> in =
      nn::train_step_inputs(p, pipeline_initial_parameters(), 1, pipeline_batch(1).tokens, pipeline_batch(1).targets);
  Reference r;
  for (int64_t t = 1; t <= steps; ++t) {
    in[p.step_input()] = p.step_scalars(t);
    in[p.tokens_input()] = pipeline_batch(t).tokens;
    in[p.tokens_input() + 1] = pipeline_batch(t).targets;
    std::vector<ir::Literal> out = interp::evaluate(m, p.train_step, in, o);
    r.losses.push_back(out[0]);
    for (size_t i = 0; i < 3 * n; ++i) in[i] = std::move(out[1 + i]);
  }
  r.parameters.assign(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
  return cache[{microbatches, steps, compute}] = std::move(r);
}

}  // namespace tessera::mpmd::testing
