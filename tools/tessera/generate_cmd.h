// `tessera generate`: text from a checkpoint of `tessera train`, with a KV cache (nn/generate.h).
//
//   tessera generate --resume CKPT --prompt "The " --prompt "A cat" --tokens 64 [--plan tp --devices 2]
//                    [--temperature 0.8 --top-k 40 --seed 1]
//
// The model's shape comes from the checkpoint's metadata (model.*, written by train --save); its
// parameters are read piece by piece under the plan, whatever plan wrote them. The prompts (bytes)
// are one batch: @prefill runs them once, right-padded to the longest, then @decode makes one token
// per prompt per step, the caches staying on the devices (donated to each step and returned by it).
// The cache is paged by default (blocks of 16 positions handed out as sequences reach them), and
// then batched continuously: --max-batch slots, each freed slot (a sequence stopped by --stop or
// --stop-byte, or at --tokens) and its blocks taken by the next waiting prompt. It is contiguous
// under dp and ep, which split the prompts over the devices (ep: an MoE checkpoint), and under ctx,
// which splits it by position.
// Both programs are compiled once. Prints each prompt with its continuation (bytes outside
// printable ASCII as \xNN) and the prefill time and decode tokens/s.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace tessera::tools {

struct GenerateCommand {
  std::string resume;                // a --save directory or one of its step directories
  std::vector<std::string> prompts;  // one sequence each, generated together
  int64_t tokens = 64;               // new tokens per prompt
  // tp (heads and caches split over devices) | dp (prompts split) | ctx (cache split by position) | ep (MoE)
  std::string plan = "tp";
  int64_t devices = 1;               // host devices
  double temperature = 0;            // 0: greedy
  int64_t top_k = 0;                 // 0: every token
  uint64_t seed = 1;                 // of the sampler
  bool print_tokens = false;         // also print each sequence's token ids
  // The KV cache: paged in blocks of this many positions (-1: 16 under tp, contiguous under dp,
  // whose split of the sequences a shared pool does not allow; 0: contiguous), and the pool's
  // blocks (0: as many as the sequences reach, plus the null block).
  int64_t block_size = -1;
  int64_t blocks = 0;
  // A sequence stops after generating one of these bytes or ending with one of these strings.
  std::vector<int64_t> stop_bytes;
  std::vector<std::string> stops;
  // Paged: decode slots (0: one per prompt); with fewer slots than prompts the rest wait and take
  // the slots that finished sequences free (continuous batching, nn/batching.h). And the rows of
  // one prefill (0: every slot when all prompts have one, else 1: a freed slot is refilled alone).
  int64_t max_batch = 0;
  int64_t prefill_rows = 0;
};

// What a generation made: each prompt's tokens followed by the new ones, and the timings.
struct GenerationRun {
  std::vector<std::vector<int64_t>> tokens;
  std::vector<bool> stopped;  // by a stop byte or string (else at --tokens)
  double compile_s = 0, prefill_s = 0, decode_s = 0;
  int64_t decode_steps = 0, decoded = 0, prefills = 1;
};

int generate_command(const GenerateCommand& c, std::ostream& out);

}  // namespace tessera::tools
