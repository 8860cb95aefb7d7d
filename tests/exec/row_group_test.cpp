// Row groups (exec/fusion_rows.h) against the reference interpreter: softmaxes, log-softmaxes,
// a softmax's gradient and a cross-entropy with its gradient, written out op by op, over rows of
// several lengths (shorter and longer than a vector, not a multiple of its width, longer than a
// tile's 16384 elements) with -inf and NaN entries, run by an executable in a run context (where
// row groups run) on one thread and on several: every result must have the reference's bits, and
// the executable must have found and run its row groups.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "common/random_programs.h"
#include "small_step.h"
#include "exec/accelerate.h"
#include "exec/executable.h"
#include "exec/fold_rows.h"
#include "exec/fusion.h"
#include "interp/interpreter.h"
#include "interp/scalar_ops.h"
#include "ir/builder.h"
#include "nn/capture.h"
#include "nn/config.h"
#include "nn/model.h"
#include "nn/plan.h"
#include "support/threads.h"

namespace tessera::exec {
namespace {

using namespace tessera::ir;
using testing::same_bits;


// x broadcast along a new last dimension of n elements.
Tensor expand(const Tensor& x, int64_t n) {
  std::vector<int64_t> shape = x.shape(), dims(x.shape().size());
  for (size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<int64_t>(d);
  shape.push_back(n);
  return broadcast_in_dim(x, shape, dims);
}

int64_t last_dim(const Tensor& x) { return static_cast<int64_t>(x.shape().size()) - 1; }

Tensor softmax(const Tensor& x) {
  int64_t n = x.shape().back();
  Tensor e = exp(x - expand(reduce_max(x, {last_dim(x)}), n));
  return e / expand(reduce_sum(e, {last_dim(x)}), n);
}

Tensor log_softmax(const Tensor& x) {
  int64_t n = x.shape().back();
  Tensor shifted = x - expand(reduce_max(x, {last_dim(x)}), n);
  return shifted - expand(log(reduce_sum(exp(shifted), {last_dim(x)})), n);
}

enum class Program { kSoftmax, kLogSoftmax, kSoftmaxGradient, kCrossEntropy };

std::vector<Tensor> program(FunctionBuilder& f, Program which, const std::vector<int64_t>& shape);

// The program over x of `shape` (and g, or the labels), and a chain of element-wise ops over x
// besides (the executable plans fusion only in blocks of 16 ops or more).
void build(Module& m, Program which, const std::vector<int64_t>& shape) {
  build_function(m, "f", [&](FunctionBuilder& f) {
    std::vector<Tensor> out = program(f, which, shape);
    Tensor pad = convert(f.param(Type(ElementType::f64, shape)), ElementType::f32);
    for (int i = 0; i < 8; ++i) pad = pad * 0.5 + pad;
    out.push_back(pad);
    return out;
  });
}

std::vector<Tensor> program(FunctionBuilder& f, Program which, const std::vector<int64_t>& shape) {
  {
    // f64 arguments converted: no result has an argument's type, so none is computed in one's buffer.
    Tensor x = convert(f.param(Type(ElementType::f64, shape)), ElementType::f32);
    switch (which) {
      case Program::kSoftmax: return std::vector<Tensor>{softmax(x)};
      case Program::kLogSoftmax: return std::vector<Tensor>{log_softmax(x)};
      case Program::kSoftmaxGradient: {
        Tensor g = convert(f.param(Type(ElementType::f64, shape)), ElementType::f32);
        Tensor p = softmax(x * 0.5);
        Tensor dot = reduce_sum(g * p, {last_dim(x)});
        return std::vector<Tensor>{p, p * (g - expand(dot, shape.back()))};
      }
      case Program::kCrossEntropy: {
        std::vector<int64_t> rows(shape.begin(), shape.end() - 1), dims(rows.size());
        for (size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<int64_t>(d);
        Tensor labels = f.param(Type(ElementType::i32, rows));
        Tensor hot = convert(compare(f.iota(Type(ElementType::i32, shape), last_dim(x)),
                                     broadcast_in_dim(labels, shape, dims), ComparisonDirection::EQ),
                             ElementType::f32);
        double tokens = 1;
        for (int64_t d : rows) tokens *= static_cast<double>(d);
        Tensor logp = log_softmax(x);
        Tensor loss = -sum(hot * logp) / tokens;
        return std::vector<Tensor>{loss, (exp(logp) - hot) / tokens};
      }
    }
    return std::vector<Tensor>{};
  }
}

// Random entries, with -inf in some rows (a causal mask's), a whole row of -inf, and a NaN.
std::vector<Literal> inputs(const Function& fn, const std::vector<int64_t>& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Literal> in;
  for (size_t i = 0; i < fn.num_parameters(); ++i) {
    const Type& t = fn.parameter(i)->type();
    Literal v = testing::chain_input(t, rng);
    if (t.element == ElementType::i32) {
      for (int64_t k = 0; k < v.num_elements(); ++k) v.set_int(k, static_cast<int64_t>(rng() % shape.back()));
    } else if (i == 0) {
      int64_t len = shape.back(), rows = v.num_elements() / len;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < len; ++c) {
          if (r % 3 == 1 && c > r % len) v.set_double(r * len + c, -INFINITY);
          if (r == 2 % rows) v.set_double(r * len + c, -INFINITY);
        }
      if (rows > 4) v.set_double(4 * len + len / 2, NAN);
    }
    in.push_back(std::move(v));
  }
  return in;
}

TEST(RowGroups, SoftmaxesAndCrossEntropyGiveTheReferenceBits) {
  const std::vector<std::vector<int64_t>> shapes = {{3, 5, 7}, {4, 130}, {2, 3, 128}, {37, 33}, {300, 64},
                                                    {9, 4100}, {2, 2, 2049}, {6, 1}, {160, 1000}, {40, 4096}};
  const Program programs[] = {Program::kSoftmax, Program::kLogSoftmax, Program::kSoftmaxGradient, Program::kCrossEntropy};
  for (const auto& shape : shapes) {
    for (Program which : programs) {
      std::string what = "program " + std::to_string(static_cast<int>(which)) + ", rows of " + std::to_string(shape.back());
      Module m;
      build(m, which, shape);
      const Function& fn = *m.find_function("f");
      std::vector<Literal> in = inputs(fn, shape, static_cast<uint32_t>(shape.back() * 7 + static_cast<int>(which)));
      std::vector<Literal> want = interp::evaluate(m, "f", in);  // the pure reference
      set_fusion_min_elements(0);
      CompileOptions o;
      o.module = &m;
      std::shared_ptr<const Executable> e = Executable::compile(fn, o);
      EXPECT_GE(e->stats().row_groups, 1u) << what;
      EXPECT_GE(e->stats().row_steps, 3u) << what;
      std::unique_ptr<RunContext> context = e->make_context();
      for (int64_t limit : {1, 4}) {  // one thread; tiles spread over four (the last two shapes)
        support::set_thread_limit(limit);
        int64_t jobs = support::thread_stats().shared_jobs;
        for (int run = 0; run < 2; ++run) {  // the second over what the first left in the arena
          interp::Profile profile;
          interp::Options options;
          options.profile = &profile;
          std::vector<Literal> got = e->run(in, options, *context);
          ASSERT_EQ(got.size(), want.size()) << what;
          for (size_t r = 0; r < want.size(); ++r)
            EXPECT_TRUE(same_bits(got[r], want[r])) << what << ", threads " << limit << ", run " << run << ", result " << r;
          ASSERT_TRUE(profile.by_op.count("row group")) << what << ": no row group ran";
          EXPECT_EQ(profile.by_op.at("row group").first, static_cast<int64_t>(e->stats().row_groups)) << what;
        }
        if (limit > 1 && shape[0] * shape.back() >= 160000) {
          EXPECT_GT(support::thread_stats().shared_jobs, jobs) << what << ": the tiles ran on one thread";
        }
      }
      support::set_thread_limit(0);
      set_fusion_min_elements(-1);  // the default
    }
  }
}

// The row group's steps are the softmax's: the row max, the exp, the row sum and the division run
// as one group, and nothing else of the softmax runs on its own.
TEST(RowGroups, ASoftmaxRunsAsOneGroup) {
  Module m;
  build(m, Program::kSoftmax, {64, 256});
  set_fusion_min_elements(0);
  std::shared_ptr<const Executable> e = Executable::compile(*m.find_function("f"), CompileOptions{&m});
  set_fusion_min_elements(-1);  // the default
  EXPECT_EQ(e->stats().row_groups, 1u);
  EXPECT_EQ(e->stats().row_steps, 5u) << "max, exp, sum, divide, and the chain beside";
  std::vector<Literal> in = inputs(*m.find_function("f"), {64, 256}, 3);
  std::unique_ptr<RunContext> context = e->make_context();
  interp::Profile profile;
  interp::Options options;
  options.profile = &profile;
  std::vector<Literal> got = e->run(in, options, *context);
  EXPECT_TRUE(same_bits(got[0], interp::evaluate(m, "f", in)[0]));
  EXPECT_EQ(profile.by_op.count("stablehlo.reduce"), 0u) << "the reduces ran in the group";
  EXPECT_EQ(profile.by_op.count("stablehlo.divide"), 0u);
}

// Row r of x (`len` elements) folded in order into `init` by the reference's combiner.
float scalar_fold(OpKind kind, float init, const float* x, int64_t len) {
  namespace s = interp::scalar;
  using E = Elem<ElementType::f32>;
  float a = init;
  for (int64_t k = 0; k < len; ++k) {
    float b = x[k];
    // When both are NaN, x86 returns the first source's, and the fold keeps the accumulator
    // first; the scalar a + b gives a's too where the compiler puts a first, as the release
    // build does, but an -O1 (sanitizer) build may swap the operands of a commutative add,
    // so the rule is written out here rather than left to the compiler.
    if ((kind == OpKind::Add || kind == OpKind::Multiply) && std::isnan(a) && std::isnan(b)) {
      a = std::bit_cast<float>(std::bit_cast<uint32_t>(a) | 0x00400000u);  // a, quieted
      continue;
    }
    switch (kind) {
      case OpKind::Add: a = s::Add::apply<E>(a, b); break;
      case OpKind::Multiply: a = s::Multiply::apply<E>(a, b); break;
      case OpKind::Maximum: a = s::Maximum::apply<E>(a, b); break;
      default: a = s::Minimum::apply<E>(a, b); break;
    }
  }
  return a;
}

// The vector folds of rows (fold_rows.h) against the scalar combiners folded in order, on rows
// full of NaNs (two payloads, both signs), zeros of both signs, infinities and plain values.
TEST(RowGroups, VectorFoldsOfRowsGiveTheScalarBits) {
  const float specials[] = {NAN, -NAN, std::bit_cast<float>(0x7fc01234u), 0.0f, -0.0f, INFINITY, -INFINITY, 1.5f, -2.25f, 1e-40f};
  std::mt19937 rng(5);
  for (OpKind kind : {OpKind::Add, OpKind::Multiply, OpKind::Maximum, OpKind::Minimum}) {
    for (int64_t len : {1, 7, 8, 13, 64, 130}) {
      const int64_t rows = 19;  // 16 in vectors; the caller folds the other 3
      std::vector<float> x(static_cast<size_t>(rows * len)), got(static_cast<size_t>(rows)), want;
      for (float& v : x)
        v = rng() % 3 == 0 ? specials[rng() % std::size(specials)] : std::uniform_real_distribution<float>(-4, 4)(rng);
      for (float& v : got) v = rng() % 2 ? specials[rng() % std::size(specials)] : 0.5f;
      want = got;
      int64_t done = fold_rows8_f32(kind, x.data(), rows, len, got.data());
      if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 on this CPU";
      ASSERT_EQ(done, 16);
      for (int64_t r = 0; r < done; ++r) {
        float a = scalar_fold(kind, want[static_cast<size_t>(r)], x.data() + r * len, len);
        EXPECT_EQ(std::bit_cast<uint32_t>(got[static_cast<size_t>(r)]), std::bit_cast<uint32_t>(a))
            << "kind " << static_cast<int>(kind) << ", rows of " << len << ", row " << r;
      }
      for (int64_t r = done; r < rows; ++r)
        EXPECT_EQ(std::bit_cast<uint32_t>(got[static_cast<size_t>(r)]), std::bit_cast<uint32_t>(want[static_cast<size_t>(r)]))
            << "a row past the vectors' is left alone";
    }
  }
}

// Max and min of eight rows without a NaN fold through order keys (fold_rows_avx2.cpp); a NaN in
// one element of the eight rows, or in one running result, sends those eight to the NaN-aware
// combine. Rows of zeros of both signs (in either order), infinities, subnormals, repeated
// values and plain ones, eight-row groups with and without a NaN side by side: the scalar fold's
// bits in every row.
TEST(RowGroups, VectorMaxAndMinOfRowsWithoutNaNsGiveTheScalarBits) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 on this CPU";
  const float plain[] = {0.0f, -0.0f, INFINITY, -INFINITY, 1e-40f, -1e-40f, 1.5f, -1.5f, 3.0f, -3.0f,
                         std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                         std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min()};
  std::mt19937 rng(11);
  for (OpKind kind : {OpKind::Maximum, OpKind::Minimum}) {
    for (int64_t len : {1, 5, 8, 9, 16, 128, 131}) {
      const int64_t rows = 35;  // four groups of eight: the second with a NaN element, the third a NaN result
      std::vector<float> x(static_cast<size_t>(rows * len)), got(static_cast<size_t>(rows));
      for (float& v : x)
        v = rng() % 2 ? plain[rng() % std::size(plain)] : std::uniform_real_distribution<float>(-4, 4)(rng);
      for (float& v : got) v = rng() % 2 ? plain[rng() % std::size(plain)] : -0.0f;
      // Rows of nothing but zeros: which zero wins is the sign rule alone.
      for (int64_t k = 0; k < len; ++k) x[static_cast<size_t>(k)] = k % 2 ? 0.0f : -0.0f;
      for (int64_t k = 0; k < len; ++k) x[static_cast<size_t>(len + k)] = k % 2 ? -0.0f : 0.0f;
      got[0] = 0.0f;
      got[1] = -0.0f;
      x[static_cast<size_t>((8 + 3) * len + len / 2)] = std::bit_cast<float>(0xffc01234u);
      got[16 + 5] = NAN;
      std::vector<float> want = got;
      ASSERT_EQ(fold_rows8_f32(kind, x.data(), rows, len, got.data()), 32);
      for (int64_t r = 0; r < 32; ++r) {
        float a = scalar_fold(kind, want[static_cast<size_t>(r)], x.data() + r * len, len);
        EXPECT_EQ(std::bit_cast<uint32_t>(got[static_cast<size_t>(r)]), std::bit_cast<uint32_t>(a))
            << "kind " << static_cast<int>(kind) << ", rows of " << len << ", row " << r;
      }
    }
  }
}

// Sums starting at ±0, at a number and at NaNs (quiet and signaling).
const float kSumInits[] = {0.0f, -0.0f, 2.5f, -1e-40f, NAN, std::bit_cast<float>(0xffc04321u),
                           std::bit_cast<float>(0x7f800001u)};

// n elements of mostly zeros: pattern 0 all -0, 1 a +0 now and then, 2 zeros of both signs, 3-5
// zeros with a rare value (a number, a subnormal, an infinity, a NaN) among them.
std::vector<float> mostly_zeros(int pattern, int64_t n, std::mt19937& rng) {
  const float rare[] = {1.0f, -3.5f, 1e-45f, INFINITY, -INFINITY, NAN, std::bit_cast<float>(0x7fa00001u)};
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) {
    switch (pattern) {
      case 0: v = -0.0f; break;                           // every run skipped, the sign kept
      case 1: v = rng() % 97 == 0 ? 0.0f : -0.0f; break;  // a +0 now and then
      case 2: v = rng() % 2 ? 0.0f : -0.0f; break;
      default: v = rng() % (pattern * 40) == 0 ? rare[rng() % std::size(rare)] : (rng() % 2 ? 0.0f : -0.0f);
    }
  }
  return x;
}

// A sum of mostly zeros (a masked loss) skipping runs of ±0 in vector registers
// (sum_skipping_zeros_f32) against the plain in-order sum: runs of -0 alone, of +0 and -0 mixed,
// runs with one nonzero, a NaN or an infinity among zeros, sums starting at ±0, at a number and
// at NaN; the bits of adding every element in turn.
TEST(RowGroups, SumsSkippingZerosGiveTheInOrderBits) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(3);
  for (int pattern = 0; pattern < 6; ++pattern) {
    for (int64_t n : {64, 128, 640, 4096 + 37}) {
      std::vector<float> x = mostly_zeros(pattern, n, rng);
      for (float init : kSumInits) {
        int64_t done = -1;
        float got = sum_skipping_zeros_f32(init, x.data(), n, done);
        ASSERT_EQ(done, n / 64 * 64);
        float want = scalar_fold(OpKind::Add, init, x.data(), done);
        EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want))
            << "pattern " << pattern << ", " << n << " elements, from " << init;
      }
    }
  }
}

