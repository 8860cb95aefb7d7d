// Printer: Shardy shardings and meshes, types, and attribute values in generic dictionaries.
#include <gtest/gtest.h>

#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

using namespace ir;

DimSharding open(DimSharding d) {
  d.open = true;
  return d;
}

DimSharding with_priority(DimSharding d, int64_t p) {
  d.priority = p;
  return d;
}

TEST(PrintSharding, ClosedDimensions) {
  EXPECT_EQ(print(Sharding{"m", {{"data"}, {}}, {}, {}}), "#sdy.sharding<@m, [{\"data\"}, {}]>");
  EXPECT_EQ(print(Sharding{"mesh", {{"x", "y"}, {"z"}}, {}, {}}),
            "#sdy.sharding<@mesh, [{\"x\", \"y\"}, {\"z\"}]>");
  EXPECT_EQ(print(Sharding{"m", {}, {}, {}}), "#sdy.sharding<@m, []>");
}

TEST(PrintSharding, OpenDimensionsAndPriorities) {
  Sharding s{
      "m", {open({"a"}), open({}), with_priority({"c"}, 2), with_priority(open({"b"}), 0)}, {}, {}};
  EXPECT_EQ(print(s), "#sdy.sharding<@m, [{\"a\", ?}, {?}, {\"c\"}p2, {\"b\", ?}p0]>");
}

TEST(PrintSharding, SubAxes) {
  Sharding s{"m", {{AxisRef("x", SubAxis{1, 2}), "y"}, {AxisRef("x", SubAxis{2, 4})}}, {}, {}};
  EXPECT_EQ(print(s), "#sdy.sharding<@m, [{\"x\":(1)2, \"y\"}, {\"x\":(2)4}]>");
}

TEST(PrintSharding, ReplicatedAndUnreducedAxes) {
  EXPECT_EQ(print(Sharding{"m", {{}, {}}, {"y"}, {}}),
            "#sdy.sharding<@m, [{}, {}], replicated={\"y\"}>");
  EXPECT_EQ(print(Sharding{"m", {{"x"}}, {}, {"z"}}),
            "#sdy.sharding<@m, [{\"x\"}], unreduced={\"z\"}>");
  EXPECT_EQ(print(Sharding{"m", {{"x"}}, {"y", AxisRef("w", SubAxis{1, 2})}, {"z"}}),
            "#sdy.sharding<@m, [{\"x\"}], replicated={\"y\", \"w\":(1)2}, unreduced={\"z\"}>");
}

TEST(PrintSharding, NamesThatAreNotIdentifiersAreQuoted) {
  EXPECT_EQ(print(Sharding{"my mesh", {{"a\"b"}}, {}, {}}),
            "#sdy.sharding<@\"my mesh\", [{\"a\\22b\"}]>");
}

TEST(PrintMesh, AxesAndDeviceIds) {
  EXPECT_EQ(print(Mesh{"m", {{"data", 4}, {"model", 2}}, {}}),
            "sdy.mesh @m = <[\"data\"=4, \"model\"=2]>");
  EXPECT_EQ(print(Mesh{"m", {{"x", 2}, {"y", 2}}, {3, 2, 1, 0}}),
            "sdy.mesh @m = <[\"x\"=2, \"y\"=2], device_ids=[3, 2, 1, 0]>");
  EXPECT_EQ(print(Mesh{"empty", {}, {}}), "sdy.mesh @empty = <[]>");
  EXPECT_EQ(print(Mesh{"maximal", {}, {0}}), "sdy.mesh @maximal = <[], device_ids=[0]>");
}

TEST(PrintType, Tensors) {
  EXPECT_EQ(print(f32({8, 4})), "tensor<8x4xf32>");
  EXPECT_EQ(print(f32()), "tensor<f32>");
  EXPECT_EQ(print(Type(ElementType::c128, {2})), "tensor<2xcomplex<f64>>");
  EXPECT_EQ(print(Type(ElementType::ui8, {0, 3})), "tensor<0x3xui8>");
  EXPECT_EQ(print(Type(ElementType::f8E4M3FN, {2})), "tensor<2xf8E4M3FN>");
}

TEST(PrintAttribute, Scalars) {
  EXPECT_EQ(print_attribute(int64_t{3}), "3 : i64");
  EXPECT_EQ(print_attribute(int64_t{4}, "mhlo.num_partitions"), "4 : i32");
  EXPECT_EQ(print_attribute(true), "true");
  EXPECT_EQ(print_attribute(false), "false");
  EXPECT_EQ(print_attribute(0.5), "5.000000e-01 : f64");
  EXPECT_EQ(print_attribute(std::string("a\"b\\c\n")), "\"a\\22b\\\\c\\0A\"");
  EXPECT_EQ(print_attribute(Opaque{"{a = 1 : i32}"}), "{a = 1 : i32}");
}

TEST(PrintAttribute, Arrays) {
  EXPECT_EQ(print_attribute(std::vector<int64_t>{1, 0}), "array<i64: 1, 0>");
  EXPECT_EQ(print_attribute(std::vector<int64_t>{}), "array<i64>");
  EXPECT_EQ(print_attribute(IntMatrix::from_rows({{0, 1}, {2, 3}})),
            "dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>");
  EXPECT_EQ(print_attribute(IntMatrix::from_rows({{0}})), "dense<0> : tensor<1x1xi64>");
  EXPECT_EQ(print_attribute(IntMatrix{}), "dense<> : tensor<0x0xi64>");
}

TEST(PrintAttribute, StableHloEnumsAndStructs) {
  EXPECT_EQ(print_attribute(ComparisonDirection::GE), "#stablehlo<comparison_direction GE>");
  EXPECT_EQ(print_attribute(CompareType::TOTALORDER), "#stablehlo<comparison_type TOTALORDER>");
  EXPECT_EQ(print_attribute(ChannelHandle{2, 1}),
            "#stablehlo.channel_handle<handle = 2, type = 1>");
  EXPECT_EQ(print_attribute(DotDims{{0}, {0}, {2}, {1}}),
            "#stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], "
            "lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>");
  EXPECT_EQ(print_attribute(DotDims{{}, {}, {1}, {0}}),
            "#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>");
  GatherDims g;
  g.offset_dims = {0};
  g.start_index_map = {0};
  EXPECT_EQ(print_attribute(g), "#stablehlo.gather<offset_dims = [0], start_index_map = [0]>");
  ScatterDims s;
  s.update_window_dims = {1};
  s.input_batching_dims = {0};
  s.scatter_indices_batching_dims = {0};
  s.scatter_dims_to_operand_dims = {1};
  s.index_vector_dim = 2;
  EXPECT_EQ(print_attribute(s),
            "#stablehlo.scatter<update_window_dims = [1], input_batching_dims = [0], "
            "scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], "
            "index_vector_dim = 2>");
}

TEST(PrintAttribute, ShardyValues) {
  EXPECT_EQ(print_attribute(Sharding{"m", {{"x"}}, {}, {}}), "#sdy.sharding<@m, [{\"x\"}]>");
  EXPECT_EQ(
      print_attribute(ShardingList{Sharding{"m", {{"x"}}, {}, {}}, Sharding{"m", {}, {}, {}}}),
      "#sdy.sharding_per_value<[<@m, [{\"x\"}]>, <@m, []>]>");
  EXPECT_EQ(print_attribute(AxisNames{"x", "y"}), "#sdy<manual_axes{\"x\", \"y\"}>");
}

}  // namespace
}  // namespace tessera::stablehlo
