// stablehlo.async_start and stablehlo.async_done (#17): the spec's example read, printed and read
// back (the body reading async_start's operand directly, and through body arguments), each
// constraint on its message (C1-C4 of async_start, C1 of async_done), the values of a slice and a
// collective run through a future, and the refusal of a gradient through one.
#include <gtest/gtest.h>

#include "autodiff/reverse.h"
#include "common/error_of.h"
#include "interp/interpreter.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

using ir::Literal;
using testing::error_of;

// The spec's example, with its all_gather over one replica (so that one process runs it) and a
// slice through the body's own arguments.
const std::string kProgram = R"(func.func @main(%arg0: tensor<8x2xf32>) -> (tensor<8x2xf32>, tensor<2x2xf32>) {
  %0 = "stablehlo.async_start"(%arg0) ({
    %1 = "stablehlo.all_gather"(%arg0) {
      all_gather_dim = 1 : i64,
      replica_groups = dense<[[0]]> : tensor<1x1xi64>
    } : (tensor<8x2xf32>) -> tensor<8x2xf32>
    "stablehlo.return"(%1) : (tensor<8x2xf32>) -> ()
  }) : (tensor<8x2xf32>) -> !stablehlo.future<tensor<8x2xf32>>
  %2 = "stablehlo.async_done"(%0) : (!stablehlo.future<tensor<8x2xf32>>) -> tensor<8x2xf32>
  %3 = "stablehlo.async_start"(%2) ({
  ^bb0(%a: tensor<8x2xf32>):
    %4 = "stablehlo.slice"(%a) {start_indices = array<i64: 2, 0>, limit_indices = array<i64: 4, 2>, strides = array<i64: 1, 1>} : (tensor<8x2xf32>) -> tensor<2x2xf32>
    "stablehlo.return"(%4) : (tensor<2x2xf32>) -> ()
  }) : (tensor<8x2xf32>) -> !stablehlo.future<tensor<2x2xf32>>
  %5 = "stablehlo.async_done"(%3) : (!stablehlo.future<tensor<2x2xf32>>) -> tensor<2x2xf32>
  return %2, %5 : tensor<8x2xf32>, tensor<2x2xf32>
}
)";

Literal arange(ir::Type t) {
  Literal l(t);
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_double(i, static_cast<double>(i));
  return l;
}

TEST(Async, SpecExampleReadsPrintsAndRuns) {
  auto m = parse(kProgram, "t.mlir");
  std::string once = print(*m);
  EXPECT_EQ(print(*parse(once, "again.mlir")), once);
  EXPECT_NE(once.find("!stablehlo.future<tensor<2x2xf32>>"), std::string::npos) << once;
  Literal x = arange(ir::f32({8, 2}));
  std::vector<Literal> out = interp::evaluate(*m, "main", {x});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], x);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(out[1].get_double(i), static_cast<double>(4 + i));
}

std::string with_body(const std::string& body, const std::string& future = "tensor<8x2xf32>") {
  return "func.func @main(%arg0: tensor<8x2xf32>, %arg1: tensor<8x2xf32>) -> tensor<8x2xf32> {\n"
         "  %0 = \"stablehlo.async_start\"(%arg0) ({\n" + body +
         "  }) : (tensor<8x2xf32>) -> !stablehlo.future<" + future + ">\n"
         "  %1 = \"stablehlo.async_done\"(%0) : (!stablehlo.future<" + future + ">) -> " + future + "\n"
         "  return %arg0 : tensor<8x2xf32>\n}\n";
}

TEST(Async, ConstraintMessages) {
  auto parse_error = [](const std::string& text) { return error_of([&] { parse(text, "t.mlir"); }); };
  const std::string gather =
      "    %1 = \"stablehlo.all_gather\"(%arg0) {all_gather_dim = 1 : i64, replica_groups = dense<[[0]]> : "
      "tensor<1x1xi64>} : (tensor<8x2xf32>) -> tensor<8x2xf32>\n";
  EXPECT_NE(parse_error(with_body(gather + gather.substr(0, 5) + "2" + gather.substr(6) +
                                  "    \"stablehlo.return\"(%1) : (tensor<8x2xf32>) -> ()\n"))
                .find("its body must hold a single operation and a return, not 3 operations (C1)"),
            std::string::npos);
  EXPECT_NE(parse_error(with_body("    %1 = stablehlo.add %arg0, %arg0 : tensor<8x2xf32>\n"
                                  "    \"stablehlo.return\"(%1) : (tensor<8x2xf32>) -> ()\n"))
                .find("its body's operation is stablehlo.add, not a collective or a slice (C2)"),
            std::string::npos);
  std::string other = gather;
  other.replace(other.find("(%arg0)"), 7, "(%arg1)");
  EXPECT_NE(parse_error(with_body(other + "    \"stablehlo.return\"(%1) : (tensor<8x2xf32>) -> ()\n"))
                .find("operand 0 of its body's stablehlo.all_gather is not async_start's operand 0 (C3)"),
            std::string::npos);
  EXPECT_NE(parse_error(with_body(gather + "    \"stablehlo.return\"(%1) : (tensor<8x2xf32>) -> ()\n",
                                  "tensor<8x4xf32>"))
                .find("returns !stablehlo.future<tensor<8x4xf32>> but its body's stablehlo.all_gather gives "
                      "(tensor<8x2xf32>) (C4)"),
            std::string::npos);
  EXPECT_NE(parse_error("func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n"
                        "  %0 = \"stablehlo.async_done\"(%arg0) : (tensor<2xf32>) -> tensor<2xf32>\n"
                        "  return %0 : tensor<2xf32>\n}\n")
                .find("operand must be one !stablehlo.future<...>"),
            std::string::npos);
}

TEST(Async, AGradientThroughAFutureIsRefusedByName) {
  auto m = parse("func.func @f(%arg0: tensor<4xf32>) -> tensor<f32> {\n"
                 "  %0 = \"stablehlo.async_start\"(%arg0) ({\n"
                 "    %1 = \"stablehlo.slice\"(%arg0) {start_indices = array<i64: 1>, limit_indices = array<i64: 3>, "
                 "strides = array<i64: 1>} : (tensor<4xf32>) -> tensor<2xf32>\n"
                 "    \"stablehlo.return\"(%1) : (tensor<2xf32>) -> ()\n"
                 "  }) : (tensor<4xf32>) -> !stablehlo.future<tensor<2xf32>>\n"
                 "  %2 = \"stablehlo.async_done\"(%0) : (!stablehlo.future<tensor<2xf32>>) -> tensor<2xf32>\n"
                 "  %3 = stablehlo.constant dense<0.0> : tensor<f32>\n"
                 "  %4 = stablehlo.reduce(%2 init: %3) applies stablehlo.add across dimensions = [0] : "
                 "(tensor<2xf32>, tensor<f32>) -> tensor<f32>\n"
                 "  return %4 : tensor<f32>\n}\n",
                 "t.mlir");
  std::string why = error_of([&] { autodiff::reverse(*m, *m->find_function("f")); });
  EXPECT_NE(why.find("stablehlo.async_done"), std::string::npos) << why;
  EXPECT_NE(why.find("asynchronously"), std::string::npos) << why;
}

}  // namespace
}  // namespace tessera::stablehlo
