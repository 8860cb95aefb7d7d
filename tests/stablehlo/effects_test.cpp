// The text of tokens, tuples and the ops that call a function or region (#17): the types
// !stablehlo.token, tuple<...> (nested, empty) and !stablehlo.future<...>; after_all,
// create_token, tuple, get_tuple_element and composite in their pretty forms and map in the
// generic form, as stablehlo-opt prints them; the generic forms of all six read to the same ops;
// print -> parse -> print is the identity; each spec constraint's message; and the values the
// interpreter computes, with tokens passed in and out of functions; interpreter.probe and
// check.expect_serialized_eq.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "common/parse_error.h"
#include "common/error_of.h"

#include "interp/interpreter.h"
#include "ir/builder_effects.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

using ir::Literal;
using ir::Type;

using testing::parse_error;

const std::string kDecomposition = R"(func.func @decomp(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.multiply %arg0, %arg1 : tensor<2xf32>
  return %0 : tensor<2xf32>
}
)";

// Every op of the family in its pretty form (map has none: generic), and tokens and tuples as
// parameters and results.
const std::string kPretty = kDecomposition + R"(func.func @main(%arg0: !stablehlo.token, %arg1: tensor<2xf32>, %arg2: tuple<tensor<2xf32>, tuple<>>) -> (!stablehlo.token, tuple<tensor<2xf32>, tensor<i64>>, tensor<2xf32>) {
  %0 = stablehlo.create_token : !stablehlo.token
  %1 = stablehlo.after_all %arg0, %0 : !stablehlo.token
  %2 = stablehlo.after_all : !stablehlo.token
  %c = stablehlo.constant dense<3> : tensor<i64>
  %3 = stablehlo.tuple %arg1, %c : tuple<tensor<2xf32>, tensor<i64>>
  %4 = stablehlo.get_tuple_element %arg2[0] : (tuple<tensor<2xf32>, tuple<>>) -> tensor<2xf32>
  %5 = stablehlo.composite "my.mul" %arg1, %4 {composite_attributes = {n = 2 : i64}, decomposition = @decomp, version = 1 : i32} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %6 = "stablehlo.map"(%5, %arg1) <{dimensions = array<i64: 0>}> ({
  ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
    %7 = stablehlo.add %arg3, %arg4 : tensor<f32>
    stablehlo.return %7 : tensor<f32>
  }) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %1, %3, %6 : !stablehlo.token, tuple<tensor<2xf32>, tensor<i64>>, tensor<2xf32>
}
)";

// The same in the generic form.
const std::string kGeneric = kDecomposition + R"(func.func @main(%arg0: !stablehlo.token, %arg1: tensor<2xf32>, %arg2: tuple<tensor<2xf32>, tuple<>>) -> (!stablehlo.token, tuple<tensor<2xf32>, tensor<i64>>, tensor<2xf32>) {
  %0 = "stablehlo.create_token"() : () -> !stablehlo.token
  %1 = "stablehlo.after_all"(%arg0, %0) : (!stablehlo.token, !stablehlo.token) -> !stablehlo.token
  %2 = "stablehlo.after_all"() : () -> !stablehlo.token
  %c = stablehlo.constant dense<3> : tensor<i64>
  %3 = "stablehlo.tuple"(%arg1, %c) : (tensor<2xf32>, tensor<i64>) -> tuple<tensor<2xf32>, tensor<i64>>
  %4 = "stablehlo.get_tuple_element"(%arg2) <{index = 0 : i32}> : (tuple<tensor<2xf32>, tuple<>>) -> tensor<2xf32>
  %5 = "stablehlo.composite"(%arg1, %4) <{composite_attributes = {n = 2 : i64}, decomposition = @decomp, name = "my.mul", version = 1 : i32}> : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %6 = "stablehlo.map"(%5, %arg1) <{dimensions = array<i64: 0>}> ({
  ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
    %7 = stablehlo.add %arg3, %arg4 : tensor<f32>
    stablehlo.return %7 : tensor<f32>
  }) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %1, %3, %6 : !stablehlo.token, tuple<tensor<2xf32>, tensor<i64>>, tensor<2xf32>
}
)";