// A sum folded from pieces' kept runs (keep_zero_runs_f32, as a loss summed over threads) against
// the in-order sum of every element: the same patterns of zeros and rare values, cut into pieces
// at places that are and are not multiples of 64, from every start; the list is shorter wherever a
// whole run is zeros, and a capacity too small is refused.
TEST(RowGroups, SumsOfKeptZeroRunsGiveTheInOrderBits) {
  std::mt19937 rng(5);
  for (int pattern = 0; pattern < 6; ++pattern) {
    for (int64_t n : {64, 200, 640, 4096 + 37}) {
      std::vector<float> x = mostly_zeros(pattern, n, rng);
      for (int64_t piece : {n, int64_t{128}, int64_t{100}}) {
        std::vector<float> kept(static_cast<size_t>(n));
        int64_t size = 0;
        for (int64_t at = 0; at < n; at += piece) {
          int64_t got = keep_zero_runs_f32(x.data() + at, std::min(piece, n - at), kept.data() + size, n - size);
          ASSERT_GE(got, 0);
          size += got;
        }
        if (pattern == 0) {
          EXPECT_LT(size, n) << "a list of " << n << " zeros kept whole";
          EXPECT_EQ(keep_zero_runs_f32(x.data(), n, kept.data(), 0), -1) << "no room, yet written";
        }
        for (float init : kSumInits) {
          float got = scalar_fold(OpKind::Add, init, kept.data(), size);
          float want = scalar_fold(OpKind::Add, init, x.data(), n);
          EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want))
              << "pattern " << pattern << ", " << n << " elements in pieces of " << piece << ", from " << init;
        }
      }
    }
  }
}

