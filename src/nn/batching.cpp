// The continuous-batching scheduler of batching.h: a loop of admit (free slots to waiting requests
// whose worst case the pool can still promise), prefill the admitted in groups of the prefill's
// rows, and one decode step over every slot, releasing finished sequences' blocks after each.
#include "nn/batching.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <random>

#include "support/error.h"

namespace tessera::nn {

using ir::Literal;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A slot of the decode batch: the request it serves (none: idle), the token it feeds next and that
// token's position.
struct Slot {
  int64_t request = -1;
  int64_t next = 0, pos = 0;
  std::mt19937_64 rng;
};

}  // namespace

bool StopCondition::stops(const std::vector<int64_t>& generated) const {
  if (generated.empty()) return false;
  if (std::find(tokens.begin(), tokens.end(), generated.back()) != tokens.end()) return true;
  for (const std::vector<int64_t>& s : sequences)
    if (!s.empty() && s.size() <= generated.size() && std::equal(s.rbegin(), s.rend(), generated.rbegin())) return true;
  return false;
}

ContinuousBatcher::ContinuousBatcher(const GenerationPrograms& g, GenerationEngine& engine, Sampling sampling,
                                     uint64_t seed, StopCondition stop)
    : g_(g), engine_(engine), sampling_(sampling), seed_(seed), stop_(std::move(stop)) {
  if (!g.paged() || !g.shape.prefill_into_pools)
    support::fail("nn::ContinuousBatcher: the programs need a paged cache whose prefill writes into the pools "
                  "(GenerationShape::block_size > 0 and prefill_into_pools)");
  blocks_.emplace(g);
}

// Positions 0 .. prompt + max_tokens - 2 are written (the last token is never fed back).
int64_t ContinuousBatcher::blocks_needed(const Request& r) const {
  int64_t positions = int64_t(r.prompt.size()) + r.max_tokens - 1;
  return (positions + g_.shape.block_size - 1) / g_.shape.block_size;
}

