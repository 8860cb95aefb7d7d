// CausalLM: the Llama layout assembled from layers.h.
//
//   x = embed[tokens]
//   for each layer:  x = x + attention(rms_norm(x, attn_norm))
//                    x = x + swiglu(rms_norm(x, mlp_norm))     (or moe(...) with config.experts > 0)
//   logits = rms_norm(x, norm) @ head          (untied from embed)
//   loss = cross_entropy(logits) + aux_loss_coef * sum over layers of the MoE load-balancing loss
//
// The model is its Config; its weights are program parameters, handed to it as a Weights map
// from parameter name (config.h) to Tensor.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nn/config.h"
#include "nn/layers.h"
#include "nn/ring_attention.h"

namespace tessera::nn {

// Parameter name -> the Tensor standing for it in the program being built.
class Weights {
 public:
  Weights(const std::vector<ParamSpec>& specs, const std::vector<Tensor>& values);
  const Tensor& operator[](const std::string& name) const;  // UserError naming a missing one

 private:
  std::map<std::string, Tensor> by_name_;
};

class CausalLM {
 public:
  explicit CausalLM(Config config);
  const Config& config() const { return config_; }
  const std::vector<ParamSpec>& parameters() const { return specs_; }
  // The same model with its sequence split over cp.axis (ring_attention.h): logits and loss take
  // and give tokens in natural order and hold the sequence in the load-balanced layout between;
  // every attention is ring attention. embed, block and head then work in that layout.
  CausalLM context_parallel(ContextParallel cp) const;
  const std::optional<ContextParallel>& context() const { return context_; }
  // Expert parallelism: the MoE layers constrain their expert buffers to the experts split over
  // mesh axis `axis` (moe.h), given a residual layout whose batch is split over it too. Empty: none.
  CausalLM with_expert_axis(std::string axis) const;
  const std::string& expert_axis() const { return expert_axis_; }

  // logits [b, s, vocab] of tokens i32 [b, s]. `residual`, when given, is the layout of the
  // residual stream [b, s, d]: it is constrained so after the embedding and after every block, so
  // that the partitioner moves weights to the activations (FSDP's all-gathers) rather than
  // re-laying the activations out like a weight.
  Tensor logits(const Weights& w, const Tensor& tokens, const std::optional<ir::Sharding>& residual = std::nullopt) const;
  // The pieces of logits, for programs that cut the model by layers (mpmd/model_step.h): the
  // embedding of the tokens, block `layer` of the residual stream x, and the logits of x after the
  // last block. logits is embed, every block, then head.
  Tensor embed(const Weights& w, const Tensor& tokens, const std::optional<ir::Sharding>& residual = std::nullopt) const;
  // With MoE layers, `aux` (when given) receives the layer's load-balancing loss.
  Tensor block(const Weights& w, int64_t layer, const Tensor& x,
               const std::optional<ir::Sharding>& residual = std::nullopt, std::vector<Tensor>* aux = nullptr) const;
  // The block's feed-forward part on its normed input h [b, s, d] in the compute type: SwiGLU, or
  // the MoE layer (its load-balancing loss appended to `aux` when given).
  Tensor mlp(const Weights& w, int64_t layer, const Tensor& h, const std::optional<ir::Sharding>& residual,
             std::vector<Tensor>* aux) const;
  Tensor head(const Weights& w, const Tensor& x) const;
  // cross_entropy(logits(tokens), targets): the mean next-token loss, plus aux_loss_coef times
  // the MoE layers' load-balancing losses.
  Tensor loss(const Weights& w, const Tensor& tokens, const Tensor& targets,
              const std::optional<ir::Sharding>& residual = std::nullopt) const;

 private:
  // The logits of tokens already in the layout the blocks use, in that layout; each MoE layer's
  // load-balancing loss goes to `aux` when given.
  Tensor laid_out_logits(const Weights& w, const Tensor& tokens, const std::optional<ir::Sharding>& residual,
                         std::vector<Tensor>* aux = nullptr) const;

  Config config_;
  std::vector<ParamSpec> specs_;
  std::optional<ContextParallel> context_;
  std::string expert_axis_;
};

}  // namespace tessera::nn
