// Printer: the pretty forms of the region-free ops, one test per family, compared with the text
// stablehlo-opt prints for the same ops.
#include "print_test_util.h"

#include "stablehlo/parser.h"

namespace tessera::stablehlo {
namespace {

using namespace ir;
using testing::print_body;

TEST(PrinterOps, ElementwiseOpsPrintOneTypeWhenAllTypesAgree) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32({4}));
    Tensor y = f.param(f32({4}));
    Tensor n = -tanh(x + y);
    Tensor finite = is_finite(n);
    convert(n, ElementType::f64);
    convert(n, ElementType::f32);
    bitcast_convert(n, Type(ElementType::i32, {4}));
    Tensor c = clamp(x, n, y);
    return select(finite, c, x);
  });
  EXPECT_EQ(body,
            "%0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>\n"
            "%1 = stablehlo.tanh %0 : tensor<4xf32>\n"
            "%2 = stablehlo.negate %1 : tensor<4xf32>\n"
            "%3 = stablehlo.is_finite %2 : (tensor<4xf32>) -> tensor<4xi1>\n"
            "%4 = stablehlo.convert %2 : (tensor<4xf32>) -> tensor<4xf64>\n"
            "%5 = stablehlo.convert %2 : tensor<4xf32>\n"
            "%6 = stablehlo.bitcast_convert %2 : (tensor<4xf32>) -> tensor<4xi32>\n"
            "%7 = stablehlo.clamp %arg0, %2, %arg1 : tensor<4xf32>\n"
            "%8 = stablehlo.select %3, %7, %arg0 : tensor<4xi1>, tensor<4xf32>\n"
            "return %8 : tensor<4xf32>\n");
}

TEST(PrinterOps, MixedTypesPrintAFunctionalType) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor z = f.param(Type(ElementType::c64, {2}));
    Tensor lo = f.param(f32());
    Tensor x = f.param(f32({2}));
    Tensor p = f.param(i1());
    Tensor a = abs(z);
    Tensor c = clamp(lo, a, lo);
    return select(p, c, x);
  });
  EXPECT_EQ(body,
            "%0 = stablehlo.abs %arg0 : (tensor<2xcomplex<f32>>) -> tensor<2xf32>\n"
            "%1 = stablehlo.clamp %arg1, %0, %arg1 : (tensor<f32>, tensor<2xf32>, tensor<f32>) -> "
            "tensor<2xf32>\n"
            "%2 = stablehlo.select %arg3, %1, %arg2 : tensor<i1>, tensor<2xf32>\n"
            "return %2 : tensor<2xf32>\n");
}

TEST(PrinterOps, CompareSpacesItsEnumsAsStableHloDoes) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32({4}));
    Tensor i = f.param(i32({4}));
    Tensor u = f.param(Type(ElementType::ui8, {4}));
    compare(x, x, ComparisonDirection::GT);
    compare(i, i, ComparisonDirection::LE);
    compare(u, u, ComparisonDirection::EQ);
    // Without compare_type the type is left out.
    AttrMap attrs;
    attrs.set("comparison_direction", ComparisonDirection::NE);
    return f.emit1(OpKind::Compare, {x, x}, attrs);
  });
  EXPECT_EQ(
      body,
      "%0 = stablehlo.compare  GT, %arg0, %arg0,  FLOAT : (tensor<4xf32>, tensor<4xf32>) -> "
      "tensor<4xi1>\n"
      "%1 = stablehlo.compare  LE, %arg1, %arg1,  SIGNED : (tensor<4xi32>, tensor<4xi32>) -> "
      "tensor<4xi1>\n"
      "%2 = stablehlo.compare  EQ, %arg2, %arg2,  UNSIGNED : (tensor<4xui8>, tensor<4xui8>) -> "
      "tensor<4xi1>\n"
      "%3 = stablehlo.compare  NE, %arg0, %arg0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>\n"
      "return %3 : tensor<4xi1>\n");
}

TEST(PrinterOps, ConstantsAreNamedCstAndCWithSharedConflictNumbers) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32());
    Tensor a = f.scalar(ElementType::f32, 1.0);
    f.scalar(ElementType::i32, 3);
    f.scalar(ElementType::f32, 2.5);
    f.scalar(ElementType::i1, 1);
    f.scalar(ElementType::ui8, 255);
    Literal z(Type(ElementType::c64, {}));
    z.set_complex(0, {1.0, -2.0});
    f.constant(z);
    return x + a;
  });
  EXPECT_EQ(
      body,
      "%cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>\n"
      "%c = stablehlo.constant dense<3> : tensor<i32>\n"
      "%cst_0 = stablehlo.constant dense<2.500000e+00> : tensor<f32>\n"
      "%c_1 = stablehlo.constant dense<true> : tensor<i1>\n"
      "%c_2 = stablehlo.constant dense<255> : tensor<ui8>\n"
      "%cst_3 = stablehlo.constant dense<(1.000000e+00,-2.000000e+00)> : tensor<complex<f32>>\n"
      "%0 = stablehlo.add %arg0, %cst : tensor<f32>\n"
      "return %0 : tensor<f32>\n");
}

