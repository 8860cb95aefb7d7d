// Continuous batching (nn/batching.h) against generating each prompt alone: more requests than
// decode slots, prompts of different lengths, different max_tokens and stop points, so that
// sequences finish at different steps, return their blocks, and waiting prompts are prefilled into
// the freed slots while the others keep decoding. Each request's tokens equal its run alone in a
// one-slot batcher (greedy, and sampled: each request has its own generator); every block is back
// in the pool at the end; a request the pool cannot hold is refused with the numbers. The programs
// run in the reference interpreter, and under tp on 2 host devices with the pools donated.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "common/error_of.h"
#include "interp/interpreter.h"
#include "nn/batching.h"
#include "nn_test_util.h"
#include "runtime/session.h"

namespace tessera::nn {
namespace {

using namespace tessera::ir;

Config batching_config() {
  Config c;
  c.vocab = 32, c.d_model = 32, c.layers = 2, c.heads = 4, c.kv_heads = 2, c.ffn = 40;
  c.init_std = 0.3;  // logits far enough apart that greedy picks are not ties
  return c;
}

constexpr int64_t kBlockSize = 4, kPrompt = 7, kMaxLen = 16;

// The programs for `slots` decode slots, a prefill of `rows` rows and a pool of `blocks` blocks.
GenerationPrograms capture(Module& m, const Config& c, int64_t slots, int64_t rows, int64_t blocks,
                           const std::optional<ShardingPlan>& plan = std::nullopt) {
  GenerationShape s{slots, kPrompt, kMaxLen, kBlockSize, blocks, /*prefill_into_pools=*/true, rows};
  return capture_generation(m, CausalLM(c), s, plan);
}

// The programs in the interpreter, the pools kept as literals between runs.
class InterpreterEngine : public GenerationEngine {
 public:
  InterpreterEngine(const Module& m, const GenerationPrograms& g, const Config& c, std::vector<Literal> params)
      : m_(m), g_(g), params_(std::move(params)) {
    for (size_t i = 0; i < g.num_caches(); ++i)
      pools_.emplace_back(Type(c.compute_type(), {g.shape.num_blocks, g.shape.block_size, c.kv_heads, c.head_dim()}));
  }
  Literal prefill(const Literal& tokens, const Literal& slots) override { return run(g_.prefill, {tokens, slots}); }
  Literal decode(const Literal& tokens, const Literal& pos, const Literal& slot, const Literal& table) override {
    return run(g_.decode, {tokens, pos, slot, table});
  }

 private:
  Literal run(const std::string& fn, std::vector<Literal> rest) {
    std::vector<Literal> args = params_;
    args.insert(args.end(), pools_.begin(), pools_.end());
    args.insert(args.end(), rest.begin(), rest.end());
    std::vector<Literal> out = interp::evaluate(m_, fn, std::move(args));
    pools_.assign(std::make_move_iterator(out.begin() + 1), std::make_move_iterator(out.end()));
    return std::move(out[0]);
  }
  const Module& m_;
  const GenerationPrograms& g_;
  std::vector<Literal> params_, pools_;
};

// The same programs compiled for host devices, the parameters staged once and the pools donated
// to each run and kept as its results.
class DeviceEngine : public GenerationEngine {
 public:
  DeviceEngine(runtime::Session& s, Module& m, const GenerationPrograms& g, const Config& c,
               const std::vector<Literal>& params)
      : g_(g), prefill_(s.sharded_program(s.compile(m, g.prefill), g.prefill_aliases)),
        decode_(s.sharded_program(s.compile(m, g.decode), g.decode_aliases)) {
    for (size_t i = 0; i < params.size(); ++i) params_.push_back(prefill_.stage(i, params[i]));
    Literal empty(Type(c.compute_type(), {g.shape.num_blocks, g.shape.block_size, c.kv_heads, c.head_dim()}));
    for (size_t i = 0; i < g.num_caches(); ++i) pools_.push_back(prefill_.stage(params.size() + i, empty));
  }
  Literal prefill(const Literal& tokens, const Literal& slots) override {
    return run(prefill_, g_.prefill_tokens_input(), {tokens, slots});
  }
  Literal decode(const Literal& tokens, const Literal& pos, const Literal& slot, const Literal& table) override {
    return run(decode_, g_.decode_tokens_input(), {tokens, pos, slot, table});
  }
  bool all_donated = true;

