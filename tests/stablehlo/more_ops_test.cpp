// The StableHLO and CHLO text of the ops added for what JAX exports (#17): the `reducer` form of a
// reduce with several inputs or a body of several ops (what JAX prints for argmax), the pretty
// forms of tan, cbrt, popcnt, count_leading_zeros, reduce_precision, complex, real and imag, and
// CHLO's `op %x : t -> t` form. Each text reads, prints back exactly as written (so print -> parse
// -> print is the identity), and its generic form reads to the same ops.
#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "common/parse_error.h"
#include "autodiff/reverse.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

using ir::Literal;
using ir::Type;

using testing::parse_error;

std::string error_of_call(const std::function<void()>& f) {
  try {
    f();
  } catch (const support::UserError& e) {
    return e.what();
  }
  return "<no error>";
}

// `text` (one function) as the printer writes it: in a module, public, indented.
std::string as_module(const std::string& text) {
  std::string out = "module {\n";
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    out += "  " + text.substr(start, end - start + 1);
    start = end + 1;
  }
  size_t at = out.find("func.func @");
  if (at != std::string::npos) out.replace(at, 11, "func.func public @");
  return out + "}\n";
}

void expect_prints_as_written(const std::string& text) {
  std::unique_ptr<ir::Module> m;
  try {
    m = parse(text, "t.mlir");
  } catch (const support::UserError& e) {
    FAIL() << e.what();
  }
  std::string printed = print(*m);
  EXPECT_EQ(printed, as_module(text));
  EXPECT_EQ(print(*parse(printed, "printed.mlir")), printed);
}

// jnp.argmax(x, axis=1) as JAX lowers it: a reduce of (values, iota) whose body keeps the larger
// value (NaN wins) and, on a tie, the smaller index.
const std::string kArgmax = R"(func.func @main(%arg0: tensor<3x4xf32>) -> tensor<3xi32> {
  %0 = stablehlo.iota dim = 1 : tensor<3x4xi32>
  %1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %2 = stablehlo.constant dense<0> : tensor<i32>
  %3:2 = stablehlo.reduce(%arg0 init: %1), (%0 init: %2) across dimensions = [1] : (tensor<3x4xf32>, tensor<3x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<3xf32>, tensor<3xi32>)
   reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
    %4 = stablehlo.compare  GT, %arg1, %arg3,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %5 = stablehlo.compare  NE, %arg1, %arg1,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %6 = stablehlo.or %4, %5 : tensor<i1>
    %7 = stablehlo.compare  EQ, %arg1, %arg3,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %8 = stablehlo.compare  LT, %arg2, %arg4,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %9 = stablehlo.and %7, %8 : tensor<i1>
    %10 = stablehlo.or %6, %9 : tensor<i1>
    %11 = stablehlo.select %6, %arg1, %arg3 : tensor<i1>, tensor<f32>
    %12 = stablehlo.select %10, %arg2, %arg4 : tensor<i1>, tensor<i32>
    stablehlo.return %11, %12 : tensor<f32>, tensor<i32>
  }
  return %3#1 : tensor<3xi32>
}
)";

TEST(ReducerForm, ArgmaxAsJaxPrintsItReadsRunsAndPrintsBack) {
  std::unique_ptr<ir::Module> m = parse(kArgmax, "argmax.mlir");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Literal x = Literal::from_doubles(ir::f32({3, 4}), std::vector<double>{1, 5, 2, 5, -1, -3, -2, -7, 0, nan, 9, 9});
  std::vector<Literal> r = interp::evaluate(*m, "main", {x});
  ASSERT_EQ(r.size(), 1u);
  // The first maximum on a tie; NaN counts as the largest, as numpy.argmax has it.
  EXPECT_EQ(r[0], Literal::from_ints(ir::i32({3}), std::vector<int64_t>{1, 0, 1}));
  std::string printed = print(*m);
  EXPECT_NE(printed.find("across dimensions = [1] : (tensor<3x4xf32>, tensor<3x4xi32>, tensor<f32>, "
                         "tensor<i32>) -> (tensor<3xf32>, tensor<3xi32>)\n"),
            std::string::npos) << printed;
  EXPECT_NE(printed.find(" reducer("), std::string::npos) << printed;
  EXPECT_EQ(print(*parse(printed, "printed.mlir")), printed);
}

