// Quantized types and the quantization ops (#17): !quant.uniform element types read and printed
// (print -> parse -> print is the identity) with each constraint of QuantizedTensorElementType
// and of quantized tensor types (spec C1-C13) on its message; uniform_quantize and
// uniform_dequantize in the pretty and generic forms, their constraints, and their values
// (per-tensor and per-axis, ties to even, clamping, requantization) against the spec's examples
// and NumPy's float32 arithmetic; transforms::lower_quantized's dequantize -> op -> quantize for a
// quantized add and dot_general; and the refusals of unlowered ops and of their derivatives.
#include <gtest/gtest.h>

#include "autodiff/forward.h"
#include "autodiff/reverse.h"
#include "autodiff/vmap.h"
#include "common/error_of.h"
#include "interp/interpreter.h"
#include "ir/quantize.h"
#include "spmd/factor_rule.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "transforms/lower_quantized.h"

namespace tessera::stablehlo {
namespace {

using ir::Literal;
using testing::error_of;

std::string parse_error(const std::string& text) {
  return error_of([&] { parse(text, "t.mlir"); });
}

// A function taking a value of type `type`.
std::string taking(const std::string& type) {
  return "func.func @main(%arg0: " + type + ") {\n  return\n}\n";
}

// Expects `what` in `message`.
#define EXPECT_MESSAGE(message, what)                                                  \
  do {                                                                                 \
    std::string m_ = (message);                                                        \
    EXPECT_NE(m_.find(what), std::string::npos) << "message: " << m_ << "\nwanted: " << (what); \
  } while (0)

// ---- Types ----

TEST(QuantTypes, PrintAsWrittenAndRoundTrip) {
  // Each type as the text writes it, and as Tessera prints it (shortest scale that reads back the
  // same double; no zero point when it is 0; the storage range only when narrowed).
  const std::vector<std::pair<std::string, std::string>> types = {
      {"tensor<2x!quant.uniform<i8:f32, 0.1:-3>>", "tensor<2x!quant.uniform<i8:f32, 0.1:-3>>"},
      {"tensor<!quant.uniform<i8<-127:127>:f32, 5.000000e-01>>", "tensor<!quant.uniform<i8<-127:127>:f32, 0.5>>"},
      {"tensor<2x3x!quant.uniform<i8:f32:1, {0.1:-30,0.5:-20, 2.0}>>",
       "tensor<2x3x!quant.uniform<i8:f32:1, {0.1:-30, 0.5:-20, 2.0}>>"},
      {"tensor<4x!quant.uniform<ui8:bf16, 1.5251309263939951E-5:16>>",
       "tensor<4x!quant.uniform<u8:bf16, 1.5251309263939951e-05:16>>"},
      {"tensor<4x!quant.uniform<u8:f32, 3.400000e+01:16>>", "tensor<4x!quant.uniform<u8:f32, 34.0:16>>"},
      {"tensor<!quant.uniform<i32:f32, 3.906250e-03>>", "tensor<!quant.uniform<i32:f32, 0.00390625>>"},
      {"tensor<3x!quant.uniform<i8:f32:0, {1:0, 2:1, 3:-1}>>", "tensor<3x!quant.uniform<i8:f32:0, {1.0, 2.0:1, 3.0:-1}>>"},
      {"tensor<2x!quant.uniform<i4:f16, 0.25:-8>>", "tensor<2x!quant.uniform<i4:f16, 0.25:-8>>"},
  };
  for (const auto& [written, printed] : types) {
    std::unique_ptr<ir::Module> m;
    try {
      m = parse(taking(written), "t.mlir");
    } catch (const support::UserError& e) {
      ADD_FAILURE() << written << ": " << e.what();
      continue;
    }
    const ir::Type& t = m->find_function("main")->parameter(0)->type();
    EXPECT_EQ(ir::to_string(t), printed);
    std::string text = print(*m);
    EXPECT_NE(text.find(printed), std::string::npos) << text;
    EXPECT_EQ(print(*parse(text, "printed.mlir")), text);
    EXPECT_TRUE(t.is_quantized());
    EXPECT_EQ(t.element, t.quant->storage);  // the literal holds storage integers
  }
  std::unique_ptr<ir::Module> m = parse(taking("tensor<2x3x!quant.uniform<i8<-100:90>:f32:1, {0.1:-30, 0.5, 2.0:7}>>"), "t.mlir");
  const ir::Quantization& q = *m->find_function("main")->parameter(0)->type().quant;
  EXPECT_EQ(q.storage, ir::ElementType::i8);
  EXPECT_EQ(q.expressed, ir::ElementType::f32);
  EXPECT_EQ(q.storage_min, -100);
  EXPECT_EQ(q.storage_max, 90);
  EXPECT_EQ(q.axis, std::optional<int64_t>(1));
  EXPECT_EQ(q.scales, (std::vector<double>{0.1, 0.5, 2.0}));
  EXPECT_EQ(q.zero_points, (std::vector<int64_t>{-30, 0, 7}));  // the zero point defaults to 0
}

TEST(QuantTypes, ConstraintMessages) {
  EXPECT_MESSAGE(parse_error(taking("tensor<2x!quant.uniform<f32:f32, 0.1>>")),
                 "!quant.uniform: (C1) the storage type must be an integer type, not f32");
  EXPECT_MESSAGE(parse_error(taking("tensor<2x!quant.uniform<i8<-200:127>:f32, 0.1>>")),
                 "(C3) storage range -200:127 must satisfy -128 <= storage_min < storage_max <= 127 for i8");
  EXPECT_MESSAGE(parse_error(taking("tensor<2x!quant.uniform<i8<5:5>:f32, 0.1>>")), "(C3) storage range 5:5");
  EXPECT_MESSAGE(parse_error(taking("tensor<2x!quant.uniform<ui8<0:256>:f32, 0.1>>")), "(C3) storage range 0:256");
  EXPECT_MESSAGE(parse_error(taking("tensor<2x!quant.uniform<i8:i32, 0.1>>")),
                 "(C4) the expressed type must be a floating-point type, not i32");
  EXPECT_MESSAGE(parse_error(taking("tensor<2x!quant.uniform<i8:f32, -0.1>>")), "(C5) scale -0.1 must be positive");
  EXPECT_MESSAGE(parse_error(taking("tensor<2x!quant.uniform<i8:f32, 0.0>>")), "(C5) scale 0 must be positive");
  EXPECT_MESSAGE(parse_error(taking("tensor<2x!quant.uniform<i8:f32, 1e39>>")), "(C6) scale 1e+39 is not finite in f32");
  EXPECT_MESSAGE(parse_error(taking("tensor<2x!quant.uniform<i8:f32, 0.1:128>>")),
                 "(C7) zero point 128 is outside the storage range -128:127");
  EXPECT_MESSAGE(parse_error(taking("tensor<2x!quant.uniform<i8<-10:10>:f32, 0.1:-11>>")),
                 "(C7) zero point -11 is outside the storage range -10:10");
  EXPECT_MESSAGE(parse_error(taking("tensor<2x!quant.uniform<i8:f32, {0.1, 0.2}>>")),
                 "(C10) per-tensor quantization has one scale, not 2");
  EXPECT_MESSAGE(parse_error(taking("tensor<2x!quant.uniform<i8:f32:-1, {0.1, 0.2}>>")),
                 "(C11) quantization dimension -1 is negative");
  EXPECT_MESSAGE(parse_error(taking("tensor<2x!quant.uniform<i8:f32:1, {0.1, 0.2}>>")),
                 "(C12) quantization dimension 1 is out of range for rank 1");
  EXPECT_MESSAGE(parse_error(taking("tensor<2x3x!quant.uniform<i8:f32:1, {0.1, 0.2}>>")),
                 "(C13) quantization dimension 1 has size 3, but there are 2 scales");
  // The text's place is named.
  EXPECT_MESSAGE(parse_error(taking("tensor<2x!quant.uniform<i8:f32, 0.1:128>>")), "t.mlir:1:");
  EXPECT_MESSAGE(parse_error(taking("tensor<2x!quant.uniform<i8:f32 0.1>>")), "expected ','");
}

// ---- uniform_quantize and uniform_dequantize ----

const std::string kPerAxis = "tensor<2x!quant.uniform<i8:f32:0, {0.1:-30, 0.5:-20}>>";
const std::string kPerAxis2 = "tensor<2x!quant.uniform<i8:f32:0, {0.1:-20, 0.2:-30}>>";

// Most ops take quantized operands per tensor only (their inputs say "or per-tensor quantized
// tensor"); add takes either, and dot_general's rhs (the weights) may be per axis.
TEST(QuantOps, PerAxisOperandsOnlyWhereTheSpecTakesThem) {
  auto unary = [](const std::string& op) {
    return "func.func @main(%arg0: " + kPerAxis + ") -> " + kPerAxis + " {\n  %0 = stablehlo." + op + " %arg0 : " +
           kPerAxis + "\n  return %0 : " + kPerAxis + "\n}\n";
  };
  for (const char* op : {"abs", "negate", "exponential", "tanh"})
    EXPECT_MESSAGE(parse_error(unary(op)), "takes per-tensor quantized operands, but operand 0 is quantized per axis");
  EXPECT_EQ(parse_error("func.func @main(%arg0: " + kPerAxis + ") -> " + kPerAxis + " {\n  %0 = stablehlo.add %arg0, %arg0 : " +
                        kPerAxis + "\n  return %0 : " + kPerAxis + "\n}\n"),
            "<no error>");
  const std::string w = "tensor<3x2x!quant.uniform<i8:f32:1, {0.1, 0.5}>>";
  const std::string x = "tensor<4x3x!quant.uniform<i8:f32, 0.25>>";
  EXPECT_EQ(parse_error("func.func @main(%a: " + x + ", %w: " + w + ") -> tensor<4x2xf32> {\n  %0 = stablehlo.dot_general %a, %w, "
                        "contracting_dims = [1] x [0] : (" + x + ", " + w + ") -> tensor<4x2xf32>\n  return %0 : tensor<4x2xf32>\n}\n"),
            "<no error>");
}

// The spec's examples of both ops, in the pretty form.
const std::string kSpecExamples = "func.func @main(%arg0: tensor<2xf32>) -> (" + kPerAxis + ", " + kPerAxis2 +
                                  ", tensor<2xf32>) {\n"
                                  "  %0 = stablehlo.uniform_quantize %arg0 : (tensor<2xf32>) -> " + kPerAxis + "\n"
                                  "  %1 = stablehlo.uniform_quantize %0 : (" + kPerAxis + ") -> " + kPerAxis2 + "\n"
                                  "  %2 = stablehlo.uniform_dequantize %0 : (" + kPerAxis + ") -> tensor<2xf32>\n"
                                  "  return %0, %1, %2 : " + kPerAxis + ", " + kPerAxis2 + ", tensor<2xf32>\n}\n";

TEST(QuantOps, PrettyAndGenericFormsRoundTrip) {
  std::unique_ptr<ir::Module> m = parse(kSpecExamples, "t.mlir");
  std::string printed = print(*m);
  EXPECT_NE(printed.find("%0 = stablehlo.uniform_quantize %arg0 : (tensor<2xf32>) -> " + kPerAxis), std::string::npos) << printed;
  EXPECT_NE(printed.find("stablehlo.uniform_dequantize %0 : (" + kPerAxis + ") -> tensor<2xf32>"), std::string::npos) << printed;
  EXPECT_EQ(print(*parse(printed, "printed.mlir")), printed);
  std::string generic = "func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n"
                        "  %0 = \"stablehlo.uniform_quantize\"(%arg0) : (tensor<2xf32>) -> " + kPerAxis + "\n"
                        "  %1 = \"stablehlo.uniform_dequantize\"(%0) : (" + kPerAxis + ") -> tensor<2xf32>\n"
                        "  return %1 : tensor<2xf32>\n}\n";
  std::string from_generic = print(*parse(generic, "g.mlir"));
  EXPECT_NE(from_generic.find("stablehlo.uniform_quantize %arg0 : (tensor<2xf32>) -> " + kPerAxis), std::string::npos) << from_generic;
  EXPECT_EQ(print(*parse(from_generic, "printed.mlir")), from_generic);
}

// The spec's examples: quantize [4.0, 15.0] -> [10, 10]; dequantize -> [4.0, 15.0]; requantize with
// {0.1:-20, 0.2:-30} -> [20, 45].
TEST(QuantOps, SpecExampleValues) {
  std::unique_ptr<ir::Module> m = parse(kSpecExamples, "t.mlir");
  std::vector<Literal> r = interp::evaluate(*m, "main", {Literal::from_doubles(ir::f32({2}), std::vector<double>{4.0, 15.0})});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].get_int(0), 10);
  EXPECT_EQ(r[0].get_int(1), 10);
  EXPECT_EQ(r[1].get_int(0), 20);
  EXPECT_EQ(r[1].get_int(1), 45);
  EXPECT_EQ(r[2], Literal::from_doubles(ir::f32({2}), std::vector<double>{4.0, 15.0}));
}

