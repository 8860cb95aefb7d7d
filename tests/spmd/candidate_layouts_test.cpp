// The partitioner's candidate layouts for one op (Partitioner::choose_assignment): a dot_general
// whose operands and result split the same axis on different factors is cheapest in a layout that
// splits a factor by a sub-axis no operand splits it by. Each program's sharded run must equal the
// unsharded interpreter, and its bytes per device are pinned to the plan worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "common/random_literal.h"
#include "interp/interpreter.h"
#include "runtime/session.h"
#include "spmd/mesh_math.h"
#include "stablehlo/parser.h"

namespace tessera::spmd {
namespace {

using namespace tessera::ir;

constexpr double kTolerance = 1e-5;  // relative, sharded vs unsharded (DESIGN.md §2)

// Compiles @f on the mesh's devices, checks the sharded run against the interpreter, and returns
// the partition's report.
Report run_both(const Module& m, int64_t devices) {
  const Function& fn = *m.find_function("f");
  std::vector<Literal> in = testing::random_inputs(fn, 7);
  std::vector<Literal> want = interp::evaluate(m, "f", in);
  runtime::Session s = runtime::Session::host(devices);
  runtime::CompiledProgram p = s.compile(m, "f");
  std::vector<Literal> got = s.run_sharded(p, in);
  EXPECT_EQ(got.size(), want.size());
  for (size_t r = 0; r < got.size() && r < want.size(); ++r)
    for (int64_t i = 0; i < want[r].num_elements(); ++i) {
      const double g = got[r].get_double(i), w = want[r].get_double(i);
      EXPECT_TRUE(std::abs(g - w) <= kTolerance * (1 + std::abs(w))) << "result " << r << " element " << i << ": " << g << " vs " << w;
    }
  return p.report();
}

// A batched matmul on a 4x2 mesh: the lhs splits its rows by the minor half of "a" and its
// contraction by "b", the rhs its contraction by "b", and the result wants its columns split by
// all of "a". Kept as the result asks (columns by "a"), the lhs rows are gathered (half of its
// 4x16x32 piece, 4096 B) and the 4x16x8 partial sums all-reduced over "b" (2 * 2048 * 1/2 =
// 2048 B): 6144 B. In the lhs's layout (rows by "a":(2)2, columns whole), the 4x8x32 partial
// sums are all-reduced (4096 B) and then exchanged to the result's layout (all_to_all, 1024 B):
// 5120 B. With the columns split by the major half of "a" (a sub-axis neither operand splits
// them by; the rhs takes it by a local slice), the partial sums are 4x8x16 (2048 B all-reduced)
// and the same exchange follows: 3072 B.
TEST(CandidateLayouts, DotSplitsAResultFactorByASubAxisNeitherOperandUses) {
  auto m = stablehlo::parse(R"(sdy.mesh @m = <["a"=4, "b"=2]>
func.func @f(%x: tensor<4x16x64xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {"a":(2)2}, {"b"}]>},
             %y: tensor<4x64x32xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {"b"}, {}]>})
    -> (tensor<4x16x32xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {}, {"a"}]>}) {
  %0 = stablehlo.dot_general %x, %y, batching_dims = [0] x [0], contracting_dims = [2] x [1] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}, {}, {"a"}]>]>} : (tensor<4x16x64xf32>, tensor<4x64x32xf32>) -> tensor<4x16x32xf32>
  return %0 : tensor<4x16x32xf32>
}
)",
                            "sub_axis.mlir");
  Report report = run_both(*m, 8);
  EXPECT_EQ(report.bytes_per_device(), 3072) << report.to_string();
}

// A contraction split 4 ways whose result is 4 times its split operand: all-reducing the 16x16
// partial result moves 2 * 1024 * 3/4 = 1536 bytes per device, gathering the 16x8 lhs whole
// 512 * 3/4 = 384, after which every device computes the whole (replicated) result itself.
TEST(CandidateLayouts, DotGathersItsSmallOperandRatherThanAllReduceALargeResult) {
  auto m = stablehlo::parse(R"(sdy.mesh @m = <["a"=4]>
func.func @f(%x: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {"a"}]>},
             %w: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {}]>})
    -> (tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {}]>}) {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  return %0 : tensor<16x16xf32>
}
)",
                            "small_operand.mlir");
  Report report = run_both(*m, 4);
  EXPECT_EQ(report.bytes_per_device(), 384) << report.to_string();
  EXPECT_EQ(report.count("all_gather"), 1) << report.to_string();
  EXPECT_EQ(report.count("all_reduce"), 0) << report.to_string();
}