// One input with a body of several ops (no `applies` form), and attributes before the types.
TEST(ReducerForm, OneInputWithABodyOfSeveralOps) {
  const std::string text = R"(func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2xf32> {
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %0 = stablehlo.reduce(%arg0 init: %cst) across dimensions = [1] {foo = 1 : i64} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
   reducer(%arg1: tensor<f32>, %arg2: tensor<f32>)  {
    %1 = stablehlo.multiply %arg2, %arg2 : tensor<f32>
    %2 = stablehlo.add %arg1, %1 : tensor<f32>
    stablehlo.return %2 : tensor<f32>
  }
  return %0 : tensor<2xf32>
}
)";
  expect_prints_as_written(text);
  Literal x = Literal::from_doubles(ir::f32({2, 3}), std::vector<double>{1, 2, 3, -1, 0, 4});
  EXPECT_EQ(interp::evaluate(*parse(text), "main", {x})[0],
            Literal::from_doubles(ir::f32({2}), std::vector<double>{14, 17}));
}

// argmax's index is an integer, so no cotangent reaches the two-input reduce: a loss that reads the
// index differentiates; one that reads its maximum is refused with the op's name.
std::string argmax_loss(const std::string& used) {
  return R"(func.func @f(%arg0: tensor<2x3xf32>) -> tensor<f32> {
  %0 = stablehlo.iota dim = 1 : tensor<2x3xi32>
  %1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %2 = stablehlo.constant dense<0> : tensor<i32>
  %3:2 = stablehlo.reduce(%arg0 init: %1), (%0 init: %2) across dimensions = [1] : (tensor<2x3xf32>, tensor<2x3xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)
   reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<i32>, %d: tensor<i32>)  {
    %4 = stablehlo.compare  GE, %a, %c,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %5 = stablehlo.select %4, %a, %c : tensor<i1>, tensor<f32>
    %6 = stablehlo.select %4, %b, %d : tensor<i1>, tensor<i32>
    stablehlo.return %5, %6 : tensor<f32>, tensor<i32>
  }
  %7 = stablehlo.convert %3#1 : (tensor<2xi32>) -> tensor<2xf32>
  %8 = stablehlo.add %7, )" + used + R"( : tensor<2xf32>
  %9 = stablehlo.broadcast_in_dim %8, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
  %10 = stablehlo.multiply %arg0, %9 : tensor<2x3xf32>
  %11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %12 = stablehlo.reduce(%10 init: %11) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>
  return %12 : tensor<f32>
}
)";
}

TEST(ReducerForm, ArgmaxIndexCarriesNoCotangent) {
  std::unique_ptr<ir::Module> m = parse(argmax_loss("%7"));
  autodiff::reverse(*m, *m->find_function("f"));
  Literal x = Literal::from_doubles(ir::f32({2, 3}), std::vector<double>{1, 5, 2, 7, 0, 3});
  // d/dx sum(x * 2 argmax) = 2 argmax of each row: rows 1 and 0.
  EXPECT_EQ(interp::evaluate(*m, "f_grad", {x})[0],
            Literal::from_doubles(ir::f32({2, 3}), std::vector<double>{2, 2, 2, 0, 0, 0}));
  std::unique_ptr<ir::Module> reads_max = parse(argmax_loss("%3#0"));
  EXPECT_EQ(error_of_call([&] { autodiff::reverse(*reads_max, *reads_max->find_function("f")); }),
            "cannot differentiate stablehlo.reduce: a reduce of 2 inputs at once (e.g. an argmax) is not "
            "differentiated yet");
}