// Values NumPy computes by the spec's formula in float32 (x / scale + zero_point, clamped, rounded
// half to even by np.round): ties go to even, values past a narrowed storage range are clamped.
TEST(QuantOps, TiesToEvenAndClamping) {
  const std::string q = "tensor<5x!quant.uniform<i8<-127:127>:f32, 0.5>>";
  std::unique_ptr<ir::Module> m = parse("func.func @main(%arg0: tensor<5xf32>) -> tensor<5xi8> {\n"
                                        "  %0 = stablehlo.uniform_quantize %arg0 : (tensor<5xf32>) -> " + q + "\n"
                                        "  %1 = stablehlo.bitcast_convert %0 : (" + q + ") -> tensor<5xi8>\n"
                                        "  return %1 : tensor<5xi8>\n}\n", "t.mlir");
  auto run = [&](std::vector<double> x) {
    Literal r = interp::evaluate(*m, "main", {Literal::from_doubles(ir::f32({5}), x)})[0];
    std::vector<int64_t> out;
    for (int64_t i = 0; i < 5; ++i) out.push_back(r.get_int(i));
    return out;
  };
  EXPECT_EQ(run({0.25, 0.75, -0.25, -0.75, 1.25}), (std::vector<int64_t>{0, 2, 0, -2, 2}));
  EXPECT_EQ(run({100.0, -100.0, 3.0, 63.5, -63.75}), (std::vector<int64_t>{127, -127, 6, 127, -127}));
}