TEST(PrinterOps, LeavesWithoutOperands) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor a = f.iota(i32({2, 3}), 1);
    f.replica_id();
    f.partition_id();
    return a;
  });
  EXPECT_EQ(body,
            "%0 = stablehlo.iota dim = 1 : tensor<2x3xi32>\n"
            "%1 = stablehlo.replica_id : tensor<ui32>\n"
            "%2 = stablehlo.partition_id : tensor<ui32>\n"
            "return %0 : tensor<2x3xi32>\n");
}

TEST(PrinterOps, DataMovement) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32({2, 3}));
    Tensor i = f.param(i32());
    broadcast_in_dim(x, {4, 2, 3}, {1, 2});
    broadcast_in_dim(f.scalar(ElementType::f32, 0), {2}, {});
    reshape(x, {3, 2});
    transpose(x, {1, 0});
    slice(x, {0, 1}, {2, 3}, {1, 2});
    Tensor d = dynamic_slice(x, {i, i}, {1, 2});
    dynamic_update_slice(x, d, {i, i});
    concatenate({x, x}, 0);
    pad(x, f.scalar(ElementType::f32, 0), {0, 1}, {1, 0}, {0, 1});
    return reverse(x, {0});
  });
  EXPECT_EQ(
      body,
      "%0 = stablehlo.broadcast_in_dim %arg0, dims = [1, 2] : (tensor<2x3xf32>) -> "
      "tensor<4x2x3xf32>\n"
      "%cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
      "%1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2xf32>\n"
      "%2 = stablehlo.reshape %arg0 : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
      "%3 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
      "%4 = stablehlo.slice %arg0 [0:2, 1:3:2] : (tensor<2x3xf32>) -> tensor<2x1xf32>\n"
      "%5 = stablehlo.dynamic_slice %arg0, %arg1, %arg1, sizes = [1, 2] : (tensor<2x3xf32>, "
      "tensor<i32>, tensor<i32>) -> tensor<1x2xf32>\n"
      "%6 = stablehlo.dynamic_update_slice %arg0, %5, %arg1, %arg1 : (tensor<2x3xf32>, "
      "tensor<1x2xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>\n"
      "%7 = stablehlo.concatenate %arg0, %arg0, dim = 0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> "
      "tensor<4x3xf32>\n"
      "%cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
      "%8 = stablehlo.pad %arg0, %cst_0, low = [0, 1], high = [1, 0], interior = [0, 1] : "
      "(tensor<2x3xf32>, tensor<f32>) -> tensor<3x6xf32>\n"
      "%9 = stablehlo.reverse %arg0, dims = [0] : tensor<2x3xf32>\n"
      "return %9 : tensor<2x3xf32>\n");
}

TEST(PrinterOps, GatherPrintsGenericallyWithProperties) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32({5, 4}));
    Tensor idx = f.param(i32({2, 1}));
    GatherDims dims;
    dims.offset_dims = {1};
    dims.collapsed_slice_dims = {0};
    dims.start_index_map = {0};
    dims.index_vector_dim = 1;
    return gather(x, idx, dims, {1, 4});
  });
  EXPECT_EQ(body,
            "%0 = \"stablehlo.gather\"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<"
            "offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], "
            "index_vector_dim = 1>, slice_sizes = array<i64: 1, 4>}> : (tensor<5x4xf32>, "
            "tensor<2x1xi32>) -> tensor<2x4xf32>\n"
            "return %0 : tensor<2x4xf32>\n");
}

TEST(PrinterOps, DotGeneralSpellsItsDimensions) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor a = f.param(f32({2, 3, 4}));
    Tensor b = f.param(f32({2, 4, 5}));
    Tensor v = f.param(f32({4}));
    Tensor c = matmul(a, b);
    dot_general(v, v, DotDims{{}, {}, {0}, {0}});
    Tensor outer = dot_general(v, v, DotDims{});
    // A parsed precision_config prints in the pretty form; other attributes follow in braces.
    Op* op = outer.value()->defining_op();
    op->attrs().set("precision_config",
                    Opaque{"[#stablehlo<precision DEFAULT>, #stablehlo<precision HIGHEST>]"});
    op->attrs().set("mhlo.frontend_attributes", Opaque{"{x = \"y\"}"});
    return c;
  });
  EXPECT_EQ(
      body,
      "%0 = stablehlo.dot_general %arg0, %arg1, batching_dims = [0] x [0], contracting_dims = "
      "[2] x [1] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>\n"
      "%1 = stablehlo.dot_general %arg2, %arg2, contracting_dims = [0] x [0] : (tensor<4xf32>, "
      "tensor<4xf32>) -> tensor<f32>\n"
      "%2 = stablehlo.dot_general %arg2, %arg2, contracting_dims = [] x [], precision = "
      "[DEFAULT, HIGHEST] {mhlo.frontend_attributes = {x = \"y\"}} : (tensor<4xf32>, "
      "tensor<4xf32>) -> tensor<4x4xf32>\n"
      "return %0 : tensor<2x3x5xf32>\n");
}