TEST(ReducerForm, ErrorsNameWhatDoesNotMatch) {
  const std::string head = R"(func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %1 = stablehlo.reduce(%arg0 init: %0) across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
   reducer)";
  const std::string body = R"(  {
    stablehlo.return %arg2 : tensor<f32>
  }
  return %1 : tensor<2xf32>
}
)";
  EXPECT_NE(parse_error(head + "(%arg1: tensor<f32>, %arg2: tensor<f32>, %arg3: tensor<f32>)" + body)
                .find("a reducer argument pair has 3 arguments, not 2"),
            std::string::npos);
  EXPECT_NE(parse_error(head + "(%arg1: tensor<f32>, %arg2: tensor<f32>) (%arg3: tensor<f32>, %arg4: tensor<f32>)" + body)
                .find("the reducer declares 2 argument pairs for 1 inputs"),
            std::string::npos);
  EXPECT_NE(parse_error(R"(func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %1 = stablehlo.reduce(%arg0 init: %0) across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
  return %1 : tensor<2xf32>
}
)").find("expected 'reducer'"),
            std::string::npos);
}

// Every added op in its pretty form, as StableHLO and CHLO print them.
const std::string kMoreOps = R"(func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xi32>, %arg2: tensor<4xcomplex<f32>>) -> (tensor<4xf32>, tensor<4xi32>, tensor<4xcomplex<f32>>, tensor<4xi1>) {
  %0 = stablehlo.tan %arg0 : tensor<4xf32>
  %1 = stablehlo.cbrt %0 : tensor<4xf32>
  %2 = stablehlo.popcnt %arg1 : tensor<4xi32>
  %3 = stablehlo.count_leading_zeros %2 : tensor<4xi32>
  %4 = stablehlo.reduce_precision %1, format = e5m10 : tensor<4xf32>
  %5 = stablehlo.complex %4, %arg0 : tensor<4xcomplex<f32>>
  %6 = stablehlo.real %arg2 : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  %7 = stablehlo.imag %5 : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  %8 = chlo.erf %6 : tensor<4xf32> -> tensor<4xf32>
  %9 = chlo.erfc %8 : tensor<4xf32> -> tensor<4xf32>
  %10 = chlo.erf_inv %9 : tensor<4xf32> -> tensor<4xf32>
  %11 = chlo.lgamma %10 : tensor<4xf32> -> tensor<4xf32>
  %12 = chlo.digamma %11 : tensor<4xf32> -> tensor<4xf32>
  %13 = chlo.bessel_i1e %12 : tensor<4xf32> -> tensor<4xf32>
  %14 = chlo.sinh %13 : tensor<4xf32> -> tensor<4xf32>
  %15 = chlo.cosh %14 : tensor<4xf32> -> tensor<4xf32>
  %16 = chlo.asin %15 : tensor<4xf32> -> tensor<4xf32>
  %17 = chlo.acos %16 : tensor<4xf32> -> tensor<4xf32>
  %18 = chlo.atan %17 : tensor<4xf32> -> tensor<4xf32>
  %19 = chlo.asinh %18 : tensor<4xf32> -> tensor<4xf32>
  %20 = chlo.acosh %19 : tensor<4xf32> -> tensor<4xf32>
  %21 = chlo.atanh %20 : tensor<4xf32> -> tensor<4xf32>
  %22 = chlo.square %21 : tensor<4xf32> -> tensor<4xf32>
  %23 = chlo.conj %5 : tensor<4xcomplex<f32>> -> tensor<4xcomplex<f32>>
  %24 = chlo.is_inf %22 : tensor<4xf32> -> tensor<4xi1>
  %25 = chlo.is_pos_inf %7 : tensor<4xf32> -> tensor<4xi1>
  %26 = chlo.is_neg_inf %7 : tensor<4xf32> -> tensor<4xi1>
  %27 = stablehlo.or %24, %25 : tensor<4xi1>
  %28 = stablehlo.or %27, %26 : tensor<4xi1>
  %29 = chlo.next_after %22, %arg0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %29, %3, %23, %28 : tensor<4xf32>, tensor<4xi32>, tensor<4xcomplex<f32>>, tensor<4xi1>
}
)";

TEST(MoreOps, PrettyFormsPrintAsWritten) { expect_prints_as_written(kMoreOps); }