std::vector<Completion> ContinuousBatcher::run(const std::vector<Request>& requests) {
  const GenerationShape& s = g_.shape;
  const int64_t B = s.batch, P = s.prompt, R = g_.prefill_rows(), bs = s.block_size;
  const int64_t pool = s.num_blocks - 1;
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    int64_t len = int64_t(r.prompt.size());
    if (len < 1 || len > P)
      support::fail("nn::ContinuousBatcher: request {} has a prompt of {} tokens; the prefill takes 1 to {}", i, len, P);
    if (r.max_tokens < 1) support::fail("nn::ContinuousBatcher: request {} asks for {} new tokens", i, r.max_tokens);
    if (len + r.max_tokens - 1 > s.max_len)
      support::fail("nn::ContinuousBatcher: request {} needs {} positions ({} prompt + {} new tokens - 1), a sequence's "
                    "cache holds {}", i, len + r.max_tokens - 1, len, r.max_tokens, s.max_len);
    if (blocks_needed(r) > pool)
      support::fail("nn::ContinuousBatcher: request {} needs {} blocks of {} positions ({} prompt + {} new tokens - 1), "
                    "but the pool holds {} (the null block aside)", i, blocks_needed(r), bs, len, r.max_tokens, pool);
  }
  stats_ = {};
  BlockTable& blocks = *blocks_;
  std::vector<Completion> done(requests.size());
  std::vector<Slot> slots(static_cast<size_t>(B));
  std::deque<int64_t> waiting;
  for (size_t i = 0; i < requests.size(); ++i) waiting.push_back(int64_t(i));
  int64_t vocab = 0;
  std::vector<double> row;
  // Samples slot b's next token from `logits` at `offset`; true when its sequence is finished,
  // whose blocks then go back to the pool and whose slot goes idle.
  auto advance = [&](int64_t b, const Literal& logits, int64_t offset) {
    Slot& sl = slots[size_t(b)];
    row.resize(size_t(vocab));
    for (int64_t v = 0; v < vocab; ++v) row[size_t(v)] = logits.get_double(offset + v);
    Completion& c = done[size_t(sl.request)];
    c.tokens.push_back(sample_token(row, sampling_, sl.rng));
    sl.next = c.tokens.back();
    ++sl.pos;
    bool stopped = stop_.stops(c.tokens);
    if (!stopped && int64_t(c.tokens.size()) < requests[size_t(sl.request)].max_tokens) return;
    c.finish = stopped ? FinishReason::Stop : FinishReason::Length;
    blocks.release(b);
    sl.request = -1;
  };
  // Blocks promised to running sequences and not yet taken.
  auto promised = [&] {
    int64_t n = 0;
    for (size_t b = 0; b < slots.size(); ++b)
      if (slots[b].request >= 0) n += blocks_needed(requests[size_t(slots[b].request)]) - blocks.blocks_held(int64_t(b));
    return n;
  };
  auto track_peak = [&] { stats_.peak_blocks = std::max(stats_.peak_blocks, blocks.blocks_used()); };

  while (true) {
    // Admit in arrival order while a slot is free and the pool can promise the head its blocks.
    std::vector<int64_t> admitted;
    for (int64_t b = 0; b < B && !waiting.empty(); ++b) {
      if (slots[size_t(b)].request >= 0) continue;
      const Request& r = requests[size_t(waiting.front())];
      if (blocks.blocks_free() - promised() < blocks_needed(r)) break;
      Slot& sl = slots[size_t(b)];
      sl.request = waiting.front();
      sl.pos = int64_t(r.prompt.size()) - 1;  // the prefill's last position: advance moves it on
      std::seed_seq seq{seed_, uint64_t(sl.request)};
      sl.rng.seed(seq);
      waiting.pop_front();
      admitted.push_back(b);
    }
    // Prefill the admitted, `R` rows at a time; idle rows and the padding write to the null block.
    for (size_t first = 0; first < admitted.size(); first += size_t(R)) {
      size_t n = std::min(admitted.size() - first, size_t(R));
      std::vector<int64_t> tokens(size_t(R * P), 0), where(size_t(R * P), 0);
      for (size_t i = 0; i < n; ++i) {
        int64_t b = admitted[first + i];
        const std::vector<int64_t>& prompt = requests[size_t(slots[size_t(b)].request)].prompt;
        for (int64_t t = 0; t < P; ++t) {
          size_t at = i * size_t(P) + size_t(t);
          if (t < int64_t(prompt.size())) {
            blocks.reserve(b, t);
            tokens[at] = prompt[size_t(t)];
            where[at] = blocks.slot(b, t);
          } else {
            where[at] = t % bs;
          }
        }
      }
      track_peak();
      Clock::time_point t0 = Clock::now();
      Literal logits = engine_.prefill(Literal::from_ints(ir::i32({R, P}), tokens), Literal::from_ints(ir::i32({R, P}), where));
      stats_.prefill_s += seconds_since(t0);
      ++stats_.prefills;
      vocab = logits.type().shape.back();
      for (size_t i = 0; i < n; ++i) {
        int64_t b = admitted[first + i];
        int64_t len = int64_t(requests[size_t(slots[size_t(b)].request)].prompt.size());
        advance(b, logits, (int64_t(i) * P + len - 1) * vocab);
        ++stats_.prefilled_tokens;
      }
    }
    int64_t busy = 0;
    for (const Slot& sl : slots) busy += sl.request >= 0 ? 1 : 0;
    if (busy == 0) {  // every admitted sequence ended at its prefill (or nothing is left)
      if (waiting.empty()) break;
      // With nothing running the whole pool is free, which the checks above say fits the head.
      TESSERA_CHECK(!admitted.empty(), "nn::ContinuousBatcher: request {} waits on an empty pool", waiting.front());
      continue;
    }
    if (!waiting.empty()) stats_.most_waiting_slots = std::max(stats_.most_waiting_slots, B - busy);
    // One decode step over every slot; an idle one feeds token 0 at position 0 of the null block.
    std::vector<int64_t> tokens(size_t(B), 0), pos(size_t(B), 0), where(size_t(B), 0);
    for (int64_t b = 0; b < B; ++b) {
      const Slot& sl = slots[size_t(b)];
      if (sl.request < 0) continue;
      blocks.reserve(b, sl.pos);
      tokens[size_t(b)] = sl.next;
      pos[size_t(b)] = sl.pos;
      where[size_t(b)] = blocks.slot(b, sl.pos);
    }
    track_peak();
    Clock::time_point t0 = Clock::now();
    Literal logits = engine_.decode(Literal::from_ints(ir::i32({B}), tokens), Literal::from_ints(ir::i32({B}), pos),
                                    Literal::from_ints(ir::i32({B}), where), blocks.table());
    stats_.decode_s += seconds_since(t0);
    ++stats_.decode_steps;
    stats_.decoded_tokens += busy;
    vocab = logits.type().shape.back();
    for (int64_t b = 0; b < B; ++b)
      if (slots[size_t(b)].request >= 0) advance(b, logits, b * vocab);
  }
  return done;
}

}  // namespace tessera::nn
