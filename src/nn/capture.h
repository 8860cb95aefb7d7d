// capture: a CausalLM and its loss made into the programs of one training step.
//
//   nn::CausalLM model(config);
//   ir::Module m("train");
//   nn::Programs p = nn::capture(m, nn::TrainingStep{model}.with(nn::AdamW{}).sharded(plan));
//   runtime::CompiledProgram c = session.compile(m, p.train_step);
//   runtime::ShardedProgram sp = session.sharded_program(c, p.output_aliases);
//
// builds in the module (P = the model's parameters, in parameter_specs order):
//   @loss(params[P], tokens i32[b, s], targets i32[b, s]) -> f32[]            the mean cross-entropy
//   @step(same) -> (loss, grad[P])                   autodiff::reverse of @loss with return_value
//   @train_step, with an optimizer:
//     AdamW: (params[P], m[P], v[P], adamw [3], tokens, targets) -> (loss, params'[P], m'[P], v'[P])
//            where adamw holds the step's host-computed scalars (optimizer.h: decay, step size,
//            sqrt of the second bias correction), so the learning rate is an input
//     SGD:   (params[P], tokens, targets) -> (loss, params'[P])
//   with output_aliases donating each parameter and moment to its update; with clipping the
//   gradients' global norm before clipping is one more result, the last.
// Clipping (TrainingStep::clipped) is torch.nn.utils.clip_grad_norm_: norm = sqrt(sum over every
// gradient of its squares), every gradient times min(1, max_norm / (norm + 1e-6)). It is written on
// whole arrays, so under a plan that splits a gradient the partitioner adds the all-reduce of the
// partial sums of squares; under data parallelism the gradients are whole and it adds none.
// A sharding plan puts its shardings on the parameters, moments (like their parameter), tokens and
// targets of every program, and on the updated parameters and moments that @train_step returns, so
// that one step's outputs are the next step's inputs without moving. The residual stream and the
// normed inputs of each block are constrained to the tokens' layout (batch split, features whole):
// under FSDP that makes the partitioner gather each weight for its use instead of splitting the
// activations like the weight.
#pragma once

#include "autodiff/reverse.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/module.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/plan.h"

namespace tessera::nn {

// What to build: the model, and optionally an optimizer and a sharding plan.
struct TrainingStep {
  explicit TrainingStep(CausalLM m) : model(std::move(m)) {}
  CausalLM model;
  std::optional<Optimizer> optimizer;
  std::optional<ShardingPlan> plan;

  int64_t microbatches = 1;  // gradient accumulation: the batch in this many parts, one at a time
  autodiff::Remat remat = autodiff::Remat::kNone;  // what the backward recomputes
  double clip_norm = 0;  // > 0: clip the gradients to this global norm (see above)

  TrainingStep with(Optimizer o) const;
  TrainingStep sharded(ShardingPlan p) const;
  // Gradient accumulation: @step runs the batch as k microbatches (rows i, i+k, i+2k, ... form
  // microbatch i, so a batch split over devices keeps each microbatch split the same way) and
  // averages their losses and gradients: the full batch's step, with 1/k of the activations live.
  TrainingStep accumulate(int64_t k) const;
  // Rematerialization (autodiff/reverse.h): fewer activation bytes live, the same gradients.
  TrainingStep with_remat(autodiff::Remat policy) const;
  // Gradient clipping by global norm `max_norm` (> 0) before the optimizer.
  TrainingStep clipped(double max_norm) const;
};

// What was built: the functions' names and the layout of @train_step's inputs and outputs.
struct Programs {
  std::string loss = "loss", step = "step", train_step;  // train_step empty without an optimizer
  std::vector<ParamSpec> parameters;
  size_t state_per_parameter = 0;  // moments per parameter in @train_step (AdamW: m and v)
  std::vector<std::pair<size_t, size_t>> output_aliases;  // of @train_step: {input, output}
  std::optional<AdamW> adamw;                              // the optimizer, when it is AdamW
  ir::ElementType dtype = ir::ElementType::f32;            // of parameters (and the adamw input)
  bool grad_norm = false;                                  // @train_step returns the pre-clip norm last

  size_t num_parameters() const { return parameters.size(); }
  // The index of @train_step's `adamw` scalars input (AdamW only) and of its tokens.
  size_t step_input() const { return num_parameters() * (1 + state_per_parameter); }
  size_t tokens_input() const { return step_input() + (state_per_parameter > 0 ? 1 : 0); }
  // The index of @train_step's pre-clip gradient norm result (grad_norm only).
  size_t grad_norm_output() const { return 1 + num_parameters() * (1 + state_per_parameter); }
  // The `adamw` input of step `step` (1 first) at learning rate `lr` (default: the AdamW's lr).
  ir::Literal step_scalars(int64_t step, std::optional<double> lr = std::nullopt) const;
};

// Builds @loss, @step and (with an optimizer) @train_step in `module`, adding the plan's mesh when
// the module has none of its name. A UserError when a function of those names exists already.
Programs capture(ir::Module& module, const TrainingStep& step);

// The inputs of @train_step for parameters `params`: the moments start at zero, and `step` is the
// number of the step about to be taken (1 first), at the AdamW's constant lr.
std::vector<ir::Literal> train_step_inputs(const Programs& p, const std::vector<ir::Literal>& params,
                                           int64_t step, const ir::Literal& tokens, const ir::Literal& targets);

}  // namespace tessera::nn
