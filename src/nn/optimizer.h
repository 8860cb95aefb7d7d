// Optimizers as programs: the update of one parameter, built as IR inside the training step, so
// that it runs on the devices where the parameter's pieces live and its moments are held like it.
//
//   SGD:    p' = p - lr * g
//   AdamW:  PyTorch's torch.optim.AdamW (foreach=False), t = the step number from 1:
//           p  = p * (1 - lr * weight_decay)                      (only parameters that decay)
//           m' = beta1 * m + (1 - beta1) * g
//           v' = beta2 * v + (1 - beta2) * g²
//           p' = p - lr / (1 - beta1^t) * m' / (sqrt(v') / sqrt(1 - beta2^t) + eps)
//
// The step-dependent scalars (1 - lr * weight_decay, lr / (1 - beta1^t), sqrt(1 - beta2^t)) are
// computed on the host in double, as PyTorch computes them in Python floats, and enter the
// program as one input `adamw [3]` of the parameters' type (rounded once, as PyTorch rounds a
// Python scalar for an f32 kernel). Computing 1 - beta2^t in f32 instead makes every update
// ~7e-6 relatively smaller than PyTorch's (issue #21). The learning rate is therefore an input
// too: one compiled program serves every step of a learning-rate schedule.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "ir/builder.h"

namespace tessera::nn {

struct Sgd {
  double lr = 1e-2;
};

struct AdamW {  // PyTorch's defaults
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 1e-2;
  // Parameters whose names match one of these fnmatch(3) patterns get no weight decay (a second
  // parameter group with weight_decay 0, as nanoGPT and torchtitan give norms and embeddings).
  std::vector<std::string> no_decay = {};
};

using Optimizer = std::variant<Sgd, AdamW>;

// Arrays of optimizer state per parameter: 0 for SGD, 2 (m and v) for AdamW.
size_t state_per_parameter(const Optimizer& o);

ir::Tensor sgd_update(const Sgd& o, const ir::Tensor& p, const ir::Tensor& g);

// Whether parameter `name` decays (matches none of o.no_decay).
bool decays(const AdamW& o, const std::string& name);
// UserError naming a pattern of o.no_decay that matches none of `names` (a typo would otherwise
// silently decay everything).
void check_no_decay(const AdamW& o, const std::vector<std::string>& names);

// The host scalars of step `step` (1 first) at learning rate `lr`, in double, as torch.optim.AdamW
// computes them: {1 - lr * weight_decay, lr / (1 - beta1^step), sqrt(1 - beta2^step)}.
struct AdamWScalars {
  double decay = 1, step_size = 0, bias_correction2_sqrt = 1;
};
AdamWScalars adamw_scalars(const AdamW& o, int64_t step, double lr);
// The same as the program's `adamw` input: a [3] array of `type`.
ir::Literal adamw_scalars_literal(const AdamW& o, int64_t step, double lr, ir::ElementType type);

struct AdamWState {
  ir::Tensor p, m, v;
};
// `scalars` is the [3] input above; `decay`: whether this parameter decays.
AdamWState adamw_update(const AdamW& o, const AdamWState& old, const ir::Tensor& g, const ir::Tensor& scalars,
                        bool decay);

// Learning-rate schedules, as torch.optim.lr_scheduler.LambdaLR multiplies the base lr by
// lambda(k) before optimizer step k + 1 (k = 0, 1, ...):
//   k < warmup:  (k + 1) / warmup                                  (linear warmup, never 0)
//   otherwise, with p = min(1, (k - warmup) / max(1, total - warmup)) and r = min_lr / lr:
//     constant: 1;   linear: r + (1 - r)(1 - p);   cosine: r + (1 - r)(1 + cos(pi p)) / 2
// `total` is the step the decay ends at (the run's last step).
struct LrSchedule {
  enum class Kind { kConstant, kLinear, kCosine };
  Kind kind = Kind::kConstant;
  double lr = 1e-3, min_lr = 0;
  int64_t warmup = 0, total = 1;
};
LrSchedule::Kind parse_lr_schedule(const std::string& name);  // constant | linear | cosine
std::string lr_schedule_name(LrSchedule::Kind kind);
double lr_lambda(const LrSchedule& s, int64_t k);
// The learning rate of step `step` (1 first): lr * lambda(step - 1).
double lr_at(const LrSchedule& s, int64_t step);

}  // namespace tessera::nn
