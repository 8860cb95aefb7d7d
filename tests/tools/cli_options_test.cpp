// The --mesh and --input values of `tessera partition`/`run` (tools/tessera/cli_options.h), parsed
// apart from files: what they accept, and each refusal's message naming the option and the text.
#include <gtest/gtest.h>

#include "common/error_of.h"
#include "stablehlo/parser.h"
#include "tools/tessera/cli_options.h"

namespace tessera::tools {
namespace {

using testing::error_of;

TEST(MeshSpec, AxesInOrder) {
  ir::Mesh m = parse_mesh_spec("data=4,model=2");
  EXPECT_EQ(m.name, "mesh");
  ASSERT_EQ(m.axes.size(), 2u);
  EXPECT_EQ(m.axes[0].name, "data");
  EXPECT_EQ(m.axes[0].size, 4);
  EXPECT_EQ(m.axes[1].name, "model");
  EXPECT_EQ(m.axes[1].size, 2);
  EXPECT_TRUE(parse_mesh_spec("").axes.empty());
}

TEST(MeshSpec, MalformedItemsAreNamed) {
  EXPECT_EQ(error_of([] { parse_mesh_spec("data"); }), "--mesh: 'data' is not name=size (e.g. --mesh data=4,model=2)");
  EXPECT_EQ(error_of([] { parse_mesh_spec("=4"); }), "--mesh: '=4' is not name=size (e.g. --mesh data=4,model=2)");
  EXPECT_EQ(error_of([] { parse_mesh_spec("data=4x"); }),
            "--mesh: size of axis \"data\" is not a positive whole number: '4x'");
  EXPECT_EQ(error_of([] { parse_mesh_spec("data=0"); }),
            "--mesh: size of axis \"data\" is not a positive whole number: '0'");
  EXPECT_EQ(error_of([] { parse_mesh_spec("data=99999999999999999999"); }),
            "--mesh: size of axis \"data\" is not a positive whole number: '99999999999999999999'");
}

TEST(MeshSpec, AppliedToAModule) {
  auto m = stablehlo::parse("sdy.mesh @m = <[\"data\"=4]>\n", "f.mlir");
  apply_mesh(*m, parse_mesh_spec("data=2,model=3"), "f.mlir");
  EXPECT_EQ(m->meshes[0].num_devices(), 6);
  EXPECT_EQ(error_of([&] { apply_mesh(*m, parse_mesh_spec("x=2"), "f.mlir"); }),
            "--mesh: the file's mesh @m has axis \"data\", which --mesh does not size");
  EXPECT_NE(error_of([&] { apply_mesh(*m, parse_mesh_spec("data=2,data=2,model=1"), "f.mlir"); }).find("declared twice"),
            std::string::npos);
  EXPECT_NE(error_of([&] { apply_mesh(*m, parse_mesh_spec("data=99999999999,model=1"), "f.mlir"); }).find("makes more than"),
            std::string::npos);
  auto plain = stablehlo::parse("", "g.mlir");
  apply_mesh(*plain, parse_mesh_spec("data=4"), "g.mlir");
  ASSERT_EQ(plain->meshes.size(), 1u);
  EXPECT_EQ(plain->meshes[0].name, "mesh");
}

TEST(InputSpec, ParameterAndPath) {
  InputSpec a = parse_input_spec("arg1=x.npy", "main", 2);
  EXPECT_EQ(a.parameter, 1u);
  EXPECT_EQ(a.path, "x.npy");
  EXPECT_EQ(parse_input_spec("%arg0=d/y=z.npy", "main", 1).path, "d/y=z.npy");  // the first '=' splits
  EXPECT_EQ(parse_input_spec("0=", "main", 1).path, "");
}

TEST(InputSpec, RefusalsAreNamed) {
  EXPECT_EQ(error_of([] { parse_input_spec("x.npy", "main", 1); }), "--input: 'x.npy' is not argN=file.npy");
  EXPECT_EQ(error_of([] { parse_input_spec("arg-1=x.npy", "main", 1); }),
            "--input: 'arg-1' names no parameter (use argN or N, N from 0)");
  EXPECT_EQ(error_of([] { parse_input_spec("argx=x.npy", "main", 1); }),
            "--input: 'argx' names no parameter (use argN or N, N from 0)");
  EXPECT_EQ(error_of([] { parse_input_spec("arg3=x.npy", "main", 1); }), "--input: @main has 1 parameter, no parameter 3");
  EXPECT_EQ(error_of([] { parse_input_spec("2=x.npy", "f", 2); }), "--input: @f has 2 parameters, no parameter 2");
}

}  // namespace
}  // namespace tessera::tools