// A CausalLM training step: its attention softmaxes and the cross-entropy run as
// row groups in a run context, with the bits of the same executable run step by step (no context:
// the same kernels, no groups), on one thread and on two.
TEST(RowGroups, ATrainingStepRunsItsSoftmaxesAndLossAsRowGroups) {
  nn::Config c = testing::small_lm();
  Module m("rows");
  nn::Programs p = nn::capture(m, nn::TrainingStep{nn::CausalLM(c)}.with(nn::AdamW{}));
  std::shared_ptr<const Executable> e = Executable::compile(*m.find_function(p.train_step), CompileOptions{&m});
  std::vector<Literal> in = testing::small_step_inputs(c, p);
  std::vector<Literal> want = e->run(in, interp::Options{});
  std::unique_ptr<RunContext> context = e->make_context();
  for (int64_t limit : {1, 2}) {
    support::set_thread_limit(limit);
    interp::Profile profile;
    interp::Options options;
    options.profile = &profile;
    std::vector<Literal> got = e->run(in, options, *context);
    support::set_thread_limit(0);
    ASSERT_EQ(got.size(), want.size());
    for (size_t r = 0; r < want.size(); ++r) EXPECT_TRUE(same_bits(got[r], want[r])) << "threads " << limit << ", result " << r;
    // The attention's softmax, and the cross-entropy's forward and backward in one group (the step
    // runs them in a compiled callee: counted by the profile, not by the caller's stats). The
    // softmax's gradient, with its maximum a constant to differentiation, is one row sum and one
    // loop: two passes, which a group does not pay for.
    ASSERT_TRUE(profile.by_op.count("row group"));
    EXPECT_GE(profile.by_op.at("row group").first, 2);
  }
}

}  // namespace
}  // namespace tessera::exec