TEST(QuantOps, ConstraintMessages) {
  auto op = [](const std::string& line, const std::string& param) {
    return parse_error("func.func @main(%arg0: " + param + ") {\n  " + line + "\n  return\n}\n");
  };
  const std::string q2 = "tensor<2x!quant.uniform<i8:f32, 0.1>>";
  EXPECT_MESSAGE(op("%0 = stablehlo.uniform_quantize %arg0 : (tensor<3xf32>) -> " + q2, "tensor<3xf32>"),
                 "stablehlo.uniform_quantize: (C1) result shape " + q2 + " differs from operand shape tensor<3xf32>");
  EXPECT_MESSAGE(op("%0 = stablehlo.uniform_quantize %arg0 : (tensor<2xf16>) -> " + q2, "tensor<2xf16>"),
                 "stablehlo.uniform_quantize: (C2) the result's expressed type is f32, but the operand's element type is f16");
  EXPECT_MESSAGE(op("%0 = stablehlo.uniform_quantize %arg0 : (tensor<2x!quant.uniform<i8:bf16, 0.1>>) -> " + q2,
                    "tensor<2x!quant.uniform<i8:bf16, 0.1>>"),
                 "(C2) the result's expressed type is f32, but the operand's expressed type is bf16");
  EXPECT_MESSAGE(op("%0 = stablehlo.uniform_quantize %arg0 : (tensor<2xi32>) -> " + q2, "tensor<2xi32>"),
                 "stablehlo.uniform_quantize: operand has type tensor<2xi32>, must be a float or quantized tensor");
  EXPECT_MESSAGE(op("%0 = stablehlo.uniform_quantize %arg0 : (tensor<2xf32>) -> tensor<2xi8>", "tensor<2xf32>"),
                 "stablehlo.uniform_quantize: result has type tensor<2xi8>, must be a quantized tensor");
  EXPECT_MESSAGE(op("%0 = stablehlo.uniform_dequantize %arg0 : (" + q2 + ") -> tensor<3xf32>", q2),
                 "stablehlo.uniform_dequantize: (C1) result shape tensor<3xf32> differs from operand shape " + q2);
  EXPECT_MESSAGE(op("%0 = stablehlo.uniform_dequantize %arg0 : (" + q2 + ") -> tensor<2xf16>", q2),
                 "stablehlo.uniform_dequantize: (C2) result has type tensor<2xf16>, but the operand's expressed type is f32");
  EXPECT_MESSAGE(op("%0 = stablehlo.uniform_dequantize %arg0 : (tensor<2xf32>) -> tensor<2xf32>", "tensor<2xf32>"),
                 "stablehlo.uniform_dequantize: operand has type tensor<2xf32>, must be a quantized tensor");
}

