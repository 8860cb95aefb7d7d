// The parser fuzzer's findings (fuzz/regressions/*.mlir), replayed in every test run with the
// fuzzer's own invariant: bad text is a ParseError, good text round-trips through print.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

namespace fs = std::filesystem;

TEST(FuzzRegressions, ParseErrorOrRoundTrip) {
  const char* src = std::getenv("TESSERA_SOURCE_DIR");
  fs::path dir = fs::path(src ? src : ".") / "fuzz" / "regressions";
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    ++files;
    std::unique_ptr<ir::Module> m;
    try {
      m = parse(text.str(), e.path().string());
    } catch (const support::UserError&) {
      continue;
    }
    std::string first = print(*m);
    EXPECT_EQ(print(*parse(first, "printed")), first) << e.path();
  }
  EXPECT_GE(files, 5);
}

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
