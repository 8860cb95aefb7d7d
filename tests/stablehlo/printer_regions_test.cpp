// Printer: ops with regions (reduce, while, collectives, scatter, sdy.manual_computation), MLIR's
// numbering of values inside regions, and the module and function layout.
#include "print_test_util.h"

namespace tessera::stablehlo {
namespace {

using namespace ir;
using testing::function_body;
using testing::print_body;

TEST(PrinterRegions, ReduceWithOneCommutativeOpIsCompact) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32({2, 3}));
    return reduce_max(x, {1});
  });
  EXPECT_EQ(body,
            "%cst = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
            "%0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = "
            "[1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>\n"
            "return %0 : tensor<2xf32>\n");
}

// Bodies other than one commutative op print in stablehlo-opt's `reducer` form (#17).
TEST(PrinterRegions, OtherReducesPrintInTheReducerForm) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32({4}));
    Tensor zero = f.scalar(ElementType::f32, 0);
    reduce(x, zero, {0}, OpKind::Subtract);       // not commutative
    return reduce(x, zero, {0}, OpKind::Return);  // no op at all: keeps the element
  });
  EXPECT_EQ(body,
            "%cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
            "%0 = stablehlo.reduce(%arg0 init: %cst) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>\n"
            " reducer(%arg1: tensor<f32>, %arg2: tensor<f32>)  {\n"
            "  %2 = stablehlo.subtract %arg1, %arg2 : tensor<f32>\n"
            "  stablehlo.return %2 : tensor<f32>\n"
            "}\n"
            "%1 = stablehlo.reduce(%arg0 init: %cst) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>\n"
            " reducer(%arg1: tensor<f32>, %arg2: tensor<f32>)  {\n"
            "  stablehlo.return %arg2 : tensor<f32>\n"
            "}\n"
            "return %1 : tensor<f32>\n");
}

TEST(PrinterRegions, VariadicReducePrintsInTheReducerForm) {
  std::string body = print_body([](FunctionBuilder& f) -> std::vector<Tensor> {
    Tensor x = f.param(f32({4}));
    Tensor i = f.param(i32({4}));
    Tensor x0 = f.scalar(ElementType::f32, 0);
    Tensor i0 = f.scalar(ElementType::i32, 0);
    AttrMap attrs;
    attrs.set("dimensions", std::vector<int64_t>{0});
    return f.emit_with_regions(OpKind::Reduce, {x, i, x0, i0}, attrs, {}, [&](Op& op) {
      Block& b = op.add_region();
      Builder rb(f.module(), b);
      std::vector<Tensor> args;
      for (Type t : {f32(), i32(), f32(), i32()}) args.push_back(rb.wrap(b.add_argument(t)));
      Tensor s = args[0] + args[2];
      Tensor m = maximum(args[1], args[3]);
      b.append(std::make_unique<Op>(OpKind::Return, std::vector<Value*>{s.value(), m.value()},
                                    std::vector<Type>{}));
    });
  });
  // One (accumulator, element) argument pair per input, as JAX's argmax prints.
  EXPECT_EQ(
      body,
      "%cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
      "%c = stablehlo.constant dense<0> : tensor<i32>\n"
      "%0:2 = stablehlo.reduce(%arg0 init: %cst), (%arg1 init: %c) across dimensions = [0] : (tensor<4xf32>, "
      "tensor<4xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)\n"
      " reducer(%arg2: tensor<f32>, %arg4: tensor<f32>) (%arg3: tensor<i32>, %arg5: tensor<i32>)  {\n"
      "  %1 = stablehlo.add %arg2, %arg4 : tensor<f32>\n"
      "  %2 = stablehlo.maximum %arg3, %arg5 : tensor<i32>\n"
      "  stablehlo.return %1, %2 : tensor<f32>, tensor<i32>\n"
      "}\n"
      "return %0#0, %0#1 : tensor<f32>, tensor<i32>\n");
}

TEST(PrinterRegions, WhileNamesItsArgumentsIterArgAndRestartsEachRegion) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32({4}));
    Tensor i = f.scalar(ElementType::i64, 0);
    auto cond = [](Builder& b, const std::vector<Tensor>& v) {
      return compare(v[0], b.scalar(ElementType::i64, 10), ComparisonDirection::LT);
    };
    auto step = [](Builder&, const std::vector<Tensor>& v) {
      return std::vector<Tensor>{v[0] + 1.0, tanh(v[1])};
    };
    return while_loop({i, x}, cond, step)[1];
  });
  EXPECT_EQ(
      body,
      "%c = stablehlo.constant dense<0> : tensor<i64>\n"
      "%0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i64>, tensor<4xf32>\n"
      " cond {\n"
      "  %c_1 = stablehlo.constant dense<10> : tensor<i64>\n"
      "  %1 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i64>, tensor<i64>) -> "
      "tensor<i1>\n"
      "  stablehlo.return %1 : tensor<i1>\n"
      "} do {\n"
      "  %c_1 = stablehlo.constant dense<1> : tensor<i64>\n"
      "  %1 = stablehlo.add %iterArg, %c_1 : tensor<i64>\n"
      "  %2 = stablehlo.tanh %iterArg_0 : tensor<4xf32>\n"
      "  stablehlo.return %1, %2 : tensor<i64>, tensor<4xf32>\n"
      "}\n"
      "return %0#1 : tensor<4xf32>\n");
}