// ---- Quantized operands of other ops: dequantize -> op -> quantize ----

const std::string kA = "tensor<4x!quant.uniform<i8:f32, 0.5:-3>>";
const std::string kB = "tensor<4x!quant.uniform<i8:f32, 0.25:2>>";
const std::string kC = "tensor<4x!quant.uniform<i8:f32, 0.5:1>>";
const std::string kL = "tensor<2x3x!quant.uniform<i8:f32, 0.5>>";
const std::string kR = "tensor<3x2x!quant.uniform<i8:f32, 0.25:1>>";
const std::string kAcc = "tensor<2x2x!quant.uniform<i32:f32, 0.125>>";
const std::string kOut = "tensor<2x2x!quant.uniform<i8:f32, 0.5>>";

// A quantized add and a quantized dot_general (accumulated in i32, requantized to i8), as JAX
// writes them; each result dequantized.
const std::string kQuantizedProgram =
    "func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>, %l: tensor<2x3xf32>, %r: tensor<3x2xf32>) -> (tensor<4xf32>, tensor<2x2xf32>) {\n"
    "  %0 = stablehlo.uniform_quantize %a : (tensor<4xf32>) -> " + kA + "\n"
    "  %1 = stablehlo.uniform_quantize %b : (tensor<4xf32>) -> " + kB + "\n"
    "  %2 = stablehlo.add %0, %1 : (" + kA + ", " + kB + ") -> " + kC + "\n"
    "  %3 = stablehlo.uniform_dequantize %2 : (" + kC + ") -> tensor<4xf32>\n"
    "  %4 = stablehlo.uniform_quantize %l : (tensor<2x3xf32>) -> " + kL + "\n"
    "  %5 = stablehlo.uniform_quantize %r : (tensor<3x2xf32>) -> " + kR + "\n"
    "  %6 = stablehlo.dot_general %4, %5, contracting_dims = [1] x [0] : (" + kL + ", " + kR + ") -> " + kAcc + "\n"
    "  %7 = stablehlo.uniform_quantize %6 : (" + kAcc + ") -> " + kOut + "\n"
    "  %8 = stablehlo.uniform_dequantize %7 : (" + kOut + ") -> tensor<2x2xf32>\n"
    "  return %3, %8 : tensor<4xf32>, tensor<2x2xf32>\n}\n";

