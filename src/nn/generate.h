// Generation with a KV cache: the CausalLM as two programs, a prefill over the prompts and a
// one-token decode step, each compiled once, plus the sampler that picks a token from logits.
//
//   nn::GenerationPrograms g = nn::capture_generation(m, model, {batch, prompt, max_len}, plan);
//   @prefill(params[P], tokens i32[B, prompt])
//       -> (logits [B, prompt, vocab], k_0, v_0, ..., k_{layers-1}, v_{layers-1})
//   @decode(params[P], k_0, v_0, ..., tokens i32[B], pos i32[B])
//       -> (logits [B, vocab], k_0', v_0', ...)        decode_aliases: cache i -> output 1 + i
//
// The cache of one layer's keys (or values) is one contiguous array [B, max_len, kv_heads, hd] in
// the compute type, keys stored after RoPE. Sequence b has its own position: prompts of different
// lengths are right-padded to `prompt`, and the first decode step of sequence b is at its length.
// The prefill pads the prompt's keys and values with zeros to max_len (a pad position holds junk
// that no later query sees: position p attends to t <= p, and the decode step at p overwrites p
// first). The decode step writes its key and value at pos[b] with a select against an iota (each
// sequence at its own position, so one dynamic_update_slice per program cannot do it; a select is
// element-wise, which every plan partitions without moving the cache) and attends to t <= pos[b].
// The caches are donated inputs aliased to the decode step's outputs, so they stay in place on the
// devices from step to step. (Issue #20 asks for a paged cache, fixed-size blocks and a block table
// as vLLM's; this is the contiguous per-sequence cache that comes first.)
//
// With a sharding plan (plan.h) the parameters are laid out as in training; the caches split their
// batch like the plan's tokens and their key/value heads like the plan's attn.k columns (tp: the
// heads over the model axis, each device attending with its own heads), results laid out like the
// inputs they replace.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ir/module.h"
#include "nn/model.h"
#include "nn/plan.h"

namespace tessera::nn {

struct GenerationShape {
  int64_t batch = 1;    // sequences generated together
  int64_t prompt = 1;   // the prefill's length: the longest prompt (shorter ones right-padded)
  int64_t max_len = 0;  // positions the cache holds: prompt + new tokens at least
};

struct GenerationPrograms {
  std::string prefill = "prefill", decode = "decode";
  std::vector<ParamSpec> parameters;
  GenerationShape shape;
  int64_t layers = 0;
  std::vector<std::pair<size_t, size_t>> decode_aliases;  // {input, output}: each cache
  std::optional<ir::Sharding> cache_sharding;            // with a plan

  size_t num_parameters() const { return parameters.size(); }
  size_t num_caches() const { return static_cast<size_t>(2 * layers); }  // k and v of each layer
  // @decode's inputs after the parameters and caches.
  size_t decode_tokens_input() const { return num_parameters() + num_caches(); }
  size_t decode_pos_input() const { return decode_tokens_input() + 1; }
};

// Builds @prefill and @decode (names taken: a UserError) in `module`, adding the plan's mesh when it
// has none of its name. A UserError when the shape is empty or max_len < prompt, or when the plan
// splits the batch or the key/value heads unevenly.
GenerationPrograms capture_generation(ir::Module& module, const CausalLM& model, GenerationShape shape,
                                      const std::optional<ShardingPlan>& plan = std::nullopt);

// How the next token is picked from a row of logits: temperature 0 is greedy (the first maximum);
// otherwise softmax(logits / temperature) restricted to the top_k largest logits (0: all), drawn
// with `rng` (std::discrete_distribution).
struct Sampling {
  double temperature = 0;
  int64_t top_k = 0;
};
int64_t sample_token(std::span<const double> logits, const Sampling& sampling, std::mt19937_64& rng);

}  // namespace tessera::nn
