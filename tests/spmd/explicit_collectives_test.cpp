// Shardy's explicit collectives in a program partitioned here: on the global values each is an
// identity (as the interpreter runs them), so a sharded run must give the interpreter's numbers.
// all_reduce and reduce_scatter read an operand computed as partial sums (or a function argument,
// each device's piece one of the summands) and sum it once; an operand whose layout is written is
// whole, and they leave it so. Both once multiplied values by the group's size.
#include <gtest/gtest.h>

#include "interp/interpreter.h"
#include "runtime/session.h"
#include "stablehlo/parser.h"

namespace tessera::spmd {
namespace {

using namespace tessera::ir;

// Runs @main sharded on `devices` host devices and in the interpreter, on 1, 2, 3, ...; returns
// the report of the compiled program.
std::string run_both(const std::string& text, int devices) {
  auto m = stablehlo::parse(text, "explicit.mlir");
  const Function& main = *m->find_function("main");
  std::vector<Literal> in;
  for (size_t i = 0; i < main.num_parameters(); ++i) {
    Literal x(main.parameter(i)->type());
    for (int64_t k = 0; k < x.num_elements(); ++k) x.set_double(k, static_cast<double>(k % 7) - 2.0);
    in.push_back(std::move(x));
  }
  std::vector<Literal> want = interp::evaluate(*m, "main", in);
  runtime::Session s = runtime::Session::host(devices);
  runtime::CompiledProgram p = s.compile(*m, "main");
  EXPECT_EQ(s.run_sharded(p, in), want) << p.report().to_string();
  return p.report().to_string();
}

// An argument reduced by all_reduce and read again by abs: both results are the argument's own
// values (they were twice them: the argument was taken for partial, and abs read the sum).
TEST(ExplicitCollectives, AnAllReducedArgumentIsNotMultiplied) {
  run_both(R"(sdy.mesh @mesh = <["y"=2]>
func.func @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = sdy.all_reduce {"y"} %arg0 out_sharding=<@mesh, [{}]> : tensor<4xf32>
  %1 = stablehlo.abs %arg0 : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
)",
           2);
}

TEST(ExplicitCollectives, AReduceScatteredArgumentIsNotMultiplied) {
  run_both(R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = sdy.reduce_scatter [{"y"}] %arg0 out_sharding=<@mesh, [{"x", "y"}]> : tensor<8xf32>
  %1 = stablehlo.negate %arg0 : tensor<8xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}
)",
           4);
}

// The form Shardy's explicit reshards take: a dot over a contracting dimension split along "y",
// its written layout without "y", then the all_reduce over "y". The dot's sum is made once.
TEST(ExplicitCollectives, AWrittenDotLayoutIsSummedOnce) {
  std::string report = run_both(R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) -> tensor<8x8xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = sdy.all_reduce {"y"} %0 out_sharding=<@mesh, [{"x"}, {}]> : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
)",
                                4);
  EXPECT_NE(report.find("collectives: 1"), std::string::npos) << report;
}

// Shardy's per-dimension chain: the first reduce_scatter's result is still partial along "y", which
// the second sums (the argument holds summands along both axes, a whole array its value on the
// first device); the interpreter's numbers either way.
TEST(ExplicitCollectives, AChainOfReduceScattersSumsEachAxisOnce) {
  std::string report = run_both(R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> (tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) {
  %0 = sdy.reduce_scatter [{"x"}, {}] %arg0 out_sharding=<@mesh, [{"x"}, {}]> : tensor<4x4xf32>
  %1 = sdy.reduce_scatter [{}, {"y"}] %0 out_sharding=<@mesh, [{"x"}, {"y"}]> : tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}
)",
                                4);
  EXPECT_EQ(report.find("all_reduce"), std::string::npos) << report;
}

}  // namespace
}  // namespace tessera::spmd
