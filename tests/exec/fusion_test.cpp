// Element-wise fusion (exec/fusion.cpp) and the exp/logistic loops (exec/exp.cpp) against the
// reference interpreter: random programs of element-wise chains with broadcasts, iota one-hots,
// compares, selects, converts and reductions in between must give the reference's bits, fused and
// unfused; the fused run must actually leave ops out; exp and logistic must match the reference's
// expression on a sweep of float bit patterns and on the edges of their fast range.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/random_programs.h"
#include "exec/accelerate.h"
#include "exec/fused_kernels.h"
#include "exec/fusion.h"
#include "interp/interpreter.h"
#include "ir/builder.h"

namespace tessera::exec {
namespace {

using namespace tessera::ir;

Literal random_literal(const Type& t, std::mt19937& rng) { return testing::chain_input(t, rng); }
using testing::same_bits;

size_t count_ops(const Block& b) {
  size_t n = 0;
  for (const auto& op : b.ops()) n += op->kind() != OpKind::Return;
  return n;
}

// Fuses values of any size (the tests' shapes are small and odd) unless told the default minimum,
// fused or not as asked.
std::vector<Literal> run(const Module& m, const std::vector<Literal>& in, bool fast, bool fused,
                         interp::Profile* profile = nullptr, int64_t min_elements = 0) {
  set_fusion_min_elements(min_elements);
  interp::set_fusion_planner(fused ? &plan_fusion : nullptr);
  interp::Options o;
  if (fast) o.accelerate = accelerate;
  o.profile = profile;
  std::vector<Literal> out = interp::evaluate(m, "f", in, o);
  interp::set_fusion_planner(&plan_fusion);
  return out;
}

TEST(Fusion, RandomChainsGiveTheReferenceBits) {
  std::vector<std::vector<int64_t>> shapes = {{3, 5, 7}, {2, 1, 9}, {4, 3, 130}, {1030}, {}, {6, 600}, {20, 64}, {3, 2, 256}};
  for (size_t s = 0; s < shapes.size(); ++s) {
    for (uint32_t seed = 1; seed <= 12; ++seed) {
      Module m;
      testing::build_elementwise_chains(m, shapes[s], seed * 31 + static_cast<uint32_t>(s));
      const Function& fn = *m.find_function("f");
      std::mt19937 rng(seed);
      std::vector<Literal> in;
      for (size_t i = 0; i < fn.num_parameters(); ++i) in.push_back(random_literal(fn.parameter(i)->type(), rng));
      std::vector<Literal> want = run(m, in, false, false);
      std::vector<Literal> unfused = run(m, in, true, false);
      interp::Profile profile;
      std::vector<Literal> fused = run(m, in, true, true, &profile);
      std::vector<Literal> small_unfused = run(m, in, true, true, nullptr, 16384);  // the default
      ASSERT_EQ(fused.size(), want.size());
      for (size_t r = 0; r < want.size(); ++r) {
        EXPECT_TRUE(same_bits(unfused[r], want[r])) << "unfused fast kernels, shape " << s << " seed " << seed << " result " << r;
        EXPECT_TRUE(same_bits(fused[r], want[r])) << "fused, shape " << s << " seed " << seed << " result " << r;
        EXPECT_TRUE(same_bits(small_unfused[r], want[r])) << "default minimum, shape " << s << " seed " << seed;
      }
      // Fusion took effect: fewer ops ran than the program has (the inlined ones are left out).
      int64_t ran = 0;
      for (const auto& [name, e] : profile.by_op) ran += e.first;
      EXPECT_LT(ran, static_cast<int64_t>(count_ops(fn.body()))) << "shape " << s << " seed " << seed;
    }
  }
}

// Reductions of values computed in their loop: rows folded side by side (also across blocks),
// leading dimensions, one long fold, rows of whole blocks (eight side by side, and the rows left
// over: {11, 1024}, {2, 8, 512}), rows of 128 and 256 folded from two or four staged blocks (a
// partial group at the end, and chunks on several threads: {600, 256}), eight rows of 64 in a block;
// each must leave its operand unstored.
TEST(Fusion, ReductionsFoldTheirLoopInOrder) {
  for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{
           {7, 130}, {300, 5}, {3, 1000}, {40, 3, 9}, {11, 1024}, {2, 8, 512}, {9, 128}, {5, 256}, {600, 256}, {16, 64}}) {
    Module m;
    build_function(m, "f", [&](FunctionBuilder& f) {
      Tensor x = f.param(f32(shape)), y = f.param(f32(shape));
      int64_t last = static_cast<int64_t>(shape.size()) - 1;
      std::vector<Tensor> outs = {reduce_sum(exp(x) * y, {last}), reduce_max(x * y - 1.0, {0}),
                                  sum(x * x + y), reduce_min(y / (x + 3.0), {0})};
      Tensor pad = x;
      for (int i = 0; i < 12; ++i) pad = pad * 0.5 + pad;  // past the planner's minimum block size
      outs.push_back(pad);
      return outs;
    });
    std::mt19937 rng(11);
    std::vector<Literal> in = {random_literal(f32(shape), rng), random_literal(f32(shape), rng)};
    interp::Profile profile;
    std::vector<Literal> got = run(m, in, true, true, &profile);
    std::vector<Literal> want = run(m, in, false, false);
    for (size_t r = 0; r < want.size(); ++r) EXPECT_TRUE(same_bits(got[r], want[r])) << "result " << r;
    // Only the reductions ran (and the pad's root): exp, the products and the quotient never did.
    EXPECT_EQ(profile.by_op.count("stablehlo.exponential"), 0u);
    EXPECT_EQ(profile.by_op.count("stablehlo.divide"), 0u);
    EXPECT_EQ(profile.by_op.at("stablehlo.reduce").first, 4);
  }
}

// The one-hot of a cross-entropy: nothing of [rows, vocab] but the result is materialized.
TEST(Fusion, OneHotSoftmaxGradientRunsAsOneLoop) {
  Module m;
  build_function(m, "f", [](FunctionBuilder& f) {
    Tensor logits = f.param(f32({6, 1000}));
    Tensor labels = f.param(i32({6}));
    Tensor mx = broadcast_in_dim(reduce_max(logits, {1}), {6, 1000}, {0});
    Tensor e = exp(logits - mx);
    Tensor s = broadcast_in_dim(reduce_sum(e, {1}), {6, 1000}, {0});
    Tensor hot = convert(compare(f.iota(i32({6, 1000}), 1), broadcast_in_dim(labels, {6, 1000}, {0}),
                                 ComparisonDirection::EQ), ElementType::f32);
    Tensor g = e / s - hot;
    for (int i = 0; i < 8; ++i) g = g * 0.5 + g;  // pad the block past the planner's minimum
    return g;
  });
  std::mt19937 rng(3);
  std::vector<Literal> in = {random_literal(f32({6, 1000}), rng), Literal::from_ints(i32({6}), std::vector<int64_t>{0, 999, 5, 17, 400, 3})};
  interp::Profile profile;
  std::vector<Literal> got = run(m, in, true, true, &profile);
  EXPECT_TRUE(same_bits(got[0], run(m, in, false, false)[0]));
  EXPECT_EQ(profile.by_op.count("stablehlo.broadcast_in_dim"), 0u);
  EXPECT_EQ(profile.by_op.count("stablehlo.compare"), 0u);
  EXPECT_EQ(profile.by_op.count("stablehlo.iota"), 0u);
  EXPECT_EQ(profile.by_op.at("stablehlo.exponential").first, 1);  // read twice, stored once
}

// A value read by several loops is computed again in each only when its whole tree is cheap: the
// masked, scaled scores of an attention softmax (a select of a divide, read by the row max, the
// exp and another loop) are stored once; a cheap tree (a multiply and an add) is still inlined into
// each reader. The bits are the reference's either way.
TEST(Fusion, ValuesWithCostlyTreesAreStoredForSeveralReaders) {
  const std::vector<int64_t> shape = {64, 256};
  Module m;
  build_function(m, "f", [&](FunctionBuilder& f) {
    Tensor x = f.param(f32(shape)), mask = f.param(i1(shape));
    Tensor scores = select(mask, x / 3.0, broadcast_in_dim(f.scalar(ElementType::f32, -1e30), shape, {}));
    Tensor mx = broadcast_in_dim(reduce_max(scores, {1}), shape, {0});
    Tensor e = exp(scores - mx);
    Tensor cheap = x * 0.5 + 1.0;  // read by two loops below, recomputed in each
    return std::vector<Tensor>{e * cheap, (scores + cheap) * 2.0};
  });
  std::mt19937 rng(9);
  Literal x = random_literal(f32(shape), rng);
  Literal mask(i1(shape));
  for (int64_t i = 0; i < mask.num_elements(); ++i) mask.set_int(i, (i % 256) <= (i / 256) % 256);
  std::vector<Literal> in = {x, mask};
  interp::Profile profile;
  std::vector<Literal> got = run(m, in, true, true, &profile);
  std::vector<Literal> want = run(m, in, false, false);
  for (size_t r = 0; r < want.size(); ++r) EXPECT_TRUE(same_bits(got[r], want[r])) << "result " << r;
  EXPECT_EQ(profile.by_op.at("stablehlo.select").first, 1) << "the scores stored once";
  EXPECT_EQ(profile.by_op.count("stablehlo.divide"), 0u) << "computed in the select's loop";
  EXPECT_EQ(profile.by_op.count("stablehlo.add"), 0u) << "the cheap tree inlined into its readers";
}

// Sums whose terms are mostly zeros (a one-hot times values, as a cross-entropy's loss) skip runs
// of zeros (fold.h: fold_in_order) and keep the reference's bits: the sign of a zero sum (inits +0
// and -0, terms of both signs), a NaN or an infinity among the terms or as the init, subnormals;
// into one result and into rows longer than a block. Neither the terms nor the one-hot are stored.
TEST(Fusion, SumsOfMostlyZerosKeepTheReferenceBits) {
  const std::vector<int64_t> shape = {6, 1100};  // fewer than 8 long rows: folded block by block
  const float specials[] = {-0.0f, 0.0f, NAN, INFINITY, -INFINITY, 1e-40f, -1e-40f, 3.5f, -2.0f};
  for (float init : {0.0f, -0.0f, NAN}) {
    for (int variant = 0; variant < 5; ++variant) {
      Module m;
      build_function(m, "f", [&](FunctionBuilder& f) {
        Tensor x = f.param(f32(shape));
        Tensor labels = f.param(i32({6}));
        Tensor hot = convert(compare(f.iota(i32(shape), 1), broadcast_in_dim(labels, shape, {0}), ComparisonDirection::EQ),
                             ElementType::f32);
        Tensor terms = hot * x;
        Tensor zero = f.scalar(ElementType::f32, init);
        Tensor pad = x;
        for (int i = 0; i < 8; ++i) pad = pad * 0.5 + pad;  // past the planner's minimum block size
        return std::vector<Tensor>{reduce(terms, zero, {0, 1}, OpKind::Add), reduce(terms, zero, {1}, OpKind::Add), pad};
      });
      std::mt19937 rng(static_cast<uint32_t>(variant) + 7);
      Literal x = random_literal(f32(shape), rng);
      // Variant 0: random values; 1: all -0 (every term -0); 2: specials at the chosen columns;
      // 3: negative values, so every term that is not chosen is -0; 4: -0 but one +0 in each row,
      // inside a run of 32 (a -0 init gives +0, and nothing after it brings -0 back).
      for (int64_t i = 0; i < x.num_elements(); ++i) {
        double v = x.get_double(i);
        if (variant == 1) v = -0.0;
        if (variant == 2 && i % 7 == 0) v = specials[static_cast<size_t>(i / 7) % std::size(specials)];
        if (variant == 3) v = -std::fabs(v) - 1;
        if (variant == 4) v = i % shape[1] == 100 ? 0.0 : -0.0;
        x.set_double(i, v);
      }
      Literal labels = Literal::from_ints(i32({6}), std::vector<int64_t>{0, 1099, 31, 512, 700, 96});
      std::vector<Literal> in = {x, labels};
      interp::Profile profile;
      std::vector<Literal> got = run(m, in, true, true, &profile);
      std::vector<Literal> want = run(m, in, false, false);
      for (size_t r = 0; r < want.size(); ++r)
        EXPECT_TRUE(same_bits(got[r], want[r])) << "init " << init << ", variant " << variant << ", result " << r;
      EXPECT_EQ(profile.by_op.count("stablehlo.multiply"), 0u);
      EXPECT_EQ(profile.by_op.at("stablehlo.reduce").first, 2);
    }
  }
}

// The fused loops' kernels compiled for AVX2 give the baseline's bits on every instruction kind,
// on random values and the edges (zeros of both signs, infinities, NaNs, subnormals, huge and
// tiny magnitudes), at a block's length and at odd tails.
TEST(FusedKernels, Avx2GivesTheBaselineBits) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 on this CPU";
  using fused::Instr;
  using fused::Kernel;
  const fused::KernelSet& base = fused::base::kernel_set();
  const fused::KernelSet& avx2 = fused::avx2_kernels();
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-4, 4);
  std::vector<double> specials = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 5e-324, -5e-324, 1e-40, -1e-40,
                                  1e30, -1e30, 88.7, -103.9, 709.0, -745.0, 1.0, -1.0, 0.5};
  auto fill = [&](ElementType e, std::vector<std::byte>& buf, int64_t n) {
    buf.assign(static_cast<size_t>(n) * 8, std::byte{0});
    for (int64_t i = 0; i < n; ++i) {
      double v = i % 3 == 0 ? specials[static_cast<size_t>(i / 3) % specials.size()] : u(rng);
      switch (e) {
        case ElementType::f32: reinterpret_cast<float*>(buf.data())[i] = static_cast<float>(v); break;
        case ElementType::f64: reinterpret_cast<double*>(buf.data())[i] = v; break;
        case ElementType::i32: reinterpret_cast<int32_t*>(buf.data())[i] = static_cast<int32_t>(std::floor(u(rng) * 3)); break;
        default: reinterpret_cast<uint8_t*>(buf.data())[i] = static_cast<uint8_t>(i % 5 == 0); break;  // i1
      }
    }
  };
  // Runs kernel k of each set on registers 0-2 (inputs) into register 3; compares the outputs.
  auto same = [&](Kernel a, Kernel b, std::array<ElementType, 3> in, ElementType out, const std::string& what) {
    ASSERT_NE(a, nullptr) << what;
    ASSERT_NE(b, nullptr) << what;
    for (int64_t n : {fused::kBlock, int64_t{1}, int64_t{37}}) {
      std::vector<std::byte> r[3], z[2];
      for (int i = 0; i < 3; ++i) fill(in[static_cast<size_t>(i)], r[i], n);
      Instr s;
      s.in = {0, 1, 2};
      s.out = 3;
      for (int k = 0; k < 2; ++k) {
        z[k].assign(static_cast<size_t>(n) * 8, std::byte{0x5a});
        std::byte* regs[4] = {r[0].data(), r[1].data(), r[2].data(), z[k].data()};
        (k == 0 ? a : b)(s, regs, 0, n);
      }
      size_t bytes = static_cast<size_t>(n * ir::info(out).bytes);
      EXPECT_EQ(std::memcmp(z[0].data(), z[1].data(), bytes), 0) << what << ", " << n << " elements";
    }
  };
  for (ElementType e : {ElementType::f32, ElementType::f64}) {
    for (OpKind k : {OpKind::Add, OpKind::Subtract, OpKind::Multiply, OpKind::Divide, OpKind::Maximum,
                     OpKind::Minimum, OpKind::Power, OpKind::Negate, OpKind::Exponential, OpKind::Log,
                     OpKind::Logistic, OpKind::Sqrt, OpKind::Rsqrt, OpKind::Tanh})
      same(base.arithmetic(k, e), avx2.arithmetic(k, e), {e, e, e}, e, std::string(ir::spelling(k)));
    same(base.select(e), avx2.select(e), {ElementType::i1, e, e}, e, "select");
    same(base.compare(e), avx2.compare(e), {e, e, e}, ElementType::i1, "compare");
    for (ElementType from : {ElementType::f32, ElementType::f64, ElementType::i32, ElementType::i1})
      same(base.converter(from, e), avx2.converter(from, e), {from, from, from}, e, "convert");
  }
}

}  // namespace
}  // namespace tessera::exec