TEST(MoreOps, GenericFormsReadToThePrettyOnes) {
  std::unique_ptr<ir::Module> m = parse(R"(func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xi32>) -> (tensor<4xcomplex<f32>>, tensor<4xf32>) {
  %0 = "stablehlo.reduce_precision"(%arg0) <{exponent_bits = 5 : i32, mantissa_bits = 10 : i32}> : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "chlo.next_after"(%0, %arg0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = "stablehlo.complex"(%1, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xcomplex<f32>>
  %3 = "chlo.is_inf"(%1) : (tensor<4xf32>) -> tensor<4xi1>
  %4 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
  %5 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
  %6:2 = "stablehlo.reduce"(%1, %arg1, %4, %5) <{dimensions = array<i64: 0>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<i32>, %c: tensor<f32>, %d: tensor<i32>):
    %7 = "stablehlo.add"(%a, %c) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %8 = "stablehlo.maximum"(%b, %d) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    "stablehlo.return"(%7, %8) : (tensor<f32>, tensor<i32>) -> ()
  }) : (tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)
  %9 = "chlo.square"(%6#0) : (tensor<f32>) -> tensor<f32>
  %10 = stablehlo.broadcast_in_dim %9, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %11 = stablehlo.select %3, %10, %0 : tensor<4xi1>, tensor<4xf32>
  return %2, %11 : tensor<4xcomplex<f32>>, tensor<4xf32>
}
)");
  std::string printed = print(*m);
  for (const char* line :
       {"%0 = stablehlo.reduce_precision %arg0, format = e5m10 : tensor<4xf32>\n",
        "%1 = chlo.next_after %0, %arg0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>\n",
        "%2 = stablehlo.complex %1, %0 : tensor<4xcomplex<f32>>\n",
        "%3 = chlo.is_inf %1 : tensor<4xf32> -> tensor<4xi1>\n",
        "%4:2 = stablehlo.reduce(%1 init: %cst), (%arg1 init: %c) across dimensions = [0] : (tensor<4xf32>, "
        "tensor<4xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)\n",
        " reducer(%arg2: tensor<f32>, %arg4: tensor<f32>) (%arg3: tensor<i32>, %arg5: tensor<i32>)  {\n",
        "%5 = chlo.square %4#0 : tensor<f32> -> tensor<f32>\n"})
    EXPECT_NE(printed.find(line), std::string::npos) << line << "\n" << printed;
  EXPECT_EQ(print(*parse(printed, "printed.mlir")), printed);
}