std::vector<Literal> program_inputs() {
  return {Literal::from_doubles(ir::f32({4}), std::vector<double>{0.5, -1.0, 2.0, 1.25}),
          Literal::from_doubles(ir::f32({4}), std::vector<double>{0.25, 0.75, -4.0, 1.0}),
          Literal::from_doubles(ir::f32({2, 3}), std::vector<double>{1.0, -0.5, 2.0, 0.0, 1.5, -1.0}),
          Literal::from_doubles(ir::f32({3, 2}), std::vector<double>{0.25, -0.5, 1.0, 0.0, -0.75, 0.5})};
}

TEST(QuantLowering, AddAndDotGeneralValues) {
  std::unique_ptr<ir::Module> m = parse(kQuantizedProgram, "t.mlir");
  EXPECT_TRUE(transforms::has_quantized_ops(*m));
  EXPECT_TRUE(transforms::lower_quantized(*m));
  EXPECT_FALSE(transforms::has_quantized_ops(*m));
  EXPECT_FALSE(transforms::lower_quantized(*m));  // nothing left to lower
  ir::verify(*m);
  std::string printed = print(*m);
  EXPECT_EQ(print(*parse(printed, "printed.mlir")), printed);
  std::vector<Literal> r = interp::evaluate(*m, "main", program_inputs());
  ASSERT_EQ(r.size(), 2u);
  // By hand from the spec's formulas (and NumPy in float32): a -> [-2, -5, 1, 0] (-0.5 ties to 0),
  // b -> [3, 5, -14, 6]; their dequantized sum [0.75, -0.25, -2, 2.5] quantizes with 0.5:1 to
  // [2, 0, -3, 6] (2.5 and 0.5 tie to even), which is [0.5, -0.5, -2, 2.5].
  EXPECT_EQ(r[0], Literal::from_doubles(ir::f32({4}), std::vector<double>{0.5, -0.5, -2.0, 2.5}));
  // l -> [[2, -1, 4], [0, 3, -2]], r -> [[2, -1], [5, 1], [-2, 3]]; the float product
  // [[-1.75, 0.5], [2.25, -0.5]] is [[-14, 4], [18, -4]] in i32 at 0.125, requantized at 0.5 to
  // [[-4, 1], [4, -1]] (-3.5 and 4.5 tie to even).
  EXPECT_EQ(r[1], Literal::from_doubles(ir::f32({2, 2}), std::vector<double>{-2.0, 0.5, 2.0, -0.5}));
}

