// The model's shape (Config) and its parameters: their names, shapes, order and initial values.
//
// Parameters are named by path, in the order every program takes them:
//   embed [vocab, d_model]
//   layers.i.attn_norm [d_model], layers.i.attn.{q [d, heads*hd], k, v [d, kv_heads*hd], o [heads*hd, d]}
//   layers.i.mlp_norm [d_model], layers.i.mlp.{gate, up [d, ffn], down [ffn, d]}
//     or, with experts E > 0 (moe.h), layers.i.moe.{router [d, E], gate, up [E, d, ffn], down [E, ffn, d]}
//   norm [d_model], head [d_model, vocab]
// Weights are [in, out] (x @ w), without biases, as in the Llama layout.
//
// The initializer is counter-based, so a parameter's values depend only on the seed, its name and
// the element's index (not on the order parameters are made in, nor on threads): element i of
// parameter `name` is init_std * z, where z is a standard normal drawn by Box–Muller from the two
// uniforms splitmix64(key + 2i) and splitmix64(key + 2i + 1), key = splitmix64(seed ^ fnv1a(name)).
// Norm gains start at one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/literal.h"

namespace tessera::nn {

struct Config {
  int64_t vocab = 32, d_model = 64, layers = 2, heads = 8, kv_heads = 4, ffn = 128, seq = 16, batch = 8;
  double rope_theta = 10000;  // RoPE base frequency
  double norm_eps = 1e-5;     // RMSNorm's epsilon
  double init_std = 0.02;     // of the normal initializer
  ir::ElementType dtype = ir::ElementType::f32;  // of parameters and activations (f64 for gradient checks)
  // Mixed precision (docs/TRAINING.md): the matmuls and the activations between them in this type
  // (bf16), while parameters, optimizer state, the residual stream and the reductions (norms,
  // softmax, loss) stay in dtype. Unset: everything in dtype.
  std::optional<ir::ElementType> compute;
  // Mixture of experts (moe.h): experts > 0 replaces every block's SwiGLU by `experts` SwiGLU
  // experts of width ffn with top-k routing (k = 1 or 2) and capacity_factor * k * seq / experts
  // slots per expert and sequence; the loss adds aux_loss_coef times the sum over layers of the
  // load-balancing loss.
  int64_t experts = 0, top_k = 1;
  double capacity_factor = 1.25, aux_loss_coef = 0.01;

  ir::ElementType compute_type() const { return compute.value_or(dtype); }

  int64_t head_dim() const { return d_model / heads; }
  // UserError naming the field when the shape is inconsistent (heads not dividing d_model, ...) or
  // its sizes overflow 64-bit counts.
  void validate() const;
  // A lower bound on the bytes one training step holds at once, whatever the plan: parameters,
  // gradients and two AdamW moments, plus one layer's attention scores and the logits. Saturates
  // at INT64_MAX. Used to refuse a model too big for the machine before building it.
  int64_t training_bytes_lower_bound() const;
};

struct ParamSpec {
  enum class Init { Normal, Ones };
  std::string name;  // "layers.0.attn.q"
  std::vector<int64_t> shape;
  Init init = Init::Normal;
  int64_t num_elements() const;
};

// Every parameter of the CausalLM of `config`, in program order.
std::vector<ParamSpec> parameter_specs(const Config& config);
int64_t parameter_count(const Config& config);

// The initial value of one parameter (see the header comment), in config.dtype.
ir::Literal init_parameter(const ParamSpec& spec, const Config& config, uint64_t seed);
// The box [start, start + extent) of that value alone (a device's piece, made without the whole
// array): bitwise the same elements as the slice of init_parameter's.
ir::Literal init_parameter_piece(const ParamSpec& spec, const Config& config, uint64_t seed,
                                 const std::vector<int64_t>& start, const std::vector<int64_t>& extent);
std::vector<ir::Literal> init_parameters(const Config& config, uint64_t seed);

// The index of parameter `name` in parameter_specs order; UserError naming it when absent.
size_t parameter_index(const std::vector<ParamSpec>& specs, const std::string& name);

}  // namespace tessera::nn
