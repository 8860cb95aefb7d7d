// Element-wise fusion (exec/fusion.cpp) and the exp/logistic loops (exec/exp.cpp) against the
// reference interpreter: random programs of element-wise chains with broadcasts, iota one-hots,
// compares, selects, converts and reductions in between must give the reference's bits, fused and
// unfused; the fused run must actually leave ops out; exp and logistic must match the reference's
// expression on a sweep of float bit patterns and on the edges of their fast range; a training
// step's RoPE reads its views in place.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/random_programs.h"
#include "small_step.h"
#include "exec/accelerate.h"
#include "exec/fusion.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "nn/capture.h"
#include "nn/model.h"

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

// Fuses values of any size (the tests' shapes are small and odd) unless told a minimum,
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

// TESSERA_PROPERTY_CASES and TESSERA_PROPERTY_SEED widen the seeds of each shape by hand.
TEST(Fusion, RandomChainsGiveTheReferenceBits) {
  std::vector<std::vector<int64_t>> shapes = {{3, 5, 7}, {2, 1, 9}, {4, 3, 130}, {1030}, {}, {6, 600}, {20, 64}, {3, 2, 256}};
  const uint32_t first = testing::property_first_seed(1), last = first + uint32_t(testing::property_cases(12));
  for (size_t s = 0; s < shapes.size(); ++s) {
    for (uint32_t seed = first; seed < last; ++seed) {
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
      std::vector<Literal> small_unfused = run(m, in, true, true, nullptr, 16384);  // above every shape here
      ASSERT_EQ(fused.size(), want.size());
      for (size_t r = 0; r < want.size(); ++r) {
        EXPECT_TRUE(same_bits(unfused[r], want[r])) << "unfused fast kernels, shape " << s << " seed " << seed << " result " << r;
        EXPECT_TRUE(same_bits(fused[r], want[r])) << "fused, shape " << s << " seed " << seed << " result " << r;
        EXPECT_TRUE(same_bits(small_unfused[r], want[r])) << "minimum 16384, shape " << s << " seed " << seed;
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

// A select of a compare computed in its loop is one instruction (select_compare): a reduce_max's
// gradient (the elements equal to their row's max pick one value, the rest another) over rows with
// NaNs, ±0 and infinities, each direction; and where the compare is also read on its own (its i1
// register already there), the select reads that register. The reference's bits either way.
TEST(Fusion, SelectsOfComparesGiveTheReferenceBits) {
  const std::vector<int64_t> shape = {6, 300};
  using D = ComparisonDirection;
  for (D dir : {D::EQ, D::NE, D::GE, D::GT, D::LE, D::LT}) {
    for (bool shared : {false, true}) {
      Module m;
      build_function(m, "f", [&](FunctionBuilder& f) {
        Tensor x = f.param(f32(shape)), y = f.param(f32(shape));
        Tensor mx = broadcast_in_dim(reduce_max(x, {1}), shape, {0});
        Tensor hit = compare(x, mx, dir);
        Tensor g = select(hit, y, broadcast_in_dim(f.scalar(ElementType::f32, -0.0), shape, {}));
        if (shared) g = convert(hit, ElementType::f32) + g;  // the compare read first
        for (int i = 0; i < 8; ++i) g = g * 0.5 + g;  // pad the block past the planner's minimum
        return g;
      });
      std::mt19937 rng(17);
      Literal x = random_literal(f32(shape), rng), y = random_literal(f32(shape), rng);
      const float specials[] = {NAN, -NAN, 0.0f, -0.0f, INFINITY, -INFINITY};
      for (int64_t i = 0; i < x.num_elements(); i += 7) x.set_double(i, specials[static_cast<size_t>(i / 7) % 6]);
      for (int64_t i = 3; i < y.num_elements(); i += 11) y.set_double(i, specials[static_cast<size_t>(i / 11) % 6]);
      std::vector<Literal> in = {x, y};
      int64_t before = select_compares_built();
      interp::Profile profile;
      std::vector<Literal> got = run(m, in, true, true, &profile);
      EXPECT_TRUE(same_bits(got[0], run(m, in, false, false)[0])) << "direction " << static_cast<int>(dir) << (shared ? ", shared" : "");
      EXPECT_EQ(profile.by_op.count("stablehlo.compare"), 0u);
      EXPECT_EQ(profile.by_op.count("stablehlo.select"), 0u);
      if (shared) EXPECT_EQ(select_compares_built(), before) << "the compare is in a register already";
      else EXPECT_GT(select_compares_built(), before) << "direction " << static_cast<int>(dir);
    }
  }
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

// A running sum of one more term at each step (the backward pass's residual gradient), each partial
// sum read by three loops (the next add, a scaled copy, a row sum): a partial sum whose tree reads
// three values is stored (its readers then read one) rather than summed again from all its terms
// in every reader's loop, whose reads would grow with the square of the number of terms. A
// partial sum of two values, or a tree that reads one value many times, stays inlined (and so
// would all of them below kStoreSharedTreesFrom elements).
TEST(Fusion, RunningSumsReadBySeveralLoopsAreStored) {
  const std::vector<int64_t> shape = {256, 256};
  Module m;
  build_function(m, "f", [&](FunctionBuilder& f) {
    std::vector<Tensor> out;
    Tensor acc = f.param(f32(shape));
    Tensor pad = acc;
    for (int i = 0; i < 8; ++i) pad = pad * 0.5 + pad;  // one value read many times: inlined
    out.push_back(pad);
    for (int k = 1; k <= 5; ++k) {
      acc = acc + f.param(f32(shape));
      out.push_back(acc * 2.0);
      out.push_back(reduce_sum(acc * acc, {1}));
    }
    return out;
  });
  std::mt19937 rng(3);
  std::vector<Literal> in;
  for (int k = 0; k <= 5; ++k) in.push_back(random_literal(f32(shape), rng));
  interp::Profile profile;
  std::vector<Literal> got = run(m, in, true, true, &profile);
  std::vector<Literal> want = run(m, in, false, false);
  for (size_t r = 0; r < want.size(); ++r) EXPECT_TRUE(same_bits(got[r], want[r])) << "result " << r;
  // x0 + x1 (two values) inlined; + x2 stored; + x3 (two: the stored sum and x3) inlined; + x4
  // stored; + x5 inlined. The third add is the pad's root.
  EXPECT_EQ(profile.by_op.at("stablehlo.add").first, 3) << "the partial sums of three values stored";
  EXPECT_EQ(profile.by_op.at("stablehlo.multiply").first, 5) << "the scaled copies; the pad's chain inlined";
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

// RoPE (nn/layers.cpp) turns the halves of each head through a reverse, and its tables are
// broadcasts: views that the step's loops read in place. A training step runs no reverse, slice,
// negation, concatenation or pad of its own for it, and has the bits of the step with every op
// run alone (views copied by the fast kernels).
TEST(Fusion, RopeReadsItsViewsInPlace) {
  nn::Config c = testing::small_lm();
  Module m("rope");
  nn::Programs p = nn::capture(m, nn::TrainingStep{nn::CausalLM(c)}.with(nn::AdamW{}));
  std::vector<Literal> in = testing::small_step_inputs(c, p);
  auto step = [&](bool fused, interp::Profile* profile) {
    set_fusion_min_elements(0);
    interp::set_fusion_planner(fused ? &plan_fusion : nullptr);
    interp::Options o;
    o.accelerate = accelerate;
    o.profile = profile;
    std::vector<Literal> out = interp::evaluate(m, p.train_step, in, o);
    interp::set_fusion_planner(&plan_fusion);
    return out;
  };
  interp::Profile fused_profile, alone_profile;
  std::vector<Literal> got = step(true, &fused_profile), want = step(false, &alone_profile);
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < want.size(); ++r) EXPECT_TRUE(same_bits(got[r], want[r])) << "result " << r;
  EXPECT_GT(alone_profile.by_op.at("stablehlo.reverse").first, 0);  // run alone, the step has them
  for (const char* op : {"stablehlo.reverse", "stablehlo.concatenate", "stablehlo.pad", "stablehlo.negate"})
    EXPECT_EQ(fused_profile.by_op.count(op), 0u) << op;
}

// AdamW's update of one parameter (nn::AdamW's expression: p, m and v from g, the hyperparameters
// scalars of one array) runs fused over a [96, 160] parameter (30 blocks, not all full) with the
// reference's bits; the loop of p's update (11 instructions) gives 3 of its registers the places of
// values no longer live.
TEST(Fusion, AdamWsUpdateSharesRegisterPlacesWithTheReferenceBits) {
  Module m;
  build_function(m, "f", [](FunctionBuilder& f) {
    Tensor p = f.param(f32({96, 160})), mo = f.param(f32({96, 160})), v = f.param(f32({96, 160}));
    Tensor g = f.param(f32({96, 160})), s = f.param(f32({3}));
    auto scalar = [&](int64_t i) { return reshape(slice(s, {i}, {i + 1}), {}); };
    Tensor decayed = p * scalar(0);
    Tensor m2 = 0.9 * mo + 0.1 * g;
    Tensor v2 = 0.999 * v + 0.001 * g * g;
    Tensor denom = sqrt(v2) / scalar(2) + 1e-8;
    return std::vector<Tensor>{decayed - scalar(1) * (m2 / denom), m2, v2};
  });
  std::mt19937 rng(7);
  std::vector<Literal> in;
  for (size_t i = 0; i < 4; ++i) in.push_back(random_literal(f32({96, 160}), rng));
  in[2] = Literal::from_doubles(f32({96, 160}), std::vector<double>(96 * 160, 0.25));  // v: sqrt of a positive
  in.push_back(Literal::from_doubles(f32({3}), std::vector<double>{0.999, 0.01, 0.97}));
  interp::Profile fused_profile;
  int64_t before = register_reuses();
  std::vector<Literal> got = run(m, in, true, true, &fused_profile), want = run(m, in, false, false);
  EXPECT_GE(register_reuses() - before, 3);
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < want.size(); ++r) EXPECT_TRUE(same_bits(got[r], want[r])) << "result " << r;
  EXPECT_EQ(fused_profile.by_op.count("stablehlo.sqrt"), 0u) << "the update ran op by op";
}

}  // namespace
}  // namespace tessera::exec
