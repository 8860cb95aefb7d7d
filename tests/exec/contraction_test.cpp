// dot_general as strided GEMM calls (exec/contraction.h) against the reference interpreter: random
// dimension numbers (batch dimensions anywhere, several contracting and free dimensions in any
// order, transposed forms, size-0 and size-1 dimensions), the plans of the layouts that must read
// in place (no copy), and the plan run into a buffer that is not zero. Transposes folded into the
// GEMM calls (exec/fusion_contraction.h): random transposed operands and results, fused, through
// the interpreter and an Executable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <random>
#include <string_view>

#include "exec/accelerate.h"
#include "exec/contraction.h"
#include "exec/executable.h"
#include "exec/fusion.h"
#include "exec/gemm.h"
#include "exec_tolerance.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "support/run_cache.h"

namespace tessera::exec {
namespace {

using namespace tessera::ir;
using Ints = std::vector<int64_t>;

struct RandomDot {
  Type lhs, rhs;
  DotDims dims;
};

// A dot_general with random dimension numbers. Each operand's dimensions (batch, contracting, free)
// are shuffled independently, and the contracting pairs listed in a random order. The contracting
// sizes multiply to at most 16, which keeps f32 sums within kContractionTolerance.
RandomDot random_dot(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto size = [&](int most) { return pick(0, 39) == 0 ? 0 : pick(0, 4) == 0 ? 1 : pick(2, most); };
  int nb = pick(0, 2), nc = pick(0, 3), nl = pick(0, 2), nr = pick(0, 2);
  Ints batch(nb), contracting(nc), lfree(nl), rfree(nr);
  for (auto& s : batch) s = size(3);
  for (auto& s : contracting) s = size(4);
  for (auto& s : lfree) s = size(pick(0, 3) == 0 ? 13 : 5);
  for (auto& s : rfree) s = size(pick(0, 3) == 0 ? 13 : 5);
  while (std::accumulate(contracting.begin(), contracting.end(), int64_t{1}, std::multiplies<>()) > 16)
    *std::max_element(contracting.begin(), contracting.end()) = 1;
  // role: 0 batch, 1 contracting, 2 free; each operand's dimensions in a random order.
  auto layout = [&](const Ints& free) {
    std::vector<std::pair<int, int>> dims;
    for (int i = 0; i < nb; ++i) dims.emplace_back(0, i);
    for (int i = 0; i < nc; ++i) dims.emplace_back(1, i);
    for (int i = 0; i < static_cast<int>(free.size()); ++i) dims.emplace_back(2, i);
    std::shuffle(dims.begin(), dims.end(), rng);
    return dims;
  };
  auto lhs = layout(lfree), rhs = layout(rfree);
  auto shape = [&](const std::vector<std::pair<int, int>>& dims, const Ints& free) {
    Ints s;
    for (auto [role, i] : dims) s.push_back(role == 0 ? batch[i] : role == 1 ? contracting[i] : free[i]);
    return s;
  };
  auto position = [](const std::vector<std::pair<int, int>>& dims, int role, int i) {
    return static_cast<int64_t>(std::find(dims.begin(), dims.end(), std::pair{role, i}) - dims.begin());
  };
  RandomDot d;
  ElementType e = pick(0, 7) == 0 ? ElementType::f64 : ElementType::f32;
  d.lhs = Type(e, shape(lhs, lfree));
  d.rhs = Type(e, shape(rhs, rfree));
  for (int i = 0; i < nb; ++i) {
    d.dims.lhs_batch.push_back(position(lhs, 0, i));
    d.dims.rhs_batch.push_back(position(rhs, 0, i));
  }
  std::vector<int> order(static_cast<size_t>(nc));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (int i : order) {
    d.dims.lhs_contracting.push_back(position(lhs, 1, i));
    d.dims.rhs_contracting.push_back(position(rhs, 1, i));
  }
  return d;
}

std::string ints_str(const Ints& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

std::string describe(const RandomDot& d) {
  auto list = ints_str;
  return to_string(d.lhs) + " . " + to_string(d.rhs) + " batch " + list(d.dims.lhs_batch) + list(d.dims.rhs_batch) +
         " contracting " + list(d.dims.lhs_contracting) + list(d.dims.rhs_contracting);
}

Literal random_literal(const Type& t, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (double& x : v) x = u(rng);
  return Literal::from_doubles(t, v);
}

int dots_taken = 0;
bool counting(const Op& op, std::span<const Literal* const> in, std::vector<Literal>& out) {
  bool took = accelerate(op, in, out);
  if (took && op.kind() == OpKind::DotGeneral) ++dots_taken;
  return took;
}

TEST(Contraction, RandomDimensionNumbersMatchTheReference) {
  std::mt19937 rng(2026);
  int in_place = 0, copied = 0;
  for (int trial = 0; trial < 600; ++trial) {
    RandomDot d = random_dot(rng);
    Module m;
    build_function(m, "f", [&](FunctionBuilder& f) {
      Tensor x = f.param(d.lhs), y = f.param(d.rhs);
      return dot_general(x, y, d.dims);
    });
    std::vector<Literal> in = {random_literal(d.lhs, rng), random_literal(d.rhs, rng)};
    std::vector<Literal> want = interp::evaluate(m, "f", in);
    interp::Options o;
    o.accelerate = counting;
    dots_taken = 0;
    std::vector<Literal> got = interp::evaluate(m, "f", in, o);
    ASSERT_EQ(dots_taken, 1) << describe(d);
    ASSERT_EQ(got[0].type(), want[0].type()) << describe(d);
    for (int64_t i = 0; i < got[0].num_elements(); ++i)
      ASSERT_TRUE(testing::close(got[0].get_double(i), want[0].get_double(i)))
          << describe(d) << " element " << i << ": " << got[0].get_double(i) << " against " << want[0].get_double(i);
    ContractionPlan p = plan_contraction(d.lhs.shape, d.rhs.shape, d.dims);
    (p.lhs_copy.needed || p.rhs_copy.needed ? copied : in_place)++;
  }
  // Both ways of reading the operands were exercised.
  EXPECT_GT(in_place, 100);
  EXPECT_GT(copied, 100);
}

struct Layout {
  std::string name;
  Ints lhs, rhs;
  DotDims dims;
  bool copy_lhs, copy_rhs;
  int64_t calls;
};

// The layouts that read in place (leading dimensions, transpose flags, strided batch pointers) and
// the ones that cannot.
TEST(Contraction, PlansReadInPlaceWhereStridesAllow) {
  std::vector<Layout> layouts = {
      {"matmul", {5, 7}, {7, 3}, {{}, {}, {1}, {0}}, false, false, 1},
      {"contracting first in both", {7, 5}, {7, 3}, {{}, {}, {0}, {0}}, false, false, 1},
      {"contracting last in both", {5, 7}, {3, 7}, {{}, {}, {1}, {1}}, false, false, 1},
      {"batched", {2, 5, 7}, {2, 7, 3}, {{0}, {0}, {2}, {1}}, false, false, 2},
      {"batch in the middle", {5, 2, 7}, {7, 2, 3}, {{1}, {1}, {2}, {0}}, false, false, 2},
      {"batch last in rhs", {2, 5, 7}, {7, 3, 2}, {{0}, {2}, {2}, {0}}, false, true, 2},
      {"two batch dims merge", {2, 3, 5, 7}, {2, 3, 7, 4}, {{0, 1}, {0, 1}, {3}, {2}}, false, false, 6},
      {"two batch dims apart", {2, 5, 3, 7}, {3, 2, 7, 4}, {{0, 2}, {1, 0}, {3}, {2}}, false, false, 6},
      {"free dims together", {4, 3, 5}, {5, 6}, {{}, {}, {2}, {0}}, false, false, 1},
      {"free dims split by contracting", {4, 5, 3}, {5, 6}, {{}, {}, {1}, {0}}, true, false, 1},
      {"two contracting in order", {4, 3, 5}, {3, 5, 6}, {{}, {}, {1, 2}, {0, 1}}, false, false, 1},
      {"two contracting listed reversed", {4, 3, 5}, {3, 5, 6}, {{}, {}, {2, 1}, {1, 0}}, false, false, 1},
      // K numbered one way in lhs and the other in rhs: the smaller operand (lhs) is copied.
      {"contracting orders differ", {4, 3, 5}, {5, 3, 6}, {{}, {}, {1, 2}, {1, 0}}, true, false, 1},
      {"size-1 dims anywhere", {1, 5, 1, 7}, {7, 1, 3}, {{}, {}, {3, 2}, {0, 1}}, false, false, 1},
      {"vector times matrix", {7}, {7, 3}, {{}, {}, {0}, {0}}, false, false, 1},
      {"matrix times vector", {5, 7}, {7}, {{}, {}, {1}, {0}}, false, false, 1},
      {"lhs transposed only", {3, 7}, {3, 4}, {{}, {}, {0}, {0}}, false, false, 1},
      {"strided vector per batch", {7, 2}, {7, 2, 3}, {{1}, {1}, {0}, {0}}, false, false, 2},
      // The CausalLM's attention: scores = q[b, s, kv, g, hd] . k[b, t, kv, hd] (q's free s and g
      // are split by kv: a copy), out = probs[b, kv, s, g, t] . v[b, t, kv, hd] (in place).
      {"attention scores", {2, 8, 4, 2, 16}, {2, 8, 4, 16}, {{0, 2}, {0, 2}, {4}, {3}}, true, false, 8},
      {"attention values", {2, 4, 8, 2, 8}, {2, 8, 4, 16}, {{0, 1}, {0, 2}, {4}, {1}}, false, false, 8},
  };
  for (const Layout& l : layouts) {
    ContractionPlan p = plan_contraction(l.lhs, l.rhs, l.dims);
    EXPECT_EQ(p.lhs_copy.needed, l.copy_lhs) << l.name;
    EXPECT_EQ(p.rhs_copy.needed, l.copy_rhs) << l.name;
    EXPECT_EQ(p.calls, l.calls) << l.name;
  }
  // Merged batch loops: one loop of 6 over contiguous [2, 3] batches.
  EXPECT_EQ(plan_contraction(Ints{2, 3, 5, 7}, Ints{2, 3, 7, 4}, {{0, 1}, {0, 1}, {3}, {2}}).batch.size(), 1u);
}

// cached_contraction keeps a plan per key, but a key asked again with other shapes or dimension
// numbers (another op at a freed op's address) gets the plan of what it is asked now; and a run's
// cache (support/run_cache.h) keeps plans apart from the thread's own.
TEST(Contraction, CachedPlansFollowTheShapesAndDimensionsAskedNow) {
  auto same = [](const ContractionPlan& a, const ContractionPlan& b) {
    return a.m == b.m && a.n == b.n && a.k == b.k && a.ta == b.ta && a.tb == b.tb && a.lda == b.lda &&
           a.ldb == b.ldb && a.calls == b.calls && a.lhs_copy.needed == b.lhs_copy.needed &&
           a.rhs_copy.needed == b.rhs_copy.needed;
  };
  int key = 0;
  ir::DotDims matmul{{}, {}, {1}, {0}}, transposed{{}, {}, {0}, {0}};
  const ContractionPlan& first = cached_contraction(&key, Ints{5, 7}, Ints{7, 3}, matmul);
  EXPECT_TRUE(same(first, plan_contraction(Ints{5, 7}, Ints{7, 3}, matmul)));
  EXPECT_EQ(&cached_contraction(&key, Ints{5, 7}, Ints{7, 3}, matmul), &first);  // kept
  EXPECT_TRUE(same(cached_contraction(&key, Ints{4, 9}, Ints{9, 2}, matmul), plan_contraction(Ints{4, 9}, Ints{9, 2}, matmul)));
  EXPECT_EQ(cached_contraction(&key, Ints{4, 9}, Ints{9, 2}, matmul).m, 4);
  EXPECT_TRUE(same(cached_contraction(&key, Ints{7, 4}, Ints{7, 3}, transposed),
                   plan_contraction(Ints{7, 4}, Ints{7, 3}, transposed)));
  EXPECT_TRUE(cached_contraction(&key, Ints{7, 4}, Ints{7, 3}, transposed).ta);
  support::RunCache run;
  {
    support::RunCache::Scope scope(run);
    EXPECT_EQ(cached_contraction(&key, Ints{6, 7}, Ints{7, 3}, matmul).m, 6);
  }
  EXPECT_EQ(cached_contraction(&key, Ints{7, 4}, Ints{7, 3}, transposed).m, 4);  // the thread's own, as it was
  {
    support::RunCache::Scope scope(run);
    EXPECT_EQ(cached_contraction(&key, Ints{6, 7}, Ints{7, 3}, matmul).m, 6);
    EXPECT_EQ(support::RunCache::current(), &run);
  }
  EXPECT_EQ(support::RunCache::current(), nullptr);
}

// Run into a buffer of NaNs with out_is_zero false: every element is written (beta 0), including
// an empty contraction's zeros.
TEST(Contraction, OverwritesAnOutputThatIsNotZero) {
  std::mt19937 rng(5);
  struct Case {
    Ints lhs, rhs;
    DotDims dims;
  };
  for (const Case& s : std::vector<Case>{{{2, 5, 7}, {7, 2, 3}, {{0}, {1}, {2}, {0}}},
                                           {{4, 0}, {0, 3}, {{}, {}, {1}, {0}}},
                                           {{6, 5}, {5, 4}, {{}, {}, {1}, {0}}}}) {
    Type lt = f32(s.lhs), rt = f32(s.rhs);
    Module m;
    build_function(m, "f", [&](FunctionBuilder& f) {
      Tensor x = f.param(lt), y = f.param(rt);
      return dot_general(x, y, s.dims);
    });
    std::vector<Literal> in = {random_literal(lt, rng), random_literal(rt, rng)};
    Literal want = interp::evaluate(m, "f", in)[0];
    ContractionPlan p = plan_contraction(s.lhs, s.rhs, s.dims);
    std::vector<float> out(static_cast<size_t>(want.num_elements()), std::numeric_limits<float>::quiet_NaN());
    run_contraction(p, reinterpret_cast<const float*>(in[0].bytes().data()),
                    reinterpret_cast<const float*>(in[1].bytes().data()), out.data(), false);
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_TRUE(testing::close(out[i], want.get_double(static_cast<int64_t>(i)))) << "element " << i;
  }
}

// The GEMM calls of a plan (what run_contraction runs and bench/gemm_bench.cpp times) write every
// element of the result exactly once: batch calls, and a product cut into row or column pieces.
TEST(Contraction, GemmCallsCoverTheResultOnce) {
  struct Case {
    Ints lhs, rhs;
    DotDims dims;
    int64_t min_calls;  // at least this many: the product is cut (or batched) as intended
  };
  for (const Case& s : std::vector<Case>{{{1024, 256}, {256, 4096}, {{}, {}, {1}, {0}}, 8},      // cut by columns
                                           {{4096, 64}, {64, 256}, {{}, {}, {1}, {0}}, 8},        // cut by rows
                                           {{4, 128, 32}, {4, 32, 128}, {{0}, {0}, {2}, {1}}, 4},  // batched
                                           {{6, 5}, {5, 4}, {{}, {}, {1}, {0}}, 1}}) {             // one call
    ContractionPlan p = plan_contraction(s.lhs, s.rhs, s.dims);
    ASSERT_TRUE(p.ok && !p.via_buffer);
    ASSERT_GE(gemm_calls(p), s.min_calls);
    std::vector<int> written(static_cast<size_t>(p.out_elements), 0);
    for (int64_t t = 0; t < gemm_calls(p); ++t) {
      GemmCall c = gemm_call(p, t);
      for (int64_t r = 0; r < c.m; ++r)
        for (int64_t col = 0; col < c.n; ++col) {
          int64_t at = c.c + r * p.ldc + col;
          ASSERT_TRUE(at >= 0 && at < p.out_elements) << "call " << t;
          ++written[static_cast<size_t>(at)];
        }
    }
    for (size_t i = 0; i < written.size(); ++i) ASSERT_EQ(written[i], 1) << "element " << i;
  }
}

// Transposes folded into the contraction (exec/fusion_contraction.h): dot_general(transpose(x),
// transpose(y)) transposed again, with random dimension numbers and permutations, fused (values
// of any size) through the interpreter and through an Executable in a run context (the arena),
// within the contraction tolerance of the reference; some trials must fold all three transposes
// (one op runs where four were).
TEST(Contraction, TransposesFoldIntoTheGemmCalls) {
  std::mt19937 rng(77);
  auto permutation = [&](size_t rank) {
    Ints p(rank);
    std::iota(p.begin(), p.end(), 0);
    std::shuffle(p.begin(), p.end(), rng);
    return p;
  };
  // x such that transpose(x, p) has shape `shape`: x's dimension p[i] is shape[i].
  auto source = [](const Type& t, const Ints& p) {
    Ints s(p.size());
    for (size_t i = 0; i < p.size(); ++i) s[static_cast<size_t>(p[i])] = t.shape[i];
    return Type(t.element, s);
  };
  set_fusion_min_elements(0);
  interp::set_fusion_planner(&plan_fusion);
  int folded_all = 0, folded_some = 0, trials = 300;
  for (int trial = 0; trial < trials; ++trial) {
    RandomDot d = random_dot(rng);
    Ints lp = permutation(d.lhs.rank()), rp = permutation(d.rhs.rank());
    size_t out_rank = d.lhs.rank() + d.rhs.rank() - d.dims.lhs_batch.size() - 2 * d.dims.lhs_contracting.size();
    Ints op = permutation(out_rank);
    Type xt = source(d.lhs, lp), yt = source(d.rhs, rp);
    Module m;
    build_function(m, "f", [&](FunctionBuilder& f) -> std::vector<Tensor> {
      Tensor x = f.param(xt), y = f.param(yt), s = f.param(Type(xt.element, {}));
      Tensor z = transpose(dot_general(transpose(x, lp), transpose(y, rp), d.dims), op);
      for (int i = 0; i < 16; ++i) s = s + s;  // a block long enough to be planned
      return {z, s};
    });
    std::vector<Literal> in = {random_literal(xt, rng), random_literal(yt, rng), random_literal(Type(xt.element, {}), rng)};
    Literal want = interp::evaluate(m, "f", in)[0];
    interp::Options o;
    o.accelerate = accelerate;
    interp::Profile profile;
    o.profile = &profile;
    std::vector<Literal> got;
    try {
      got = {interp::evaluate(m, "f", in, o)[0]};
    } catch (const std::exception& ex) {
      FAIL() << ex.what() << " " << describe(d) << " perms " << ints_str(lp) << ints_str(rp) << ints_str(op);
    }
    std::shared_ptr<const Executable> e = Executable::compile(*m.find_function("f"), CompileOptions{&m});
    std::unique_ptr<RunContext> context = e->make_context();
    for (int k = 0; k < 2; ++k) got.push_back(e->run(in, interp::Options{}, *context)[0]);
    for (const Literal& g : got) {
      ASSERT_EQ(g.type(), want.type()) << describe(d);
      for (int64_t i = 0; i < g.num_elements(); ++i)
        ASSERT_TRUE(testing::close(g.get_double(i), want.get_double(i)))
            << describe(d) << " element " << i << ": " << g.get_double(i) << " against " << want.get_double(i);
    }
    // Unfolded, four ops run (three transposes and the dot_general); all folded, one.
    int64_t ran = 0;
    for (const auto& [name, entry] : profile.by_op)
      if (name.find("transpose") != std::string::npos || name.find("dot_general") != std::string::npos) ran += entry.first;
    folded_all += ran == 1;
    folded_some += ran < 4;
  }
  set_fusion_min_elements(16384);
  EXPECT_GT(folded_some, trials / 10);
  EXPECT_GT(folded_all, 0);
}

// A result with neither free group at unit stride has no plan; one with lhs's free group at unit
// stride is computed as C^T (the operands swapped).
TEST(Contraction, StridedResultsPlanAsTransposedGemms) {
  DotDims matmul{{}, {}, {1}, {0}};
  ContractionPlan t = plan_contraction(Ints{5, 7}, Ints{7, 3}, matmul, {{}, {}, Ints{1, 5}});
  EXPECT_TRUE(t.ok);
  EXPECT_TRUE(t.swapped);
  EXPECT_EQ(t.m, 3);
  EXPECT_EQ(t.n, 5);
  EXPECT_EQ(t.ldc, 5);
  EXPECT_FALSE(t.lhs_copy.needed || t.rhs_copy.needed);
  // [b, m, n] written as [m, b, n]: rows 2*3 apart, batches 3 apart.
  ContractionPlan b = plan_contraction(Ints{2, 5, 7}, Ints{2, 7, 3}, {{0}, {0}, {2}, {1}}, {{}, {}, Ints{3, 6, 1}});
  EXPECT_TRUE(b.ok && !b.swapped);
  EXPECT_EQ(b.ldc, 6);
  ASSERT_EQ(b.batch.size(), 1u);
  EXPECT_EQ(b.batch[0].out, 3);
  // [m1, m2, n] with m1 at unit stride, m2 outside n: no GEMM writes it.
  EXPECT_FALSE(plan_contraction(Ints{2, 3, 7}, Ints{7, 4}, DotDims{{}, {}, {2}, {0}},
                                {{}, {}, Ints{1, 8, 2}}).ok);
}

// A^T B with M >= 4N and one call is computed as C^T (contraction.h: oneDNN runs it faster with M
// and N exchanged) into a buffer, copied into the row-major result: the plan, and its values
// against the reference, into zeros and into NaNs, f32 and f64.
TEST(Contraction, TallTransposedProductsRunAsCTransposedThroughABuffer) {
  DotDims tn{{}, {}, {0}, {0}};
  ContractionPlan p = plan_contraction(Ints{16, 40}, Ints{16, 8}, tn);
  EXPECT_TRUE(p.swapped && p.via_buffer);
  EXPECT_TRUE(p.ta && !p.tb);
  EXPECT_EQ(p.m, 8);
  EXPECT_EQ(p.n, 40);
  EXPECT_EQ(p.ldc, 40);
  EXPECT_EQ(p.out_ld, 8);
  // Not below M = 4N, not for other layouts, not batched.
  EXPECT_FALSE(plan_contraction(Ints{16, 31}, Ints{16, 8}, tn).swapped);
  EXPECT_FALSE(plan_contraction(Ints{40, 16}, Ints{16, 8}, DotDims{{}, {}, {1}, {0}}).swapped);
  EXPECT_FALSE(plan_contraction(Ints{16, 40}, Ints{8, 16}, DotDims{{}, {}, {0}, {1}}).swapped);
  EXPECT_FALSE(plan_contraction(Ints{2, 16, 40}, Ints{2, 16, 8}, DotDims{{0}, {0}, {1}, {1}}).swapped);
  std::mt19937 rng(9);
  for (ElementType e : {ElementType::f32, ElementType::f64})
    for (const auto& [lhs, rhs] : std::vector<std::pair<Ints, Ints>>{{{16, 40}, {16, 8}}, {{5, 67}, {5, 2}}, {{7, 13}, {7, 3}}}) {
      Type lt(e, lhs), rt(e, rhs);
      Module m;
      build_function(m, "f", [&](FunctionBuilder& f) {
        Tensor x = f.param(lt), y = f.param(rt);
        return dot_general(x, y, tn);
      });
      std::vector<Literal> in = {random_literal(lt, rng), random_literal(rt, rng)};
      Literal want = interp::evaluate(m, "f", in)[0];
      ContractionPlan q = plan_contraction(lhs, rhs, tn);
      ASSERT_TRUE(q.via_buffer) << to_string(lt);
      for (bool zeros : {true, false}) {
        size_t n = static_cast<size_t>(want.num_elements());
        auto check = [&](auto* out) {
          using T = std::remove_pointer_t<decltype(out)>;
          run_contraction(q, reinterpret_cast<const T*>(in[0].bytes().data()),
                          reinterpret_cast<const T*>(in[1].bytes().data()), out, zeros);
          for (size_t i = 0; i < n; ++i)
            ASSERT_TRUE(testing::close(double(out[i]), want.get_double(static_cast<int64_t>(i))))
                << to_string(lt) << " element " << i << (zeros ? " into zeros" : " into NaNs");
        };
        if (e == ElementType::f32) {
          std::vector<float> out(n, zeros ? 0.0f : std::numeric_limits<float>::quiet_NaN());
          check(out.data());
        } else {
          std::vector<double> out(n, zeros ? 0.0 : std::numeric_limits<double>::quiet_NaN());
          check(out.data());
        }
      }
    }
}

// Runs "f" of `m` with transposes free to fold (fusion minimum 0) and with none folded (a
// minimum no value reaches): each run's first result, and how many steps it ran of the op kinds
// whose profile names contain one of `kinds`.
struct FoldRuns {
  std::vector<Literal> got;
  std::vector<int64_t> steps;
};
FoldRuns run_folded_and_not(const Module& m, const std::vector<Literal>& in, std::initializer_list<std::string_view> kinds) {
  interp::set_fusion_planner(&plan_fusion);
  int64_t default_min = fusion_min_elements();
  FoldRuns runs;
  for (int64_t min_elements : {int64_t{0}, int64_t{1} << 40}) {
    set_fusion_min_elements(min_elements);
    interp::Options o;
    o.accelerate = accelerate;
    interp::Profile profile;
    o.profile = &profile;
    runs.got.push_back(interp::evaluate(m, "f", in, o)[0]);
    int64_t ran = 0;
    for (const auto& [name, entry] : profile.by_op)
      for (std::string_view kind : kinds)
        if (name.find(kind) != std::string::npos) ran += entry.first;
    runs.steps.push_back(ran);
  }
  set_fusion_min_elements(default_min);
  return runs;
}

// Such a product read only by a transpose to [N, M] is written straight in its order
// (fusion_contraction.h) by the same GEMM calls, so the folded program gives the bits of the
// unfolded one, and no transpose runs; a product computed as it is folds into no C^T layout.
TEST(Contraction, ProductsComputedAsCTransposedFoldWithTheirBits) {
  std::mt19937 rng(21);
  DotDims tn{{}, {}, {0}, {0}};
  struct Case {
    Ints lhs, rhs;
    bool folds;
  };
  for (const Case& c : std::vector<Case>{{{16, 600}, {16, 40}, true}, {{16, 300}, {16, 200}, false}}) {
    Type lt(ElementType::f32, c.lhs), rt(ElementType::f32, c.rhs);
    int64_t rows = c.lhs[1], cols = c.rhs[1];
    Ints t_strides = {1, rows};  // [rows, cols] written as its transpose [cols, rows]
    EXPECT_EQ(same_gemm_calls(plan_contraction(c.lhs, c.rhs, tn, {{}, {}, t_strides}), plan_contraction(c.lhs, c.rhs, tn)),
              c.folds);
    Module m;
    build_function(m, "f", [&](FunctionBuilder& f) -> std::vector<Tensor> {
      Tensor x = f.param(lt), y = f.param(rt), s = f.param(Type(ElementType::f32, {}));
      Tensor z = transpose(dot_general(x, y, tn), {1, 0});
      for (int i = 0; i < 16; ++i) s = s + s;  // a block long enough to be planned
      return {z, s};
    });
    std::vector<Literal> in = {random_literal(lt, rng), random_literal(rt, rng), random_literal(Type(ElementType::f32, {}), rng)};
    Literal want = interp::evaluate(m, "f", in)[0];
    // dot_general and transpose steps run: 1 when folded
    auto [got, steps] = run_folded_and_not(m, in, {"transpose", "dot_general"});
    // Within K·2^-24 of the sum of |x·y| (testing::gemm_error_bound): z[j][i] sums x[k][i]·y[k][j].
    int64_t k = c.lhs[0];
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t i = 0; i < rows; ++i) {
        double abs_sum = 0;
        for (int64_t q = 0; q < k; ++q) abs_sum += std::abs(in[0].get_double(q * rows + i) * in[1].get_double(q * cols + j));
        int64_t e = j * rows + i;
        ASSERT_LE(std::abs(got[0].get_double(e) - want.get_double(e)), testing::gemm_error_bound(k, abs_sum))
            << "element " << e << ": " << got[0].get_double(e) << " against " << want.get_double(e);
      }
    ASSERT_EQ(got[0].bytes().size(), got[1].bytes().size());
    EXPECT_TRUE(std::equal(got[0].bytes().begin(), got[0].bytes().end(), got[1].bytes().begin()));
    EXPECT_EQ(steps[1], 2);
    EXPECT_EQ(steps[0], c.folds ? 1 : 2) << to_string(lt);
  }
}

// dot_general(transpose(x), transpose(y)) read N,T unfolded and T,N with both transposes folded:
// with M >= 4N the folded plan would be computed as C^T (other bits), so only one transpose folds
// and the fused program keeps the unfused one's bits.
TEST(Contraction, OperandFoldsTogetherKeepTheOperandsRoles) {
  std::mt19937 rng(33);
  Type xt(ElementType::f32, {256, 600}), yt(ElementType::f32, {256, 40});  // x: [K, M], y: [K, N]
  Module m;
  build_function(m, "f", [&](FunctionBuilder& f) -> std::vector<Tensor> {
    Tensor x = f.param(xt), y = f.param(yt), s = f.param(Type(ElementType::f32, {}));
    // [M, K] . [N, K] contracting K: row-major operands read N,T
    Tensor z = dot_general(transpose(x, {1, 0}), transpose(y, {1, 0}), DotDims{{}, {}, {1}, {1}});
    for (int i = 0; i < 16; ++i) s = s + s;  // a block long enough to be planned
    return {z, s};
  });
  std::vector<Literal> in = {random_literal(xt, rng), random_literal(yt, rng), random_literal(Type(ElementType::f32, {}), rng)};
  auto [got, transposes] = run_folded_and_not(m, in, {"transpose"});
  EXPECT_EQ(transposes[1], 2);
  EXPECT_EQ(transposes[0], 1);  // one folds, the other would swap the roles
  ASSERT_EQ(got[0].bytes().size(), got[1].bytes().size());
  EXPECT_TRUE(std::equal(got[0].bytes().begin(), got[0].bytes().end(), got[1].bytes().begin()));
}

TEST(Contraction, TheToleranceFailsOnNaN) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(testing::close(nan, nan));
  EXPECT_FALSE(testing::close(nan, 1.0));
  EXPECT_FALSE(testing::close(1.0, nan));
  EXPECT_TRUE(testing::close(1.0, 1.0 + 1e-7));
  EXPECT_FALSE(testing::close(1.0, 1.0 + 1e-5));
}

// The executable's profile counts a transpose that a dot_general writes in its order (the LM
// head's weight gradient, computed as C^T) as the contraction it is: by kind a dot_general, by
// type "dot_general into transpose", and no transpose step.
TEST(Contraction, AFoldedTransposeProfilesAsItsContraction) {
  interp::set_fusion_planner(&plan_fusion);
  Module m;
  build_function(m, "f", [&](FunctionBuilder& f) -> std::vector<Tensor> {
    Tensor a = f.param(f32({4, 16, 512})), b = f.param(f32({4, 16, 64})), s = f.param(f32({}));
    Tensor z = transpose(dot_general(a, b, DotDims{{}, {}, {0, 1}, {0, 1}}), {1, 0});
    for (int i = 0; i < 16; ++i) s = s + s;  // a block long enough to be planned
    return {z, s};
  });
  std::mt19937 rng(5);
  std::vector<Literal> in = {random_literal(f32({4, 16, 512}), rng), random_literal(f32({4, 16, 64}), rng),
                             Literal::splat(f32({}), 1.0)};
  std::shared_ptr<const Executable> e = Executable::compile(*m.find_function("f"), CompileOptions{&m});
  std::unique_ptr<RunContext> context = e->make_context();
  for (bool by_type : {false, true}) {
    interp::Profile profile;
    profile.by_type = by_type;
    interp::Options o;
    o.profile = &profile;
    e->run(in, o, *context);
    std::string key = by_type ? "stablehlo.dot_general into stablehlo.transpose tensor<64x512xf32>" : "stablehlo.dot_general";
    ASSERT_TRUE(profile.by_op.count(key)) << profile.to_string();
    EXPECT_EQ(profile.by_op.at(key).first, 1);
    for (const auto& [name, entry] : profile.by_op) EXPECT_FALSE(name.starts_with("stablehlo.transpose")) << name;
  }
}

}  // namespace
}  // namespace tessera::exec
