// Reshapes whose layouts split a merged dimension by mesh axes that overflow its factors (an axis
// of 6 over a dimension merged from factors of 4 and 6): the partitioner keeps those axes, cut at
// the factor boundary by their common divisor and regrouped (as Shardy regroups overflow axes),
// where the plain reading of the layouts kept nothing and gathered the operand whole. Each program
// runs sharded on host devices against the single-device interpreter, and the bytes each device
// moves are pinned against the plan worked out by hand: one piece before the reshape and one after
// (Shardy's insert_explicit_reshards expects the same moves for @reshape_overflow_axes_split_and_
// merge_*, docs/CONFORMANCE.md). Merged dimensions split unevenly (padding inside a merged
// dimension, where a sub-axis split would put the wrong elements on a device) are checked too, and
// a random generator (Property.ReshapesOverOverflowingAxes...) draws chains of split-and-merge
// reshapes on meshes with axes of 3 and 6, so that overflowing axes are common, and counts them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include <fmt/format.h>

#include "common/random_programs.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "runtime/session.h"
#include "spmd/factor_rule.h"
#include "spmd/mesh_math.h"
#include "spmd/propagate.h"
#include "spmd/reshard.h"
#include "stablehlo/printer.h"

namespace tessera::spmd {
namespace {

using namespace tessera::ir;

constexpr double kTolerance = 1e-5;  // relative, sharded vs unsharded (DESIGN.md §2)

bool agrees(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return false;  // the inputs hold no NaN: none may appear
  return std::abs(a - b) <= kTolerance * (1 + std::abs(b));
}

Sharding on(std::vector<DimSharding> dims) { return Sharding{"m", std::move(dims), {}, {}}; }
AxisRef sub(const std::string& axis, int64_t pre, int64_t size) { return AxisRef(axis, SubAxis{pre, size}); }

// Runs `m`'s @f sharded and unsharded; returns the bytes per device the partitioner moves.
int64_t run_both(const Module& m, std::mt19937& rng, const std::string& context = "") {
  const Function& f = *m.find_function("f");
  std::vector<Literal> in;
  for (size_t i = 0; i < f.num_parameters(); ++i) in.push_back(tessera::testing::uniform_input(f.parameter(i)->type(), rng));
  std::vector<Literal> want = interp::evaluate(m, "f", in);
  runtime::Session s = runtime::Session::host(m.meshes.front().num_devices());
  runtime::CompiledProgram p = s.compile(m, "f");
  std::vector<Literal> got = s.run_sharded(p, in);
  EXPECT_EQ(got.size(), want.size());
  for (size_t r = 0; r < got.size() && r < want.size(); ++r) {
    EXPECT_EQ(got[r].type(), want[r].type());
    for (int64_t i = 0; i < want[r].num_elements() && i < got[r].num_elements(); ++i)
      if (!agrees(got[r].get_double(i), want[r].get_double(i))) {
        ADD_FAILURE() << context << "result " << r << " element " << i << ": sharded " << got[r].get_double(i)
                      << ", unsharded " << want[r].get_double(i) << "\n"
                      << stablehlo::print(m) << p.report().to_string();
        break;
      }
  }
  return p.report().bytes_per_device();
}

// One reshape of a parameter laid out as `in` to a result declared as `out`.
Module one_reshape(const Mesh& mesh, const std::vector<int64_t>& from, const Sharding& in,
                   const std::vector<int64_t>& to, const Sharding& out) {
  Module m("case");
  m.add_mesh(mesh);
  Function& f = build_function(m, "f", [&](FunctionBuilder& b) { return reshape(b.param(f32(from), in), to); });
  f.set_result_sharding(0, out);
  return m;
}

const Mesh kSixByFour{"m", {{"x", 6}, {"y", 4}}, {}};

// [i*j, k] -> [i, j*k] with i=4, j=6, k=4 on x=6, y=4 (Shardy's @reshape_overflow_axes_split_and_
// merge_shape at 1/1024 the mesh): "x" overflows i. The operand goes to [{"x":(1)2, "y":(1)2,
// "x":(2)3, "y":(2)2}] (a permutation: one 16 B piece), the reshape runs on pieces, and its result
// [{"x":(1)2, "y":(1)2}, {"x":(2)3, "y":(2)2}] goes to the declared [{}, {"x", "y"}] (each device
// takes its 4 elements from the 4 devices of its rows: 12 B). Gathering the operand whole moved 368 B.
TEST(ReshapeOverflow, SplitAndMergeKeepsOverflowingAxesRegrouped) {
  Module m = one_reshape(kSixByFour, {24, 4}, on({{{"x"}, {"y"}}, {}}), {4, 24}, on({{}, {{"x"}, {"y"}}}));
  std::mt19937 rng(1);
  const int64_t bytes = run_both(m, rng);
  const int64_t piece = 4 * 4;  // 24x4 f32 over 24 devices
  EXPECT_LE(bytes, 2 * piece);
  EXPECT_EQ(bytes, 32);
}

// The other way: [i, j*k] -> [i*j, k] (@reshape_overflow_axes_split_and_merge_2).
TEST(ReshapeOverflow, MergeAndSplitKeepsOverflowingAxesRegrouped) {
  Module m = one_reshape(kSixByFour, {4, 24}, on({{}, {{"x"}, {"y"}}}), {24, 4}, on({{{"x"}, {"y"}}, {}}));
  std::mt19937 rng(2);
  const int64_t bytes = run_both(m, rng);
  EXPECT_LE(bytes, 2 * 16);
  EXPECT_EQ(bytes, 32);
}

// With a third dimension carried along and the axes in the other order ("y" first: y=4 fits i=4
// exactly, so nothing overflows and nothing is regrouped): the plain reading, no reshard before
// the reshape.
TEST(ReshapeOverflow, AxesThatFitAreReadAsTheyAre) {
  Module m = one_reshape(kSixByFour, {24, 4, 3}, on({{{"y"}, {"x"}}, {}, {}}), {4, 24, 3}, on({{{"y"}}, {{"x"}}, {}}));
  std::mt19937 rng(3);
  EXPECT_EQ(run_both(m, rng), 0);
}

// x=4 over a merged dimension of factors 6 and 2 (12 rows: 3 a device): "x" shares 2 with 6, so
// the reshape runs split by "x":(1)2 (6 contiguous rows a half), and the result is then sliced
// to "x" on each device: nothing moves.
TEST(ReshapeOverflow, APartOfAnOverflowingAxisSplitsTheMajorFactor) {
  Mesh mesh{"m", {{"x", 4}}, {}};
  Module m = one_reshape(mesh, {6, 2}, on({{{sub("x", 1, 2)}}, {}}), {12}, on({{{"x"}}}));
  std::mt19937 rng(4);
  EXPECT_EQ(run_both(m, rng), 0);
}

// Padding inside a merged dimension: [2, 3] split [{"x"}, {"y"}] on x=2, y=2 merges into 6, where
// "y" over 3 leaves a padded piece inside each row: the result cannot be [{"x", "y"}] (its pieces
// are [0, 1], [2, 3], ..., not the rows' halves), so "y" is dropped before the reshape.
TEST(ReshapeOverflow, AnUnevenMinorFactorInsideAMergedDimensionIsNotKept) {
  Mesh mesh{"m", {{"x", 2}, {"y", 2}}, {}};
  Module m = one_reshape(mesh, {2, 3}, on({{{"x"}}, {{"y"}}}), {6}, on({{{"x"}, {"y"}}}));
  std::mt19937 rng(5);
  run_both(m, rng);
  // The operand split by an axis of 4 unevenly (6 rows: 2, 2, 2 and padding) into [2, 3]: "x":(1)2.
  Mesh four{"m", {{"x", 4}}, {}};
  Module split = one_reshape(four, {6}, on({{{"x"}}}), {2, 3}, on({{{"x"}}, {}}));
  run_both(split, rng);
}

// One element split 4 ways is 3 pieces of padding: the reshape to a scalar sends it to one more
// device (4 B) and gathers over the other half (4 B), not the 4 padded pieces (12 B)
// (@reshape_to_scalar_with_overflow).
TEST(ReshapeOverflow, OneElementSplitFourWaysIsBroadcastInTwoSteps) {
  Mesh mesh{"m", {{"x", 4}, {"y", 2}}, {}};
  Module m = one_reshape(mesh, {1, 1, 1}, on({{{"x"}}, {}, {}}), {}, on({}));
  std::mt19937 rng(6);
  EXPECT_EQ(run_both(m, rng), 8);
  Module vec("case");
  vec.add_mesh(mesh);
  Function& f = build_function(vec, "f", [&](FunctionBuilder& b) { return tanh(b.param(f32({1}), on({{{"x"}}}))); });
  f.set_result_sharding(0, on({{}}));
  EXPECT_EQ(run_both(vec, rng), 8);
}

// "x":(1)2 and "x":(3)2 of x=6 (c / 3 and c % 2 of the coordinate c) are digits of no one cut of
// x: devices 0 and 2 hold the same pair. Regrouping makes such sub-axes ("x":(1)3 before "x":(3)2);
// a value split by one and made split by the other must not be held split by both on the way
// (that gathered columns of two devices into one: found by the generator below, seed 5055).
TEST(ReshapeOverflow, SubAxesOfTwoCutsOfAnAxisNeverSplitOneValue) {
  Mesh mesh{"m", {{"x", 6}, {"y", 2}}, {}};
  EXPECT_TRUE(overlaps(sub("x", 1, 2), sub("x", 3, 2), mesh));
  EXPECT_TRUE(overlaps(sub("x", 3, 2), sub("x", 1, 2), mesh));
  EXPECT_FALSE(overlaps(sub("x", 1, 2), sub("x", 2, 3), mesh));
  EXPECT_FALSE(overlaps(sub("x", 1, 3), sub("x", 3, 2), mesh));
  EXPECT_TRUE(overlaps(sub("x", 1, 3), AxisRef("x"), mesh));
  std::mt19937 rng(7);
  for (const Sharding& in : {on({{{sub("x", 3, 2)}}, {}}), on({{{sub("x", 3, 2)}, {"y"}}, {}})}) {
    Module m("case");
    m.add_mesh(mesh);
    Function& f = build_function(m, "f", [&](FunctionBuilder& b) { return tanh(b.param(f32({24, 2}), in)); });
    f.set_result_sharding(0, on({{}, {{sub("x", 1, 2)}}}));
    run_both(m, rng);
  }
}

// ---- Random chains of split-and-merge reshapes on meshes with axes of 3 and 6 ----

// TESSERA_PROPERTY_CASES (a third of them: these run 12 devices) and TESSERA_PROPERTY_SEED widen
// a run by hand, as for Property.RandomProgramsShardedEqualUnsharded.
int cases() { return tessera::testing::property_cases(200, 3); }
uint32_t first_seed() { return tessera::testing::property_first_seed(5000); }

// The property generator's draws (pick, coin) with every sub-axis, not only halves.
struct Gen : tessera::testing::ProgramGen {
  // Whole axes and every sub-axis (pre)size with pre * size dividing the axis.
  std::vector<AxisRef> all_refs() const {
    std::vector<AxisRef> out;
    for (const MeshAxis& a : mesh.axes) {
      out.emplace_back(a.name);
      for (int64_t pre = 1; pre < a.size; ++pre)
        for (int64_t size = 2; pre * size <= a.size; ++size)
          if (a.size % (pre * size) == 0 && !(pre == 1 && size == a.size)) out.push_back(sub(a.name, pre, size));
    }
    return out;
  }
  Sharding layout(size_t rank) {
    Sharding s = on(std::vector<DimSharding>(rank));
    std::vector<AxisRef> used;
    const std::vector<AxisRef> all = all_refs();
    for (DimSharding& d : s.dims) {
      if (coin(0.4)) continue;
      for (int k = 0, n = 1 + pick(2); k < n; ++k) {
        // (whole axes half the time: an axis of 6 overflows factors of 4 and 9)
        const AxisRef r = coin() ? AxisRef(mesh.axes[static_cast<size_t>(pick(static_cast<int>(mesh.axes.size())))].name)
                                 : all[static_cast<size_t>(pick(static_cast<int>(all.size())))];
        if (std::any_of(used.begin(), used.end(), [&](const AxisRef& u) { return u.name == r.name; })) continue;
        used.push_back(r);
        d.axes.push_back(r);
      }
    }
    return s;
  }
  // A reshape of `shape`: split a dimension at a divisor, merge two, or both at once ([a*b, c] ->
  // [a, b*c]), the moves that make factors an axis can overflow.
  std::vector<int64_t> reshaped(std::vector<int64_t> s) {
    std::vector<size_t> divisible;
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] >= 4 && s[d] % 2 == 0) divisible.push_back(d);
    const int move = std::min(pick(4), 2);  // split and merge half the time
    if (move == 1 && s.size() >= 2) {
      size_t d = static_cast<size_t>(pick(static_cast<int>(s.size()) - 1));
      s[d] *= s[d + 1];
      s.erase(s.begin() + static_cast<ptrdiff_t>(d) + 1);
      return s;
    }
    std::vector<std::pair<size_t, int64_t>> cuts;  // dimension, major part
    for (size_t d = 0; d < s.size(); ++d)
      for (int64_t a = 2; a < s[d]; ++a)
        if (s[d] % a == 0) cuts.push_back({d, a});
    if (cuts.empty() || s.size() >= 4) return s;
    auto [d, a] = cuts[static_cast<size_t>(pick(static_cast<int>(cuts.size())))];
    if (move == 2 && d + 1 < s.size()) {
      s[d + 1] *= s[d] / a;
      s[d] = a;
      return s;
    }
    s.insert(s.begin() + static_cast<ptrdiff_t>(d) + 1, s[d] / a);
    s[d] = a;
    return s;
  }
};

