// The CausalLM's training step in the program form (program.h): the L layers cut into N pieces,
// each a named computation @stage<v> called once per microbatch, and the loss the mean over
// microbatches, as nn::TrainingStep::accumulate computes it:
//
//   @stage0(params_0..., tokens i32[b/M, s]) -> x [b/M, s, d]      embedding + its blocks
//   @stage<v>(params_v..., x) -> x                                  its blocks
//   @stage<N−1>(params..., x, targets i32[b/M, s]) -> loss f32[]    blocks, norm, head, cross-entropy
//   @step(params, tokens_0 … tokens_{M−1}, targets_0 …) -> (((loss_0 + loss_1) + …) + loss_{M−1}) · 1/M
//
// Microbatch i is rows i, i+M, … of the batch (accumulate's split), made on the host. With M a
// power of two, whole_step of @step gives accumulate's loss and gradients bit for bit: it seeds
// each microbatch with 1/M where accumulate seeds 1 and scales the sum (exact), and
// FragmentPipeline adds the microbatches' gradients in accumulate's order.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/literal.h"
#include "ir/module.h"
#include "nn/model.h"
#include "nn/plan.h"

namespace tessera::mpmd {

struct ModelStep {
  std::unique_ptr<ir::Module> module;  // the pieces and @step
  std::vector<std::string> virtual_stages;             // "stage0" … in model order
  std::vector<nn::ParamSpec> parameters;               // the model's
  int64_t microbatches = 1;

  const ir::Function& step() const;
  // The microbatches of a batch (tokens, targets i32 [batch, seq]) in @step's order.
  std::vector<ir::Literal> batch_inputs(const ir::Literal& tokens, const ir::Literal& targets) const;
};

// UserError when the layers do not split into `virtual_stages` pieces or the microbatches do not
// divide the batch (or its devices' share). With `stage_plan` (dp, tp or both over one stage's
// devices) the step carries the plan's layouts (the residual stream like the tokens) and its mesh.
ModelStep model_step(const nn::CausalLM& model, int64_t virtual_stages, int64_t microbatches,
                     const std::optional<nn::ShardingPlan>& stage_plan = std::nullopt);

}  // namespace tessera::mpmd
