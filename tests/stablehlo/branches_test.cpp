// stablehlo.if and stablehlo.case through text: the spec's examples parsed (generic form, as
// stablehlo-opt and JAX print them) and run by the interpreter; a branch reading values from around
// the op, and one holding a while loop; print -> parse -> print the identity; the verifier's
// constraint messages (if C1-C3, case C1-C4); and a gradient through a case whose branches read
// the parameter, against the derivative worked by hand.
#include <gtest/gtest.h>

#include "common/parse_error.h"
#include "autodiff/reverse.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "support/error.h"

namespace tessera::stablehlo {
namespace {

using ir::Literal;
using ir::Type;

std::vector<int64_t> values(const Literal& l) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < l.num_elements(); ++i) v.push_back(l.get_int(i));
  return v;
}

using testing::parse_error;

std::string round_trip(const std::string& text) {
  std::string once = print(*parse(text, "t.mlir"));
  std::string twice = print(*parse(once, "printed.mlir"));
  EXPECT_EQ(once, twice);
  return once;
}

// The spec's example of if, with the predicate an argument.
const std::string kIf = R"(
func.func @main(%pred: tensor<i1>) -> tensor<i32> {
  %result_true_branch = stablehlo.constant dense<10> : tensor<i32>
  %result_false_branch = stablehlo.constant dense<11> : tensor<i32>
  %result = "stablehlo.if"(%pred) ({
    "stablehlo.return"(%result_true_branch) : (tensor<i32>) -> ()
  }, {
    "stablehlo.return"(%result_false_branch) : (tensor<i32>) -> ()
  }) : (tensor<i1>) -> tensor<i32>
  return %result : tensor<i32>
}
)";

// The spec's example of case, with the index an argument.
const std::string kCase = R"(
func.func @main(%index: tensor<i32>) -> (tensor<2xi64>, tensor<2xi64>) {
  %result_branch0 = stablehlo.constant dense<0> : tensor<2xi64>
  %result_branch1 = stablehlo.constant dense<1> : tensor<2xi64>
  %result0, %result1 = "stablehlo.case"(%index) ({
    "stablehlo.return"(%result_branch0, %result_branch0) : (tensor<2xi64>, tensor<2xi64>) -> ()
  }, {
    "stablehlo.return"(%result_branch1, %result_branch1) : (tensor<2xi64>, tensor<2xi64>) -> ()
  }) : (tensor<i32>) -> (tensor<2xi64>, tensor<2xi64>)
  return %result0, %result1 : tensor<2xi64>, tensor<2xi64>
}
)";

TEST(If, SpecExampleRunsTheBranchThePredicateNames) {
  auto m = parse(kIf, "t.mlir");
  EXPECT_EQ(values(interp::evaluate(*m, "main", {Literal::scalar(ir::ElementType::i1, 1)}).at(0)),
            std::vector<int64_t>{10});
  EXPECT_EQ(values(interp::evaluate(*m, "main", {Literal::scalar(ir::ElementType::i1, 0)}).at(0)),
            std::vector<int64_t>{11});
}

