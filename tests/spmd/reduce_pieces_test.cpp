// Reduces of several results split along a reduced dimension. JAX's argmax and argmin run by
// pieces (partition_reduce.cpp):
// each device reduces its piece, the (value, index) partial results are all-gathered and reduced
// once more. The sharded run must equal the unsharded interpreter bit for bit (ties across devices,
// -0 against +0, NaN, all -inf, uneven splits), the indices must be the ones worked out by hand
// (the lowest index among ties, the first NaN's), and only the partial results may travel. Which
// bodies qualify (select_reduce.cpp) is tested on JAX's form and on forms that must not. A body that
// combines each result alone (a sum and a max) is all-reduced per result instead.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "interp/interpreter.h"
#include "runtime/session.h"
#include "spmd/identities.h"
#include "stablehlo/parser.h"

namespace tessera::spmd {
namespace {

using namespace tessera::ir;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = INFINITY;

// JAX's argmax (GT) or argmin (LT) of a [rows, cols] operand of type `e` along dimension 1, split
// by "x" over `devices`; both results replicated. The body is jax.lax's _compute_argminmax as
// lowered: the first pair's value wins when better or NaN; of equal values the lower index.
// `mesh` and the layouts (`x_layout` of the operand, `out` of both results) may be given instead.
std::string argminmax(const char* dir, int rows, int cols, int devices, const char* e = "f32",
                      const char* init = "0xFF800000", const char* cmp = "FLOAT", std::string mesh = "",
                      const char* x_layout = R"([{}, {"x"}])", const char* out = "[{}]") {
  if (mesh.empty()) mesh = fmt::format(R"(["x"={}])", devices);
  return fmt::format(R"(sdy.mesh @m = <{2}>
func.func @f(%x: tensor<{0}x{1}x{5}> {{sdy.sharding = #sdy.sharding<@m, {7}>}})
    -> (tensor<{0}x{5}> {{sdy.sharding = #sdy.sharding<@m, {8}>}}, tensor<{0}xi32> {{sdy.sharding = #sdy.sharding<@m, {8}>}}) {{
  %i = stablehlo.iota dim = 1 : tensor<{0}x{1}xi32>
  %c = stablehlo.constant dense<{4}> : tensor<{5}>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.reduce(%x init: %c), (%i init: %z) across dimensions = [1] : (tensor<{0}x{1}x{5}>, tensor<{0}x{1}xi32>, tensor<{5}>, tensor<i32>) -> (tensor<{0}x{5}>, tensor<{0}xi32>)
   reducer(%a: tensor<{5}>, %c2: tensor<{5}>) (%b: tensor<i32>, %d: tensor<i32>) {{
    %1 = stablehlo.compare {3}, %a, %c2, {6} : (tensor<{5}>, tensor<{5}>) -> tensor<i1>
    %2 = stablehlo.compare NE, %a, %a, {6} : (tensor<{5}>, tensor<{5}>) -> tensor<i1>
    %3 = stablehlo.or %1, %2 : tensor<i1>
    %4 = stablehlo.compare EQ, %a, %c2, {6} : (tensor<{5}>, tensor<{5}>) -> tensor<i1>
    %5 = stablehlo.compare LT, %b, %d, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %6 = stablehlo.and %4, %5 : tensor<i1>
    %7 = stablehlo.or %3, %6 : tensor<i1>
    %8 = stablehlo.select %3, %a, %c2 : tensor<i1>, tensor<{5}>
    %9 = stablehlo.select %7, %b, %d : tensor<i1>, tensor<i32>
    stablehlo.return %8, %9 : tensor<{5}>, tensor<i32>
  }}
  return %0#0, %0#1 : tensor<{0}x{5}>, tensor<{0}xi32>
}}
)",
                     rows, cols, mesh, dir, init, e, cmp, x_layout, out);
}

// Equal bit for bit as far as get_double shows: NaN for NaN, the same sign of zero.
bool same_bits(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// Runs @f on `devices` host devices and the interpreter; results must agree bit for bit. Returns
// the sharded results and the report.
std::pair<std::vector<Literal>, Report> run_exact(const std::string& text, int64_t devices, const Literal& x,
                                                  std::vector<Literal> more = {}) {
  auto m = stablehlo::parse(text, "argminmax.mlir");
  more.insert(more.begin(), x);
  std::vector<Literal> want = interp::evaluate(*m, "f", more);
  runtime::Session s = runtime::Session::host(devices);
  runtime::CompiledProgram p = s.compile(*m, "f");
  std::vector<Literal> got = s.run_sharded(p, more);
  EXPECT_EQ(got.size(), 2u);
  for (size_t r = 0; r < got.size() && r < want.size(); ++r)
    for (int64_t i = 0; i < want[r].num_elements(); ++i)
      EXPECT_TRUE(same_bits(got[r].get_double(i), want[r].get_double(i)))
          << "result " << r << " row " << i << ": " << got[r].get_double(i) << " vs " << want[r].get_double(i);
  return {std::move(got), p.report()};
}

// Rows of 10 whose answers are known by hand: ties across devices, -0 and +0, NaNs, all -inf.
Literal hard_rows(std::vector<int64_t>& argmax_index, std::vector<int64_t>& argmin_index) {
  std::vector<double> v = {
      1, 5, 2, 0, 3, 1, 4, 5, 5, 0,                                // max 5 at 1, 7, 8; min 0 at 3, 9
      -1, -2, -0.0, -3, -4, -5, -6, -7, 0.0, -8,                    // max 0 (-0 at 2, +0 at 8); min -8 at 9
      1, 2, 3, 4, kNaN, 9, 9, 9, 9, kNaN,                           // NaN at 4 and 9: the first wins both
      -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf,  // all -inf: index 0
      7, 7, 7, 7, 7, 7, 7, 7, 7, 6,                                 // max 7 first at 0, min 6 at 9
      -3, 2, 2, 1, 0, -3, 8, 8, 0, -3,                              // max 8 at 6 (devices 1 and 2 of 4 over 10)
  };
  argmax_index = {1, 2, 4, 0, 0, 6};
  argmin_index = {3, 9, 4, 0, 9, 0};
  return Literal::from_doubles(Type(ElementType::f32, {6, 10}), v);
}

TEST(ReduceByPieces, ArgmaxOverASplitDimensionMatchesTheInterpreterBitForBit) {
  std::vector<int64_t> max_index, min_index;
  Literal x = hard_rows(max_index, min_index);
  for (int devices : {2, 4}) {  // 10 over 4: pieces of 3, 3, 3 and 1 (two padding rows)
    auto [got, report] = run_exact(argminmax("GT", 6, 10, devices), devices, x);
    for (size_t r = 0; r < max_index.size(); ++r) EXPECT_EQ(got[1].get_int(static_cast<int64_t>(r)), max_index[r]) << r;
    EXPECT_TRUE(std::signbit(got[0].get_double(1)) == false) << "the later of -0 and +0 is +0";
    // Only the partial results travel: [devices, 6] f32 and i32, each device receiving the others'.
    EXPECT_EQ(report.count("all_gather"), 2) << report.to_string();
    EXPECT_EQ(report.bytes_per_device(), 2 * 24 * (devices - 1)) << report.to_string();
    EXPECT_TRUE(report.warnings().empty()) << report.explain();
  }
}

TEST(ReduceByPieces, ArgminOverASplitDimensionMatchesTheInterpreterBitForBit) {
  std::vector<int64_t> max_index, min_index;
  Literal x = hard_rows(max_index, min_index);
  for (int devices : {2, 4}) {
    auto [got, report] = run_exact(argminmax("LT", 6, 10, devices, "f32", "0x7F800000"), devices, x);
    for (size_t r = 0; r < min_index.size(); ++r) EXPECT_EQ(got[1].get_int(static_cast<int64_t>(r)), min_index[r]) << r;
    EXPECT_EQ(report.count("all_gather"), 2) << report.to_string();
    EXPECT_EQ(report.bytes_per_device(), 2 * 24 * (devices - 1)) << report.to_string();
  }
}

// Inits that are not the order's identity count once, first, as in the unsharded fold: an argmax
// from 0.5 (or NaN) whose index init is 77 answers 77 for the rows whose values never exceed it;
// an argmin from -inf answers the init for every row. Uneven (10 over 4) and even splits.
TEST(ReduceByPieces, InitsThatAreNotTheIdentityCountOnceFirst) {
  std::vector<int64_t> max_index, min_index;
  Literal x = hard_rows(max_index, min_index);
  for (int devices : {2, 4}) {
    std::string text = argminmax("GT", 6, 10, devices, "f32", "0.5");
    text.replace(text.find("dense<0> : tensor<i32>"), 22, "dense<77> : tensor<i32>");
    auto [got, report] = run_exact(text, devices, x);
    // Rows 1 (max 0) and 3 (all -inf) never beat 0.5; row 2's NaN does, so do 5, 7 and 8.
    std::vector<int64_t> want = {1, 77, 4, 77, 0, 6};
    for (size_t r = 0; r < want.size(); ++r) EXPECT_EQ(got[1].get_int(static_cast<int64_t>(r)), want[r]) << r;
    EXPECT_EQ(report.count("all_gather"), 2) << report.to_string();
    auto nan_init = argminmax("GT", 6, 10, devices, "f32", "0x7FC00000");
    auto [nan_got, unused] = run_exact(nan_init, devices, x);
    for (int64_t r = 0; r < 6; ++r) EXPECT_EQ(nan_got[1].get_int(r), 0) << "a NaN init wins every row";
    run_exact(argminmax("LT", 6, 10, devices), devices, x);
    // From (0.0, 0), a -0.0 on the first device only: the later of two equal values gives the
    // bits, -0.0, the lower index the index, the init's 0. Pieces started from the init would end
    // the later devices at +0.0, after it.
    Literal row = Literal::from_doubles(Type(ElementType::f32, {1, 10}), std::vector<double>{-1, -0.0, -2, -3, -4, -5, -6, -7, -8, -9});
    auto [zero, zero_report] = run_exact(argminmax("GT", 1, 10, devices, "f32", "0.0"), devices, row);
    EXPECT_TRUE(std::signbit(zero[0].get_double(0)));
    EXPECT_EQ(zero[1].get_int(0), 0);
    // Inits that are arguments, (4.0, 9): rows 1 (max 0) and 3 (all -inf) answer 9; the others'
    // maxima (5, NaN, 7, 8) beat 4.
    std::string runtime = argminmax("GT", 6, 10, devices);
    for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
             {"]>})\n", "]>}, %v0: tensor<f32>, %i0: tensor<i32>)\n"},
             {"%x init: %c), (%i init: %z)", "%x init: %v0), (%i init: %i0)"}}) {
      ASSERT_NE(runtime.find(from), std::string::npos) << from;
      runtime.replace(runtime.find(from), from.size(), to);
    }
    auto [args, args_report] = run_exact(runtime, devices, x, {Literal::scalar(ElementType::f32, 4), Literal::scalar(ElementType::i32, 9)});
    std::vector<int64_t> from_args = {1, 9, 4, 9, 0, 6};
    for (size_t r = 0; r < from_args.size(); ++r) EXPECT_EQ(args[1].get_int(static_cast<int64_t>(r)), from_args[r]) << r;
    EXPECT_EQ(args_report.count("all_gather"), 2) << args_report.to_string();
  }
}

// Random rows with many ties (values from a handful), uneven splits, integers too.
TEST(ReduceByPieces, RandomRowsWithManyTiesMatchTheInterpreter) {
  std::vector<double> v(8 * 13);
  uint64_t state = 12345;
  for (double& e : v) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    e = static_cast<double>((state >> 33) % 4);
  }
  for (int devices : {2, 4}) {
    Literal f = Literal::from_doubles(Type(ElementType::f32, {8, 13}), v);
    run_exact(argminmax("GT", 8, 13, devices), devices, f);
    run_exact(argminmax("LT", 8, 13, devices, "f32", "0x7F800000"), devices, f);
    Literal i = Literal::from_doubles(Type(ElementType::i32, {8, 13}), v);
    auto [got, report] = run_exact(argminmax("GT", 8, 13, devices, "i32", "-2147483648", "SIGNED"), devices, i);
    EXPECT_EQ(report.count("all_gather"), 2) << report.to_string();
  }
}

// On a 2x2 mesh: the reduced dimension split by both axes (pieces in the order of {"y", "x"}, the
// minor one first, and all-gathered in that order), or by one while the rows are split by the
// other and the results stay split by it.
TEST(ReduceByPieces, TwoAxesSplitTheReducedDimensionOrTheRows) {
  std::vector<int64_t> max_index, min_index;
  Literal x = hard_rows(max_index, min_index);
  const std::string mesh = R"(["x"=2, "y"=2])";
  {
    auto [got, report] = run_exact(argminmax("GT", 6, 10, 4, "f32", "0xFF800000", "FLOAT", mesh, R"([{}, {"y", "x"}])"), 4, x);
    for (size_t r = 0; r < max_index.size(); ++r) EXPECT_EQ(got[1].get_int(static_cast<int64_t>(r)), max_index[r]) << r;
    EXPECT_EQ(report.count("all_gather"), 2) << report.to_string();
    EXPECT_EQ(report.bytes_per_device(), 2 * 24 * 3) << report.to_string();
  }
  {
    auto [got, report] =
        run_exact(argminmax("LT", 6, 10, 4, "f32", "0x7F800000", "FLOAT", mesh, R"([{"y"}, {"x"}])", R"([{"y"}])"), 4, x);
    for (size_t r = 0; r < min_index.size(); ++r) EXPECT_EQ(got[1].get_int(static_cast<int64_t>(r)), min_index[r]) << r;
    // [2, 6] partials split by y in 3-row pieces: each device receives the other x piece, 12 B each.
    EXPECT_EQ(report.count("all_gather"), 2) << report.to_string();
    EXPECT_EQ(report.bytes_per_device(), 2 * 12) << report.to_string();
  }
}

// A reduce over both dimensions split along the minor one: the devices' pieces are no runs of the
// row-major fold (the first NaN by pieces need not be the first in the fold), so the operand is
// gathered, and the gather is warned of as avoidable.
// The index operand (the column's iota) is laid out like the value, though the split is uneven
// (10 columns over 4), so both are gathered: two warnings. Split along both (by x and y of a 2x2
// mesh), it runs by pieces along the major one and gathers the minor one.
TEST(ReduceByPieces, ASplitMinorReducedDimensionIsGathered) {
  for (bool both : {false, true}) {
    std::string text = both ? argminmax("GT", 6, 10, 4, "f32", "0xFF800000", "FLOAT", R"(["x"=2, "y"=2])", R"([{"x"}, {"y"}])")
                            : argminmax("GT", 6, 10, 4);
    for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"across dimensions = [1]", "across dimensions = [0, 1]"},
           {"-> (tensor<6xf32>, tensor<6xi32>)", "-> (tensor<f32>, tensor<i32>)"},
           {"tensor<6xf32> {sdy.sharding = #sdy.sharding<@m, [{}]>}", "tensor<f32>"},
           {"tensor<6xi32> {sdy.sharding = #sdy.sharding<@m, [{}]>}", "tensor<i32>"},
             {"return %0#0, %0#1 : tensor<6xf32>, tensor<6xi32>", "return %0#0, %0#1 : tensor<f32>, tensor<i32>"}}) {
      ASSERT_NE(text.find(from), std::string::npos) << from;
      text.replace(text.find(from), from.size(), to);
    }
    std::vector<int64_t> max_index, min_index;
    Literal x = hard_rows(max_index, min_index);
    auto [got, report] = run_exact(text, 4, x);
    EXPECT_TRUE(std::isnan(got[0].get_double(0)));
    EXPECT_EQ(got[1].get_int(0), 4);  // row 2's first NaN (the index is the column's iota)
    EXPECT_EQ(report.warnings().size(), 2u) << report.explain();
    for (const std::string& w : report.warnings())
      EXPECT_NE(w.find("silent full gather: stablehlo.reduce reads dimension 1"), std::string::npos) << w;
    // (both: the f32 and i32 [3, 5] pieces gathered over y, 60 B each; the partials over x, 4 B each)
    if (both) {
      EXPECT_EQ(report.bytes_per_device(), 128) << report.explain();
    }
  }
}

