// The SGD and AdamW updates of optimizer.h, written as PyTorch's single-tensor AdamW computes them
// (the bias corrections applied to the step size and to sqrt(v), not to m and v themselves).
#include "nn/optimizer.h"

namespace tessera::nn {

using ir::Tensor;

size_t state_per_parameter(const Optimizer& o) { return std::holds_alternative<AdamW>(o) ? 2 : 0; }

Tensor sgd_update(const Sgd& o, const Tensor& p, const Tensor& g) { return p - o.lr * g; }

AdamWState adamw_update(const AdamW& o, const AdamWState& old, const Tensor& g, const Tensor& t) {
  ir::Builder& b = g.builder();
  Tensor m = o.beta1 * old.m + (1 - o.beta1) * g;
  Tensor v = o.beta2 * old.v + (1 - o.beta2) * g * g;
  // Scalars of the step: 1 - beta^t for both moments.
  Tensor correction1 = 1.0 - ir::pow(b.scalar(t.element(), o.beta1), t);
  Tensor correction2 = 1.0 - ir::pow(b.scalar(t.element(), o.beta2), t);
  Tensor step_size = o.lr / correction1;
  Tensor denom = ir::sqrt(v) / ir::sqrt(correction2) + o.eps;
  Tensor p = old.p * (1 - o.lr * o.weight_decay) - step_size * (m / denom);
  return {p, m, v};
}

}  // namespace tessera::nn
