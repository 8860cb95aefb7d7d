// The SGD and AdamW updates of optimizer.h, written as PyTorch's single-tensor AdamW computes them
// (decay first, the bias corrections applied to the step size and to sqrt(v), not to m and v).
#include "nn/optimizer.h"

#include <fnmatch.h>

#include <cmath>
#include <numbers>

#include "support/error.h"

namespace tessera::nn {

using ir::Tensor;

size_t state_per_parameter(const Optimizer& o) { return std::holds_alternative<AdamW>(o) ? 2 : 0; }

Tensor sgd_update(const Sgd& o, const Tensor& p, const Tensor& g) { return p - o.lr * g; }

bool decays(const AdamW& o, const std::string& name) {
  for (const std::string& pattern : o.no_decay)
    if (fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return false;
  return true;
}

void check_no_decay(const AdamW& o, const std::vector<std::string>& names) {
  for (const std::string& pattern : o.no_decay) {
    bool any = false;
    for (const std::string& n : names) any = any || fnmatch(pattern.c_str(), n.c_str(), 0) == 0;
    if (!any) support::fail("no-decay pattern '{}' matches no parameter (names are like embed, layers.0.attn_norm, "
                            "layers.0.attn.q, norm, head)", pattern);
  }
}

AdamWScalars adamw_scalars(const AdamW& o, int64_t step, double lr) {
  if (step < 1) support::fail("nn::adamw_scalars: step {} (the first is 1)", step);
  // torch/optim/adamw.py (_single_tensor_adam with decoupled weight decay), in Python floats.
  double t = static_cast<double>(step);
  return {1 - lr * o.weight_decay, lr / (1 - std::pow(o.beta1, t)), std::sqrt(1 - std::pow(o.beta2, t))};
}

ir::Literal adamw_scalars_literal(const AdamW& o, int64_t step, double lr, ir::ElementType type) {
  AdamWScalars s = adamw_scalars(o, step, lr);
  ir::Literal l(ir::Type(type, {3}));
  l.set_double(0, s.decay);
  l.set_double(1, s.step_size);
  l.set_double(2, s.bias_correction2_sqrt);
  return l;
}

AdamWState adamw_update(const AdamW& o, const AdamWState& old, const Tensor& g, const Tensor& scalars, bool decay) {
  auto scalar = [&](int64_t i) { return ir::reshape(ir::slice(scalars, {i}, {i + 1}), {}); };
  Tensor p = old.p;
  if (decay && o.weight_decay != 0) p = p * scalar(0);
  Tensor m = o.beta1 * old.m + (1 - o.beta1) * g;
  Tensor v = o.beta2 * old.v + (1 - o.beta2) * g * g;
  Tensor denom = ir::sqrt(v) / scalar(2) + o.eps;
  p = p - scalar(1) * (m / denom);
  return {p, m, v};
}

LrSchedule::Kind parse_lr_schedule(const std::string& name) {
  if (name == "constant") return LrSchedule::Kind::kConstant;
  if (name == "linear") return LrSchedule::Kind::kLinear;
  if (name == "cosine") return LrSchedule::Kind::kCosine;
  support::fail("--lr-schedule {}: expected cosine, linear or constant", name);
}

std::string lr_schedule_name(LrSchedule::Kind kind) {
  switch (kind) {
    case LrSchedule::Kind::kConstant: return "constant";
    case LrSchedule::Kind::kLinear: return "linear";
    case LrSchedule::Kind::kCosine: return "cosine";
  }
  return "?";
}

double lr_lambda(const LrSchedule& s, int64_t k) {
  if (k < s.warmup) return double(k + 1) / double(s.warmup);
  if (s.kind == LrSchedule::Kind::kConstant) return 1;
  double p = std::min(1.0, double(k - s.warmup) / double(std::max<int64_t>(1, s.total - s.warmup)));
  double r = s.min_lr / s.lr;
  if (s.kind == LrSchedule::Kind::kLinear) return r + (1 - r) * (1 - p);
  return r + (1 - r) * (1 + std::cos(std::numbers::pi * p)) / 2;
}

double lr_at(const LrSchedule& s, int64_t step) { return s.lr * lr_lambda(s, step - 1); }

}  // namespace tessera::nn