// A reduce of several results whose body combines each result alone (a sum and a max here) is
// partial along the split reduced dimension like a single-result reduce: each result all-reduced by
// its own combiner, padding holding each one's identity (0, -inf: a 0 would win row 4's maximum),
// each init (0.5, -5.0: not the identity) folded in once. Sums agree within the tolerance (reordered), maxima exactly.
TEST(ReduceByPieces, ABodyCombiningEachResultAloneIsAllReducedPerResult) {
  constexpr double kTolerance = 1e-5;  // relative, sharded vs unsharded (DESIGN.md §2)
  for (int cols : {8, 10}) {
    std::string text = fmt::format(R"(sdy.mesh @m = <["x"=4]>
func.func @f(%v: tensor<6x{0}xf32> {{sdy.sharding = #sdy.sharding<@m, [{{}}, {{"x"}}]>}},
             %w: tensor<6x{0}xf32> {{sdy.sharding = #sdy.sharding<@m, [{{}}, {{"x"}}]>}})
    -> (tensor<6xf32> {{sdy.sharding = #sdy.sharding<@m, [{{}}]>}}, tensor<6xf32> {{sdy.sharding = #sdy.sharding<@m, [{{}}]>}}) {{
  %h = stablehlo.constant dense<0.5> : tensor<f32>
  %t = stablehlo.constant dense<-5.0> : tensor<f32>
  %0:2 = stablehlo.reduce(%v init: %h), (%w init: %t) across dimensions = [1] : (tensor<6x{0}xf32>, tensor<6x{0}xf32>, tensor<f32>, tensor<f32>) -> (tensor<6xf32>, tensor<6xf32>)
   reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<f32>, %d: tensor<f32>) {{
    %s = stablehlo.add %c, %a : tensor<f32>
    %m = stablehlo.maximum %b, %d : tensor<f32>
    stablehlo.return %s, %m : tensor<f32>, tensor<f32>
  }}
  return %0#0, %0#1 : tensor<6xf32>, tensor<6xf32>
}}
)",
                                   cols);
    auto m = stablehlo::parse(text, "sum_max.mlir");
    std::vector<double> v(static_cast<size_t>(6 * cols)), w(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = std::sin(static_cast<double>(i)) * 3;
      w[i] = i % 13 == 0 ? 2.5 + static_cast<double>(i % 5) : -1.0 - static_cast<double>(i % 3);  // row 4 all negative
    }
    std::vector<Literal> in = {Literal::from_doubles(Type(ElementType::f32, {6, cols}), v),
                               Literal::from_doubles(Type(ElementType::f32, {6, cols}), w)};
    std::vector<Literal> want = interp::evaluate(*m, "f", in);
    runtime::Session s = runtime::Session::host(4);
    runtime::CompiledProgram p = s.compile(*m, "f");
    std::vector<Literal> got = s.run_sharded(p, in);
    ASSERT_EQ(got.size(), 2u);
    for (int64_t i = 0; i < 6; ++i) {
      double g = got[0].get_double(i), e = want[0].get_double(i);
      EXPECT_TRUE(std::abs(g - e) <= kTolerance * (1 + std::abs(e))) << "sum " << i << ": " << g << " vs " << e;
      EXPECT_TRUE(same_bits(got[1].get_double(i), want[1].get_double(i))) << "max " << i;
    }
    // Each result all-reduced by its combiner: 6 f32 twice, three quarters each (all-reduce: 2x).
    EXPECT_EQ(p.report().count("all_gather"), 0) << p.report().to_string();
    EXPECT_EQ(p.report().count("all_reduce"), 2) << p.report().to_string();
    EXPECT_EQ(p.report().bytes_per_device(), 2 * 2 * 24 * 3 / 4) << p.report().to_string();
    EXPECT_TRUE(p.report().warnings().empty()) << p.report().explain();
  }
}

// The bodies and inits that qualify, read from the reduce op of a parsed program.
bool qualifies(const std::string& text) {
  auto m = stablehlo::parse(text, "body.mlir");
  const Op* reduce = nullptr;
  for (const auto& op : m->find_function("f")->body().ops())
    if (op->kind() == OpKind::Reduce) reduce = op.get();
  return reduce && pieces_order(*reduce) != PiecesOrder::kNone;
}

TEST(ReduceByPieces, OnlyBodiesThatAreSelectionsByATotalOrderQualify) {
  EXPECT_TRUE(qualifies(argminmax("GT", 4, 8, 2)));
  EXPECT_TRUE(qualifies(argminmax("LT", 4, 8, 2, "f32", "0x7F800000")));
  EXPECT_TRUE(qualifies(argminmax("GT", 4, 8, 2, "i32", "-2147483648", "SIGNED")));
  // Any inits (the pieces start from the order's identity; the final reduce folds the inits once).
  EXPECT_TRUE(qualifies(argminmax("GT", 4, 8, 2, "f32", "0.0")));
  EXPECT_TRUE(qualifies(argminmax("GT", 4, 8, 2, "i32", "0", "SIGNED")));
  // f8E4M3FN has no infinity to start the pieces from.
  EXPECT_FALSE(qualifies(argminmax("GT", 4, 8, 2, "f8E4M3FN", "0.0")));
  // A total-order compare tells -0 from +0 and orders NaNs: outside the family.
  EXPECT_FALSE(qualifies(argminmax("GT", 4, 8, 2, "f32", "0xFF800000", "TOTALORDER")));
  // The GE-select argmax: a NaN is neither the largest nor the smallest, so the fold is not
  // associative ([3 | NaN, 1] gives 1 unsharded, 3 by pieces): refused on floats, fine on integers.
  auto ge_select = [](const char* e, const char* init) {
    return fmt::format(R"(sdy.mesh @m = <["x"=2]>
func.func @f(%v: tensor<4x8x{0}>, %i: tensor<4x8xi32>) -> (tensor<4x{0}>, tensor<4xi32>) {{
  %c = stablehlo.constant dense<{1}> : tensor<{0}>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.reduce(%v init: %c), (%i init: %z) across dimensions = [1] : (tensor<4x8x{0}>, tensor<4x8xi32>, tensor<{0}>, tensor<i32>) -> (tensor<4x{0}>, tensor<4xi32>)
   reducer(%a: tensor<{0}>, %a2: tensor<{0}>) (%b: tensor<i32>, %b2: tensor<i32>) {{
    %ge = stablehlo.compare GE, %a, %a2 : (tensor<{0}>, tensor<{0}>) -> tensor<i1>
    %m = stablehlo.select %ge, %a, %a2 : tensor<i1>, tensor<{0}>
    %n = stablehlo.select %ge, %b, %b2 : tensor<i1>, tensor<i32>
    stablehlo.return %m, %n : tensor<{0}>, tensor<i32>
  }}
  return %0#0, %0#1 : tensor<4x{0}>, tensor<4xi32>
}}
)",
                       e, init);
  };
  EXPECT_FALSE(qualifies(ge_select("f32", "0xFF800000")));
  EXPECT_TRUE(qualifies(ge_select("i32", "-2147483648")));
  // Arithmetic in the body: not a selection.
  std::string sum = argminmax("GT", 4, 8, 2);
  sum.replace(sum.find("%8 = stablehlo.select %3, %a, %c2 : tensor<i1>, tensor<f32>"),
              std::string("%8 = stablehlo.select %3, %a, %c2 : tensor<i1>, tensor<f32>").size(),
              "%8 = stablehlo.add %a, %c2 : tensor<f32>");
  EXPECT_FALSE(qualifies(sum));
}

}  // namespace
}  // namespace tessera::spmd