// chlo.tan is StableHLO's tan (docs/CHLO.md); CHLO's functional `(t) -> t` reads too.
TEST(MoreOps, ChloTanReadsAsStablehloTan) {
  std::unique_ptr<ir::Module> m = parse(R"(func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = chlo.tan %arg0 : tensor<4xf32> -> tensor<4xf32>
  %1 = chlo.sinh %0 : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
)");
  EXPECT_EQ(print(*m), as_module(R"(func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.tan %arg0 : tensor<4xf32>
  %1 = chlo.sinh %0 : tensor<4xf32> -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
)"));
}

TEST(MoreOps, ParseErrorsNameTheProblem) {
  auto one = [](const std::string& op, const std::string& type = "tensor<4xf32>") {
    return "func.func @main(%arg0: tensor<4xf32>) -> " + type + " {\n  %0 = " + op + "\n  return %0 : " + type + "\n}\n";
  };
  EXPECT_NE(parse_error(one("stablehlo.reduce_precision %arg0, format = e5x10 : tensor<4xf32>"))
                .find("expected a format eXmY (exponent and mantissa bits), found 'e5x10'"),
            std::string::npos);
  EXPECT_NE(parse_error(one("stablehlo.reduce_precision %arg0, format = e0m10 : tensor<4xf32>"))
                .find("stablehlo.reduce_precision: (C2) exponent_bits = 0 must be at least 1"),
            std::string::npos);
  EXPECT_NE(parse_error(one("stablehlo.complex %arg0, %arg0 : tensor<4xf32>", "tensor<4xcomplex<f32>>"))
                .find("expected a complex result type"),
            std::string::npos);
  EXPECT_NE(parse_error(one("chlo.erf %arg0 : tensor<4xf32> -> tensor<4xf64>"))
                .find("result types (tensor<4xf64>) do not match the operands, which give (tensor<4xf32>)"),
            std::string::npos);
}

// stablehlo.dot (the spec's first example writes it; StableHLO deprecates it) reads, in the generic
// and the pretty form, as the dot_general contracting lhs's last dimension with rhs's first, for
// each pair of vectors and matrices, and prints as that dot_general. Values against sums written out.
TEST(MoreOps, DotReadsAsTheDotGeneralItIs) {
  auto m = parse(R"(func.func @main(%v: tensor<3xf32>, %m: tensor<2x3xf32>, %n: tensor<3x2xf32>) -> (tensor<f32>, tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>) {
  %0 = "stablehlo.dot"(%v, %v) : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  %1 = stablehlo.dot %m, %v : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
  %2 = stablehlo.dot %v, %n, precision = [DEFAULT, HIGHEST] : (tensor<3xf32>, tensor<3x2xf32>) -> tensor<2xf32>
  %3 = "stablehlo.dot"(%m, %n) {precision_config = [#stablehlo<precision HIGH>, #stablehlo<precision HIGH>]} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  return %0, %1, %2, %3 : tensor<f32>, tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>
}
)");
  EXPECT_EQ(print(*m), as_module(R"(func.func @main(%arg0: tensor<3xf32>, %arg1: tensor<2x3xf32>, %arg2: tensor<3x2xf32>) -> (tensor<f32>, tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>) {
  %0 = stablehlo.dot_general %arg0, %arg0, contracting_dims = [0] x [0] : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  %1 = stablehlo.dot_general %arg1, %arg0, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
  %2 = stablehlo.dot_general %arg0, %arg2, contracting_dims = [0] x [0], precision = [DEFAULT, HIGHEST] : (tensor<3xf32>, tensor<3x2xf32>) -> tensor<2xf32>
  %3 = stablehlo.dot_general %arg1, %arg2, contracting_dims = [1] x [0], precision = [HIGH, HIGH] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  return %0, %1, %2, %3 : tensor<f32>, tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>
}
)"));
  Literal v(ir::f32({3})), a(ir::f32({2, 3})), b(ir::f32({3, 2}));
  for (int64_t i = 0; i < 3; ++i) v.set_double(i, static_cast<double>(i + 1));               // 1 2 3
  for (int64_t i = 0; i < 6; ++i) a.set_double(i, static_cast<double>(i)), b.set_double(i, static_cast<double>(6 - i));
  std::vector<Literal> r = interp::evaluate(*m, "main", {v, a, b});
  EXPECT_EQ(r[0].get_double(0), 14.0);                                     // 1 + 4 + 9
  EXPECT_EQ(r[1].get_double(0), 8.0);                                      // [0 1 2]·v
  EXPECT_EQ(r[1].get_double(1), 26.0);                                     // [3 4 5]·v
  EXPECT_EQ(r[2].get_double(0), 6.0 + 8.0 + 6.0);                          // v·[6 4 2]
  EXPECT_EQ(r[3].get_double(3), 3.0 * 5.0 + 4.0 * 3.0 + 5.0 * 1.0);        // [3 4 5]·[5 3 1]

  auto one = [](const std::string& op, const std::string& in, const std::string& out) {
    return "func.func @main(%arg0: " + in + ") -> " + out + " {\n  %0 = " + op + "\n  return %0 : " + out + "\n}\n";
  };
  EXPECT_NE(parse_error(one("stablehlo.dot %arg0, %arg0 : (tensor<2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<2x2x2x2xf32>",
                            "tensor<2x2x2xf32>", "tensor<2x2x2x2xf32>"))
                .find("stablehlo.dot: lhs has rank 3, but dot takes vectors and matrices (rank 1 or 2)"),
            std::string::npos);
  EXPECT_NE(parse_error(one("stablehlo.dot %arg0, %arg0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>",
                            "tensor<2x3xf32>", "tensor<2x3xf32>"))
                .find(":2:3:"),
            std::string::npos);  // contracting 3 with 2: the dot_general's shape rule, at the op
}

}  // namespace
}  // namespace tessera::stablehlo
