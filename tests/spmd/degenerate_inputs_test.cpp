// Programs at the edges of what the partitioner reads, each taken from a piece of Shardy's
// propagation tests that once stopped it: a reshape of an array without elements (its factor rule
// looped forever on the size-0 dimension) and two names of one mesh meeting on an uneven split (the
// reshard between them failed its invariant). Each runs sharded on host devices against the
// single-device interpreter.
#include <gtest/gtest.h>

#include "interp/interpreter.h"
#include "ir/builder.h"
#include "runtime/session.h"
#include "spmd/factor_rule.h"
#include "stablehlo/parser.h"

namespace tessera::spmd {
namespace {

using namespace tessera::ir;

// Shardy's @reshape_size_zero_dim: nothing to share between [8, 0] and [0, 4], so the reshape's
// factor rule has no factors, and the run gives the empty result.
TEST(DegenerateInputs, AReshapeWithoutElementsHasNoFactors) {
  auto m = stablehlo::parse(R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%x: tensor<8x0xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}) -> tensor<0x4xf32> {
  %0 = stablehlo.reshape %x : (tensor<8x0xf32>) -> tensor<0x4xf32>
  return %0 : tensor<0x4xf32>
}
)",
                            "zero.mlir");
  const Op& reshape = *m->find_function("main")->body().ops().front();
  FactorRule rule = factor_rule(reshape);
  EXPECT_EQ(rule.num_factors(), 0u);

  Literal x(f32({8, 0}));
  runtime::Session s = runtime::Session::host(4);
  runtime::CompiledProgram p = s.compile(*m, "main");
  std::vector<Literal> got = s.run_sharded(p, {x});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], interp::evaluate(*m, "main", {x})[0]);
  EXPECT_EQ(got[0].type(), f32({0, 4}));
}

// Shardy's @different_mesh_names_same_mesh_propagated with 8 rows over an axis of 3 (pieces of 3,
// 3 and 2): the operands' layouts name two meshes with the same axes and devices, which are one
// mesh; the add reads both where they are.
TEST(DegenerateInputs, TwoNamesOfOneMeshMeetOnAnUnevenSplit) {
  auto m = stablehlo::parse(R"(sdy.mesh @mesh_a_3 = <["a"=3]>
sdy.mesh @mesh_a_3_another = <["a"=3]>
func.func @main(%x: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh_a_3, [{"a"}, {?}]>},
                %y: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh_a_3_another, [{"a"}, {?}]>}) -> tensor<8x8xf32> {
  %0 = stablehlo.add %x, %y : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)",
                            "meshes.mlir");
  Literal x(f32({8, 8})), y(f32({8, 8}));
  for (int64_t i = 0; i < 64; ++i) x.set_double(i, static_cast<double>(i)), y.set_double(i, 0.5 * static_cast<double>(i % 7));
  std::vector<Literal> want = interp::evaluate(*m, "main", {x, y});
  runtime::Session s = runtime::Session::host(3);
  runtime::CompiledProgram p = s.compile(*m, "main");
  std::vector<Literal> got = s.run_sharded(p, {x, y});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], want[0]);  // an add of the same elements: the same bits
}

}  // namespace
}  // namespace tessera::spmd
