// Calls in sharded programs: a callee's argument and result layouts hold where its body meets the
// caller (spmd::inline_calls makes them sharding constraints), and Shardy's sdy.named_computation
// is read as the call of a private function carrying its in and out shardings. Each program runs
// sharded on host devices against the single-device interpreter, bit for bit.
#include <gtest/gtest.h>

#include "interp/interpreter.h"
#include "ir/builder.h"
#include "ir/entry.h"
#include "runtime/session.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::spmd {
namespace {

using namespace tessera::ir;

Literal counting(const Type& t) {
  Literal x(t);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.set_double(i, static_cast<double>(i % 13) - 6.0);
  return x;
}

// Runs `m`'s @main on `devices` host devices and in the interpreter; returns the compiled report.
std::string run_both(const Module& m, int devices) {
  const Function& main = *m.find_function("main");
  std::vector<Literal> in;
  for (size_t i = 0; i < main.num_parameters(); ++i) in.push_back(counting(main.parameter(i)->type()));
  std::vector<Literal> want = interp::evaluate(m, "main", in);
  runtime::Session s = runtime::Session::host(devices);
  runtime::CompiledProgram p = s.compile(m, "main");
  EXPECT_EQ(s.run_sharded(p, in), want) << p.report().to_string();
  return p.report().to_string();
}

// XLA's export of a named computation: the body under its name, its in_shardings on the
// arguments, its out_shardings on the results; a second computation of the same name, and a
// function the module defines later with that name, get names of their own.
const char* kNamed = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8x4xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {"x"}]>}) -> (tensor<8x4xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) {
  %0 = sdy.named_computation<"foo">(%arg0) in_shardings=[<@mesh, [{}, {"y"}]>] out_shardings=[<@mesh, [{"x"}, {}]>] (%arg1: tensor<8x4xi32>) {
    %2 = stablehlo.multiply %arg1, %arg1 : tensor<8x4xi32>
    sdy.return %2 : tensor<8x4xi32>
  } {random_attr = "random_value"} : (tensor<8x4xi32>) -> tensor<8x4xi32>
  %1 = sdy.named_computation<"foo">(%0) (%arg1: tensor<8x4xi32>) {
    %3 = stablehlo.add %arg1, %arg1 : tensor<8x4xi32>
    sdy.return %3 : tensor<8x4xi32>
  } : (tensor<8x4xi32>) -> tensor<8x4xi32>
  %4 = call @foo(%1) : (tensor<8x4xi32>) -> tensor<8x4xi32>
  return %4 : tensor<8x4xi32>
}
func.func private @foo(%a: tensor<8x4xi32>) -> tensor<8x4xi32> {
  %0 = stablehlo.negate %a : tensor<8x4xi32>
  return %0 : tensor<8x4xi32>
}
)";

TEST(Calls, ANamedComputationIsTheCallOfAFunctionWithItsShardings) {
  auto m = stablehlo::parse(kNamed, "named.mlir");
  const Function* foo = m->find_function("foo");
  ASSERT_NE(foo, nullptr);
  EXPECT_EQ(foo->body().ops().front()->kind(), OpKind::Negate);  // the module's own @foo keeps its name
  const Function* first = m->find_function("foo_0");
  const Function* second = m->find_function("foo_1");
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_FALSE(first->is_public);
  EXPECT_EQ(first->body().ops().front()->kind(), OpKind::Multiply);
  EXPECT_EQ(second->body().ops().front()->kind(), OpKind::Add);
  ASSERT_TRUE(first->arg_sharding(0).has_value());
  EXPECT_EQ(first->arg_sharding(0)->dims[1].axes, std::vector<AxisRef>{"y"});
  ASSERT_TRUE(first->result_sharding(0).has_value());
  EXPECT_EQ(first->result_sharding(0)->dims[0].axes, std::vector<AxisRef>{"x"});
  EXPECT_FALSE(second->arg_sharding(0).has_value());
  const Op& call = *m->find_function("main")->body().ops().front();
  EXPECT_EQ(call.kind(), OpKind::Call);
  EXPECT_EQ(call.attrs().get<std::string>("callee"), "foo_0");
  EXPECT_EQ(call.attrs().get<std::string>("random_attr"), "random_value");
  // It prints as that call and reads back the same.
  std::string text = stablehlo::print(*m);
  EXPECT_EQ(stablehlo::print(*stablehlo::parse(text, "again.mlir")), text);
}

// The in_shardings ([{}, {"y"}]) differ from the argument's layout ([{"y"}, {"x"}]), so the
// operand is resharded where the computation starts: the constraint moves data.
TEST(Calls, ANamedComputationsShardingsHoldWhereItsBodyStarts) {
  auto m = stablehlo::parse(kNamed, "named.mlir");
  std::string report = run_both(*m, 4);
  EXPECT_NE(report.find("for sdy.sharding_constraint"), std::string::npos) << report;
}

// A plain call of a function whose argument is laid out: the layout holds inside the body, as a
// constraint, and propagates back to the caller's argument, whose rows are split (it was
// replicated when the callee's layouts were dropped at inlining); the dot needs no collective.
TEST(Calls, ACalleesArgumentLayoutIsAConstraint) {
  auto m = stablehlo::parse(R"(sdy.mesh @mesh = <["x"=4]>
func.func @main(%a: tensor<8x6xf32>, %b: tensor<6x5xf32>) -> tensor<8x5xf32> {
  %0 = call @mm(%a, %b) : (tensor<8x6xf32>, tensor<6x5xf32>) -> tensor<8x5xf32>
  return %0 : tensor<8x5xf32>
}
func.func private @mm(%a: tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %b: tensor<6x5xf32>) -> tensor<8x5xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<8x6xf32>, tensor<6x5xf32>) -> tensor<8x5xf32>
  return %0 : tensor<8x5xf32>
}
)",
                            "call.mlir");
  std::string report = run_both(*m, 4);
  EXPECT_NE(report.find("%arg0: tensor<8x6xf32> -> piece 2x6"), std::string::npos) << report;
  EXPECT_NE(report.find("collectives: 0"), std::string::npos) << report;
}

// A named computation called "main" becomes a private @main: the module's entry is still its public
// function (tools ran the computation's body as the program).
TEST(Calls, ANamedComputationCalledMainIsNoEntry) {
  auto m = stablehlo::parse(R"(func.func @entry(%arg0: tensor<4xi32>) -> tensor<4xi32> {
  %0 = sdy.named_computation<"main">(%arg0) (%x: tensor<4xi32>) {
    %1 = stablehlo.negate %x : tensor<4xi32>
    sdy.return %1 : tensor<4xi32>
  } : (tensor<4xi32>) -> tensor<4xi32>
  %2 = stablehlo.add %0, %arg0 : tensor<4xi32>
  return %2 : tensor<4xi32>
}
)",
                            "main.mlir");
  ASSERT_NE(m->find_function("main"), nullptr);
  EXPECT_FALSE(m->find_function("main")->is_public);
  EXPECT_EQ(ir::entry_function(*m).name(), "entry");
}

}  // namespace
}  // namespace tessera::spmd