TEST(PrinterRegions, AllReduceIsGenericAndItsRegionIsNumberedAfterTheFunction) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32({4}));
    return tanh(all_reduce(x, {{0, 1}}));
  });
  EXPECT_EQ(
      body,
      "%0 = \"stablehlo.all_reduce\"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle "
      "= 1, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, "
      "use_global_device_ids}> ({\n"
      "^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):\n"
      "  %2 = stablehlo.add %arg1, %arg2 : tensor<f32>\n"
      "  stablehlo.return %2 : tensor<f32>\n"
      "}) : (tensor<4xf32>) -> tensor<4xf32>\n"
      "%1 = stablehlo.tanh %0 : tensor<4xf32>\n"
      "return %1 : tensor<4xf32>\n");
}

TEST(PrinterRegions, CollectivesWithoutRegions) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32({4, 2}));
    all_gather(x, 0, {{0, 1}});
    all_to_all(x, 0, 1, {{0, 1}});
    collective_permute(x, {{0, 1}, {1, 0}});
    Tensor b = collective_broadcast(x, {{0}});
    b.value()->defining_op()->attrs().set("mhlo.sharding", Opaque{"\"{manual}\""});
    return b;
  });
  EXPECT_EQ(
      body,
      "%0 = \"stablehlo.all_gather\"(%arg0) <{all_gather_dim = 0 : i64, channel_handle = "
      "#stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> : "
      "tensor<1x2xi64>, use_global_device_ids}> : (tensor<4x2xf32>) -> tensor<8x2xf32>\n"
      "%1 = \"stablehlo.all_to_all\"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle "
      "= 2, type = 1>, concat_dimension = 1 : i64, replica_groups = dense<[[0, 1]]> : "
      "tensor<1x2xi64>, split_count = 2 : i64, split_dimension = 0 : i64}> : "
      "(tensor<4x2xf32>) -> tensor<2x4xf32>\n"
      "%2 = \"stablehlo.collective_permute\"(%arg0) <{channel_handle = "
      "#stablehlo.channel_handle<handle = 3, type = 1>, source_target_pairs = dense<[[0, 1], "
      "[1, 0]]> : tensor<2x2xi64>}> : (tensor<4x2xf32>) -> tensor<4x2xf32>\n"
      "%3 = \"stablehlo.collective_broadcast\"(%arg0) <{channel_handle = "
      "#stablehlo.channel_handle<handle = 4, type = 1>, replica_groups = dense<0> : "
      "tensor<1x1xi64>}> {mhlo.sharding = \"{manual}\"} : (tensor<4x2xf32>) -> "
      "tensor<4x2xf32>\n"
      "return %3 : tensor<4x2xf32>\n");
}

TEST(PrinterRegions, ReduceScatterCollectiveReduceAndScatterCarryTheirBodies) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32({4}));
    Tensor idx = f.param(i32({1, 1}));
    Tensor upd = f.param(f32({1}));
    reduce_scatter(x, 0, {{0, 1}});
    collective_reduce(x, {{0, 1}}, OpKind::Maximum);
    ScatterDims dims;
    dims.inserted_window_dims = {0};
    dims.scatter_dims_to_operand_dims = {0};
    dims.index_vector_dim = 1;
    return scatter(x, idx, upd, dims, OpKind::Add);
  });
  EXPECT_EQ(body,
            "%0 = \"stablehlo.reduce_scatter\"(%arg0) <{channel_handle = "
            "#stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> : "
            "tensor<1x2xi64>, scatter_dimension = 0 : i64, use_global_device_ids}> ({\n"
            "^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):\n"
            "  %3 = stablehlo.add %arg3, %arg4 : tensor<f32>\n"
            "  stablehlo.return %3 : tensor<f32>\n"
            "}) : (tensor<4xf32>) -> tensor<2xf32>\n"
            "%1 = \"stablehlo.collective_reduce\"(%arg0) <{channel_handle = "
            "#stablehlo.channel_handle<handle = 2, type = 1>, replica_groups = dense<[[0, 1]]> : "
            "tensor<1x2xi64>}> ({\n"
            "^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):\n"
            "  %3 = stablehlo.maximum %arg3, %arg4 : tensor<f32>\n"
            "  stablehlo.return %3 : tensor<f32>\n"
            "}) : (tensor<4xf32>) -> tensor<4xf32>\n"
            "%2 = \"stablehlo.scatter\"(%arg0, %arg1, %arg2) <{scatter_dimension_numbers = "
            "#stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], "
            "index_vector_dim = 1>}> ({\n"
            "^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):\n"
            "  %3 = stablehlo.add %arg3, %arg4 : tensor<f32>\n"
            "  stablehlo.return %3 : tensor<f32>\n"
            "}) : (tensor<4xf32>, tensor<1x1xi32>, tensor<1xf32>) -> tensor<4xf32>\n"
            "return %2 : tensor<4xf32>\n");
}