// Ops with regions on quantized values: the reducer sees quantized scalars (each step requantized),
// and data movement and compare run on the dequantized values. a = [0.5, -1, 2, 1.25] quantizes
// with 0.5:-3 to [-2, -5, 1, 0], i.e. [0.5, -1, 2, 1.5] (1.25 / 0.5 - 3 = -0.5 ties to 0).
TEST(QuantLowering, OpsWithRegionsAndDataMovement) {
  const std::string q = "tensor<4x!quant.uniform<i8:f32, 0.5:-3>>", s = "tensor<!quant.uniform<i8:f32, 0.5:-3>>",
                    q3 = "tensor<3x!quant.uniform<i8:f32, 0.5:-3>>", q22 = "tensor<2x2x!quant.uniform<i8:f32, 0.5:-3>>";
  const std::string text =
      "func.func @main(%a: tensor<4xf32>, %init: tensor<f32>) -> (tensor<f32>, tensor<3xf32>, tensor<4xf32>, tensor<2x2xf32>, tensor<4xi1>) {\n"
      "  %0 = stablehlo.uniform_quantize %a : (tensor<4xf32>) -> " + q + "\n"
      "  %1 = stablehlo.uniform_quantize %init : (tensor<f32>) -> " + s + "\n"
      "  %2 = stablehlo.reduce(%0 init: %1) applies stablehlo.add across dimensions = [0] : (" + q + ", " + s + ") -> " + s + "\n"
      "  %3 = stablehlo.uniform_dequantize %2 : (" + s + ") -> tensor<f32>\n"
      "  %4 = \"stablehlo.reduce_window\"(%0, %1) <{window_dimensions = array<i64: 2>}> ({\n"
      "  ^bb0(%x: " + s + ", %y: " + s + "):\n"
      "    %m = stablehlo.maximum %x, %y : " + s + "\n"
      "    stablehlo.return %m : " + s + "\n"
      "  }) : (" + q + ", " + s + ") -> " + q3 + "\n"
      "  %5 = stablehlo.uniform_dequantize %4 : (" + q3 + ") -> tensor<3xf32>\n"
      "  %6 = \"stablehlo.sort\"(%0) <{dimension = 0 : i64}> ({\n"
      "  ^bb0(%x: " + s + ", %y: " + s + "):\n"
      "    %c = stablehlo.compare LT, %x, %y : (" + s + ", " + s + ") -> tensor<i1>\n"
      "    stablehlo.return %c : tensor<i1>\n"
      "  }) : (" + q + ") -> " + q + "\n"
      "  %7 = stablehlo.uniform_dequantize %6 : (" + q + ") -> tensor<4xf32>\n"
      "  %8 = stablehlo.reshape %0 : (" + q + ") -> " + q22 + "\n"
      "  %9 = stablehlo.transpose %8, dims = [1, 0] : (" + q22 + ") -> " + q22 + "\n"
      "  %10 = stablehlo.uniform_dequantize %9 : (" + q22 + ") -> tensor<2x2xf32>\n"
      "  %11 = stablehlo.compare GT, %0, %6 : (" + q + ", " + q + ") -> tensor<4xi1>\n"
      "  return %3, %5, %7, %10, %11 : tensor<f32>, tensor<3xf32>, tensor<4xf32>, tensor<2x2xf32>, tensor<4xi1>\n}\n";
  std::unique_ptr<ir::Module> m;
  try {
    m = parse(text, "t.mlir");
  } catch (const support::UserError& e) {
    FAIL() << e.what();
  }
  transforms::lower_quantized(*m);
  EXPECT_FALSE(transforms::has_quantized_ops(*m));
  std::string printed = print(*m);
  EXPECT_EQ(print(*parse(printed, "printed.mlir")), printed);
  std::vector<Literal> r = interp::evaluate(*m, "main", {Literal::from_doubles(ir::f32({4}), std::vector<double>{0.5, -1.0, 2.0, 1.25}),
                                                         Literal::from_doubles(ir::f32({}), std::vector<double>{-1.0})});
  ASSERT_EQ(r.size(), 5u);
  // Sum from -1: -0.5, -1.5, 0.5, 2.0 (each representable, so no step rounds).
  EXPECT_EQ(r[0], Literal::from_doubles(ir::f32({}), std::vector<double>{2.0}));
  EXPECT_EQ(r[1], Literal::from_doubles(ir::f32({3}), std::vector<double>{0.5, 2.0, 2.0}));
  EXPECT_EQ(r[2], Literal::from_doubles(ir::f32({4}), std::vector<double>{-1.0, 0.5, 1.5, 2.0}));
  EXPECT_EQ(r[3], Literal::from_doubles(ir::f32({2, 2}), std::vector<double>{0.5, 2.0, -1.0, 1.5}));
  EXPECT_EQ(r[4], Literal::from_ints(ir::i1({4}), std::vector<int64_t>{1, 0, 1, 0}));  // [0.5, -1, 2, 1.5] > sorted
}

