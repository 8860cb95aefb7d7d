// MLIR's generic forms of the module and of func.func ("builtin.module"() ({...}) : () -> (),
// "func.func"() <{function_type = ..., sym_name = ...}> ({^bb0(...): ...}) : () -> ()) read into
// the same module as the pretty forms: both print the same text; the properties may also come as
// a trailing attribute dictionary; and a body that disagrees with function_type is refused by name.
// dot_general's precision config reads the same from either form (print -> parse -> print keeps it).
#include <gtest/gtest.h>

#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

constexpr const char* kPretty = R"(module @m attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%a: tensor<2xf32> {mhlo.sharding = ""}, %b: tensor<2xf32>) -> (tensor<2xf32> {jax.result_info = "r"}) {
    %0 = call @twice(%a) : (tensor<2xf32>) -> tensor<2xf32>
    %1 = stablehlo.add %0, %b : tensor<2xf32>
    return %1 : tensor<2xf32>
  }
  func.func private @twice(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.add %x, %x : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
)";

constexpr const char* kGeneric = R"("builtin.module"() <{sym_name = "m"}> ({
  "func.func"() <{arg_attrs = [{mhlo.sharding = ""}, {}], function_type = (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>, res_attrs = [{jax.result_info = "r"}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<2xf32>, %arg1: tensor<2xf32>):
    %0 = "func.call"(%arg0) <{callee = @twice}> : (tensor<2xf32>) -> tensor<2xf32>
    %1 = "stablehlo.add"(%0, %arg1) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%1) : (tensor<2xf32>) -> ()
  }) : () -> ()
  "func.func"() ({
  ^bb0(%x: tensor<2xf32>):
    %0 = "stablehlo.add"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%0) : (tensor<2xf32>) -> ()
  }) {function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = "twice", sym_visibility = "private"} : () -> ()
}) {mhlo.num_partitions = 1 : i32} : () -> ()
)";

std::string error_of(const std::string& text) {
  try {
    parse(text, "g.mlir");
  } catch (const ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(GenericModule, ReadsAsThePrettyFormDoes) {
  std::string pretty = print(*parse(kPretty, "p.mlir"));
  std::string generic = print(*parse(kGeneric, "g.mlir"));
  EXPECT_EQ(generic, pretty);
  EXPECT_NE(pretty.find("func.func private @twice"), std::string::npos) << pretty;
  EXPECT_NE(pretty.find("{jax.result_info = \"r\"}"), std::string::npos) << pretty;
}

TEST(GenericModule, ABodyThatDisagreesWithItsFunctionTypeIsRefused) {
  std::string g = kGeneric;
  g.replace(g.find("^bb0(%x: tensor<2xf32>)"), 23, "^bb0(%x: tensor<3xf32>)");
  EXPECT_NE(error_of(g).find("@twice's entry block argument 0 is tensor<3xf32>, but its function_type says "
                             "tensor<2xf32>"),
            std::string::npos)
      << error_of(g);
  std::string unnamed = kGeneric;
  unnamed.replace(unnamed.find(", sym_name = \"twice\""), 20, "");
  EXPECT_NE(error_of(unnamed).find("func.func has no sym_name"), std::string::npos) << error_of(unnamed);
  std::string other = kGeneric;
  other.replace(other.find("\"builtin.module\""), 16, "\"builtin.modul\"");
  EXPECT_NE(error_of(other).find("expected \"builtin.module\", found \"builtin.modul\""), std::string::npos)
      << error_of(other);
}

TEST(GenericModule, DotGeneralPrecisionReadsAlikeInBothForms) {
  constexpr const char* kGenericDot = R"(func.func @f(%a: tensor<3x4xf32>, %b: tensor<4x2xf32>) -> tensor<3x2xf32> {
  %0 = "stablehlo.dot_general"(%a, %b) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision HIGHEST>]} : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
)";
  std::string once = print(*parse(kGenericDot, "g.mlir"));
  EXPECT_NE(once.find("contracting_dims = [1] x [0], precision = [DEFAULT, HIGHEST] :"), std::string::npos) << once;
  EXPECT_EQ(print(*parse(once, "p.mlir")), once);
}

}  // namespace
}  // namespace tessera::stablehlo
