// Continuous batching over the paged programs of generate.h, as vLLM's scheduler: the decode
// program's batch is a fixed number of slots; requests wait in arrival order, take a free slot when
// the pool can hold them, are prefilled into the shared pool (the other slots' blocks untouched),
// decode one token per step with the others, and on finishing (a stop token or stop sequence, or
// max_tokens) return their blocks to the pool and their slot to the next waiting request. An idle
// slot still runs in the step (the program is compiled once for the whole batch) on the null
// block, and its logits are ignored.
//
//   nn::GenerationPrograms g = nn::capture_generation(m, model, {slots, prompt, max_len, bs, blocks,
//                                                              /*prefill_into_pools=*/true, rows});
//   nn::ContinuousBatcher batcher(g, engine, sampling, seed, stop);
//   std::vector<nn::Completion> done = batcher.run(requests);
//
// Admission reserves a request's worst case (prompt + max_tokens - 1 positions, in blocks) against
// the pool's free blocks, though blocks are taken only as positions are reached: no running
// sequence can then run out of blocks, so nothing is ever preempted (vLLM admits on the prompt's
// blocks and preempts by recomputation instead). Each request samples with its own generator,
// seeded by (seed, its index), so what it generates does not depend on what it was batched with.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/literal.h"
#include "nn/generate.h"

namespace tessera::nn {

// Who runs the programs and holds the parameters and the pools (on devices, or in the interpreter).
class GenerationEngine {
 public:
  virtual ~GenerationEngine() = default;
  // @prefill (captured with prefill_into_pools) on tokens and slots i32 [rows, prompt]: its logits
  // [rows, prompt, vocab]; the pools it returns replace the engine's.
  virtual ir::Literal prefill(const ir::Literal& tokens, const ir::Literal& slots) = 0;
  // @decode on tokens, pos and slot i32 [batch] and the block table i32 [batch, blocks]: its logits
  // [batch, vocab]; likewise for the pools.
  virtual ir::Literal decode(const ir::Literal& tokens, const ir::Literal& pos, const ir::Literal& slot,
                             const ir::Literal& table) = 0;
};

struct Request {
  std::vector<int64_t> prompt;
  int64_t max_tokens = 16;  // new tokens at most
};

// A sequence stops after generating a token in `tokens` (an end token), or when its generated
// tokens end with one of `sequences` (a stop string); the stopping tokens are kept in its output.
struct StopCondition {
  std::vector<int64_t> tokens;
  std::vector<std::vector<int64_t>> sequences;
  bool stops(const std::vector<int64_t>& generated) const;
};

enum class FinishReason { Length, Stop };  // vLLM's finish_reason "length" and "stop"

struct Completion {
  std::vector<int64_t> tokens;  // generated, after the prompt
  FinishReason finish = FinishReason::Length;
};

struct BatchingStats {
  int64_t prefills = 0;          // @prefill runs
  int64_t decode_steps = 0;      // @decode runs
  int64_t decoded_tokens = 0;    // tokens made by decode steps (busy slots summed over steps)
  int64_t prefilled_tokens = 0;  // first tokens, from the prefills' logits
  int64_t peak_blocks = 0;       // most blocks held at once
  int64_t most_waiting_slots = 0;  // most idle slots in one decode step while requests waited
  double prefill_s = 0, decode_s = 0;
};

class ContinuousBatcher {
 public:
  // A UserError when `g` was not captured paged with prefill_into_pools.
  ContinuousBatcher(const GenerationPrograms& g, GenerationEngine& engine, Sampling sampling = {},
                    uint64_t seed = 0, StopCondition stop = {});
  // Generates every request, in the order given back. A UserError naming the request and the
  // numbers when one cannot fit: a prompt longer than the prefill's, more positions than a
  // sequence's cache holds, or more blocks than the pool has.
  std::vector<Completion> run(const std::vector<Request>& requests);
  const BatchingStats& stats() const { return stats_; }
  const BlockTable& blocks() const { return *blocks_; }

 private:
  int64_t blocks_needed(const Request& r) const;

  const GenerationPrograms& g_;
  GenerationEngine& engine_;
  Sampling sampling_;
  uint64_t seed_;
  StopCondition stop_;
  std::optional<BlockTable> blocks_;
  BatchingStats stats_;
};

}  // namespace tessera::nn