 private:
  Literal run(runtime::ShardedProgram& p, size_t first, const std::vector<Literal>& rest) {
    std::vector<runtime::ShardedBuffer> in = params_;
    in.insert(in.end(), std::make_move_iterator(pools_.begin()), std::make_move_iterator(pools_.end()));
    for (size_t j = 0; j < rest.size(); ++j) in.push_back(p.stage(first + j, rest[j]));
    std::vector<runtime::ShardedBuffer> out = p.execute(in);
    for (size_t i = 0; i < g_.num_caches(); ++i) all_donated = all_donated && in[params_.size() + i].donated();
    pools_.assign(std::make_move_iterator(out.begin() + 1), std::make_move_iterator(out.end()));
    return p.fetch(out[0]);
  }
  const GenerationPrograms& g_;
  runtime::ShardedProgram prefill_, decode_;
  std::vector<runtime::ShardedBuffer> params_, pools_;
};

// Six requests of prompt lengths 1..7 and 2..9 new tokens: more than the slots, finishing apart.
std::vector<Request> requests() {
  return {{{3, 1, 4, 1, 5}, 6}, {{9}, 9}, {{2, 6, 5, 3, 5, 8, 9}, 4}, {{7, 9}, 2}, {{3, 2, 3}, 8}, {{8, 4, 6, 2}, 5}};
}

// Each request alone: one slot, one prefill row, no stop.
std::vector<Completion> alone(const Config& c, const std::vector<Literal>& params, const std::vector<Request>& rs,
                              Sampling sampling = {}, uint64_t seed = 0) {
  std::vector<Completion> out;
  for (size_t i = 0; i < rs.size(); ++i) {
    Module m("alone");
    GenerationPrograms g = capture(m, c, 1, 1, 1 + kMaxLen / kBlockSize);
    InterpreterEngine engine(m, g, c, params);
    // The request's own index seeds its generator: run it as request i of a list.
    std::vector<Request> one(i + 1, Request{{1}, 1});
    one[i] = rs[i];
    ContinuousBatcher b(g, engine, sampling, seed);
    out.push_back(b.run(one)[i]);
  }
  return out;
}

// `full` cut after its first stop: what generating with `stop` alone gives (greedy is deterministic).
Completion truncated(const Completion& full, const StopCondition& stop) {
  Completion c;
  for (int64_t t : full.tokens) {
    c.tokens.push_back(t);
    if (stop.stops(c.tokens)) {
      c.finish = FinishReason::Stop;
      return c;
    }
  }
  c.finish = FinishReason::Length;
  return c;
}

void expect_same(const std::vector<Completion>& got, const std::vector<Completion>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].tokens, want[i].tokens) << "request " << i;
    EXPECT_EQ(got[i].finish, want[i].finish) << "request " << i;
  }
}

TEST(Batching, StopConditionMatchesAnEndTokenOrTheGeneratedTail) {
  StopCondition s{{7}, {{1, 2}, {}}};
  EXPECT_FALSE(s.stops({}));
  EXPECT_TRUE(s.stops({3, 7}));
  EXPECT_FALSE(s.stops({7, 3}));
  EXPECT_TRUE(s.stops({5, 1, 2}));
  EXPECT_FALSE(s.stops({2}));  // shorter than the sequence
  EXPECT_FALSE(s.stops({1, 2, 5}));
}

// Two slots, a prefill of one row, six requests: the tokens of each equal its run alone, with and
// without stops; blocks are all back at the end and the pool never overflows.
TEST(Batching, ContinuousBatchingGivesEachRequestsTokensAlone) {
  Config c = batching_config();
  std::vector<Literal> params = init_parameters(c, 11);
  std::vector<Request> rs = requests();
  std::vector<Completion> want = alone(c, params, rs);
  for (size_t i = 0; i < rs.size(); ++i) ASSERT_EQ(int64_t(want[i].tokens.size()), rs[i].max_tokens) << i;
  // Stops taken from the runs alone, so that they fire: request 0's third token as an end token,
  // and request 4's second and third tokens as a stop sequence.
  StopCondition stop{{want[0].tokens[2]}, {{want[4].tokens[1], want[4].tokens[2]}}};
  std::vector<Completion> want_stopped;
  for (const Completion& w : want) want_stopped.push_back(truncated(w, stop));
  EXPECT_EQ(want_stopped[0].finish, FinishReason::Stop);
  EXPECT_EQ(want_stopped[4].finish, FinishReason::Stop);

  for (int64_t rows : {1, 2}) {
    for (bool stopping : {false, true}) {
      SCOPED_TRACE(fmt::format("prefill rows {}, {}", rows, stopping ? "with stops" : "no stops"));
      Module m("batched");
      const int64_t pool = 6;  // 6 of the 4-position blocks: 2 or 3 requests' worst cases at once
      GenerationPrograms g = capture(m, c, 2, rows, 1 + pool);
      InterpreterEngine engine(m, g, c, params);
      ContinuousBatcher b(g, engine, Sampling{}, 0, stopping ? stop : StopCondition{});
      std::vector<Completion> got = b.run(rs);
      expect_same(got, stopping ? want_stopped : want);
      EXPECT_EQ(b.blocks().blocks_used(), 0);
      EXPECT_EQ(b.blocks().blocks_free(), pool);
      EXPECT_LE(b.stats().peak_blocks, pool);
      EXPECT_GT(b.stats().peak_blocks, 2);  // two sequences held blocks at once
      int64_t generated = 0;
      for (const Completion& x : got) generated += int64_t(x.tokens.size());
      EXPECT_EQ(b.stats().prefilled_tokens, int64_t(rs.size()));
      EXPECT_EQ(b.stats().decoded_tokens + b.stats().prefilled_tokens, generated);
      // Two slots share the steps: fewer steps than tokens decoded.
      EXPECT_LT(b.stats().decode_steps, b.stats().decoded_tokens);
      if (rows == 1) {
        EXPECT_EQ(b.stats().prefills, int64_t(rs.size()));
      }
    }
  }
}

