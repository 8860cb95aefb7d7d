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
// devices from step to step.
//
// Paged (shape.block_size > 0), as vLLM's PagedAttention: a layer's keys (or values) live in a pool
// of fixed-size blocks [num_blocks, block_size, kv_heads, hd] shared by the sequences, and a block
// table i32 [B, blocks_per_sequence] lists each sequence's blocks in order (BlockTable hands them
// out on the host as positions are reached; block 0 is the null block that unused entries and the
// prompts' padding point to, never read unmasked). The programs then take the slot (block *
// block_size + offset) each new key goes to:
//   @prefill(params[P], tokens i32[B, prompt], slots i32[B, prompt]) -> (logits, pools...)
//   @prefill(params[P], pools..., tokens i32[R, prompt], slots i32[R, prompt]) -> (logits, pools'...)
//       the second with shape.prefill_into_pools (R = prefill_batch rows), for continuous batching
//   @decode(params[P], pools..., tokens i32[B], pos i32[B], slot i32[B], table i32[B, M])
//       -> (logits [B, vocab], pools'...)
// A write is a scatter of B rows (not a pass over the cache); a read gathers the sequence's blocks
// by its table into [B, M * block_size, kv_heads, hd] and attends as above. The pool is shared, so
// a paged cache is not split by sequence (a plan that splits the batch is refused).
//
// MoE layers (moe.h) route without a capacity limit (C = the group's tokens: no choice dropped,
// as inference serving does), so a decode step's token meets the experts it would in a full
// recomputation whatever the other tokens; under expert parallelism (plan.expert_axis) the tokens
// go to their experts' devices by all_to_all, the batch split over the expert axis (a contiguous
// cache: a paged one is refused when the batch is split).
//
// With a sharding plan (plan.h) the parameters are laid out as in training; the caches split their
// batch like the plan's tokens and their key/value heads like the plan's attn.k columns (tp: the
// heads over the model axis, each device attending with its own heads), results laid out like the
// inputs they replace. Under the ctx plan (context_parallel) a contiguous cache is split by
// position instead: each decode step attends to every device's slice and merges the partial
// outputs by their log-sum-exp (split_cache_attention); the prefill is left to the partitioner,
// its caches laid out in the slices.
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
  int64_t block_size = 0;  // > 0: a paged cache of blocks of this many positions
  int64_t num_blocks = 0;  // paged: blocks in the pool, the null block 0 included
  // Paged, for continuous batching (nn/batching.h): @prefill takes the pools (donated, aliased to
  // its results) and writes the prompts' slots into them, leaving the other sequences' blocks as
  // they are, over prefill_batch rows (0: batch) that are independent of the decode's slots.
  bool prefill_into_pools = false;
  int64_t prefill_batch = 0;
};

struct GenerationPrograms {
  std::string prefill = "prefill", decode = "decode";
  std::vector<ParamSpec> parameters;
  GenerationShape shape;
  int64_t layers = 0;
  std::vector<std::pair<size_t, size_t>> decode_aliases;  // {input, output}: each cache
  std::vector<std::pair<size_t, size_t>> prefill_aliases;  // the same, with prefill_into_pools
  std::optional<ir::Sharding> cache_sharding;            // with a plan

  size_t num_parameters() const { return parameters.size(); }
  size_t num_caches() const { return static_cast<size_t>(2 * layers); }  // k and v of each layer
  // @decode's inputs after the parameters and caches.
  size_t decode_tokens_input() const { return num_parameters() + num_caches(); }
  size_t decode_pos_input() const { return decode_tokens_input() + 1; }
  bool paged() const { return shape.block_size > 0; }
  // Paged: the blocks of one sequence's table, and the inputs the paged programs add.
  int64_t blocks_per_sequence() const { return paged() ? (shape.max_len + shape.block_size - 1) / shape.block_size : 0; }
  int64_t prefill_rows() const { return shape.prefill_batch > 0 ? shape.prefill_batch : shape.batch; }
  size_t prefill_tokens_input() const { return num_parameters() + (shape.prefill_into_pools ? num_caches() : 0); }
  size_t prefill_slots_input() const { return prefill_tokens_input() + 1; }
  size_t decode_slot_input() const { return decode_pos_input() + 1; }
  size_t decode_table_input() const { return decode_pos_input() + 2; }
};

// The host's side of a paged cache: which blocks each sequence owns, handed out from the free
// blocks 1..num_blocks-1 as its positions are reached and returned when the sequence finishes.
class BlockTable {
 public:
  explicit BlockTable(const GenerationPrograms& g);
  // Gives sequence b blocks up to the one holding position p; a UserError when the pool has no
  // free block left or p is past max_len.
  void reserve(int64_t b, int64_t p);
  // The slot of position p of sequence b: in its block, or in the null block when not reserved.
  int64_t slot(int64_t b, int64_t p) const;
  ir::Literal table() const;  // i32 [B, blocks_per_sequence], 0 where no block is held
  // Returns sequence b's blocks to the pool (its slot then starts afresh at position 0).
  void release(int64_t b);
  int64_t blocks_held(int64_t b) const { return int64_t(blocks_.at(size_t(b)).size()); }
  int64_t blocks_used() const { return num_blocks_ - 1 - int64_t(free_.size()); }
  int64_t blocks_free() const { return int64_t(free_.size()); }
  int64_t block_size() const { return block_size_; }

 private:
  int64_t block_size_, num_blocks_, per_sequence_;
  std::vector<int64_t> free_;                 // descending: the lowest free block is handed out first
  std::vector<std::vector<int64_t>> blocks_;  // per sequence, in order
};

// Builds @prefill and @decode (names taken: a UserError) in `module`, adding the plan's mesh when it
// has none of its name. A UserError when the shape is empty or max_len < prompt, when the plan
// splits the batch, the key/value heads or (ctx) the positions unevenly, or the batch or positions
// of a paged cache at all.
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
