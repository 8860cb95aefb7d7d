// Programs at the edges of what the partitioner reads: a reshape of an array without elements (its
// factor rule looped forever on the size-0 dimension) and two names of one mesh meeting on an
// uneven split (the reshard between them failed its invariant), both from Shardy's propagation
// tests, and an interior pad into an uneven layout (its last piece was shifted by a row). Each runs
// sharded on host devices against the single-device interpreter.
#include <gtest/gtest.h>

#include "interp/interpreter.h"
#include "ir/builder.h"
#include "runtime/session.h"
#include "spmd/factor_rule.h"
#include "stablehlo/parser.h"
#include "support/error.h"

namespace tessera::spmd {
namespace {

using namespace tessera::ir;

// `m`'s @main run sharded on `devices` host devices and by the interpreter on `in`; the sharded
// results must be the interpreter's, bit for bit (these programs' sums are exact or of one term).
struct Sharded {
  std::vector<Literal> results;
  int64_t bytes_per_device = 0;
};
Sharded run_both(const Module& m, int devices, const std::vector<Literal>& in) {
  std::vector<Literal> want = interp::evaluate(m, "main", in);
  runtime::Session s = runtime::Session::host(devices);
  runtime::CompiledProgram p = s.compile(m, "main");
  Sharded out{s.run_sharded(p, in), p.report().bytes_per_device()};
  EXPECT_EQ(out.results, want) << p.report().to_string();
  return out;
}

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

  Sharded r = run_both(*m, 4, {Literal(f32({8, 0}))});
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].type(), f32({0, 4}));
}

// A strided slice of a whole dimension beside a split one (Shardy's pad_slice.mlir): the rows are
// cut where they lie, and the stride over the columns still applies ([0:64:8] keeps 8 of 64; it was
// dropped, an internal error).
TEST(DegenerateInputs, AStrideOverAWholeDimensionStillSlicesIt) {
  auto m = stablehlo::parse(R"(sdy.mesh @mesh = <["z"=4]>
func.func @main(%x: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"z"}, {}]>}) -> (tensor<4x8xf32>, tensor<16x8xf32>) {
  %0 = stablehlo.slice %x [8:12, 0:64:8] : (tensor<32x64xf32>) -> tensor<4x8xf32>
  %1 = stablehlo.slice %x [0:32:2, 0:64:8] : (tensor<32x64xf32>) -> tensor<16x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<16x8xf32>
}
)",
                            "slice.mlir");
  Literal x(f32({32, 64}));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.set_double(i, static_cast<double>(i));
  EXPECT_EQ(run_both(*m, 4, {x}).results.size(), 2u);
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
  EXPECT_EQ(run_both(*m, 3, {x, y}).results.size(), 1u);  // an add of the same elements: the same bits
}

// pad of 8 rows with interior 3, low 3 and high 2 into 34 rows laid out in pieces of 9 over 4
// devices (the last holds 7): each device dilates its 2 rows and cuts its piece from them; the
// last piece reaches 2 rows past the dilated block, and a dynamic_slice that overhangs is moved
// back, not filled, so its rows came out one place early (rows 27 and 31 of 34 held the pad value).
TEST(DegenerateInputs, AnInteriorPadIntoAnUnevenLayoutKeepsItsLastPieceInPlace) {
  auto m = stablehlo::parse(R"(sdy.mesh @m = <["x"=4]>
func.func @main(%x: tensor<8x3xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {}]>}) -> (tensor<34x3xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {}]>}) {
  %c = stablehlo.constant dense<-7.25> : tensor<f32>
  %0 = stablehlo.pad %x, %c, low = [3, 0], high = [2, 0], interior = [3, 0] {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x"}, {}]>]>} : (tensor<8x3xf32>, tensor<f32>) -> tensor<34x3xf32>
  return %0 : tensor<34x3xf32>
}
)",
                            "pad.mlir");
  Literal x(f32({8, 3}));
  for (int64_t i = 0; i < 24; ++i) x.set_double(i, static_cast<double>(i));
  Sharded r = run_both(*m, 4, {x});
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].get_double(27 * 3), 18.0);  // x[6][0] at row 3 + 4 * 6
  EXPECT_EQ(r.bytes_per_device, 0);                  // each piece is cut from the device's own rows
}

