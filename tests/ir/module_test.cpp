// Module structure and verify(): each verifier and module error, with its message.
#include <gtest/gtest.h>

#include "common/error_of.h"

#include "ir/builder.h"
#include "support/error.h"

namespace tessera::ir {
namespace {

using tessera::testing::error_of;

std::unique_ptr<Op> make(OpKind k, std::vector<Value*> operands, std::vector<Type> results,
                         AttrMap attrs = {}) {
  return std::make_unique<Op>(k, std::move(operands), results, std::move(attrs));
}

TEST(Module, MeshesAndFunctionsAreUnique) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  EXPECT_EQ(error_of([&] { m.add_mesh(Mesh{"m", {{"x", 2}}, {}}); }), "mesh @m is declared twice");
  EXPECT_EQ(error_of([&] { m.mesh("n"); }), "mesh @n is not declared in the module");
  m.add_function("f");
  EXPECT_EQ(error_of([&] { m.add_function("f"); }), "function @f is defined twice");
  EXPECT_EQ(m.find_function("g"), nullptr);
}

TEST(Verify, WellFormedModulePasses) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  build_function(m, "f", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 4}), Sharding{"m", {{"data"}, {}}, {}, {}});
    return sum(constrain(x * x, Sharding{"m", {{"data"}, {}}, {}, {}}));
  });
  EXPECT_NO_THROW(verify(m));
}

TEST(Verify, ReturnMustEndTheBlock) {
  Module m;
  Function& f = m.add_function("f");
  Value* x = f.add_parameter(f32({2}));
  f.body().append(make(OpKind::Return, {x}, {}));
  f.body().append(make(OpKind::Negate, {x}, {f32({2})}));
  EXPECT_EQ(error_of([&] { verify(m); }), "@f: function must end its block with a return");
}

TEST(Verify, EmptyBlock) {
  Module m;
  m.add_function("f");
  EXPECT_EQ(error_of([&] { verify(m); }), "@f: empty block has no return");
}

TEST(Verify, OperandDefinedElsewhere) {
  Module m;
  Function& g = m.add_function("g");
  Value* y = g.add_parameter(f32({2}));
  g.set_results({y});
  Function& f = m.add_function("f");
  Value* x = f.add_parameter(f32({2}));
  Op* add = f.body().append(make(OpKind::Add, {x, y}, {f32({2})}));
  f.set_results({add->result()});
  EXPECT_EQ(error_of([&] { verify(m); }),
            "@f: op 0 (stablehlo.add) uses operand 1 before it is defined");
}

TEST(Verify, DeclaredResultsMustMatchTheShapeRule) {
  Module m;
  Function& f = m.add_function("f");
  Value* x = f.add_parameter(f32({2}));
  Op* add = f.body().append(make(OpKind::Add, {x, x}, {f32({3})}));
  f.set_results({add->result()});
  EXPECT_EQ(error_of([&] { verify(m); }),
            "@f: op 0 (stablehlo.add) declares results (tensor<3xf32>) but its operands give "
            "(tensor<2xf32>)");
}

TEST(Verify, ShapeRuleErrorsSurface) {
  Module m;
  Function& f = m.add_function("f");
  Value* x = f.add_parameter(f32({2}));
  Value* y = f.add_parameter(f32({3}));
  Op* add = f.body().append(make(OpKind::Add, {x, y}, {f32({2})}));
  f.set_results({add->result()});
  EXPECT_EQ(error_of([&] { verify(m); }),
            "stablehlo.add: operand 1 has type tensor<3xf32>, but operand 0 has type tensor<2xf32>");
}

TEST(Verify, ReturnTypesMatchTheSignature) {
  Module m;
  Function& f = build_function(m, "f", [](FunctionBuilder& b) { return b.param(f32({2})); });
  f.result_types = {f32({3})};
  EXPECT_EQ(error_of([&] { verify(m); }),
            "@f: returns (tensor<2xf32>) but is declared to return (tensor<3xf32>)");
}

TEST(Verify, ShardingsOfArgumentsResultsAndOps) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  Function& f = build_function(m, "f", [](FunctionBuilder& b) { return b.param(f32({8, 4})); });
  f.arg_attrs[0].set("sdy.sharding", Sharding{"m", {{"model"}, {}}, {}, {}});
  EXPECT_EQ(error_of([&] { verify(m); }),
            "sharding of argument 0 of @f: dimension 0 names axis \"model\", which is not in mesh "
            "@m (axes: data)");
  f.arg_attrs[0].erase("sdy.sharding");
  f.set_result_sharding(0, Sharding{"m", {{"data"}}, {}, {}});
  EXPECT_EQ(error_of([&] { verify(m); }),
            "sharding of result 0 of @f: has 1 dimension shardings for tensor<8x4xf32> of rank 2");
  f.result_attrs[0].set("sdy.sharding", Sharding{"n", {{}, {}}, {}, {}});
  EXPECT_EQ(error_of([&] { verify(m); }), "mesh @n is not declared in the module");
  f.result_attrs[0].erase("sdy.sharding");

  Function& g = m.add_function("g");
  Value* x = g.add_parameter(f32({8, 4}));
  AttrMap a;
  a.set("sharding", Sharding{"m", {{"data"}, {"data"}}, {}, {}});
  Op* c = g.body().append(make(OpKind::ShardingConstraint, {x}, {f32({8, 4})}, a));
  g.set_results({c->result()});
  EXPECT_EQ(error_of([&] { verify(m); }),
            "sharding of op 0 (sdy.sharding_constraint) in @g: axis \"data\" is used twice "
            "(dimension 0 and dimension 1)");
}

TEST(Verify, CallsAndParallelRunsMatchTheirCallees) {
  Module m;
  build_function(m, "g", [](FunctionBuilder& b) { return b.param(f32({2})); });
  auto call = [](std::string callee, std::vector<Value*> args, std::vector<Type> results) {
    AttrMap a;
    a.set("callee", std::move(callee));
    return make(OpKind::Call, std::move(args), std::move(results), a);
  };
  Function& f = m.add_function("f");
  Value* x = f.add_parameter(f32({2}));
  Value* y = f.add_parameter(i32({2}));
  Op* ok = f.body().append(call("g", {x}, {f32({2})}));
  f.set_results({ok->result()});
  EXPECT_NO_THROW(verify(m));

  Function& h = m.add_function("h");
  h.body().append(call("nowhere", {}, {}));
  h.set_results({});
  EXPECT_EQ(error_of([&] { verify(m); }),
            "@h: op 0 (func.call) calls @nowhere, which is not defined");
  m.functions.pop_back();

  Function& k = m.add_function("k");
  Value* z = k.add_parameter(i32({2}));
  k.body().append(call("g", {z}, {f32({2})}));
  k.set_results({});
  EXPECT_EQ(error_of([&] { verify(m); }),
            "@k: op 0 (func.call) passes (tensor<2xi32>) to @g, which takes (tensor<2xf32>)");
  m.functions.pop_back();

  Function& r = m.add_function("r");
  Value* w = r.add_parameter(f32({2}));
  AttrMap grid;
  grid.set("programs", SymbolGrid{{{"g"}, {"g"}}});
  r.body().append(make(OpKind::RunParallel, {w, w}, {f32({2})}, grid));
  r.set_results({});
  EXPECT_EQ(error_of([&] { verify(m); }),
            "@r: op 0 (interpreter.run_parallel) expects (tensor<2xf32>) from its programs, which "
            "returns (tensor<2xf32>, tensor<2xf32>)");
  (void)y;
}

}  // namespace
}  // namespace tessera::ir
