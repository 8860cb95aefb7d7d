// The CausalLM forward pass (model.h); its backward pass is autodiff::reverse of it.
#include "nn/model.h"

#include <fmt/ranges.h>

#include "nn/moe.h"
#include "support/error.h"

namespace tessera::nn {

Weights::Weights(const std::vector<ParamSpec>& specs, const std::vector<Tensor>& values) {
  TESSERA_CHECK(specs.size() == values.size(), "{} parameter specs for {} values", specs.size(), values.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    if (values[i].shape() != specs[i].shape)
      support::fail("nn: parameter '{}' is {}, the model needs shape [{}]", specs[i].name,
                    to_string(values[i].type()), fmt::join(specs[i].shape, ", "));
    by_name_.emplace(specs[i].name, values[i]);
  }
}

const Tensor& Weights::operator[](const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) support::fail("nn: no weight named '{}'", name);
  return it->second;
}

CausalLM::CausalLM(Config config) : config_(config), specs_(parameter_specs(config)) {}

CausalLM CausalLM::context_parallel(ContextParallel cp) const {
  balanced_positions(config_.seq, cp.devices());  // refuses a sequence the layout cannot cut
  CausalLM m = *this;
  m.context_ = std::move(cp);
  return m;
}

CausalLM CausalLM::with_expert_axis(std::string axis) const {
  CausalLM m = *this;
  m.expert_axis_ = std::move(axis);
  return m;
}

Tensor CausalLM::embed(const Weights& w, const Tensor& tokens, const std::optional<ir::Sharding>& residual) const {
  const Config& c = config_;
  if (tokens.shape() != std::vector<int64_t>{c.batch, c.seq} || !ir::is_integer(tokens.element()))
    support::fail("nn::CausalLM: tokens must be integers [{}, {}], got {}", c.batch, c.seq,
                  to_string(tokens.type()));
  Tensor x = embedding(w["embed"], tokens);
  return residual ? ir::constrain(x, *residual) : x;
}

// Mixed precision: each matmul reads its weight and its input in the compute type; the residual
// stream, the norms and the parameters stay in dtype (config.h).
Tensor CausalLM::mlp(const Weights& w, int64_t layer, const Tensor& h, const std::optional<ir::Sharding>& residual,
                     std::vector<Tensor>* aux) const {
  const Config& c = config_;
  const ir::ElementType ct = c.compute_type();
  auto weight = [&](const std::string& name) { return cast(w[name], ct); };
  std::string p = "layers." + std::to_string(layer) + ".";
  if (c.experts == 0) return swiglu(h, weight(p + "mlp.gate"), weight(p + "mlp.up"), weight(p + "mlp.down"));
  // The router reads the weight in dtype: routing runs in the reduction type (moe.h).
  MoeWeights mw{w[p + "moe.router"], weight(p + "moe.gate"), weight(p + "moe.up"), weight(p + "moe.down")};
  std::optional<MoeLayout> layout;
  if (residual && !expert_axis_.empty()) layout = MoeLayout{*residual, expert_axis_};
  MoeOutput out = moe(h, mw, c.top_k, c.capacity_factor, layout, aux != nullptr);
  if (aux != nullptr) aux->push_back(*out.aux);
  return out.y;
}

Tensor CausalLM::block(const Weights& w, int64_t layer, const Tensor& x0,
                       const std::optional<ir::Sharding>& residual, std::vector<Tensor>* aux) const {
  const Config& c = config_;
  auto laid_out = [&](const Tensor& x) { return residual ? ir::constrain(x, *residual) : x; };
  const ir::ElementType ct = c.compute_type();
  auto weight = [&](const std::string& name) { return cast(w[name], ct); };
  std::string p = "layers." + std::to_string(layer) + ".";
  AttentionWeights aw{weight(p + "attn.q"), weight(p + "attn.k"), weight(p + "attn.v"), weight(p + "attn.o")};
  Tensor x = x0;
  Tensor normed = laid_out(cast(rms_norm(x, w[p + "attn_norm"], c.norm_eps), ct));
  Tensor a = context_ ? ring_attention(normed, aw, c.heads, c.kv_heads, c.rope_theta, *context_)
                      : attention(normed, aw, c.heads, c.kv_heads, c.rope_theta);
  x = x + cast(a, x.element());
  Tensor f = mlp(w, layer, laid_out(cast(rms_norm(x, w[p + "mlp_norm"], c.norm_eps), ct)), residual, aux);
  return laid_out(x + cast(f, x.element()));
}

Tensor CausalLM::head(const Weights& w, const Tensor& x) const {
  const ir::ElementType ct = config_.compute_type();
  return cast(ir::matmul(cast(rms_norm(x, w["norm"], config_.norm_eps), ct), cast(w["head"], ct)), x.element());
}

Tensor CausalLM::laid_out_logits(const Weights& w, const Tensor& tokens, const std::optional<ir::Sharding>& residual,
                                 std::vector<Tensor>* aux) const {
  Tensor x = embed(w, tokens, residual);
  for (int64_t i = 0; i < config_.layers; ++i) x = block(w, i, x, residual, aux);
  return head(w, x);
}

Tensor CausalLM::logits(const Weights& w, const Tensor& tokens, const std::optional<ir::Sharding>& residual) const {
  if (!context_) return laid_out_logits(w, tokens, residual);
  int64_t n = context_->devices();
  return from_balanced(laid_out_logits(w, to_balanced(tokens, 1, n), residual), 1, n);
}

// The loss is a mean over tokens, indifferent to their order: under context parallelism the
// targets take the tokens' layout rather than the logits going back to natural order.
Tensor CausalLM::loss(const Weights& w, const Tensor& tokens, const Tensor& targets,
                      const std::optional<ir::Sharding>& residual) const {
  std::vector<Tensor> aux;
  Tensor loss = context_ ? cross_entropy(laid_out_logits(w, to_balanced(tokens, 1, context_->devices()), residual, &aux),
                                         to_balanced(targets, 1, context_->devices()))
                         : cross_entropy(laid_out_logits(w, tokens, residual, &aux), targets);
  for (const Tensor& a : aux) loss = loss + cast(a, loss.element()) * config_.aux_loss_coef;
  return loss;
}

}  // namespace tessera::nn