// A vocabulary that the devices do not divide (1001 rows over 4, as GPT-2's 50257 over 8): the split
// propagates to the logits through the head's contraction (pieces of 251, the last 248), and the
// row maxima are combined from partial ones (an all_reduce of 16 floats, counted as a ring moves it:
// 2 (n - 1) / n of 64 B), where keeping uneven splits only where written gathered the whole weight
// first (36 KiB per device).
TEST(DegenerateInputs, AnUnevenVocabularySplitReachesTheLogits) {
  auto m = stablehlo::parse(R"(sdy.mesh @m = <["x"=4]>
func.func @main(%h: tensor<16x12xf32>, %w: tensor<1001x12xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}, {}]>}) -> tensor<16xf32> {
  %0 = stablehlo.dot_general %h, %w, contracting_dims = [1] x [1] : (tensor<16x12xf32>, tensor<1001x12xf32>) -> tensor<16x1001xf32>
  %z = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %1 = stablehlo.reduce(%0 init: %z) applies stablehlo.maximum across dimensions = [1] : (tensor<16x1001xf32>, tensor<f32>) -> tensor<16xf32>
  return %1 : tensor<16xf32>
}
)",
                            "vocab.mlir");
  Literal h(f32({16, 12})), w(f32({1001, 12}));
  for (int64_t i = 0; i < h.num_elements(); ++i) h.set_double(i, static_cast<double>((i * 7) % 13) - 6.0);
  for (int64_t i = 0; i < w.num_elements(); ++i) w.set_double(i, static_cast<double>((i * 11) % 17) / 8.0 - 1.0);
  Sharded r = run_both(*m, 4, {h, w});  // small integers and eighths: every sum is exact
  EXPECT_EQ(r.bytes_per_device, 2 * 3 * 16 * 4 / 4);
}

// A function that calls itself has no inlined form: the refusal names the call and its place.
TEST(DegenerateInputs, ARecursiveCallIsRefusedWhereItIs) {
  auto m = stablehlo::parse(R"(sdy.mesh @m = <["x"=2]>
func.func @main(%x: tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) -> tensor<4xf32> {
  %0 = func.call @main(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
)",
                            "self.mlir");
  runtime::Session s = runtime::Session::host(2);
  std::string message = "<no error>";
  try {
    s.compile(*m, "main");
  } catch (const support::UserError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("func.call at line 3:3 of @main: calls nest more than 64 deep (recursion?)"), std::string::npos)
      << message;
}

// Arguments over some of the devices only (Shardy's @operands_different_meshes_not_propagated, and
// the meshes of mesh_parse_print.mlir): an argument on 3 devices, a result on 6, left devices 3-5
// without the argument (an internal error, or a 60 s wait on a collective). Refused by name, as
// JAX refuses shardings on other device sets; a mesh without axes splits nothing and may mix.
TEST(DegenerateInputs, MeshesOfOtherDeviceCountsAreRefused) {
  auto m = stablehlo::parse(R"(sdy.mesh @mesh_a_3 = <["a"=3]>
sdy.mesh @mesh_a_6 = <["a"=6]>
sdy.mesh @one = <["b"=1]>
sdy.mesh @none = <[]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh_a_3, [{"a", ?}, {?}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh_a_6, [{?}, {?}]>}) {
  %0 = stablehlo.tanh %arg0 : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
func.func @one(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@one, [{"b"}, {}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh_a_6, [{"a"}, {}]>}) {
  return %arg0 : tensor<8x8xf32>
}
func.func @mixed(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@none, [{}, {}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh_a_6, [{"a"}, {}]>}) {
  %0 = stablehlo.tanh %arg0 : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)",
                            "meshes.mlir");
  runtime::Session s = runtime::Session::host(6);
  std::string message = "<no error>";
  try {
    s.compile(*m, "main");
  } catch (const support::UserError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("@main: argument 0 is laid out on mesh @mesh_a_3 of 3 devices, but the function runs on 6"),
            std::string::npos) << message;
  message = "<no error>";
  try {
    s.compile(*m, "one");
  } catch (const support::UserError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("@one: argument 0 is laid out on mesh @one of 1 devices, but the function runs on 6"),
            std::string::npos) << message;
  Literal x(f32({8, 8}));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.set_double(i, static_cast<double>(i % 5));
  runtime::CompiledProgram p = s.compile(*m, "mixed");
  EXPECT_EQ(s.run_sharded(p, {x}), interp::evaluate(*m, "mixed", {x}));
}

// A manual computation may lay an operand out on a mesh without axes beside its own mesh (Shardy's
// manual_axes_cleanup.mlir): it splits nothing.
TEST(DegenerateInputs, AManualComputationTakesALayoutOnAMeshWithoutAxes) {
  auto m = stablehlo::parse(R"(sdy.mesh @empty_mesh = <[]>
sdy.mesh @mesh_xyz = <["z"=2, "x"=2, "y"=2]>
func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@empty_mesh, [{}]>] out_shardings=[<@mesh_xyz, [{"x"}]>] manual_axes={"y", "x"} (%arg1: tensor<8xf32>) {
    %1 = stablehlo.slice %arg1 [0:4] : (tensor<8xf32>) -> tensor<4xf32>
    sdy.return %1 : tensor<4xf32>
  } : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
)",
                            "empty_mesh.mlir");
  Literal x(f32({8}));
  for (int64_t i = 0; i < 8; ++i) x.set_double(i, static_cast<double>(i));
  run_both(*m, 8, {x});
}

}  // namespace
}  // namespace tessera::spmd