// The part of an axis no other factor holds: the major-most free run of its digits.
TEST(CandidateLayouts, FreePartOfAnAxisIsItsMajorMostFreeDigits) {
  Mesh mesh{"m", {{"x", 8}, {"y", 6}}, {}};
  auto sub = [](const char* name, int64_t pre, int64_t size) { return AxisRef(name, SubAxis{pre, size}); };
  EXPECT_EQ(free_part("x", {"y"}, mesh), AxisRef("x"));                          // nothing of x taken
  EXPECT_EQ(free_part("x", {sub("x", 2, 4)}, mesh), sub("x", 1, 2));             // the major digit
  EXPECT_EQ(free_part("x", {sub("x", 1, 2)}, mesh), sub("x", 2, 4));             // the minor two
  EXPECT_EQ(free_part("x", {sub("x", 2, 2)}, mesh), sub("x", 1, 2));             // before the taken run
  EXPECT_EQ(free_part(sub("x", 2, 4), {sub("x", 1, 4)}, mesh), sub("x", 4, 2));  // within a sub-axis
  EXPECT_EQ(free_part("x", {"x"}, mesh), std::nullopt);
  EXPECT_EQ(free_part(sub("x", 2, 2), {"x"}, mesh), std::nullopt);
  EXPECT_EQ(free_part("y", {sub("y", 1, 2)}, mesh), sub("y", 2, 3));             // 6 = 2 x 3
  EXPECT_EQ(free_part("y", {sub("y", 2, 3)}, mesh), sub("y", 1, 2));
}

// An argmax (a reduce of two results, which Tessera cannot combine across devices, so it reads its
// reduced dimension whole: its GE-select body on floats is not associative once a NaN comes, so
// it is not reduced by pieces, see reduce_pieces_test.cpp) of [16,16] operands split by columns, its results wanted split by rows:
// each operand exchanged to rows by an all_to_all moves 1024 / 4 * 3/4 = 192 B per device, 384 in
// all, where a candidate costed as if the split reduction stayed split gathered both whole
// (2 * 768 B) once the reduction was run whole.
TEST(CandidateLayouts, AReduceThatCannotCombineIsCostedWithItsReductionWhole) {
  auto m = stablehlo::parse(R"(sdy.mesh @m = <["x"=4]>
func.func @f(%v: tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@m, [{}, {"x"}]>},
             %i: tensor<16x16xi32> {sdy.sharding = #sdy.sharding<@m, [{}, {"x"}]>})
    -> (tensor<16xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}, tensor<16xi32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) {
  %c = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.reduce(%v init: %c), (%i init: %z) across dimensions = [1] : (tensor<16x16xf32>, tensor<16x16xi32>, tensor<f32>, tensor<i32>) -> (tensor<16xf32>, tensor<16xi32>)
   reducer(%a: tensor<f32>, %a2: tensor<f32>) (%b: tensor<i32>, %b2: tensor<i32>) {
    %ge = stablehlo.compare GE, %a, %a2 : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %m = stablehlo.select %ge, %a, %a2 : tensor<i1>, tensor<f32>
    %n = stablehlo.select %ge, %b, %b2 : tensor<i1>, tensor<i32>
    stablehlo.return %m, %n : tensor<f32>, tensor<i32>
  }
  return %0#0, %0#1 : tensor<16xf32>, tensor<16xi32>
}
)",
                            "argmax.mlir");
  Report report = run_both(*m, 4);
  EXPECT_EQ(report.bytes_per_device(), 384) << report.to_string();
  EXPECT_EQ(report.count("all_to_all"), 2) << report.to_string();
  EXPECT_EQ(report.count("all_gather"), 0) << report.to_string();
}

}  // namespace
}  // namespace tessera::spmd