TEST(QuantLowering, UnloweredOpsAreRefusedByName) {
  std::unique_ptr<ir::Module> m = parse(kQuantizedProgram, "t.mlir");
  EXPECT_MESSAGE(error_of([&] { interp::evaluate(*m, "main", program_inputs()); }),
                 "stablehlo.add (line 4) has quantized operands or results, which the interpreter does not "
                 "take: lower quantized ops first (transforms::lower_quantized");
  const ir::Function& f = *m->find_function("main");
  const ir::Op& add = *f.body().ops()[2];
  ASSERT_EQ(add.kind(), ir::OpKind::Add);
  EXPECT_MESSAGE(error_of([&] { spmd::factor_rule(add); }),
                 "stablehlo.add (line 4) has quantized operands or results, which the partitioner");
  autodiff::VmapOptions batched;
  batched.batch_size = 2;
  EXPECT_MESSAGE(error_of([&] { autodiff::vmap(*m, f, batched); }), "stablehlo.add (line 4) has quantized operands");
}

TEST(QuantOps, NoDerivativeAndVmap) {
  std::unique_ptr<ir::Module> m = parse("func.func @f(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n"
                                        "  %0 = stablehlo.uniform_quantize %arg0 : (tensor<2xf32>) -> " + kPerAxis + "\n"
                                        "  %1 = stablehlo.uniform_dequantize %0 : (" + kPerAxis + ") -> tensor<2xf32>\n"
                                        "  return %1 : tensor<2xf32>\n}\n", "t.mlir");
  const ir::Function& f = *m->find_function("f");
  EXPECT_MESSAGE(error_of([&] { autodiff::reverse(*m, f); }), "cannot differentiate stablehlo.uniform_dequantize: quantization");
  EXPECT_MESSAGE(error_of([&] { autodiff::forward(*m, f); }), "cannot differentiate stablehlo.uniform_quantize: quantization");
  // vmap: the quantization dimension moves behind the batch dimension, each example quantized
  // with the same per-axis parameters.
  autodiff::VmapOptions batched;
  batched.batch_size = 3;
  const ir::Function& b = autodiff::vmap(*m, f, batched);
  std::vector<Literal> r = interp::evaluate(
      b, {Literal::from_doubles(ir::f32({3, 2}), std::vector<double>{4.0, 15.0, 0.0, 0.0, -1.0, 1.0})}, {});
  // [4, 15] -> [10, 10] -> [4, 15]; [0, 0] -> [-30, -20] -> [0, 0]; [-1, 1] -> [-40, -18] -> [-1, 1].
  EXPECT_EQ(r[0], Literal::from_doubles(ir::f32({3, 2}), std::vector<double>{4.0, 15.0, 0.0, 0.0, -1.0, 1.0}));
  std::string printed = print(*m);
  EXPECT_NE(printed.find("tensor<3x2x!quant.uniform<i8:f32:1, {0.1:-30, 0.5:-20}>>"), std::string::npos) << printed;
}