// Whether a layout of `op`'s operand or result has axes that overflow a factor of a merged
// dimension: the plain reading keeps fewer axes than the regrouping.
bool overflows(const Op& op, const ShardingMap& sm, const Mesh& mesh) {
  FactorRule rule = factor_rule(op);
  auto count = [&](const Value* v, const TensorFactors& tf, bool regroup) {
    FactorAxes axes(rule.num_factors());
    const Sharding& s = sm.at(v);
    for (size_t d = 0; d < tf.size() && d < s.dims.size(); ++d) project_dim(s.dims[d].axes, tf[d], rule, mesh, axes, regroup);
    int64_t n = 1;
    for (const auto& fa : axes) n *= shard_count(mesh, fa);
    return n;
  };
  return count(op.operand(0), rule.operands[0], false) < count(op.operand(0), rule.operands[0], true) ||
         count(op.result(0), rule.results[0], false) < count(op.result(0), rule.results[0], true);
}

TEST(Property, ReshapesOverOverflowingAxesShardedEqualUnsharded) {
  const std::vector<std::vector<MeshAxis>> meshes = {{{"x", 6}},           {{"x", 2}, {"y", 3}}, {{"x", 3}, {"y", 4}},
                                                     {{"x", 6}, {"y", 2}}, {{"x", 4}, {"y", 3}}, {{"x", 3}, {"y", 2}}};
  static const std::vector<std::vector<int64_t>> shapes = {{24, 4}, {4, 24}, {12, 6}, {6, 12}, {36}, {2, 18, 2}, {8, 9}, {72}, {48}, {16, 3}};
  int overflowing = 0, failures = 0;
  const int n = cases();
  for (int c = 0; c < n && failures < 5; ++c) {
    const uint32_t seed = first_seed() + static_cast<uint32_t>(c);
    Gen g;
    g.rng.seed(seed);
    g.mesh = Mesh{"m", meshes[seed % meshes.size()], {}};
    Module m("case");
    m.add_mesh(g.mesh);
    std::vector<int64_t> shape = shapes[static_cast<size_t>(g.pick(static_cast<int>(shapes.size())))];
    Function& f = build_function(m, "f", [&](FunctionBuilder& b) {
      Tensor x = b.param(f32(shape), g.coin(0.9) ? std::optional<Sharding>(g.layout(shape.size())) : std::nullopt);
      for (int step = 0, steps = 1 + g.pick(4); step < steps; ++step) {
        if (g.coin(0.8)) x = constrain(x, g.layout(x.shape().size()));
        x = reshape(x, g.reshaped(x.shape()));
        if (g.coin(0.5)) x = constrain(x, g.layout(x.shape().size()));
        if (g.coin(0.3)) x = tanh(x) * b.param(f32(x.shape()), g.layout(x.shape().size()));
      }
      return x;
    });
    if (g.coin(0.7)) f.set_result_sharding(0, g.layout(static_cast<size_t>(f.result_types[0].rank())));
    const ShardingMap sm = propagate(m, f);
    for (const auto& op : f.body().ops())
      if (op->kind() == OpKind::Reshape && overflows(*op, sm, g.mesh)) {
        ++overflowing;
        break;
      }
    const int before = ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
    try {
      run_both(m, g.rng, fmt::format("seed {}: ", seed));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "seed " << seed << ": " << e.what() << "\n" << stablehlo::print(m);
    }
    if (::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count() > before) ++failures;
  }
  // The cases hold what they claim: reshapes whose layouts overflow a factor, about one case in
  // eight (134 of seeds 5000-5999). (A printed seed alone reproduces its case, the mesh following
  // the seed: TESSERA_PROPERTY_SEED=<seed> TESSERA_PROPERTY_CASES=3, where this count is moot.)
  std::printf("reshape cases with overflowing axes: %d of %d\n", overflowing, n);
  if (n >= 100) {
    EXPECT_GT(overflowing, n / 12);
  }
}

}  // namespace
}  // namespace tessera::spmd