// Sampled, each request with its own generator: batching does not change what it draws.
TEST(Batching, SampledTokensDoNotDependOnTheBatch) {
  Config c = batching_config();
  std::vector<Literal> params = init_parameters(c, 11);
  std::vector<Request> rs = requests();
  Sampling sampling{1.5, 8};
  std::vector<Completion> want = alone(c, params, rs, sampling, 42);
  Module m("batched");
  GenerationPrograms g = capture(m, c, 3, 2, 1 + 8);
  InterpreterEngine engine(m, g, c, params);
  ContinuousBatcher b(g, engine, sampling, 42);
  expect_same(b.run(rs), want);
  EXPECT_EQ(b.blocks().blocks_used(), 0);
}

// On 2 host devices under tp (pools split by key/value head, donated to every prefill and decode):
// the interpreter's tokens.
TEST(Batching, TensorParallelOnTwoDevicesWithDonatedPools) {
  Config c = batching_config();
  std::vector<Literal> params = init_parameters(c, 11);
  std::vector<Request> rs = requests();
  std::vector<Completion> want = alone(c, params, rs);
  runtime::Session s = runtime::Session::host(2);
  Module m("batched");
  GenerationPrograms g = capture(m, c, 2, 1, 1 + 6, tensor_parallel(Mesh{"mesh", {{"model", 2}}, {}}, "model"));
  DeviceEngine engine(s, m, g, c, params);
  ContinuousBatcher b(g, engine);
  expect_same(b.run(rs), want);
  EXPECT_TRUE(engine.all_donated);
  EXPECT_EQ(b.blocks().blocks_used(), 0);
}

// Requests of one new token end at their prefill: the one slot is refilled with no decode between.
TEST(Batching, RequestsEndingAtTheirPrefillFreeTheirSlotAtOnce) {
  Config c = batching_config();
  std::vector<Literal> params = init_parameters(c, 11);
  std::vector<Request> rs = {{{1, 2}, 1}, {{3}, 1}, {{4, 5, 6}, 3}, {{7}, 1}};
  std::vector<Completion> want = alone(c, params, rs);
  Module m("batched");
  GenerationPrograms g = capture(m, c, 1, 1, 1 + 3);
  InterpreterEngine engine(m, g, c, params);
  ContinuousBatcher b(g, engine);
  expect_same(b.run(rs), want);
  EXPECT_EQ(b.stats().prefills, 4);
  EXPECT_EQ(b.stats().decode_steps, 2);  // only the third request decodes
  EXPECT_EQ(b.blocks().blocks_free(), 3);
}

TEST(Batching, RefusesARequestThePoolOrTheCacheCannotHold) {
  Config c = batching_config();
  Module m("batched");
  GenerationPrograms g = capture(m, c, 2, 1, 1 + 2);  // 2 blocks of 4 positions
  InterpreterEngine engine(m, g, c, init_parameters(c, 11));
  ContinuousBatcher b(g, engine);
  std::string e = tessera::testing::error_of([&] { b.run({{{1, 2}, 2}, {{1, 2, 3, 4, 5}, 5}}); });
  EXPECT_NE(e.find("request 1 needs 3 blocks of 4 positions (5 prompt + 5 new tokens - 1), but the pool holds 2"),
            std::string::npos) << e;
  e = tessera::testing::error_of([&] { b.run({{{1, 2, 3, 4, 5, 6, 7, 8}, 1}}); });
  EXPECT_NE(e.find("prompt of 8 tokens; the prefill takes 1 to 7"), std::string::npos) << e;
  e = tessera::testing::error_of([&] { b.run({{{1}, 17}}); });
  EXPECT_NE(e.find("needs 17 positions"), std::string::npos) << e;
  e = tessera::testing::error_of([&] { b.run({{{1}, 0}}); });
  EXPECT_NE(e.find("0 new tokens"), std::string::npos) << e;
  Module contiguous("c");
  GenerationPrograms gc = capture_generation(contiguous, CausalLM(c), {2, kPrompt, kMaxLen});
  e = tessera::testing::error_of([&] { ContinuousBatcher(gc, engine); });
  EXPECT_NE(e.find("paged cache"), std::string::npos) << e;
}

}  // namespace
}  // namespace tessera::nn
