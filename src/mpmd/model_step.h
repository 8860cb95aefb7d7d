// The CausalLM's training step in the program form (program.h): the model's L layers cut into
// N consecutive pieces, each a named computation @stage<v> called once per microbatch (call
// counter = microbatch), and the loss the mean over microbatches, as nn::TrainingStep::accumulate
// computes it.
//
//   @stage0(params_0..., tokens i32[b/M, s])              -> x [b/M, s, d]   embedding + its blocks
//   @stage<v>(params_v..., x)                              -> x              its blocks
//   @stage<N−1>(params_{N−1}..., x, targets i32[b/M, s])   -> loss f32[]     its blocks, the final
//                                                                             norm, head, cross-entropy
//   @step(params[P], tokens_0 … tokens_{M−1}, targets_0 … targets_{M−1})
//        -> (((loss_0 + loss_1) + …) + loss_{M−1}) · 1/M
//
// The blocks are nn::CausalLM's own (embed, block, head), on the microbatch's shapes. Microbatch i
// is rows i, i+M, … of the batch (microbatch_rows), accumulate's split; the host splits the batch,
// so the step has no slicing glue. With M a power of two, whole_step of @step gives accumulate's
// loss and gradients bit for bit: its backward seeds each microbatch with 1/M where accumulate
// seeds 1 and scales the sum, an exact scaling, and FragmentPipeline adds the microbatches'
// gradients in accumulate's order.
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
  std::vector<std::vector<size_t>> stage_parameters;   // per piece: indices into parameter_specs, in order
  std::vector<nn::ParamSpec> parameters;               // the model's
  int64_t microbatches = 1;

  const ir::Function& step() const;
  // @step's inputs after the parameters: the tokens of microbatch i, then the targets.
  size_t tokens_input(int64_t i) const { return parameters.size() + static_cast<size_t>(i); }
  size_t targets_input(int64_t i) const { return parameters.size() + static_cast<size_t>(microbatches + i); }
  // The microbatches of a batch (tokens, targets i32 [batch, seq]) in @step's order.
  std::vector<ir::Literal> batch_inputs(const ir::Literal& tokens, const ir::Literal& targets) const;
};

// UserError when the layers do not split into `virtual_stages` pieces of whole layers or the
// microbatches do not divide the batch (or, with a stage plan, a microbatch does not split over the
// devices that share the batch). With `stage_plan` (an nn::ShardingPlan over the mesh of one
// stage's devices: dp, tp or both) the step carries the plan's layouts — parameters as it lays them
// out, tokens and targets by its input rule, the residual stream constrained like the tokens — and
// the module has its mesh (FragmentPipelineOptions::stage_mesh).
ModelStep model_step(const nn::CausalLM& model, int64_t virtual_stages, int64_t microbatches,
                     const std::optional<nn::ShardingPlan>& stage_plan = std::nullopt);

// Whether parameter `name` (config.h's names) belongs to the piece of blocks [first_layer,
// end_layer) that `embeds` (piece 0) or `has_loss` (the last).
bool in_piece(const std::string& name, int64_t first_layer, int64_t end_layer, bool embeds, bool has_loss);

// Microbatch i of M of a batch-major array [batch, ...]: rows i, i+M, i+2M, ... — the split of
// nn::TrainingStep::accumulate, so the pipeline and the accumulated step see the same microbatches.
ir::Literal microbatch_rows(const ir::Literal& batch, int64_t i, int64_t microbatches);

}  // namespace tessera::mpmd