TEST(PrinterOps, OptimizationBarrierListsOperandTypes) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32({2}));
    Tensor y = f.param(i32({3}));
    return optimization_barrier({x, y});
  });
  EXPECT_EQ(body,
            "%0:2 = stablehlo.optimization_barrier %arg0, %arg1 : tensor<2xf32>, tensor<3xi32>\n"
            "return %0#0, %0#1 : tensor<2xf32>, tensor<3xi32>\n");
}

TEST(PrinterOps, ShardyConstraintAndReshard) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 4}));
    Tensor c = constrain(x, Sharding{"m", {{"x"}, {}}, {}, {}});
    Tensor r = reshard(c, Sharding{"m", {{}, {"y"}}, {}, {}});
    Tensor t = tanh(r);
    t.value()->defining_op()->attrs().set("sdy.sharding",
                                          ShardingList{Sharding{"m", {{"x"}, {"y"}}, {}, {}}});
    return t;
  });
  EXPECT_EQ(body,
            "%0 = sdy.sharding_constraint %arg0 <@m, [{\"x\"}, {}]> : tensor<8x4xf32>\n"
            "%1 = sdy.reshard %0 <@m, [{}, {\"y\"}]> : tensor<8x4xf32>\n"
            "%2 = stablehlo.tanh %1 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{\"x\"}, "
            "{\"y\"}]>]>} : tensor<8x4xf32>\n"
            "return %2 : tensor<8x4xf32>\n");
}

// Shardy's propagation ops, in Shardy's forms; the text reads back to the same module.
TEST(PrinterOps, ShardyPropagationOpsPrintAndReadBack) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 4}));
    Tensor b = propagation_barrier(x, "BACKWARD");
    DimSharding open;
    open.open = true;
    open.priority = 1;
    Tensor e = data_flow_edge(b, Sharding{"m", {{"x"}, open}, {}, {}});
    sharding_group(e, 7);
    return data_flow_edge(e);
  });
  EXPECT_EQ(body,
            "%0 = sdy.propagation_barrier %arg0 allowed_direction=BACKWARD : tensor<8x4xf32>\n"
            "%1 = sdy.data_flow_edge %0 sharding=<@m, [{\"x\"}, {?}p1]> : tensor<8x4xf32>\n"
            "sdy.sharding_group %1 group_id=7 : tensor<8x4xf32>\n"
            "%2 = sdy.data_flow_edge %1 : tensor<8x4xf32>\n"
            "return %2 : tensor<8x4xf32>\n");
  std::string text = "sdy.mesh @m = <[\"x\"=2, \"y\"=2]>\nfunc.func @f(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {\n" +
                     body + "}\n";
  for (const char* dir : {"FORWARD", "BACKWARD", "NONE"}) {
    std::string t = text;
    t.replace(t.find("BACKWARD"), 8, dir);
    std::string printed = print(*parse(t, "propagation_ops.mlir"));
    EXPECT_NE(printed.find(std::string("allowed_direction=") + dir), std::string::npos) << printed;
    EXPECT_EQ(print(*parse(printed, "printed")), printed);
    EXPECT_NE(printed.find("group_id=7 : tensor<8x4xf32>"), std::string::npos) << printed;
  }
  std::string both = text;
  both.replace(both.find("BACKWARD"), 8, "BOTH");
  try {
    parse(both, "both.mlir");
    ADD_FAILURE() << "allowed_direction=BOTH was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("FORWARD, BACKWARD or NONE"), std::string::npos) << e.what();
  }
}

TEST(PrinterOps, MissingAttributesFallBackToTheGenericForm) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32({2}));
    AttrMap attrs;
    attrs.set("dimension", int64_t{0});
    attrs.set("mhlo.sharding", Opaque{"\"{replicated}\""});
    Tensor c = f.emit1(OpKind::Concatenate, {x, x}, attrs);
    // Without its permutation a transpose cannot use the pretty form.
    auto op = std::make_unique<Op>(OpKind::Transpose, std::vector<Value*>{c.value()},
                                   std::vector<Type>{f32({4})});
    return f.wrap(f.block().append(std::move(op))->result());
  });
  EXPECT_EQ(body,
            "%0 = stablehlo.concatenate %arg0, %arg0, dim = 0 {mhlo.sharding = \"{replicated}\"} : "
            "(tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>\n"
            "%1 = \"stablehlo.transpose\"(%0) : (tensor<4xf32>) -> tensor<4xf32>\n"
            "return %1 : tensor<4xf32>\n");
}

}  // namespace
}  // namespace tessera::stablehlo
