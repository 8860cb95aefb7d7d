// chlo.scan (#17): its pretty form (as CHLO's assembly format writes it) and its generic form read
// to the same op and print back unchanged; the interpreter computes each position's output slice
// and the carries in order (from the end when is_reverse), for several outputs, integer and bool
// outputs, no inputs at all (scan_dim_size steps), and a scan of length zero; each constraint's
// message; the builder makes the op the text does; vmap equals the loop over examples; the
// gradient is refused by name. Expected values are worked out by hand in the comments.
#include <gtest/gtest.h>

#include "autodiff/reverse.h"
#include "autodiff/vmap.h"
#include "common/error_of.h"
#include "common/parse_error.h"
#include "interp/interpreter.h"
#include "ir/scan.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

using ir::Literal;
using testing::parse_error;

// A running product along dimension 1 from the end, with a second output that says whether each
// element is larger than the product carried into its step.
const std::string kPretty = R"(func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>, tensor<2xf32>) {
  %0:3 = chlo.scan(%arg0) inits(%arg1) dimension=1 attributes {is_reverse = true} {
  ^bb0(%arg2: tensor<2xf32>, %arg3: tensor<2xf32>):
    %1 = stablehlo.multiply %arg3, %arg2 : tensor<2xf32>
    %2 = stablehlo.compare  GT, %arg2, %arg3 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
    stablehlo.return %1, %2, %1 : tensor<2xf32>, tensor<2xi1>, tensor<2xf32>
  } : (tensor<2x3xf32>, tensor<2xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>, tensor<2xf32>)
  return %0#0, %0#1, %0#2 : tensor<2x3xf32>, tensor<2x3xi1>, tensor<2xf32>
}
)";

const std::string kGeneric = R"(func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>, tensor<2xf32>) {
  %0:3 = "chlo.scan"(%arg0, %arg1) <{dimension = 1 : i64, is_reverse = true, operandSegmentSizes = array<i32: 1, 1>, resultSegmentSizes = array<i32: 2, 1>}> ({
  ^bb0(%arg2: tensor<2xf32>, %arg3: tensor<2xf32>):
    %1 = "stablehlo.multiply"(%arg3, %arg2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %2 = "stablehlo.compare"(%arg2, %arg3) <{comparison_direction = #stablehlo<comparison_direction GT>}> : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
    "stablehlo.return"(%1, %2, %1) : (tensor<2xf32>, tensor<2xi1>, tensor<2xf32>) -> ()
  }) : (tensor<2x3xf32>, tensor<2xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>, tensor<2xf32>)
  return %0#0, %0#1, %0#2 : tensor<2x3xf32>, tensor<2x3xi1>, tensor<2xf32>
}
)";

Literal f32(std::vector<int64_t> shape, std::vector<double> v) { return Literal::from_doubles(ir::f32(shape), v); }
Literal i1(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return Literal::from_ints(ir::Type(ir::ElementType::i1, shape), v);
}

TEST(Scan, PrettyFormPrintsAsWrittenAndRoundTrips) {
  std::unique_ptr<ir::Module> m = parse(kPretty, "t.mlir");
  std::string printed = print(*m);
  EXPECT_NE(printed.find("%0:3 = chlo.scan(%arg0) inits(%arg1) dimension=1 attributes {is_reverse = true} {\n"),
            std::string::npos) << printed;
  EXPECT_NE(printed.find("} : (tensor<2x3xf32>, tensor<2xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>, tensor<2xf32>)"),
            std::string::npos) << printed;
  EXPECT_EQ(print(*parse(printed, "printed.mlir")), printed);
}

TEST(Scan, GenericFormReadsToTheSameOp) {
  EXPECT_EQ(print(*parse(kGeneric, "g.mlir")), print(*parse(kPretty, "p.mlir")));
}

// x = [[1, 2, 3], [4, 5, 6]], init [1, 0.5], from the end along dimension 1:
//   p = 2: carry [1·3, 0.5·6] = [3, 3],     3 > 1, 6 > 0.5
//   p = 1: carry [3·2, 3·5]  = [6, 15],     2 > 3 no, 5 > 3
//   p = 0: carry [6·1, 15·4] = [6, 60],     1 > 6 no, 4 > 15 no
TEST(Scan, InterpreterRunsTheBodyOncePerPositionInOrder) {
  std::unique_ptr<ir::Module> m = parse(kPretty, "t.mlir");
  std::vector<Literal> r = interp::evaluate(*m, "main", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, 0.5})});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], f32({2, 3}, {6, 6, 3, 60, 15, 3}));
  EXPECT_EQ(r[1], i1({2, 3}, {0, 0, 1, 0, 1, 1}));
  EXPECT_EQ(r[2], f32({2}, {6, 60}));
}

