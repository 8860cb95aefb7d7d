// The parser fuzzer's findings (fuzz/regressions/parser/*.mlir), each with the answer it now gets.
// tests/fuzz replays every file of every fuzz target with the fuzzer's own invariant.
#include <gtest/gtest.h>

#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

TEST(FuzzRegressions, EachFindingHasItsAnswer) {
  auto error_of = [](const std::string& text) {
    try {
      parse(text, "t.mlir");
    } catch (const ParseError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_EQ(error_of("module attributes {foo = 1e999} {\n}\n"),
            "t.mlir:1:26: '1e999' is out of range for f64");
  EXPECT_EQ(error_of("func.func @f() -> tensor<f64> {\n"
                     "  %0 = stablehlo.constant dense<0x10000000000000000> : tensor<f64>\n"
                     "  return %0 : tensor<f64>\n}\n"),
            "t.mlir:2:33: 0x10000000000000000 does not fit in 64 bits");
  EXPECT_EQ(error_of("func.func @f() -> tensor<f32> {\n"
                     "  %0 = stablehlo.constant dense<0x100000001> : tensor<f32>\n"
                     "  return %0 : tensor<f32>\n}\n"),
            "t.mlir:2:33: 0x100000001 does not fit in 32 bits");
  EXPECT_EQ(error_of("func.func @f() -> tensor<2xf16> {\n"
                     "  %0 = stablehlo.constant dense<[0x7C00, 0x]> : tensor<2xf16>\n"
                     "  return %0 : tensor<2xf16>\n}\n"),
            "t.mlir:2:42: '0x' is not a hex number");
  EXPECT_EQ(error_of("func.func @f() -> tensor<2xui8> {\n"
                     "  %0 = stablehlo.constant dense<\"0xgg1g\"> : tensor<2xui8>\n"
                     "  return %0 : tensor<2xui8>\n}\n"),
            "t.mlir:2:33: hex dense literal \"0xgg1g\" has a character that is not a hex digit");
  // A tab separates the words of an unknown attribute value, as a space does.
  std::unique_ptr<ir::Module> t = parse("func.func @p(%a: tensor<f32> {y = #x.a\tb}) -> tensor<f32> {\n"
                                        "  return %a : tensor<f32>\n}\n", "t.mlir");
  EXPECT_NE(print(*t).find("#x.a b"), std::string::npos) << print(*t);
  // Escapes decode to the name itself, and print back escaped.
  std::unique_ptr<ir::Module> m = parse("sdy.mesh @m = <[\"a\\\"b\"=2, \"\\C3\\A9\"=2]>\n", "t.mlir");
  EXPECT_EQ(m->meshes[0].axes[0].name, "a\"b");
  EXPECT_EQ(m->meshes[0].axes[1].name, "\xC3\xA9");
  EXPECT_NE(print(*m).find(R"(sdy.mesh @m = <["a\22b"=2, "\C3\A9"=2]>)"), std::string::npos)
      << print(*m);
  // Checks have no result; they print with their operands' type.
  m = parse("func.func @main(%a: tensor<f32>) {\n  \"check.expect_eq\"(%a, %a) : (tensor<f32>, "
            "tensor<f32>) -> ()\n  return\n}\n", "t.mlir");
  EXPECT_NE(print(*m).find("check.expect_eq %arg0, %arg0 : tensor<f32>"), std::string::npos)
      << print(*m);
}

}  // namespace
}  // namespace tessera::stablehlo