TEST(QuantOps, FactorRuleKeepsTheQuantizationDimensionWhole) {
  const std::string q = "tensor<4x2x!quant.uniform<i8:f32:1, {0.1, 0.2}>>";
  std::unique_ptr<ir::Module> m = parse("func.func @f(%arg0: tensor<4x2xf32>) -> tensor<4x2xf32> {\n"
                                        "  %0 = stablehlo.uniform_quantize %arg0 : (tensor<4x2xf32>) -> " + q + "\n"
                                        "  %1 = stablehlo.uniform_dequantize %0 : (" + q + ") -> tensor<4x2xf32>\n"
                                        "  return %1 : tensor<4x2xf32>\n}\n", "t.mlir");
  const ir::Function& f = *m->find_function("f");
  for (size_t i = 0; i < 2; ++i) {
    spmd::FactorRule r = spmd::factor_rule(*f.body().ops()[i]);
    ASSERT_EQ(r.num_factors(), 1u);  // dimension 0 only
    EXPECT_EQ(r.sizes[0], 4);
    EXPECT_EQ(r.operands[0][0], std::vector<int>{0});
    EXPECT_TRUE(r.operands[0][1].empty());
    EXPECT_TRUE(r.results[0][1].empty());
  }
}

// Known values of the scalar conversions (the spec's formulas; NumPy float32 agrees).
TEST(QuantScalars, QuantizeAndDequantize) {
  ir::Quantization q{ir::ElementType::i8, ir::ElementType::f32, -128, 127, std::nullopt, {0.1}, {-3}};
  EXPECT_EQ(ir::quantize_value(q, 0.5, 0), 2);
  EXPECT_EQ(ir::quantize_value(q, 1e9, 0), 127);
  EXPECT_EQ(ir::quantize_value(q, -1e9, 0), -128);
  EXPECT_EQ(ir::dequantize_value(q, 2, 0), static_cast<double>(5.0f * 0.1f));
  ir::Quantization u{ir::ElementType::ui8, ir::ElementType::f32, 0, 255, std::nullopt, {34.0}, {16}};
  EXPECT_EQ(ir::quantize_value(u, 17.0, 0), 16);  // 17 / 34 + 16 = 16.5 ties to 16
  EXPECT_EQ(ir::quantize_value(u, 51.0, 0), 18);  // 1.5 + 16 = 17.5 ties to 18
  EXPECT_EQ(ir::quantize_value(u, -1000.0, 0), 0);
  // i64 storage: q - zero_point past int64 is taken in double (no overflow), then rounded to f32.
  ir::Quantization w{ir::ElementType::i64, ir::ElementType::f32, INT64_MIN, INT64_MAX, std::nullopt, {1.0}, {1}};
  EXPECT_EQ(ir::dequantize_value(w, INT64_MIN, 0), static_cast<double>(static_cast<float>(-9223372036854775809.0)));
  EXPECT_EQ(ir::integer_min(ir::ElementType::i4), -8);
  EXPECT_EQ(ir::integer_max(ir::ElementType::ui16), 65535);
}

}  // namespace
}  // namespace tessera::stablehlo