// The lines of `text` from `from` on, each indented as the printer indents a function's body.
void expect_lines_printed(const std::string& printed, const std::string& text) {
  size_t start = text.find("func.func @main");
  for (size_t at = text.find('\n', start) + 1; at < text.size();) {
    size_t end = text.find('\n', at);
    std::string line = text.substr(at, end - at);
    if (line != "}") {
      EXPECT_NE(printed.find("  " + line + "\n"), std::string::npos) << line << "\n" << printed;
    }
    at = end + 1;
  }
}

TEST(Effects, PrettyFormsPrintAsWrittenAndRoundTrip) {
  std::unique_ptr<ir::Module> m = parse(kPretty, "t.mlir");
  std::string printed = print(*m);
  expect_lines_printed(printed, kPretty);
  EXPECT_NE(printed.find("(%arg0: !stablehlo.token, %arg1: tensor<2xf32>, %arg2: tuple<tensor<2xf32>, tuple<>>) -> "
                         "(!stablehlo.token, tuple<tensor<2xf32>, tensor<i64>>, tensor<2xf32>)"),
            std::string::npos) << printed;
  EXPECT_EQ(print(*parse(printed, "printed.mlir")), printed);
}

TEST(Effects, GenericFormsReadToTheSameOps) {
  EXPECT_EQ(print(*parse(kGeneric, "g.mlir")), print(*parse(kPretty, "p.mlir")));
}

TEST(Effects, TypesNestedEmptyAndFutures) {
  const std::string text = R"(func.func @main(%arg0: tuple<tuple<tensor<i1>, !stablehlo.token>, tuple<>, tensor<2x3xf32>>, %arg1: !stablehlo.future<tensor<4xf32>, tensor<i32>>, %arg2: tuple<>) -> tuple<> {
  return %arg2 : tuple<>
}
)";
  std::unique_ptr<ir::Module> m = parse(text, "t.mlir");
  const ir::Function& f = *m->find_function("main");
  Type t0 = f.parameter(0)->type();
  ASSERT_TRUE(t0.is_tuple());
  ASSERT_EQ(t0.elements.size(), 3u);
  EXPECT_TRUE(t0.elements[0].elements[1].is_token());
  EXPECT_TRUE(t0.elements[1].is_tuple() && t0.elements[1].elements.empty());
  EXPECT_EQ(t0.elements[2], ir::f32({2, 3}));
  EXPECT_EQ(f.parameter(1)->type(), Type::future({ir::f32({4}), ir::i32()}));
  std::string printed = print(*m);
  EXPECT_NE(printed.find("!stablehlo.future<tensor<4xf32>, tensor<i32>>"), std::string::npos) << printed;
  EXPECT_EQ(print(*parse(printed, "printed.mlir")), printed);
  EXPECT_EQ(parse_error("func.func @main(%arg0: !stablehlo.tokens) {\n  return\n}\n"),
            "t.mlir:1:24: unsupported type '!stablehlo.tokens'");
  EXPECT_EQ(parse_error("func.func @main(%arg0: tuple<tensor<f32>) {\n  return\n}\n"),
            "t.mlir:1:41: expected '>', found ') {'");
}