// No inputs: scan_dim_size steps, each counting the carry up by one; and a scan over a dimension
// of size zero returns its inits and empty outputs.
TEST(Scan, NoInputsAndZeroSteps) {
  const std::string text = R"(func.func @main(%arg0: tensor<i32>, %arg1: tensor<0x2xf32>, %arg2: tensor<2xf32>) -> (tensor<4xi32>, tensor<i32>, tensor<0x2xf32>, tensor<2xf32>) {
  %0:2 = chlo.scan() inits(%arg0) dimension=0 attributes {scan_dim_size = 4 : i64} {
  ^bb0(%arg3: tensor<i32>):
    %c = stablehlo.constant dense<1> : tensor<i32>
    %2 = stablehlo.add %arg3, %c : tensor<i32>
    stablehlo.return %2, %2 : tensor<i32>, tensor<i32>
  } : (tensor<i32>) -> (tensor<4xi32>, tensor<i32>)
  %1:2 = chlo.scan(%arg1) inits(%arg2) dimension=0 {
  ^bb0(%arg3: tensor<2xf32>, %arg4: tensor<2xf32>):
    %2 = stablehlo.add %arg3, %arg4 : tensor<2xf32>
    stablehlo.return %2, %2 : tensor<2xf32>, tensor<2xf32>
  } : (tensor<0x2xf32>, tensor<2xf32>) -> (tensor<0x2xf32>, tensor<2xf32>)
  return %0#0, %0#1, %1#0, %1#1 : tensor<4xi32>, tensor<i32>, tensor<0x2xf32>, tensor<2xf32>
}
)";
  std::unique_ptr<ir::Module> m = parse(text, "t.mlir");
  EXPECT_EQ(print(*parse(print(*m), "printed.mlir")), print(*m));
  std::vector<Literal> r = interp::evaluate(
      *m, "main", {Literal::from_ints(ir::i32(), std::vector<int64_t>{10}), f32({0, 2}, {}), f32({2}, {7, 8})});
  EXPECT_EQ(r[0], Literal::from_ints(ir::i32({4}), std::vector<int64_t>{11, 12, 13, 14}));
  EXPECT_EQ(r[1], Literal::from_ints(ir::i32(), std::vector<int64_t>{14}));
  EXPECT_EQ(r[2], f32({0, 2}, {}));
  EXPECT_EQ(r[3], f32({2}, {7, 8}));
}

TEST(Scan, ConstraintMessages) {
  auto scan = [](const std::string& params, const std::string& head, const std::string& args, const std::string& ret,
                 const std::string& types) {
    return "func.func @main(" + params + ") {\n  %0:2 = chlo.scan" + head + " {\n  ^bb0(" + args +
           "):\n    stablehlo.return " + ret + "\n  } : " + types + "\n  return\n}\n";
  };
  std::string params = "%arg0: tensor<4xi32>, %arg1: tensor<i32>, %arg2: tensor<3xi32>";
  std::string body_args = "%a: tensor<i32>, %b: tensor<i32>", body_ret = "%a, %b : tensor<i32>, tensor<i32>";
  EXPECT_EQ(parse_error(scan(params, "(%arg0) inits(%arg1) dimension=0", body_args, body_ret,
                             "(tensor<4xi32>, tensor<i32>) -> (tensor<4xi32>, tensor<f32>)")),
            "t.mlir:2:3: chlo.scan: carry 0 is tensor<f32> but its init is tensor<i32>");
  EXPECT_EQ(parse_error(scan(params, "(%arg0) inits(%arg1) dimension=1", body_args, body_ret,
                             "(tensor<4xi32>, tensor<i32>) -> (tensor<4xi32>, tensor<i32>)")),
            "t.mlir:2:3: chlo.scan: dimension 1 is outside input 0 of rank 1 (tensor<4xi32>)");
  EXPECT_EQ(parse_error("func.func @main(" + params + ") {\n  %0:3 = chlo.scan(%arg0, %arg2) inits(%arg1) dimension=0 {\n"
                        "  ^bb0(%a: tensor<i32>, %b: tensor<i32>, %c: tensor<i32>):\n    stablehlo.return %a, %b, %c : "
                        "tensor<i32>, tensor<i32>, tensor<i32>\n  } : (tensor<4xi32>, tensor<3xi32>, tensor<i32>) -> "
                        "(tensor<4xi32>, tensor<4xi32>, tensor<i32>)\n  return\n}\n"),
            "t.mlir:2:3: chlo.scan: input 1 has 3 positions along dimension 0 but input 0 has 4");
  EXPECT_EQ(parse_error(scan(params, "(%arg0) inits(%arg1) dimension=0", body_args, body_ret,
                             "(tensor<4xi32>, tensor<i32>) -> (tensor<3xi32>, tensor<i32>)")),
            "t.mlir:2:3: chlo.scan: output 0 is tensor<3xi32>, which does not stack 4 slices along dimension 0");
  EXPECT_EQ(parse_error(scan(params, "() inits(%arg1) dimension=0", "%b: tensor<i32>", "%b, %b : tensor<i32>, tensor<i32>",
                             "(tensor<i32>) -> (tensor<4xi32>, tensor<i32>)")),
            "t.mlir:2:3: chlo.scan: has no inputs and no scan_dim_size, so the number of steps is unknown");
  EXPECT_EQ(parse_error(scan(params, "(%arg0) inits(%arg1) dimension=0", "%a: tensor<4xi32>, %b: tensor<i32>",
                             "%b, %b : tensor<i32>, tensor<i32>",
                             "(tensor<4xi32>, tensor<i32>) -> (tensor<4xi32>, tensor<i32>)")),
            "t.mlir:2:3: @main: op 0 (chlo.scan): its body takes (tensor<4xi32>, tensor<i32>) but the input slices and "
            "carries are (tensor<i32>, tensor<i32>)");
  EXPECT_EQ(parse_error(scan(params, "(%arg0) inits(%arg1) dimension=0", "%a: tensor<i32>, %b: tensor<i32>",
                             "%b : tensor<i32>", "(tensor<4xi32>, tensor<i32>) -> (tensor<4xi32>, tensor<i32>)")),
            "t.mlir:2:3: @main: op 0 (chlo.scan): its body returns (tensor<i32>) but the output slices and carries are "
            "(tensor<i32>, tensor<i32>)");
}

