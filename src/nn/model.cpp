// The CausalLM forward pass (model.h); its backward pass is autodiff::reverse of it.
#include "nn/model.h"

#include <fmt/ranges.h>

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

Tensor CausalLM::logits(const Weights& w, const Tensor& tokens, const std::optional<ir::Sharding>& residual) const {
  const Config& c = config_;
  if (tokens.shape() != std::vector<int64_t>{c.batch, c.seq} || !ir::is_integer(tokens.element()))
    support::fail("nn::CausalLM: tokens must be integers [{}, {}], got {}", c.batch, c.seq,
                  to_string(tokens.type()));
  auto laid_out = [&](const Tensor& x) { return residual ? ir::constrain(x, *residual) : x; };
  Tensor x = laid_out(embedding(w["embed"], tokens));
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string p = "layers." + std::to_string(i) + ".";
    AttentionWeights aw{w[p + "attn.q"], w[p + "attn.k"], w[p + "attn.v"], w[p + "attn.o"]};
    x = x + attention(laid_out(rms_norm(x, w[p + "attn_norm"], c.norm_eps)), aw, c.heads, c.kv_heads, c.rope_theta);
    x = x + swiglu(laid_out(rms_norm(x, w[p + "mlp_norm"], c.norm_eps)), w[p + "mlp.gate"], w[p + "mlp.up"],
                   w[p + "mlp.down"]);
    x = laid_out(x);
  }
  return ir::matmul(rms_norm(x, w["norm"], c.norm_eps), w["head"]);
}

Tensor CausalLM::loss(const Weights& w, const Tensor& tokens, const Tensor& targets,
                      const std::optional<ir::Sharding>& residual) const {
  return cross_entropy(logits(w, tokens, residual), targets);
}

}  // namespace tessera::nn
