// A small CausalLM training step for the exec tests that run a whole step (row groups, one-hots):
// its scores [4, 2, 64, 2, 64] and logits [4, 64, 512] are past the fusion minimum, so its
// softmaxes and cross-entropy run as fused loops and row groups.
#pragma once

#include <vector>

#include "ir/literal.h"
#include "nn/capture.h"
#include "nn/config.h"
#include "nn/model.h"
#include "nn/plan.h"

namespace tessera::testing {

inline nn::Config small_lm() {
  nn::Config c;
  c.vocab = 512;
  c.d_model = 64;
  c.layers = 1;
  c.heads = 4;
  c.kv_heads = 2;
  c.ffn = 128;
  c.batch = 4;
  c.seq = 64;
  return c;
}

// The step's inputs: c's initial parameters, step 1, tokens that are their own targets.
inline std::vector<ir::Literal> small_step_inputs(const nn::Config& c, const nn::Programs& p) {
  std::vector<int64_t> ids(static_cast<size_t>(c.batch * c.seq));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 37 + 11) % static_cast<size_t>(c.vocab));
  ir::Literal t = ir::Literal::from_ints(ir::i32({c.batch, c.seq}), ids);
  std::vector<ir::Literal> in = nn::train_step_inputs(p, nn::init_parameters(c, 1), 1, t, t);
  in[p.step_input()] = p.step_scalars(1);
  return in;
}

}  // namespace tessera::testing