// ir::scan builds the op the text reads, and vmap of it equals running each example.
TEST(Scan, BuilderAndVmap) {
  ir::Module m("b");
  const ir::Function& f = ir::build_function(m, "main", [](ir::FunctionBuilder& b) {
    ir::Tensor x = b.param(ir::f32({2, 3})), c = b.param(ir::f32({2}));
    std::vector<ir::Tensor> r = ir::scan(b, {x}, {c}, 1, true, [](ir::Builder&, const std::vector<ir::Tensor>& a) {
      ir::Tensor p = a[1] * a[0];
      return std::vector<ir::Tensor>{p, ir::compare(a[0], a[1], ir::ComparisonDirection::GT), p};
    });
    return r;
  });
  ir::verify(m);
  EXPECT_EQ(print(*parse(print(m), "printed.mlir")), print(m));
  std::vector<Literal> r = interp::evaluate(m, "main", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, 0.5})});
  EXPECT_EQ(r[0], f32({2, 3}, {6, 6, 3, 60, 15, 3}));
  EXPECT_EQ(r[1], i1({2, 3}, {0, 0, 1, 0, 1, 1}));

  // Three examples of x, the init shared.
  autodiff::VmapOptions o;
  o.in_axes = {0, std::nullopt};
  o.batch_size = 3;
  const ir::Function& g = autodiff::vmap(m, f, o);
  ir::verify(m);
  std::vector<double> xs(18);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.5 + 0.25 * static_cast<double>((i * 7) % 11);
  Literal init = f32({2}, {1, -2});
  std::vector<Literal> batched = interp::evaluate(m, g.name(), {f32({3, 2, 3}, xs), init});
  for (int64_t b = 0; b < 3; ++b) {
    std::vector<double> xb(xs.begin() + b * 6, xs.begin() + (b + 1) * 6);
    std::vector<Literal> one = interp::evaluate(m, "main", {f32({2, 3}, xb), init});
    for (size_t k = 0; k < one.size(); ++k)
      for (int64_t i = 0; i < one[k].num_elements(); ++i)
        EXPECT_EQ(batched[k].get_double(b * one[k].num_elements() + i), one[k].get_double(i)) << b << " " << k << " " << i;
  }
}

TEST(Scan, GradientIsRefusedByName) {
  std::unique_ptr<ir::Module> m = parse(kPretty, "t.mlir");
  std::string e = tessera::testing::error_of([&] { autodiff::reverse(*m, *m->find_function("main")); });
  EXPECT_NE(e.find("cannot differentiate chlo.scan: scans are not differentiated yet"), std::string::npos) << e;
}

}  // namespace
}  // namespace tessera::stablehlo