TEST(Case, SpecExampleRunsTheLastBranchForAnIndexOutOfRange) {
  auto m = parse(kCase, "t.mlir");
  auto run = [&](int index) {
    auto r = interp::evaluate(*m, "main", {Literal::scalar(ir::ElementType::i32, index)});
    EXPECT_EQ(values(r.at(0)), values(r.at(1)));
    return values(r.at(0));
  };
  EXPECT_EQ(run(-1), (std::vector<int64_t>{1, 1}));  // the spec's example
  EXPECT_EQ(run(0), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(run(1), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(run(7), (std::vector<int64_t>{1, 1}));
}

// jax.lax.switch lowers to a case whose branches compute from values around it; here one branch
// holds a while loop (x doubled three times) that also reads a value from outside the case.
const std::string kSwitch = R"(
func.func @main(%i: tensor<i32>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %two = stablehlo.constant dense<2.0> : tensor<3xf32>
  %r = "stablehlo.case"(%i) ({
    %a = stablehlo.add %x, %two : tensor<3xf32>
    "stablehlo.return"(%a) : (tensor<3xf32>) -> ()
  }, {
    %zero = stablehlo.constant dense<0> : tensor<i32>
    %w:2 = stablehlo.while(%n = %zero, %v = %x) : tensor<i32>, tensor<3xf32>
     cond {
      %three = stablehlo.constant dense<3> : tensor<i32>
      %c = stablehlo.compare LT, %n, %three : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %n1 = stablehlo.add %n, %one : tensor<i32>
      %v1 = stablehlo.multiply %v, %two : tensor<3xf32>
      stablehlo.return %n1, %v1 : tensor<i32>, tensor<3xf32>
    }
    "stablehlo.return"(%w#1) : (tensor<3xf32>) -> ()
  }) : (tensor<i32>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}
)";

TEST(Case, BranchesReadValuesAroundThemAndHoldLoops) {
  auto m = parse(kSwitch, "t.mlir");
  Literal x(Type(ir::ElementType::f32, {3}));
  for (int64_t k = 0; k < 3; ++k) x.set_double(k, static_cast<double>(k) - 1);
  auto r0 = interp::evaluate(*m, "main", {Literal::scalar(ir::ElementType::i32, 0), x}).at(0);
  auto r1 = interp::evaluate(*m, "main", {Literal::scalar(ir::ElementType::i32, 1), x}).at(0);
  for (int64_t k = 0; k < 3; ++k) {
    EXPECT_EQ(r0.get_double(k), static_cast<double>(k) - 1 + 2);
    EXPECT_EQ(r1.get_double(k), (static_cast<double>(k) - 1) * 8);
  }
}

TEST(IfAndCase, PrintInTheGenericFormAndReadBack) {
  for (const std::string* text : {&kIf, &kCase, &kSwitch}) {
    std::string printed = round_trip(*text);
    EXPECT_NE(printed.find(text == &kIf ? "\"stablehlo.if\"(%arg0) ({" : "\"stablehlo.case\"(%arg0) ({"),
              std::string::npos)
        << printed;
  }
}

TEST(IfAndCase, VerifierNamesTheConstraint) {
  // case C4 (and if C3): a branch returns other types than the op's results.
  std::string wrong = kCase;
  wrong.replace(wrong.find("(%result_branch1, %result_branch1) : (tensor<2xi64>, tensor<2xi64>)"),
                std::string("(%result_branch1, %result_branch1) : (tensor<2xi64>, tensor<2xi64>)").size(),
                "(%result_branch1) : (tensor<2xi64>)");
  EXPECT_EQ(parse_error(wrong),
            "t.mlir:5:3: @main: op 2 (stablehlo.case): branch 1 returns (tensor<2xi64>) but the op's results are "
            "(tensor<2xi64>, tensor<2xi64>) (C4)");
  std::string pred = kIf;
  pred.replace(pred.find("%pred: tensor<i1>"), 17, "%pred: tensor<i32>");
  pred.replace(pred.find("(tensor<i1>) -> tensor<i32>"), 11, "(tensor<i32>");
  EXPECT_NE(parse_error(pred).find("stablehlo.if: pred must be tensor<i1>, not tensor<i32>"), std::string::npos)
      << parse_error(pred);
  std::string index = kCase;
  index.replace(index.find("%index: tensor<i32>"), 19, "%index: tensor<i64>");
  index.replace(index.find("(tensor<i32>) ->"), 12, "(tensor<i64>");
  EXPECT_NE(parse_error(index).find("stablehlo.case: index must be tensor<i32>, not tensor<i64>"), std::string::npos)
      << parse_error(index);
  std::string one = kIf;
  size_t from = one.find("}, {");
  one.erase(from, one.find("}) :") - from);
  EXPECT_EQ(parse_error(one), "t.mlir:5:3: @main: op 2 (stablehlo.if) has 1 branches, not 2");
}

TEST(IfAndCase, BuilderRefusesBranchesOfDifferentTypes) {
  ir::Module m("m");
  std::string message;
  try {
    ir::build_function(m, "f", [](ir::FunctionBuilder& f) {
      ir::Tensor p = f.param(Type(ir::ElementType::i1, {}));
      ir::Tensor x = f.param(Type(ir::ElementType::f32, {2}));
      return ir::if_op(
          p, [&](ir::Builder&) { return std::vector<ir::Tensor>{x}; },
          [&](ir::Builder&) { return std::vector<ir::Tensor>{ir::convert(x, ir::ElementType::f64)}; })[0];
    });
  } catch (const support::UserError& e) {
    message = e.what();
  }
  EXPECT_EQ(message, "stablehlo.if: branch 1 returns (tensor<2xf64>), branch 0 returns (tensor<2xf32>)");
}

// d/dx sum(case(i, x + 2, x·x)) is 1 for branch 0 and 2x for branch 1 (and for an index out of
// range): the gradient runs the transpose of the branch the forward ran.
TEST(IfAndCase, GradientFlowsToTheValuesTheTakenBranchReads) {
  const std::string text = R"(
func.func @main(%i: tensor<i32>, %x: tensor<3xf32>) -> tensor<f32> {
  %two = stablehlo.constant dense<2.0> : tensor<3xf32>
  %r = "stablehlo.case"(%i) ({
    %a = stablehlo.add %x, %two : tensor<3xf32>
    "stablehlo.return"(%a) : (tensor<3xf32>) -> ()
  }, {
    %b = stablehlo.multiply %x, %x : tensor<3xf32>
    "stablehlo.return"(%b) : (tensor<3xf32>) -> ()
  }) : (tensor<i32>) -> tensor<3xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%r init: %z) applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
  return %s : tensor<f32>
}
)";
  auto m = parse(text, "t.mlir");
  const ir::Function& g = autodiff::reverse(*m, *m->find_function("main"));
  Literal x(Type(ir::ElementType::f32, {3}));
  for (int64_t k = 0; k < 3; ++k) x.set_double(k, static_cast<double>(k) + 0.5);
  for (int index : {0, 1, 5}) {
    auto r = interp::evaluate(*m, g.name(), {Literal::scalar(ir::ElementType::i32, index), x});
    ASSERT_EQ(r.size(), 1u);
    for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(r[0].get_double(k), index == 0 ? 1.0 : 2 * x.get_double(k)) << index << " " << k;
  }
  EXPECT_EQ(m->functions.size(), 2u);  // @main and @main_grad: no scratch function of a branch stays
  round_trip(print(*m));                // the gradient program prints and reads back
}

}  // namespace
}  // namespace tessera::stablehlo
