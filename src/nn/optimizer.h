// Optimizers as programs: the update of one parameter, built as IR inside the training step, so
// that it runs on the devices where the parameter's pieces live and its moments are held like it.
//
//   SGD:    p' = p - lr * g
//   AdamW:  (PyTorch's torch.optim.AdamW, decoupled weight decay, t = the step number from 1)
//           m' = beta1 * m + (1 - beta1) * g
//           v' = beta2 * v + (1 - beta2) * g²
//           p' = p * (1 - lr * weight_decay) - lr / (1 - beta1^t) * m' / (sqrt(v') / sqrt(1 - beta2^t) + eps)
#pragma once

#include <variant>

#include "ir/builder.h"

namespace tessera::nn {

struct Sgd {
  double lr = 1e-2;
};

struct AdamW {  // PyTorch's defaults
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 1e-2;
};

using Optimizer = std::variant<Sgd, AdamW>;

// Arrays of optimizer state per parameter: 0 for SGD, 2 (m and v) for AdamW.
size_t state_per_parameter(const Optimizer& o);

ir::Tensor sgd_update(const Sgd& o, const ir::Tensor& p, const ir::Tensor& g);

struct AdamWState {
  ir::Tensor p, m, v;
};
// `t` is the step number, a scalar of p's element type (1 for the first step).
AdamWState adamw_update(const AdamW& o, const AdamWState& old, const ir::Tensor& g, const ir::Tensor& t);

}  // namespace tessera::nn
