// One-hots in fused loops (exec/fusion_program.h's index test): compare(iota, b) EQ or NE with the
// iota along the last dimension and b broadcast along it, alone (read by a select) or converted to
// f32 or f64, computed as one instruction. Against the reference interpreter: labels of each type
// the iota takes (i32, i64, f32, f64), in range, out of range on both sides, and for floats
// non-integers, -0, NaN and infinities; the iota on either side; rows shorter than a block, not a
// multiple of it, and longer; a label per row and one for all. Every result must have the
// reference's bits, and the index test must have been built where it applies (and only there).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/random_programs.h"
#include "small_step.h"
#include "exec/executable.h"
#include "exec/fusion.h"
#include "interp/interpreter.h"
#include "ir/builder.h"

namespace tessera::exec {
namespace {

using namespace tessera::ir;
using testing::same_bits;


struct Case {
  std::vector<int64_t> shape;
  ElementType label = ElementType::i32;
  ComparisonDirection direction = ComparisonDirection::EQ;
  bool iota_first = true;   // compare(iota, labels), else compare(labels, iota)
  bool per_row = true;      // labels [rows] broadcast, else one scalar label for all
  int64_t iota_dim = -1;    // -1: the last (the index test); else another (computed op by op)
};

// A one-hot of labels over `shape`'s last dimension, read three ways: converted to f32 and
// multiplied, converted to f64, and as a select's predicate; a row sum of the first; and a chain
// beside (the executable plans fusion only in blocks of 16 ops or more).
void build(Module& m, const Case& c) {
  build_function(m, "f", [&](FunctionBuilder& f) {
    const std::vector<int64_t>& shape = c.shape;
    int64_t last = static_cast<int64_t>(shape.size()) - 1;
    Tensor x = convert(f.param(Type(ElementType::f64, shape)), ElementType::f32);
    std::vector<int64_t> rows(shape.begin(), shape.end() - 1), dims(rows.size());
    for (size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<int64_t>(d);
    Tensor labels = c.per_row ? broadcast_in_dim(f.param(Type(c.label, rows)), shape, dims)
                              : broadcast_in_dim(f.param(Type(c.label, {})), shape, {});
    Tensor iota = f.iota(Type(c.label, shape), c.iota_dim < 0 ? last : c.iota_dim);
    Tensor hot = c.iota_first ? compare(iota, labels, c.direction) : compare(labels, iota, c.direction);
    Tensor h32 = convert(hot, ElementType::f32) * x + x;
    Tensor h64 = convert(hot, ElementType::f64) * 3.0;
    Tensor picked = select(hot, x, x * 2.0);
    Tensor sums = reduce_sum(convert(hot, ElementType::f32) * x, {last});
    Tensor pad = x;
    for (int i = 0; i < 8; ++i) pad = pad * 0.5 + pad;
    return std::vector<Tensor>{h32, h64, picked, sums, pad};
  });
}

// Labels in and around [0, len): integers from -2 to len + 1; for floats also halves, -0, NaN,
// infinities and a huge value.
Literal labels(const Type& t, int64_t len, std::mt19937& rng) {
  Literal v = testing::chain_input(t, rng);
  bool real = t.element == ElementType::f32 || t.element == ElementType::f64;
  const double specials[] = {-0.0, NAN, INFINITY, -INFINITY, 1e30, 0.5, -1.0};
  for (int64_t k = 0; k < v.num_elements(); ++k) {
    int64_t n = static_cast<int64_t>(rng() % static_cast<uint32_t>(len + 4)) - 2;
    if (real && rng() % 4 == 0) v.set_double(k, rng() % 2 ? specials[rng() % std::size(specials)] : static_cast<double>(n) + 0.5);
    else if (real) v.set_double(k, static_cast<double>(n));
    else v.set_int(k, n);
  }
  return v;
}

// Runs "f" of `m` by an executable with values of every size fused, `runs` times in one run context
// (each run over the last one's arena); returns each run's results, and in `built` how far
// `counter` (one of fusion.h's) moved during the runs.
std::vector<std::vector<Literal>> run_fused(const Module& m, const std::vector<Literal>& in, int runs,
                                            int64_t (*counter)(), int64_t& built) {
  set_fusion_min_elements(0);
  CompileOptions o;
  o.module = &m;
  std::shared_ptr<const Executable> e = Executable::compile(*m.find_function("f"), o);
  std::unique_ptr<RunContext> context = e->make_context();
  int64_t before = counter();
  std::vector<std::vector<Literal>> out;
  for (int run = 0; run < runs; ++run) out.push_back(e->run(in, interp::Options{}, *context));
  built = counter() - before;
  set_fusion_min_elements(-1);  // the default
  return out;
}

// Runs case c by an executable in a run context, twice (the second over the first's arena), and
// checks every result's bits against the pure reference; returns the index tests built meanwhile.
int64_t check(const Case& c, const std::string& what) {
  Module m;
  build(m, c);
  const Function& fn = *m.find_function("f");
  std::mt19937 rng(static_cast<uint32_t>(c.shape.back() * 11 + static_cast<int>(c.label)));
  std::vector<Literal> in;
  in.push_back(testing::chain_input(fn.parameter(0)->type(), rng));
  in.push_back(labels(fn.parameter(1)->type(), c.shape.back(), rng));
  std::vector<Literal> want = interp::evaluate(m, "f", in);  // the pure reference
  int64_t built = 0;
  std::vector<std::vector<Literal>> runs = run_fused(m, in, 2, &index_tests_built, built);
  for (size_t run = 0; run < runs.size(); ++run) {
    const std::vector<Literal>& got = runs[run];
    EXPECT_EQ(got.size(), want.size()) << what;
    for (size_t r = 0; r < std::min(got.size(), want.size()); ++r)
      EXPECT_TRUE(same_bits(got[r], want[r])) << what << ", run " << run << ", result " << r;
  }
  return built;
}

TEST(OneHot, IndexTestsGiveTheReferenceBits) {
  const std::vector<std::vector<int64_t>> shapes = {{3, 5, 7}, {4, 130}, {2, 3, 1000}, {5, 4100}, {2, 512}, {600}};
  const ElementType types[] = {ElementType::i32, ElementType::i64, ElementType::f32, ElementType::f64};
  for (const auto& shape : shapes)
    for (ElementType label : types)
      for (auto direction : {ComparisonDirection::EQ, ComparisonDirection::NE})
        for (bool iota_first : {true, false}) {
          Case c{shape, label, direction, iota_first, shape.size() > 1};
          std::string what = fmt::format("shape [{}], labels {}, {}, iota {}", fmt::join(shape, ","),
                                         spelling(label), direction == ComparisonDirection::EQ ? "EQ" : "NE",
                                         iota_first ? "first" : "second");
          // Four readers of the one-hot (two converts, the select, the row sum's convert), each in
          // the loops that compute it, twice.
          EXPECT_GE(check(c, what), 4 * 2) << what << ": the index test did not run";
        }
}

TEST(OneHot, OneLabelForAllRowsIsAnIndexTestToo) {
  Case c{{6, 300}, ElementType::i32, ComparisonDirection::EQ, true, false};
  EXPECT_GE(check(c, "a scalar label"), 4 * 2);
}

// An iota along another dimension, or other directions, are not index tests: computed op by op,
// with the same bits.
TEST(OneHot, OtherComparesOfAnIotaAreComputedOpByOp) {
  Case across{{40, 130}, ElementType::i32, ComparisonDirection::EQ, true, true, 0};
  EXPECT_EQ(check(across, "an iota along the rows"), 0);
  Case less{{40, 130}, ElementType::i32, ComparisonDirection::LT, true, true};
  EXPECT_EQ(check(less, "LT"), 0);
}

// A CausalLM training step: its cross-entropy's one-hot (nn::cross_entropy's, read in the loss
// and in its gradient) runs as index tests, and the step has the bits of the same executable
// compiled without fused loops (the same fast kernels, every element-wise op on its own: the
// reference's element-wise bits; the GEMMs are not the pure reference's).
TEST(OneHot, ATrainingStepsCrossEntropyUsesIndexTests) {
  nn::Config c = testing::small_lm();
  Module m("one_hot");
  nn::Programs p = nn::capture(m, nn::TrainingStep{nn::CausalLM(c)}.with(nn::AdamW{}));
  std::shared_ptr<const Executable> e = Executable::compile(*m.find_function(p.train_step), CompileOptions{&m});
  std::vector<Literal> in = testing::small_step_inputs(c, p);
  CompileOptions unfused{&m};
  unfused.planner = nullptr;
  int64_t none = index_tests_built();
  std::vector<Literal> want = Executable::compile(*m.find_function(p.train_step), unfused)->run(in, interp::Options{});
  EXPECT_EQ(index_tests_built(), none) << "the executable without fused loops built none";
  std::unique_ptr<RunContext> context = e->make_context();
  int64_t before = index_tests_built();
  std::vector<Literal> got = e->run(in, interp::Options{}, *context);
  EXPECT_GE(index_tests_built() - before, 2) << "the loss and its gradient read the one-hot";
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < want.size(); ++r) EXPECT_TRUE(same_bits(got[r], want[r])) << "result " << r;
}

}  // namespace
// Ops of a scalar and a one-hot (c * one_hot, its negation, c - one_hot, one_hot / c, c / one_hot,
// max(one_hot, c)) take two values only, written by the index test itself (folded_index_test):
// with c a plain number, -0, +inf and NaN (where a NaN would meet another in an add, that add is
// computed op by op); f32 and f64. The reference's bits, and folds built where they apply.
TEST(OneHot, OpsOfScalarsAndAOneHotGiveTheReferenceBits) {
  const std::vector<int64_t> shape = {4, 130};
  for (ElementType e : {ElementType::f32, ElementType::f64}) {
    for (double c : {0.25, -0.0, static_cast<double>(INFINITY), -3.0, static_cast<double>(NAN)}) {
      Module m;
      build_function(m, "f", [&](FunctionBuilder& f) {
        Tensor x = f.param(Type(e, shape));
        Tensor labels = broadcast_in_dim(f.param(Type(ElementType::i32, {4})), shape, {0});
        Tensor hot = convert(compare(f.iota(Type(ElementType::i32, shape), 1), labels, ComparisonDirection::EQ), e);
        Tensor k = broadcast_in_dim(f.scalar(e, c), shape, {});
        std::vector<Tensor> out = {x + -(k * hot), x * (k - hot), x - hot / k, x + k / hot, x * maximum(hot, k),
                                   x + ((k * hot) + k)};
        Tensor pad = x;
        for (int i = 0; i < 8; ++i) pad = pad * 0.5 + pad;
        out.push_back(pad);
        return out;
      });
      const Function& fn = *m.find_function("f");
      std::mt19937 rng(5);
      std::vector<Literal> in = {testing::chain_input(fn.parameter(0)->type(), rng),
                                 Literal::from_ints(Type(ElementType::i32, {4}), std::vector<int64_t>{0, 129, 7, 300})};
      std::vector<Literal> want = interp::evaluate(m, "f", in);
      int64_t folds = 0;
      std::vector<Literal> got = std::move(run_fused(m, in, 1, &index_test_folds_built, folds)[0]);
      const std::string what = fmt::format("{} c = {}", ir::spelling(e), c);
      ASSERT_EQ(got.size(), want.size()) << what;
      for (size_t r = 0; r < want.size(); ++r) EXPECT_TRUE(same_bits(got[r], want[r])) << what << ", result " << r;
      EXPECT_GE(folds, 5) << what;
    }
  }
}

}  // namespace tessera::exec