// The spec's constraints, each named in its message.
TEST(Effects, ConstraintMessages) {
  auto body = [](const std::string& ops, const std::string& params = "") {
    return kDecomposition + "func.func @main(" + params + ") {\n" + ops + "  return\n}\n";
  };
  EXPECT_EQ(parse_error(body("  %0 = stablehlo.after_all %arg0 : !stablehlo.token\n", "%arg0: tensor<f32>")),
            "t.mlir:6:3: stablehlo.after_all: input 0 is tensor<f32>, not a token");
  std::string tuple = "%arg0: tuple<tensor<f32>, tensor<i1>>";
  EXPECT_EQ(parse_error(body("  %0 = stablehlo.get_tuple_element %arg0[2] : (tuple<tensor<f32>, tensor<i1>>) -> tensor<f32>\n",
                          tuple)),
            "t.mlir:6:3: stablehlo.get_tuple_element: index 2 is outside [0, 2) of tuple<tensor<f32>, tensor<i1>> (C1)");
  EXPECT_EQ(parse_error(body("  %0 = stablehlo.get_tuple_element %arg0[1] : (tuple<tensor<f32>, tensor<i1>>) -> tensor<f32>\n",
                          tuple)),
            "t.mlir:6:3: stablehlo.get_tuple_element: result types (tensor<f32>) do not match the operands, which "
            "give (tensor<i1>)");
  std::string x = "%arg0: tensor<2xf32>";
  EXPECT_EQ(parse_error(body("  %0 = stablehlo.composite \"mul\" %arg0, %arg0 {decomposition = @decomp} : (tensor<2xf32>, "
                          "tensor<2xf32>) -> tensor<2xf32>\n", x)),
            "t.mlir:6:3: stablehlo.composite: name \"mul\" is not of the form dialect.op (C1)");
  EXPECT_EQ(parse_error(body("  %0 = stablehlo.composite \"my.mul\" %arg0, %arg0 {decomposition = @none} : (tensor<2xf32>, "
                          "tensor<2xf32>) -> tensor<2xf32>\n", x)),
            "t.mlir:6:3: @main: op 0 (stablehlo.composite) has decomposition @none, which is not defined (C2)");
  EXPECT_EQ(parse_error(body("  %0 = stablehlo.composite \"my.mul\" %arg0 {decomposition = @decomp} : (tensor<2xf32>) -> "
                          "tensor<2xf32>\n", x)),
            "t.mlir:6:3: @main: op 0 (stablehlo.composite) passes (tensor<2xf32>) to its decomposition @decomp, which takes "
            "(tensor<2xf32>, tensor<2xf32>) (C3)");
  EXPECT_EQ(parse_error(body("  %0 = stablehlo.composite \"my.mul\" %arg0, %arg0 {decomposition = @decomp} : (tensor<2xf32>, "
                          "tensor<2xf32>) -> tensor<4xf32>\n", x)),
            "t.mlir:6:3: @main: op 0 (stablehlo.composite) returns (tensor<4xf32>) but its decomposition @decomp returns "
            "(tensor<2xf32>) (C4)");
  auto map = [&](const std::string& operands, const std::string& dims, const std::string& args, const std::string& ret,
                 const std::string& types) {
    return body("  %0 = \"stablehlo.map\"(" + operands + ") <{dimensions = array<i64" + dims + ">}> ({\n  ^bb0(" + args +
                    "):\n    stablehlo.return " + ret + "\n  }) : " + types + "\n",
                "%arg0: tensor<2xf32>, %arg1: tensor<3xf32>");
  };
  EXPECT_EQ(parse_error(map("%arg0, %arg1", ": 0", "%a: tensor<f32>, %b: tensor<f32>", "%a : tensor<f32>",
                         "(tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>")),
            "t.mlir:6:3: stablehlo.map: input 1 is tensor<3xf32> but input 0 is tensor<2xf32>: shapes differ (C1)");
  EXPECT_EQ(parse_error(map("", ": 0", "", "", "() -> tensor<2xf32>")), "t.mlir:6:3: stablehlo.map: has no inputs (C2)");
  EXPECT_EQ(parse_error(map("%arg0", "", "%a: tensor<f32>", "%a : tensor<f32>", "(tensor<2xf32>) -> tensor<2xf32>")),
            "t.mlir:6:3: stablehlo.map: dimensions must be [0], every dimension in order (C3)");
  EXPECT_EQ(parse_error(map("%arg0", ": 0", "%a: tensor<i32>", "%a : tensor<i32>", "(tensor<2xf32>) -> tensor<2xf32>")),
            "t.mlir:6:3: @main: op 0 (stablehlo.map): its computation takes (tensor<i32>) but the inputs need (tensor<f32>) (C4)");
  EXPECT_EQ(parse_error(map("%arg0", ": 0", "%a: tensor<f32>", "%a : tensor<f32>", "(tensor<2xf32>) -> tensor<2xi32>")),
            "t.mlir:6:3: @main: op 0 (stablehlo.map): its computation returns (tensor<f32>) but the result needs (tensor<i32>) (C4)");
  // sort's comparator (fuzz/regressions/program/sort_comparator_argument_type.mlir).
  auto sort = [&](const std::string& args, const std::string& ret) {
    return body("  %0:2 = \"stablehlo.sort\"(%arg0, %arg1) <{dimension = 0 : i64}> ({\n  ^bb0(" + args +
                    "):\n    stablehlo.return " + ret + "\n  }) : (tensor<2xf32>, tensor<2xi32>) -> (tensor<2xf32>, "
                    "tensor<2xi32>)\n",
                "%arg0: tensor<2xf32>, %arg1: tensor<2xi32>");
  };
  EXPECT_EQ(parse_error(sort("%a: tensor<f32>, %b: tensor<f32>, %c: tensor<f16>, %d: tensor<i32>", "%c : tensor<f16>")),
            "t.mlir:6:3: @main: op 0 (stablehlo.sort): its comparator takes (tensor<f32>, tensor<f32>, tensor<f16>, "
            "tensor<i32>) but the inputs need (tensor<f32>, tensor<f32>, tensor<i32>, tensor<i32>) (C5)");
  EXPECT_EQ(parse_error(sort("%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>", "%a : tensor<f32>")),
            "t.mlir:6:3: @main: op 0 (stablehlo.sort): its comparator returns (tensor<f32>) but the comparison needs (tensor<i1>) (C5)");
}

