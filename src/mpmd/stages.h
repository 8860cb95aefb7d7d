// Stage programs: the CausalLM cut by layers into the programs that pipeline stages run.
//
// The model's L layers are cut into N = P·V consecutive pieces, the virtual stages of a schedule
// (schedule.h): piece 0 is the embedding and its blocks, the middle pieces are blocks, the last is
// its blocks, the final norm, the head and the cross-entropy (the mean over one microbatch's
// tokens). Each piece becomes a forward program over one microbatch and its backward programs,
// taken from autodiff::reverse of the forward, so a stage's gradients are exactly the chain rule
// through its own layers and nothing is written twice:
//
//   fwd_v (params_v..., input[, targets])                -> activation [b/M, seq, d]   (or the loss)
//   bwd_v (params_v..., input[, targets][, cotangent])   -> (grad params_v...[, input cotangent])
//   bwd_input_v  (same inputs)                           -> input cotangent           (BI; v > 0)
//   bwd_weight_v (same inputs)                           -> grad params_v...          (W)
//
// `input` is the tokens i32 [b/M, seq] on piece 0 and the previous piece's activation otherwise;
// the last piece takes the targets and no cotangent (its loss is seeded with 1; the runtime scales
// by 1/M). A backward recomputes its piece's forward from the saved input: a stage keeps one array
// per microbatch in flight, not every intermediate. Parameters never leave their piece.
//
// With a stage plan (an nn::ShardingPlan over the mesh of one stage's device group: dp, tp or
// dp,tp), every program carries the plan's shardings: parameters as the plan lays them out, tokens
// and targets by its input rule, and the activation, its cotangent and the input cotangent like the
// residual stream (the tokens' layout, features whole), as nn::capture constrains it. Each stage's
// group then compiles the same programs through spmd (sharded_stage.h); without a plan they are
// plain single-device programs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "ir/literal.h"
#include "ir/module.h"
#include "mpmd/model_step.h"
#include "nn/model.h"
#include "nn/plan.h"

namespace tessera::mpmd {

struct StageProgram {
  int64_t virtual_stage = 0;
  int64_t first_layer = 0, end_layer = 0;  // the blocks [first_layer, end_layer)
  bool embeds = false;                     // takes tokens (piece 0)
  bool has_loss = false;                   // takes targets and returns the loss (the last piece)
  std::vector<size_t> parameters;          // indices into the model's parameter_specs, in order
  const ir::Function* forward = nullptr;
  const ir::Function* backward = nullptr;
  const ir::Function* backward_input = nullptr;  // null on piece 0: the tokens have no gradient
  const ir::Function* backward_weight = nullptr;
};

// The programs of every piece, in one module.
class StagedModel {
 public:
  // UserError when the layers do not divide into `virtual_stages` pieces or the microbatches do
  // not divide the batch, or (with a stage plan) a microbatch does not split over its data axis.
  StagedModel(const nn::CausalLM& model, int64_t virtual_stages, int64_t microbatches,
              std::optional<nn::ShardingPlan> stage_plan = std::nullopt);

  const ir::Module& module() const { return *module_; }
  const nn::Config& config() const { return config_; }              // the whole batch
  const nn::Config& micro_config() const { return micro_config_; }  // batch = rows per microbatch
  int64_t microbatches() const { return microbatches_; }
  int64_t virtual_stages() const { return static_cast<int64_t>(stages_.size()); }
  const StageProgram& stage(int64_t virtual_stage) const;
  const std::vector<nn::ParamSpec>& parameters() const { return specs_; }
  // The layout of every stage's programs over its own device group; none: one device per stage.
  const std::optional<nn::ShardingPlan>& stage_plan() const { return plan_; }
  int64_t devices_per_stage() const { return plan_ ? plan_->mesh.num_devices() : 1; }

 private:
  std::unique_ptr<ir::Module> module_;  // behind a pointer: StageProgram points into it
  nn::Config config_, micro_config_;
  int64_t microbatches_;
  std::vector<nn::ParamSpec> specs_;
  std::vector<StageProgram> stages_;
  std::optional<nn::ShardingPlan> plan_;
};

}  // namespace tessera::mpmd