TEST(PrinterRegions, ManualComputationUsesShardysPrettyForm) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 4}));
    Sharding rows{"m", {{"x"}, {}}, {}, {}};
    Tensor y = manual({x}, {rows}, {rows}, {"x"}, [](Builder& b, const std::vector<Tensor>& v) {
      return std::vector<Tensor>{tanh(all_reduce(v[0], {{0, 1}}))};
    })[0];
    return y + y;
  });
  EXPECT_EQ(body,
            "%0 = sdy.manual_computation(%arg0) in_shardings=[<@m, [{\"x\"}, {}]>] "
            "out_shardings=[<@m, [{\"x\"}, {}]>] manual_axes={\"x\"} (%arg1: tensor<4x4xf32>) {\n"
            "  %2 = \"stablehlo.all_reduce\"(%arg1) <{channel_handle = "
            "#stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> : "
            "tensor<1x2xi64>, use_global_device_ids}> ({\n"
            "  ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):\n"
            "    %4 = stablehlo.add %arg2, %arg3 : tensor<f32>\n"
            "    stablehlo.return %4 : tensor<f32>\n"
            "  }) : (tensor<4x4xf32>) -> tensor<4x4xf32>\n"
            "  %3 = stablehlo.tanh %2 : tensor<4x4xf32>\n"
            "  sdy.return %3 : tensor<4x4xf32>\n"
            "} : (tensor<8x4xf32>) -> tensor<8x4xf32>\n"
            "%1 = stablehlo.add %0, %0 : tensor<8x4xf32>\n"
            "return %1 : tensor<8x4xf32>\n");
}

TEST(PrinterRegions, ManualComputationWithoutManualAxes) {
  std::string body = print_body([](FunctionBuilder& f) {
    Tensor x = f.param(f32({8}));
    Tensor y = f.param(f32({8}));
    Sharding open{"m", {{}}, {}, {}};
    open.dims[0].open = true;
    auto results = manual({x, y}, {open, open}, {open, open}, {},
                          [](Builder&, const std::vector<Tensor>& v) { return v; });
    return results[1];
  });
  EXPECT_EQ(body,
            "%0:2 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@m, [{?}]>, <@m, [{?}]>] "
            "out_shardings=[<@m, [{?}]>, <@m, [{?}]>] manual_axes={} (%arg2: tensor<8xf32>, %arg3: "
            "tensor<8xf32>) {\n"
            "  sdy.return %arg2, %arg3 : tensor<8xf32>, tensor<8xf32>\n"
            "} : (tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)\n"
            "return %0#1 : tensor<8xf32>\n");
}

TEST(PrinterModule, UnnamedModuleWithAttributesAndFunctionSignatures) {
  Module m;
  m.attrs.set("mhlo.num_partitions", int64_t{4});
  m.attrs.set("mhlo.num_replicas", int64_t{1});
  m.add_mesh({"m", {{"x", 2}}, {}});
  Function& g = build_function(m, "g", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({2}), Sharding{"m", {{"x"}}, {}, {}});
    return std::vector<Tensor>{x, tanh(x)};
  });
  g.is_public = false;
  g.arg_attrs[0].set("jax.arg_info", std::string("x"));
  g.set_result_sharding(0, Sharding{"m", {{"x"}}, {}, {}});
  build_function(m, "my-fn", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({2}));
    return std::vector<Tensor>{x, x};
  });
  build_function(m, "nothing", [](FunctionBuilder&) { return std::vector<Tensor>{}; });
  EXPECT_EQ(
      print(m),
      "module attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
      "  sdy.mesh @m = <[\"x\"=2]>\n"
      "  func.func private @g(%arg0: tensor<2xf32> {jax.arg_info = \"x\", sdy.sharding = "
      "#sdy.sharding<@m, [{\"x\"}]>}) -> (tensor<2xf32> {sdy.sharding = #sdy.sharding<@m, "
      "[{\"x\"}]>}, tensor<2xf32>) {\n"
      "    %0 = stablehlo.tanh %arg0 : tensor<2xf32>\n"
      "    return %arg0, %0 : tensor<2xf32>, tensor<2xf32>\n"
      "  }\n"
      "  func.func public @\"my-fn\"(%arg0: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {\n"
      "    return %arg0, %arg0 : tensor<2xf32>, tensor<2xf32>\n"
      "  }\n"
      "  func.func public @nothing() {\n"
      "    return\n"
      "  }\n"
      "}\n");
}

TEST(PrinterModule, ResultAttributesAloneParenthesizeASingleResult) {
  Module m("named");
  build_function(m, "f", [](FunctionBuilder& f) { return f.param(f32()); });
  m.functions[0]->result_attrs[0].set("jax.result_info", std::string("result"));
  std::string text = print(m);
  EXPECT_EQ(text.substr(0, 15), "module @named {");
  EXPECT_NE(text.find("-> (tensor<f32> {jax.result_info = \"result\"}) {"), std::string::npos)
      << text;
  EXPECT_EQ(function_body(text), "return %arg0 : tensor<f32>\n");
}

}  // namespace
}  // namespace tessera::stablehlo