// after_all and create_token give tokens, a tuple holds its members, get_tuple_element takes one
// out, composite computes its decomposition, map its computation per element; tokens and tuples
// go in and come out of the function.
TEST(Effects, InterpreterValues) {
  std::unique_ptr<ir::Module> m = parse(kPretty, "t.mlir");
  Literal x = Literal::from_doubles(ir::f32({2}), std::vector<double>{1.5, -2});
  Literal y = Literal::from_doubles(ir::f32({2}), std::vector<double>{4, 0.5});
  Literal t = Literal::tuple({y, Literal::tuple({})});
  std::vector<Literal> r = interp::evaluate(*m, "main", {Literal::token(), x, t});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], Literal::token());
  EXPECT_EQ(r[1], Literal::tuple({x, Literal::from_ints(ir::i64(), std::vector<int64_t>{3})}));
  // map(composite(x, y) + x) = x·y + x
  EXPECT_EQ(r[2], Literal::from_doubles(ir::f32({2}), std::vector<double>{1.5 * 4 + 1.5, -2 * 0.5 - 2}));
}

// The builders make the ops the text does.
TEST(Effects, BuildersMakeTheSameOps) {
  ir::Module m("b");
  const ir::Function& d = ir::build_function(m, "decomp", [](ir::FunctionBuilder& f) {
    return f.param(ir::f32({2})) * f.param(ir::f32({2}));
  });
  ir::build_function(m, "main", [&](ir::FunctionBuilder& f) {
    ir::Tensor tok = f.param(Type::token());
    ir::Tensor x = f.param(ir::f32({2}));
    ir::Tensor t = ir::tuple(f, {x, ir::after_all(f, {tok, ir::create_token(f)})});
    ir::Tensor c = ir::composite(f, "my.mul", d, {ir::get_tuple_element(t, 0), x}, 1)[0];
    return ir::map({c, x}, ir::ElementType::f32, [](ir::Builder&, const std::vector<ir::Tensor>& a) { return a[0] + a[1]; });
  });
  ir::verify(m);
  std::string printed = print(m);
  EXPECT_NE(printed.find("stablehlo.composite \"my.mul\" %3, %arg1 {decomposition = @decomp, version = 1 : i32} : "
                         "(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>"),
            std::string::npos) << printed;
  EXPECT_EQ(print(*parse(printed, "printed.mlir")), printed);
  std::vector<Literal> r = interp::evaluate(m, "main", {Literal::token(), Literal::from_doubles(ir::f32({2}), std::vector<double>{3, -1})});
  EXPECT_EQ(r[0], Literal::from_doubles(ir::f32({2}), std::vector<double>{12, 0}));
}

