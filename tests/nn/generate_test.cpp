// Generation with a KV cache (nn/generate.h) against the model without one: two prompts of
// different lengths generated together greedily, prefill then one decode step per token, the logits
// of every generated position equal to CausalLM::logits recomputed on the whole sequence so far
// (kCacheTolerance, relative; NaN fails), and so the same greedy tokens. The reference run is the
// reference interpreter on whole arrays; the same programs on 1, 2 and 4 host devices under the
// tensor-parallel plan (the caches split by key/value head, donated from step to step), on 4
// under ctx (the cache split by position, partial attentions merged by log-sum-exp), and an MoE
// model under expert parallelism on 4 give the same tokens and logits. Also the sampler: greedy,
// top-k and its argument checks.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <iterator>
#include <optional>
#include <random>

#include "common/error_of.h"
#include "interp/interpreter.h"
#include "nn/generate.h"
#include "nn_test_util.h"
#include "runtime/session.h"

namespace tessera::nn {
namespace {

using namespace tessera::ir;

constexpr double kCacheTolerance = 1e-5;  // cached vs recomputed logits, relative (the bound)
constexpr double kMoeKernelTolerance = 1e-4;  // the MoE model's compiled kernels vs the interpreter

Config generation_config() {
  Config c;
  c.vocab = 32, c.d_model = 64, c.layers = 2, c.heads = 8, c.kv_heads = 4, c.ffn = 48;  // 2 query heads per key/value head
  c.init_std = 0.3;  // logits far enough apart that greedy picks are not ties
  return c;
}

const std::vector<std::vector<int64_t>> kPrompts = {{3, 1, 4, 1, 5}, {9, 2, 6}};
constexpr int64_t kNewTokens = 6;

struct Generated {
  std::vector<std::vector<int64_t>> tokens;        // per sequence: prompt then generated
  std::vector<std::vector<Literal>> logits;        // per sequence: the row each generated token came from
};

Literal row(const Literal& x, int64_t offset, int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(x.get_double(offset + i));
  return Literal::from_doubles(f32({n}), v);
}

int64_t greedy(const Literal& r) {
  std::vector<double> v;
  for (int64_t i = 0; i < r.num_elements(); ++i) v.push_back(r.get_double(i));
  std::mt19937_64 rng(0);
  return sample_token(v, Sampling{}, rng);
}

// The cache kinds: contiguous (block size 0), and paged in blocks of 4 positions with just enough
// blocks (the sequences' blocks interleave in the pool, as they are handed out step by step).
const std::vector<int64_t> kBlockSizes = {0, 4};

using Prompts = std::vector<std::vector<int64_t>>;

GenerationShape shape_of(int64_t block_size, const Prompts& prompts = kPrompts) {
  int64_t longest = 0;
  for (const auto& p : prompts) longest = std::max<int64_t>(longest, int64_t(p.size()));
  GenerationShape s{int64_t(prompts.size()), longest, longest + kNewTokens};
  if (block_size > 0) {
    s.block_size = block_size;
    s.num_blocks = 1 + s.batch * ((s.max_len + block_size - 1) / block_size);
  }
  return s;
}

// Greedy generation of kNewTokens after kPrompts: `prefill` and `decode` run the programs on their
// inputs (the caches are inputs num_parameters.. of decode and results 1.. of both).
Generated generate_with(const GenerationPrograms& g, const Config& c,
                  const std::function<std::vector<Literal>(std::vector<Literal>)>& prefill,
                  const std::function<std::vector<Literal>(std::vector<Literal>)>& decode,
                  const std::vector<Literal>& params, const Prompts& prompts = kPrompts) {
  const int64_t B = g.shape.batch, P = g.shape.prompt, V = c.vocab;
  Generated run;
  run.tokens = prompts;
  run.logits.resize(size_t(B));
  std::vector<int64_t> padded(size_t(B * P), 0);
  for (int64_t b = 0; b < B; ++b)
    for (size_t i = 0; i < prompts[size_t(b)].size(); ++i) padded[size_t(b * P) + i] = prompts[size_t(b)][i];
  std::vector<Literal> in = params;
  in.push_back(Literal::from_ints(i32({B, P}), padded));
  std::optional<BlockTable> blocks;
  if (g.paged()) {  // the prompts' positions get blocks; the padding writes to the null block
    blocks.emplace(g);
    std::vector<int64_t> slots;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < P; ++t) {
        if (t < int64_t(prompts[size_t(b)].size())) blocks->reserve(b, t);
        slots.push_back(blocks->slot(b, t));
      }
    in.push_back(Literal::from_ints(i32({B, P}), slots));
  }
  std::vector<Literal> out = prefill(std::move(in));
  for (int64_t b = 0; b < B; ++b) {
    int64_t last = int64_t(prompts[size_t(b)].size()) - 1;
    run.logits[size_t(b)].push_back(row(out[0], (b * P + last) * V, V));
  }
  std::vector<Literal> caches(out.begin() + 1, out.end());
  for (int64_t step = 0;; ++step) {
    std::vector<int64_t> next, pos;
    for (int64_t b = 0; b < B; ++b) {
      next.push_back(greedy(run.logits[size_t(b)].back()));
      run.tokens[size_t(b)].push_back(next.back());
      pos.push_back(int64_t(run.tokens[size_t(b)].size()) - 1);
    }
    if (step == kNewTokens - 1) break;
    in = params;
    in.insert(in.end(), caches.begin(), caches.end());
    in.push_back(Literal::from_ints(i32({B}), next));
    in.push_back(Literal::from_ints(i32({B}), pos));
    if (blocks) {
      std::vector<int64_t> slot;
      for (int64_t b = 0; b < B; ++b) {
        blocks->reserve(b, pos[size_t(b)]);
        slot.push_back(blocks->slot(b, pos[size_t(b)]));
      }
      in.push_back(Literal::from_ints(i32({B}), slot));
      in.push_back(blocks->table());
    }
    out = decode(std::move(in));
    for (int64_t b = 0; b < B; ++b) run.logits[size_t(b)].push_back(row(out[0], b * V, V));
    caches.assign(out.begin() + 1, out.end());
  }
  return run;
}

Generated reference_run(const Config& c, const std::vector<Literal>& params, int64_t block_size,
                        const Prompts& prompts = kPrompts) {
  Module m("generate");
  GenerationPrograms g = capture_generation(m, CausalLM(c), shape_of(block_size, prompts));
  auto eval = [&](const std::string& fn) {
    return [&m, fn](std::vector<Literal> args) { return interp::evaluate(m, fn, std::move(args)); };
  };
  return generate_with(g, c, eval(g.prefill), eval(g.decode), params, prompts);
}

// The logits of the last position of `tokens`, by the model without a cache.
Literal recomputed(const Config& base, const std::vector<Literal>& params, const std::vector<int64_t>& tokens) {
  Config c = base;
  c.batch = 1;
  c.seq = int64_t(tokens.size());
  CausalLM model(c);
  Module m("full");
  build_function(m, "logits", [&](FunctionBuilder& f) {
    std::vector<Tensor> ps;
    for (const ParamSpec& p : model.parameters()) ps.push_back(f.param(Type(c.dtype, p.shape)));
    return model.logits(Weights(model.parameters(), ps), f.param(i32({1, c.seq})));
  });
  std::vector<Literal> args = params;
  args.push_back(Literal::from_ints(i32({1, c.seq}), tokens));
  Literal logits = interp::evaluate(m, "logits", std::move(args))[0];
  return row(logits, (c.seq - 1) * c.vocab, c.vocab);
}

bool all_finite(const Literal& x) {
  for (int64_t i = 0; i < x.num_elements(); ++i)
    if (!std::isfinite(x.get_double(i))) return false;
  return true;
}

TEST(Generate, CachedLogitsEqualTheFullRecomputationAtEveryPosition) {
  Config c = generation_config();
  std::vector<Literal> params = init_parameters(c, 7);
  for (int64_t block_size : kBlockSizes) {
  SCOPED_TRACE(block_size == 0 ? "contiguous cache" : "paged cache");
  Generated run = reference_run(c, params, block_size);
  double worst = 0;
  for (size_t b = 0; b < kPrompts.size(); ++b) {
    ASSERT_EQ(run.tokens[b].size(), kPrompts[b].size() + kNewTokens);
    ASSERT_EQ(run.logits[b].size(), size_t(kNewTokens));
    std::vector<int64_t> uncached = kPrompts[b];  // greedy generation recomputing everything each step
    for (size_t i = 0; i < run.logits[b].size(); ++i) {
      Literal want = recomputed(c, params, uncached);
      ASSERT_TRUE(all_finite(run.logits[b][i])) << "sequence " << b << " position " << uncached.size() - 1;
      double err = testing::relative_error(run.logits[b][i], want);
      EXPECT_LE(err, kCacheTolerance) << "sequence " << b << ", logits of position " << uncached.size() - 1;
      worst = std::max(worst, err);
      uncached.push_back(greedy(want));
    }
    EXPECT_EQ(run.tokens[b], uncached) << "sequence " << b;
  }
  std::cout << "block size " << block_size << ": largest relative error of cached logits " << worst << "\n";
  // Not a degenerate model: the two sequences continue differently.
  EXPECT_NE(std::vector<int64_t>(run.tokens[0].end() - kNewTokens, run.tokens[0].end()),
            std::vector<int64_t>(run.tokens[1].end() - kNewTokens, run.tokens[1].end()));
  }
}

// Greedy generation by the programs of `shape` compiled for the plan's host devices and run
// through sharded_program, the caches kept on the devices and donated from step to step.
Generated sharded_run(const Config& c, const std::vector<Literal>& params, const ShardingPlan& plan,
                      const GenerationShape& shape, const Prompts& prompts = kPrompts) {
  runtime::Session s = runtime::Session::host(plan.mesh.num_devices());
  Module m("generate");
  GenerationPrograms g = capture_generation(m, CausalLM(c), shape, plan);
  EXPECT_TRUE(g.cache_sharding.has_value());
  runtime::ShardedProgram prefill = s.sharded_program(s.compile(m, g.prefill));
  runtime::ShardedProgram decode = s.sharded_program(s.compile(m, g.decode), g.decode_aliases);
  // The caches stay as buffers on the devices between steps; only logits come back.
  std::vector<runtime::ShardedBuffer> caches;
  auto run_prefill = [&](std::vector<Literal> in) {
    std::vector<runtime::ShardedBuffer> bufs;
    for (size_t i = 0; i < in.size(); ++i) bufs.push_back(prefill.stage(i, in[i]));
    std::vector<runtime::ShardedBuffer> out = prefill.execute(bufs);
    caches.assign(out.begin() + 1, out.end());
    return std::vector<Literal>{prefill.fetch(out[0])};
  };
  std::vector<runtime::ShardedBuffer> staged_params;
  auto run_decode = [&](std::vector<Literal> in) {
    if (staged_params.empty())
      for (size_t i = 0; i < g.num_parameters(); ++i) staged_params.push_back(decode.stage(i, in[i]));
    std::vector<runtime::ShardedBuffer> bufs = staged_params;
    // Moved, not copied: a donated buffer that no other one shares is reused in place.
    bufs.insert(bufs.end(), std::make_move_iterator(caches.begin()), std::make_move_iterator(caches.end()));
    // generate_with passes no caches here (run_prefill kept them as buffers): tokens, pos (and
    // paged: slot and table) follow the parameters.
    for (size_t j = g.num_parameters(); j < in.size(); ++j)
      bufs.push_back(decode.stage(g.decode_tokens_input() + (j - g.num_parameters()), in[j]));
    std::vector<runtime::ShardedBuffer> out = decode.execute(bufs);
    for (size_t i = 0; i < g.num_caches(); ++i) EXPECT_TRUE(bufs[g.num_parameters() + i].donated());
    caches.assign(out.begin() + 1, out.end());
    return std::vector<Literal>{decode.fetch(out[0])};
  };
  return generate_with(g, c, run_prefill, run_decode, params, prompts);
}

// sharded_run of the default prompts: the reference's tokens, and its logits.
void expect_sharded_generation_equals(const Config& c, const std::vector<Literal>& params, const Generated& want,
                                      const ShardingPlan& plan, const GenerationShape& shape) {
  Generated got = sharded_run(c, params, plan, shape);
  EXPECT_EQ(got.tokens, want.tokens);
  for (size_t b = 0; b < got.logits.size(); ++b)
    for (size_t i = 0; i < got.logits[b].size(); ++i)
      EXPECT_LE(testing::relative_error(got.logits[b][i], want.logits[b][i]), kCacheTolerance)
          << "sequence " << b << " token " << i;
}

// Under tp the caches are split by key/value head.
TEST(Generate, TensorParallelOnTwoAndFourDevicesGivesTheSameTokens) {
  Config c = generation_config();
  std::vector<Literal> params = init_parameters(c, 7);
  for (int64_t block_size : kBlockSizes) {
    Generated want = reference_run(c, params, block_size);
    for (int64_t n : {1, 2, 4}) {
      SCOPED_TRACE(fmt::format("{} devices, {}", n, block_size == 0 ? "contiguous cache" : "paged cache"));
      ShardingPlan plan = tensor_parallel(Mesh{"mesh", {{"model", n}}, {}}, "model");
      expect_sharded_generation_equals(c, params, want, plan, shape_of(block_size));
    }
  }
}

// Under ctx the contiguous cache of 12 positions is split by position, 3 on each of 4 devices:
// each decode step attends slice by slice and merges by log-sum-exp. The reference (one device,
// whole arrays) has the same tokens and logits, and so the full recomputation's (the test above).
TEST(Generate, ContextParallelOnFourDevicesGivesTheSameTokens) {
  Config c = generation_config();
  std::vector<Literal> params = init_parameters(c, 7);
  Generated want = reference_run(c, params, 0);
  GenerationShape shape = shape_of(0);
  shape.max_len = 12;  // 11 needed, rounded up to a multiple of 4
  ShardingPlan plan = context_parallel(Mesh{"mesh", {{"ctx", 4}}, {}}, "ctx");
  expect_sharded_generation_equals(c, params, want, plan, shape);
  // Each device keeps its 3 positions of every cache, and a decode step moves only the merge: per
  // layer, an all-reduce of the log-sum-exp maximum, then one of the weighted outputs and the
  // weights (two the partitioner combines into one).
  Module d("decode");
  GenerationPrograms g = capture_generation(d, CausalLM(c), shape, plan);
  ASSERT_EQ(g.cache_sharding->dims[1].axes.size(), 1u);
  EXPECT_EQ(g.cache_sharding->dims[1].axes[0].name, "ctx");
  runtime::CompiledProgram decode = runtime::Session::host(4).compile(d, g.decode);
  EXPECT_EQ(decode.report().count("all_reduce"), 2 * c.layers) << decode.report().to_string();
  EXPECT_EQ(decode.report().collectives.size(), size_t(2 * c.layers)) << decode.report().to_string();
  Module m("refused");
  shape.max_len = 11;
  std::string e = tessera::testing::error_of([&] { capture_generation(m, CausalLM(c), shape, plan); });
  EXPECT_NE(e.find("splits the cache's 11 positions into 4 pieces"), std::string::npos) << e;
  Module p("paged");
  e = tessera::testing::error_of([&] { capture_generation(p, CausalLM(c), shape_of(4), plan); });
  EXPECT_NE(e.find("a paged cache's pool is shared"), std::string::npos) << e;
}

// An MoE model (4 experts, top-2) under expert parallelism on 4 host devices, the 4 prompts and the
// experts split, tokens dispatched to their experts' devices by all_to_all: the one-device
// reference's tokens and logits, which equal the full recomputation routed without a capacity
// limit (generate.h: generation drops no choice).
TEST(Generate, MoeExpertParallelOnFourDevicesGivesTheSameTokens) {
  Config c = generation_config();
  c.experts = 4;
  c.top_k = 2;
  c.capacity_factor = 0.5;  // training's, which would drop choices; generation routes them all
  std::vector<Literal> params = init_parameters(c, 7);
  const Prompts prompts = {{3, 1, 4, 1, 5}, {9, 2, 6}, {2, 7, 1, 8}, {5, 5}};
  Generated want = reference_run(c, params, 0, prompts);
  Config uncapped = c;
  uncapped.capacity_factor = 4;  // C = the sequence's length: nothing dropped
  for (size_t b = 0; b < prompts.size(); ++b) {
    std::vector<int64_t> seen = prompts[b];
    for (size_t i = 0; i < want.logits[b].size(); ++i) {
      EXPECT_LE(testing::relative_error(want.logits[b][i], recomputed(uncapped, params, seen)), kCacheTolerance)
          << "sequence " << b << ", logits of position " << seen.size() - 1;
      seen.push_back(want.tokens[b][seen.size()]);
    }
  }
  // The compiled kernels on one device: the reference's tokens, logits within kMoeKernelTolerance
  // (their f32 GEMMs sum in other orders than the interpreter's: measured 1.6e-5 at worst, 1 and 4
  // devices alike); 4 devices give one device's logits within kCacheTolerance.
  auto on = [&](int64_t n) {
    return sharded_run(c, params, expert_parallel(Mesh{"mesh", {{"expert", n}}, {}}, "expert"), shape_of(0, prompts), prompts);
  };
  Generated one = on(1), four = on(4);
  EXPECT_EQ(one.tokens, want.tokens);
  EXPECT_EQ(four.tokens, want.tokens);
  for (size_t b = 0; b < want.logits.size(); ++b)
    for (size_t i = 0; i < want.logits[b].size(); ++i) {
      EXPECT_LE(testing::relative_error(one.logits[b][i], want.logits[b][i]), kMoeKernelTolerance)
          << "sequence " << b << " token " << i;
      EXPECT_LE(testing::relative_error(four.logits[b][i], one.logits[b][i]), kCacheTolerance)
          << "sequence " << b << " token " << i;
    }
  ShardingPlan ep = expert_parallel(Mesh{"mesh", {{"expert", 4}}, {}}, "expert");
  // The decode step communicates only to dispatch and combine: 2 all_to_alls per layer.
  Module m("generate");
  GenerationPrograms g = capture_generation(m, CausalLM(c), shape_of(0, prompts), ep);
  spmd::Report r = runtime::Session::host(4).compile(m, g.decode).report();
  EXPECT_EQ(r.counts(), (std::map<std::string, int64_t>{{"all_to_all", 2 * c.layers}})) << r.explain();
}

// The pool hands out each block once and refuses a sequence past it; unreserved positions map to
// the null block.
TEST(Generate, BlockTableHandsOutBlocksInOrderAndRefusesAFullPool) {
  Config c = generation_config();
  Module m("generate");
  GenerationShape s{2, 3, 8, 4, 3};  // 2 free blocks of 4 positions; 2 blocks per sequence
  GenerationPrograms g = capture_generation(m, CausalLM(c), s);
  BlockTable t(g);
  t.reserve(1, 2);
  t.reserve(0, 0);
  EXPECT_EQ(t.slot(1, 2), 1 * 4 + 2);
  EXPECT_EQ(t.slot(0, 3), 2 * 4 + 3);
  EXPECT_EQ(t.slot(0, 5), 0 * 4 + 1);  // not reserved: the null block
  EXPECT_EQ(t.blocks_used(), 2);
  std::vector<int64_t> want = {2, 0, 1, 0};
  Literal table = t.table();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(table.get_int(int64_t(i)), want[i]) << i;
  EXPECT_NE(tessera::testing::error_of([&] { t.reserve(0, 4); }).find("all 2 blocks"), std::string::npos);
  EXPECT_NE(tessera::testing::error_of([&] { t.reserve(0, 8); }).find("outside the cache"), std::string::npos);
  Module dp("generate");
  std::string e = tessera::testing::error_of([&] {
    capture_generation(dp, CausalLM(c), s, data_parallel(Mesh{"mesh", {{"data", 2}}, {}}, "data"));
  });
  EXPECT_NE(e.find("shared by the sequences"), std::string::npos) << e;
}

TEST(Generate, RefusesACacheShorterThanThePromptAndAnUnevenSplit) {
  Config c = generation_config();
  Module m("generate");
  EXPECT_NE(tessera::testing::error_of([&] { capture_generation(m, CausalLM(c), {2, 5, 4}); }).find("cache length 4"),
            std::string::npos);
  Module m3("generate");
  ShardingPlan plan = tensor_parallel(Mesh{"mesh", {{"model", 3}}, {}}, "model");
  std::string e = tessera::testing::error_of([&] { capture_generation(m3, CausalLM(c), {2, 5, 8}, plan); });
  EXPECT_NE(e.find("does not divide"), std::string::npos) << e;
}

TEST(Generate, SamplerIsGreedyAtTemperatureZeroAndKeepsTheTopK) {
  std::vector<double> logits = {0.1, 2.0, -1.0, 1.9, 0.5};
  std::mt19937_64 rng(3);
  EXPECT_EQ(sample_token(logits, Sampling{}, rng), 1);
  EXPECT_EQ(sample_token(logits, Sampling{5.0, 1}, rng), 1);
  std::vector<int> seen(logits.size(), 0);
  for (int i = 0; i < 400; ++i) ++seen[size_t(sample_token(logits, Sampling{10.0, 2}, rng))];
  EXPECT_EQ(seen[0] + seen[2] + seen[4], 0);
  EXPECT_GT(seen[1], 100);  // about 200 each at this temperature
  EXPECT_GT(seen[3], 100);
  std::vector<int> all(logits.size(), 0);
  for (int i = 0; i < 400; ++i) ++all[size_t(sample_token(logits, Sampling{10.0, 0}, rng))];
  for (int n : all) EXPECT_GT(n, 0);  // no top-k: every token can come
  EXPECT_NE(tessera::testing::error_of([&] { sample_token(logits, Sampling{-1.0, 0}, rng); }).find("temperature"),
            std::string::npos);
  EXPECT_NE(tessera::testing::error_of([&] { sample_token(logits, Sampling{1.0, -2}, rng); }).find("top-k"), std::string::npos);
}

}  // namespace
}  // namespace tessera::nn
