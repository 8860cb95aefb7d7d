// Kernels spread over threads (support/threads.h) give the bits of one thread: GEMMs split by rows,
// by columns and by batch (never by K), transposed and with odd sizes; large fused element-wise
// loops, and their reductions by rows and by columns; strided copies; reductions by rows and by
// columns. Each runs under thread limits 1 to 4, and each parallel run must actually have used a
// second thread.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "common/random_programs.h"
#include "exec/accelerate.h"
#include "exec/contraction.h"
#include "exec/fusion.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "support/threads.h"

namespace tessera::exec {
namespace {

using namespace tessera::ir;
using Ints = std::vector<int64_t>;

std::vector<float> random_floats(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

// Waits (up to 2 s) until no worker holds a token: one that ran the last chunk of the previous
// kernel may still be on its way out, and its core is not free until then.
void settle() {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (support::thread_stats().busy != 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
}

int64_t elements(const Ints& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Function "f" of `m` on the fast kernels (and fused loops) under a thread limit of `limit`.
std::vector<Literal> run_fast(const Module& m, const std::vector<Literal>& in, int64_t limit) {
  settle();
  support::set_thread_limit(limit);
  interp::Options o;
  o.accelerate = accelerate;
  std::vector<Literal> out = interp::evaluate(m, "f", in, o);
  support::set_thread_limit(0);
  return out;
}

struct Gemm {
  const char* name;
  Ints lhs, rhs;
  DotDims dims;
};

TEST(ParallelKernels, SplitGemmsGiveTheBitsOfOneThread) {
  std::vector<Gemm> cases = {
      {"rows", {1024, 256}, {256, 64}, {{}, {}, {1}, {0}}},
      {"columns", {64, 256}, {256, 1000}, {{}, {}, {1}, {0}}},
      {"odd rows, lhs transposed", {400, 301}, {400, 72}, {{}, {}, {0}, {0}}},
      {"odd columns, rhs transposed", {48, 300}, {777, 300}, {{}, {}, {1}, {1}}},
      {"three batches", {3, 128, 96}, {3, 96, 256}, {{0}, {0}, {2}, {1}}},
      {"many batches", {16, 128, 32}, {16, 32, 128}, {{0}, {0}, {2}, {1}}},
      {"copied operand", {96, 40, 128}, {128, 96, 70}, {{}, {}, {0, 2}, {1, 0}}},
      // Weight gradients of the larger step: 684 = 42 tiles of 16 and 12 rows, dealt out unevenly.
      {"684 rows, lhs transposed", {1024, 684}, {1024, 256}, {{}, {}, {0}, {0}}},
      {"684 columns, lhs transposed", {1024, 256}, {1024, 684}, {{}, {}, {0}, {0}}},
      // M >= 4N, lhs transposed: computed as C^T into a buffer (contraction.h), cut into columns.
      {"C^T through a buffer", {512, 1600}, {512, 96}, {{}, {}, {0}, {0}}},
  };
  std::mt19937 rng(3);
  for (const Gemm& g : cases) {
    ContractionPlan p = plan_contraction(g.lhs, g.rhs, g.dims);
    std::vector<float> a = random_floats(elements(g.lhs), rng), b = random_floats(elements(g.rhs), rng);
    auto run = [&](int64_t limit, bool zero) {
      settle();
      support::set_thread_limit(limit);
      std::vector<float> out(static_cast<size_t>(p.out_elements), zero ? 0.0f : 7.0f);
      run_contraction(p, a.data(), b.data(), out.data(), zero);
      support::set_thread_limit(0);
      return out;
    };
    for (bool zero : {true, false}) {
      std::vector<float> one = run(1, zero);
      for (int64_t limit : {2, 3, 4}) {
        int64_t jobs = support::thread_stats().shared_jobs;
        std::vector<float> many = run(limit, zero);
        EXPECT_GT(support::thread_stats().shared_jobs, jobs) << g.name << ": one thread only, limit " << limit;
        ASSERT_EQ(many.size(), one.size());
        EXPECT_EQ(std::memcmp(many.data(), one.data(), one.size() * sizeof(float)), 0)
            << g.name << ": other bits with " << limit << " threads" << (zero ? "" : " (output not zero)");
      }
    }
  }
  settle();
  EXPECT_EQ(support::thread_stats().busy, 0);  // no token kept
}

TEST(ParallelKernels, SmallGemmsStayOnOneThread) {
  ContractionPlan p = plan_contraction(Ints{64, 64}, Ints{64, 64}, DotDims{{}, {}, {1}, {0}});
  std::vector<float> a(64 * 64, 1.0f), b(64 * 64, 1.0f), out(64 * 64, 0.0f);
  support::set_thread_limit(4);
  int64_t jobs = support::thread_stats().shared_jobs;
  run_contraction(p, a.data(), b.data(), out.data(), true);
  EXPECT_EQ(support::thread_stats().shared_jobs, jobs);  // 262144 multiply-adds: not worth a wake-up
  support::set_thread_limit(0);
  EXPECT_EQ(out[0], 64.0f);
}

TEST(ParallelKernels, LargeFusedLoopsGiveTheBitsOfOneThread) {
  // Element-wise chains with broadcasts, iota one-hots, compares, selects, converts and reductions,
  // at sizes that fuse by default and split into chunks (odd sizes: a last partial block).
  std::vector<Ints> shapes = {{4, 70001}, {300, 1031}, {262144}};
  for (size_t s = 0; s < shapes.size(); ++s)
    for (uint32_t seed = 1; seed <= 4; ++seed) {
      Module m;
      testing::build_elementwise_chains(m, shapes[s], seed * 17 + static_cast<uint32_t>(s));
      const Function& fn = *m.find_function("f");
      std::mt19937 rng(seed);
      std::vector<Literal> in;
      for (size_t i = 0; i < fn.num_parameters(); ++i) in.push_back(testing::chain_input(fn.parameter(i)->type(), rng));
      auto run = [&](int64_t limit) { return run_fast(m, in, limit); };
      std::vector<Literal> one = run(1);
      int64_t jobs = support::thread_stats().shared_jobs;
      std::vector<Literal> many = run(3);
      EXPECT_GT(support::thread_stats().shared_jobs, jobs) << "shape " << s << " seed " << seed << ": one thread only";
      ASSERT_EQ(one.size(), many.size());
      for (size_t r = 0; r < one.size(); ++r)
        EXPECT_TRUE(testing::same_bits(one[r], many[r])) << "shape " << s << " seed " << seed << " result " << r;
    }
}

TEST(ParallelKernels, FusedRowReductionsGiveTheReferenceBits) {
  // Softmax's sums: a reduce over the rows of a value computed in the fused loop (never stored),
  // rows of 4096 (whole blocks) and of 100 (rows and blocks cross).
  for (auto [rows, row] : std::vector<std::pair<int64_t, int64_t>>{{300, 4096}, {3000, 100}}) {
    Module m;
    build_function(m, "f", [&](FunctionBuilder& b) -> std::vector<Tensor> {
      Tensor x = b.param(f32({rows, row}));
      Tensor y = b.param(f32({rows, row}));
      // Padded past interp::kMinPlannedBlockOps, as below: a smaller block is not fused at all.
      Tensor s = b.param(f32({4}));
      for (int i = 0; i < 10; ++i) s = s * s + s;
      return {reduce_sum(exp(x) * y, {1}), reduce_max(x * y + x, {1}), s};
    });
    std::mt19937 rng(11);
    std::vector<Literal> in = {testing::chain_input(f32({rows, row}), rng), testing::chain_input(f32({rows, row}), rng),
                               testing::chain_input(f32({4}), rng)};
    std::vector<Literal> want = interp::evaluate(m, "f", in);
    auto run = [&](int64_t limit) { return run_fast(m, in, limit); };
    std::vector<Literal> one = run(1);
    int64_t jobs = support::thread_stats().shared_jobs;
    std::vector<Literal> many = run(3);
    EXPECT_GE(support::thread_stats().shared_jobs, jobs + 2) << "rows of " << row << ": one thread only";
    for (size_t r = 0; r < 3; ++r) {
      EXPECT_TRUE(testing::same_bits(one[r], many[r])) << "rows of " << row << ", result " << r;
      EXPECT_TRUE(testing::same_bits(want[r], many[r])) << "rows of " << row << ", result " << r << " against the reference";
    }
  }
}

TEST(ParallelKernels, FusedColumnReductionsGiveTheReferenceBits) {
  // Bias gradients: a reduce over outer dimensions (the innermost kept) of a value computed in the
  // fused loop (never stored), split into pieces of columns (at least kBlock wide: two at 1,024
  // columns); odd column counts give a last piece narrower than the others. Fewer columns (a norm
  // weight's 256, 100 or 200 with a middle dimension reduced) are cut by rows instead: the later
  // rows computed into a stage by other threads, folded after the first part's.
  struct Case {
    Ints shape, dims;
  };
  for (const Case& c : std::vector<Case>{{{64, 1024}, {0}},
                                         {{4, 16, 1536}, {0, 1}},
                                         {{60, 1100}, {0}},
                                         {{3, 20, 1300}, {1}},
                                         {{1024, 256}, {0}},
                                         {{3, 700, 100}, {0, 1}},
                                         {{40, 30, 200}, {1}}}) {
    Module m;
    build_function(m, "f", [&](FunctionBuilder& b) -> std::vector<Tensor> {
      Tensor x = b.param(f32(c.shape));
      Tensor y = b.param(f32(c.shape));
      // A block of fewer ops is not planned for fusion (interp::kMinPlannedBlockOps): a small chain
      // beside the reductions, which adds no parallel job of its own.
      Tensor s = b.param(f32({4}));
      for (int i = 0; i < 10; ++i) s = s * s + s;
      return {reduce_sum(exp(x) * y, c.dims), reduce_max(x * y + x, c.dims), s};
    });
    std::mt19937 rng(13);
    std::vector<Literal> in = {testing::chain_input(f32(c.shape), rng), testing::chain_input(f32(c.shape), rng),
                               testing::chain_input(f32({4}), rng)};
    std::vector<Literal> want = interp::evaluate(m, "f", in);
    auto run = [&](int64_t limit) { return run_fast(m, in, limit); };
    std::vector<Literal> one = run(1);
    for (int64_t limit : {2, 3}) {
      int64_t jobs = support::thread_stats().shared_jobs;
      std::vector<Literal> many = run(limit);
      EXPECT_GE(support::thread_stats().shared_jobs, jobs + 2) << "shape " << c.shape.size() << "-d, last " << c.shape.back()
                                                              << ": one thread only, limit " << limit;
      for (size_t r = 0; r < 3; ++r) {
        EXPECT_TRUE(testing::same_bits(one[r], many[r])) << "last dimension " << c.shape.back() << ", result " << r;
        EXPECT_TRUE(testing::same_bits(want[r], many[r]))
            << "last dimension " << c.shape.back() << ", result " << r << " against the reference";
      }
    }
  }
}

TEST(ParallelKernels, LargeCopiesAndRowReductionsGiveTheBitsOfOneThread) {
  // Transposes, broadcasts and slices (strided copies), and reductions over trailing dimensions
  // (rows) and over outer ones (columns), on parameters (so no fused loop computes them).
  Module m;
  build_function(m, "f", [](FunctionBuilder& b) -> std::vector<Tensor> {
    Tensor x = b.param(f32({6, 300, 97}));
    Tensor v = b.param(f32({1, 1, 70001}));
    return {transpose(x, {2, 0, 1}), transpose(x, {1, 0, 2}), reduce_sum(x, {2}), reduce_max(x, {1, 2}),
            broadcast_in_dim(v, {3, 1, 70001}, {0, 1, 2}), slice(x, {1, 3, 0}, {6, 300, 90}, {1, 2, 1}),
            reduce_sum(v, {2}), reduce_sum(x, {0, 1}), reduce_min(x, {1})};
  });
  const Function& fn = *m.find_function("f");
  std::mt19937 rng(9);
  std::vector<Literal> in;
  for (size_t i = 0; i < fn.num_parameters(); ++i) in.push_back(testing::chain_input(fn.parameter(i)->type(), rng));
  auto run = [&](int64_t limit) { return run_fast(m, in, limit); };
  std::vector<Literal> want = interp::evaluate(m, "f", in);  // the reference kernels
  std::vector<Literal> one = run(1);
  int64_t jobs = support::thread_stats().shared_jobs;
  std::vector<Literal> many = run(3);
  // The transposes, the slice, the row sums, the broadcast, the column sum and minimum.
  EXPECT_GE(support::thread_stats().shared_jobs, jobs + 7);
  ASSERT_EQ(one.size(), many.size());
  for (size_t r = 0; r < one.size(); ++r) {
    EXPECT_TRUE(testing::same_bits(one[r], many[r])) << "result " << r;
    EXPECT_TRUE(testing::same_bits(want[r], many[r])) << "result " << r << " against the reference";
  }
}

}  // namespace
}  // namespace tessera::exec