// interpreter.probe writes <id>_<iteration>.npy (the id sanitized), once per run of the op;
// check.expect_serialized_eq reads the iteration back and compares bits.
TEST(Effects, ProbeWritesEachIterationAndTheCheckReadsItBack) {
  const std::string text = R"(func.func @main() {
  %c = stablehlo.constant dense<0> : tensor<i64>
  %c_0 = stablehlo.constant dense<1> : tensor<i64>
  %c_1 = stablehlo.constant dense<3> : tensor<i64>
  %0:2 = stablehlo.while(%iterArg = %c, %iterArg_2 = %c) : tensor<i64>, tensor<i64>
  cond {
    %1 = stablehlo.compare  LT, %iterArg, %c_1 : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %1 = stablehlo.add %iterArg_2, %c_0 : tensor<i64>
    %2 = interpreter.probe %1, probe_id = "sum/x" : tensor<i64>
    %3 = stablehlo.add %iterArg, %c_0 : tensor<i64>
    stablehlo.return %3, %2 : tensor<i64>, tensor<i64>
  }
  check.expect_serialized_eq %c_0, probe_id = "sum/x" : tensor<i64>
  check.expect_serialized_eq %c_1, probe_id = "sum/x", iter = 2 : tensor<i64>
  check.expect_serialized_eq %c_1, probe_id = "sum/x", iter = 1 : tensor<i64>
  check.expect_serialized_eq %c_1, probe_id = "sum/x", iter = 3 : tensor<i64>
  return
}
)";
  std::unique_ptr<ir::Module> m = parse(text, "t.mlir");
  std::string printed = print(*m);
  EXPECT_NE(printed.find("interpreter.probe %1, probe_id = \"sum/x\" : tensor<i64>"), std::string::npos) << printed;
  EXPECT_NE(printed.find("check.expect_serialized_eq %c_1, probe_id = \"sum/x\", iter = 2 : tensor<i64>"),
            std::string::npos) << printed;
  EXPECT_EQ(print(*parse(printed, "printed.mlir")), printed);
  std::filesystem::path dir = std::filesystem::temp_directory_path() / fmt::format("tessera-probe-test-{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  interp::CheckLog log;
  interp::Options o;
  o.checks = &log;
  o.probe_dir = dir.string();
  interp::evaluate(*m, "main", {}, o);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::filesystem::exists(dir / fmt::format("sum_x_{}.npy", i))) << i;
  EXPECT_FALSE(std::filesystem::exists(dir / "sum_x_3.npy"));
  std::vector<interp::CheckResult> checks = log.take();
  ASSERT_EQ(checks.size(), 4u);
  EXPECT_TRUE(checks[0].passed) << checks[0].detail;
  EXPECT_TRUE(checks[1].passed) << checks[1].detail;
  EXPECT_FALSE(checks[2].passed);  // iteration 1 wrote 2
  EXPECT_EQ(checks[2].detail, (dir / "sum_x_1.npy").string() + " holds tensor<i64>, not the bits of this tensor<i64> value");
  EXPECT_FALSE(checks[3].passed);
  EXPECT_EQ(checks[3].detail, "probe \"sum/x\" wrote no iteration 3 (" + (dir / "sum_x_3.npy").string() + " does not exist)");
  std::filesystem::remove_all(dir);
  // Without a folder the probe is refused by name.
  EXPECT_EQ(tessera::testing::error_of([&] { interp::evaluate(*m, "main", {}); }),
            "interpreter.probe: needs a probe directory (tessera check gives one; interp::Options::probe_dir)");
}

}  // namespace
}  // namespace tessera::stablehlo
