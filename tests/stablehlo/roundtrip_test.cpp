// print -> parse -> print is the identity: for modules the builder makes (every op family, every
// attribute kind, shardings, regions), and, in conformance_roundtrip_test, for every conformance
// file.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/builder.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo {
namespace {

using namespace tessera::ir;

void expect_round_trip(const Module& m) {
  std::string first = print(m);
  std::unique_ptr<Module> parsed;
  try {
    parsed = parse(first, "printed.mlir");
  } catch (const ParseError& e) {
    FAIL() << e.what() << "\n" << first;
  }
  EXPECT_EQ(print(*parsed), first);
}

Module mesh_module() {
  Module m("rt");
  m.add_mesh(Mesh{"m", {{"x", 2}, {"y", 4}}, {}});
  m.add_mesh(Mesh{"d", {{"a", 2}}, {1, 0}});
  return m;
}

TEST(RoundTrip, Elementwise) {
  Module m = mesh_module();
  build_function(m, "f", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({2, 3}));
    Tensor i = f.param(i32({2, 3}));
    Tensor u = f.param(Type(ElementType::ui8, {2, 3}));
    Tensor b = f.param(i1({2, 3}));
    Tensor y = abs(x) + sign(x) - exp(x) * expm1(x) / log(x);
    y = maximum(minimum(log1p(y), tanh(y)), logistic(y));
    y = pow(sqrt(y), rsqrt(y)) + atan2(sin(y), cos(y));
    y = remainder(floor(y), ceil(y)) + round_nearest_even(y) - round_nearest_afz(y);
    Tensor j = shift_left(i, i) + shift_right_logical(i, i) - shift_right_arithmetic(i, i);
    Tensor k = (j & i) | (j ^ i);
    Tensor p = (!b) & is_finite(y) & compare(u, u, ComparisonDirection::GE);
    Tensor q = compare(convert(k, ElementType::f32), y, ComparisonDirection::NE);
    Tensor s = select(p | q, y, clamp(f.scalar(ElementType::f32, 0), y, f.scalar(ElementType::f32, 1)));
    return std::vector<Tensor>{s, bitcast_convert(k, Type(ElementType::f32, {2, 3})), -x * 2.5};
  });
  expect_round_trip(m);
}

TEST(RoundTrip, DataMovementAndReductions) {
  Module m = mesh_module();
  build_function(m, "f", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({4, 6}));
    Tensor idx = f.param(i32({}));
    Tensor t = transpose(broadcast_in_dim(f.param(f32({6})), {4, 6}, {1}), {1, 0});
    Tensor r = reshape(x, {6, 4}) + t;
    Tensor s = slice(r, {1, 0}, {5, 4}, {2, 1});
    Tensor d = dynamic_slice(x, {idx, idx}, {2, 2});
    Tensor u = dynamic_update_slice(x, d, {idx, idx});
    Tensor c = concatenate({u, x}, 0);
    Tensor p = pad(c, f.scalar(ElementType::f32, 0), {1, -1}, {0, 2}, {1, 0});
    Tensor v = reverse(p, {0, 1});
    Tensor io = f.iota(Type(ElementType::i64, {3, 2}), 1);
    Tensor mx = reduce_max(v, {1});
    Tensor sm = reduce(x, f.scalar(ElementType::f32, 1), {0, 1}, OpKind::Multiply);
    Tensor dot = dot_general(f.param(f32({3, 4, 5})), f.param(f32({3, 5, 2})), DotDims{{0}, {0}, {2}, {1}});
    GatherDims g;
    g.offset_dims = {1};
    g.collapsed_slice_dims = {0};
    g.start_index_map = {0};
    g.index_vector_dim = 1;
    Tensor gathered = gather(x, f.param(i32({2, 1})), g, {1, 6});
    ScatterDims sd;
    sd.update_window_dims = {1};
    sd.inserted_window_dims = {0};
    sd.scatter_dims_to_operand_dims = {0};
    sd.index_vector_dim = 1;
    Tensor scattered = scatter(x, f.param(i32({2, 1})), gathered, sd, OpKind::Add);
    auto barrier = optimization_barrier({mx, sm});
    return std::vector<Tensor>{s, io, barrier[0], barrier[1], dot, scattered, sum(x)};
  });
  expect_round_trip(m);
}

TEST(RoundTrip, RegionsAndControl) {
  Module m = mesh_module();
  build_function(m, "f", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({4}));
    auto out = while_loop(
        {f.scalar(ElementType::i64, 0), x},
        [](Builder& c, const std::vector<Tensor>& v) {
          return compare(v[0], c.scalar(ElementType::i64, 3), ComparisonDirection::LT);
        },
        [](Builder& b, const std::vector<Tensor>& v) {
          return std::vector<Tensor>{v[0] + 1.0, v[1] * v[1] - b.scalar(ElementType::f32, 1)};
        });
    Tensor sub = reduce(x, f.scalar(ElementType::f32, 0), {0}, OpKind::Subtract);  // generic form
    return std::vector<Tensor>{out[1], sub, f.replica_id(), f.partition_id()};
  });
  expect_round_trip(m);
}

TEST(RoundTrip, CollectivesAndShardy) {
  Module m = mesh_module();
  build_function(m, "f", [&](FunctionBuilder& f) {
    Sharding rows{"m", {{"x"}, {}}, {}, {}};
    Sharding fancy{"m", {{AxisRef("y", {1, 2})}, {"x"}}, {AxisRef("y", {2, 2})}, {}};
    fancy.dims[0].open = true;
    fancy.dims[1].priority = 1;
    Tensor x = f.param(f32({8, 4}), rows);
    Tensor a = all_reduce(x, {{0, 1}, {2, 3}});
    Tensor g = all_gather(a, 1, {{0, 1, 2, 3}});
    Tensor r = reduce_scatter(g, 1, {{0, 1, 2, 3}}, OpKind::Maximum);
    Tensor t = all_to_all(r, 0, 1, {{0, 1}, {2, 3}});
    Tensor p = collective_permute(t, {{0, 1}, {1, 0}});
    Tensor bc = collective_broadcast(p, {{0, 1}});
    Tensor cr = collective_reduce(bc, {{0, 1}});
    Tensor c = constrain(x, fancy);
    Tensor h = reshard(c, Sharding{"m", {{}, {"y"}}, {}, {}});
    auto mc = manual({x, h}, {rows, rows}, {rows}, {"x"}, [](Builder&, const std::vector<Tensor>& v) {
      return std::vector<Tensor>{all_reduce(v[0] + v[1], {{0, 1}})};
    });
    f.function().set_result_sharding(0, rows);
    return std::vector<Tensor>{mc[0], cr};
  });
  expect_round_trip(m);
}

TEST(RoundTrip, ShardyExplicitCollectivesFromTheBuilder) {
  Module m = mesh_module();
  build_function(m, "f", [&](FunctionBuilder& f) {
    Sharding both{"m", {{"x"}, {"y"}}, {}, {}};
    Sharding whole{"m", {{}, {}}, {}, {}};
    AxisRef y1("y", {1, 2}), y2("y", {2, 2});
    Tensor x = f.param(f32({8, 8}), both);
    Tensor g = sdy_all_gather(x, {{"x"}, {"y"}}, whole);
    Tensor s = sdy_all_slice(g, {{}, {"x", y2}}, Sharding{"m", {{}, {"x", y2}}, {}, {}});
    Tensor r = sdy_all_reduce(s, {"x", "y"}, Sharding{"m", {{}, {"x", y2}}, {}, {}});
    Tensor rs = sdy_reduce_scatter(r, {{y1}, {}}, Sharding{"m", {{y1}, {"x", y2}}, {}, {}});
    Tensor t = sdy_all_to_all(rs, {{{y1}, 0, 1}}, Sharding{"m", {{}, {"x", y2, y1}}, {}, {}});
    Tensor p = sdy_collective_permute(t, Sharding{"m", {{"x"}, {}}, {}, {}});
    Tensor c = sdy_constant(f, Literal::from_doubles(f32({8, 8}), std::vector<double>(64, 1.5)), both);
    return std::vector<Tensor>{p + c, sdy_constant(f, Literal::scalar(ElementType::i32, 3))};
  });
  std::string text = print(m);
  for (const char* line :
       {R"(sdy.all_gather [{"x"}, {"y"}] %arg0 out_sharding=<@m, [{}, {}]> : tensor<8x8xf32>)",
        R"(sdy.all_slice [{}, {"x", "y":(2)2}] %0 out_sharding=<@m, [{}, {"x", "y":(2)2}]> : tensor<8x8xf32>)",
        R"(sdy.all_reduce {"x", "y"} %1 out_sharding=<@m, [{}, {"x", "y":(2)2}]> : tensor<8x8xf32>)",
        R"(sdy.reduce_scatter [{"y":(1)2}, {}] %2 out_sharding=<@m, [{"y":(1)2}, {"x", "y":(2)2}]> : tensor<8x8xf32>)",
        R"(sdy.all_to_all [{"y":(1)2}: 0->1] %3 out_sharding=<@m, [{}, {"x", "y":(2)2, "y":(1)2}]> : tensor<8x8xf32>)",
        R"(sdy.collective_permute %4 out_sharding=<@m, [{"x"}, {}]> : tensor<8x8xf32>)",
        R"(sdy.constant {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x"}, {"y"}]>]>} dense<1.500000e+00> : tensor<8x8xf32>)",
        R"(sdy.constant dense<3> : tensor<i32>)"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  expect_round_trip(m);
}

// Shardy's own text (shardy-tests/executable_convert_global_to_local) reads and prints back as
// Shardy prints it, all_to_all's out_sharding joined onto its line.
TEST(RoundTrip, ShardyExplicitCollectivesAsShardyWritesThem) {
  const std::string text = R"(sdy.mesh @mesh_2_2 = <["x"=2, "y"=2]>
sdy.mesh @mesh_2_4 = <["x"=2, "y"=4]>
func.func @main(%arg0: tensor<4x4xi32>, %arg1: tensor<8x8xi32>, %arg2: tensor<2x2x2x2xi32>, %arg3: tensor<4xi32>) -> (tensor<4x4xi32>, tensor<8x8xi32>, tensor<2x2x2x2xi32>, tensor<4xi32>, tensor<i32>) {
  %0 = sdy.all_gather [{"x"}, {"y"}] %arg0 out_sharding=<@mesh_2_2, [{}, {}]> : tensor<4x4xi32>
  %1 = sdy.all_reduce {"x"} %0 out_sharding=<@mesh_2_2, [{}, {}]> {foo = 1 : i64} : tensor<4x4xi32>
  %2 = sdy.reduce_scatter [{"x"}, {"y"}] %1 out_sharding=<@mesh_2_2, [{"x"}, {"y"}]> : tensor<4x4xi32>
  %3 = sdy.all_slice [{}, {"x", "y":(2)2}] %arg1 out_sharding=<@mesh_2_4, [{}, {"x", "y":(2)2}]> : tensor<8x8xi32>
  %4 = sdy.all_to_all [{"x"}: 0->1, {"y"}: 2->3] %arg2
       out_sharding=<@mesh_2_2, [{}, {"x"}, {}, {"y"}]> : tensor<2x2x2x2xi32>
  %5 = sdy.collective_permute %arg3 out_sharding=<@mesh_2_2, [{"y", "x"}]> : tensor<4xi32>
  %6 = sdy.constant {sdy.sharding = #sdy.sharding_per_value<[<@mesh_2, [{"x"}, {}]>]>} dense<7> : tensor<4x4xi32>
  %7 = sdy.constant dense<0> : tensor<i32>
  %8 = stablehlo.add %2, %6 : tensor<4x4xi32>
  return %8, %3, %4, %5, %7 : tensor<4x4xi32>, tensor<8x8xi32>, tensor<2x2x2x2xi32>, tensor<4xi32>, tensor<i32>
}
)";
  std::string with_mesh_2 = "sdy.mesh @mesh_2 = <[\"x\"=2]>\n" + text;
  std::unique_ptr<Module> m = parse(with_mesh_2, "t.mlir");
  const Op& a2a = *m->functions[0]->body().ops()[4];
  EXPECT_EQ(a2a.attrs().get<IntMatrix>("param_dims"), IntMatrix::from_rows({{0, 1}, {2, 3}}));
  EXPECT_EQ(a2a.attrs().get<Sharding>("params"), (Sharding{"mesh_2_2", {{"x"}, {"y"}}, {}, {}}));
  EXPECT_EQ(m->functions[0]->body().ops()[1]->attrs().get<Sharding>("reduction_axes"),
            (Sharding{"mesh_2_2", {{"x"}}, {}, {}}));
  std::string printed = print(*m);
  for (const char* line :
       {R"(%0 = sdy.all_gather [{"x"}, {"y"}] %arg0 out_sharding=<@mesh_2_2, [{}, {}]> : tensor<4x4xi32>)",
        R"(%1 = sdy.all_reduce {"x"} %0 out_sharding=<@mesh_2_2, [{}, {}]> {foo = 1 : i64} : tensor<4x4xi32>)",
        R"(%2 = sdy.reduce_scatter [{"x"}, {"y"}] %1 out_sharding=<@mesh_2_2, [{"x"}, {"y"}]> : tensor<4x4xi32>)",
        R"(%3 = sdy.all_slice [{}, {"x", "y":(2)2}] %arg1 out_sharding=<@mesh_2_4, [{}, {"x", "y":(2)2}]> : tensor<8x8xi32>)",
        R"(%4 = sdy.all_to_all [{"x"}: 0->1, {"y"}: 2->3] %arg2 out_sharding=<@mesh_2_2, [{}, {"x"}, {}, {"y"}]> : tensor<2x2x2x2xi32>)",
        R"(%5 = sdy.collective_permute %arg3 out_sharding=<@mesh_2_2, [{"y", "x"}]> : tensor<4xi32>)",
        R"(%6 = sdy.constant {sdy.sharding = #sdy.sharding_per_value<[<@mesh_2, [{"x"}, {}]>]>} dense<7> : tensor<4x4xi32>)",
        R"(%7 = sdy.constant dense<0> : tensor<i32>)"})
    EXPECT_NE(printed.find(line), std::string::npos) << line << "\n" << printed;
  EXPECT_EQ(print(*parse(printed, "printed.mlir")), printed);
}

// Axes the pretty form cannot spell (an open dimension here) send the op to the generic form,
// which reads back to the same op.
TEST(RoundTrip, ShardyExplicitCollectiveInGenericForm) {
  Module m = mesh_module();
  build_function(m, "f", [&](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 4}));
    AttrMap a;
    Sharding axes{"m", {{"x"}, {}}, {}, {}};
    axes.dims[1].open = true;
    a.set("gathering_axes", axes);
    a.set("out_sharding", Sharding{"m", {{}, {}}, {}, {}});
    Tensor g = f.emit1(OpKind::SdyAllGather, {x}, a);
    AttrMap t;
    t.set("params", Sharding{"m", {{"x"}}, {}, {}});
    t.set("param_dims", IntMatrix::from_rows({{0, 1}}));
    t.set("out_sharding", Sharding{"m", {{}, {"x"}}, {}, {}, });
    t.set("reduction_axes", Sharding{"m", {{"y"}}, {}, {}});  // not all_to_all's: printed as a property
    return std::vector<Tensor>{g, f.emit1(OpKind::SdyAllToAll, {g}, t)};
  });
  std::string text = print(m);
  EXPECT_NE(text.find(R"("sdy.all_gather"(%arg0) <{gathering_axes = #sdy.sharding<@m, [{"x"}, {?}]>, out_sharding = #sdy.sharding<@m, [{}, {}]>}>)"),
            std::string::npos) << text;
  EXPECT_NE(text.find(R"(sdy.all_to_all [{"x"}: 0->1] %0 out_sharding=<@m, [{}, {"x"}]> {reduction_axes = #sdy.sharding<@m, [{"y"}]>} : tensor<8x4xf32>)"),
            std::string::npos) << text;
  expect_round_trip(m);
}

// Shardy's tests also spell a mesh declaration with the attribute's full name, and put a layout of
// no dimensions on an op without results (it runs on every device).
TEST(Parse, ShardyMeshAttributesAndLayoutsOfOpsWithoutResults) {
  auto m = parse(R"(sdy.mesh @mesh = #sdy.mesh<["a"=2, "b"=2]>
sdy.mesh @maximal = #sdy.mesh<[], device_ids=[1]>
func.func @f(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  stablehlo.custom_call @effect(%arg0) {has_side_effect = true, sdy.sharding = #sdy.sharding_per_value<[<@mesh, []>]>} : (tensor<8x8xf32>) -> ()
  return %arg0 : tensor<8x8xf32>
}
)",
                 "meshes.mlir");
  ASSERT_EQ(m->meshes.size(), 2u);
  EXPECT_EQ(m->mesh("mesh").num_devices(), 4);
  EXPECT_EQ(m->mesh("maximal").device_ids, std::vector<int64_t>{1});
  std::string printed = print(*m);
  EXPECT_NE(printed.find("sdy.mesh @mesh = <[\"a\"=2, \"b\"=2]>"), std::string::npos) << printed;
  expect_round_trip(*m);
}

TEST(Parse, ShardyExplicitCollectivesAreChecked) {
  auto error = [](const std::string& op) {
    std::string text = "sdy.mesh @m = <[\"x\"=2, \"y\"=2]>\n"
                       "func.func @f(%arg0: tensor<4x4xi32>) -> tensor<4x4xi32> {\n  %0 = " + op +
                       "\n  return %0 : tensor<4x4xi32>\n}\n";
    try {
      parse(text, "t.mlir");
    } catch (const support::UserError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_NE(error(R"(sdy.all_gather [{"x"}] %arg0 out_sharding=<@m, [{}, {}]> : tensor<4x4xi32>)")
                .find("sdy.all_gather: gathering_axes has 1 entries for tensor<4x4xi32>"),
            std::string::npos);
  EXPECT_NE(error(R"(sdy.all_to_all [{"x"}: 0->2] %arg0 out_sharding=<@m, [{}, {"x"}]> : tensor<4x4xi32>)")
                .find("sdy.all_to_all: param_dims = 2 is out of range for rank 2"),
            std::string::npos);
  EXPECT_NE(error(R"(sdy.all_reduce {"z"} %arg0 out_sharding=<@m, [{}, {}]> : tensor<4x4xi32>)")
                .find("reduction_axes names axis 'z', which mesh @m does not have"),
            std::string::npos);
  EXPECT_NE(error(R"(sdy.collective_permute %arg0 out_sharding=<@m, [{"x"}]> : tensor<4x4xi32>)")
                .find("sdy.collective_permute: out_sharding has 1 dimensions for tensor<4x4xi32>"),
            std::string::npos);
  EXPECT_NE(error(R"(sdy.all_slice [{"x"}, {"y"}] %arg0 out_sharding=<@m, [{"x"}, {"x"}]> : tensor<4x4xi32>)"),
            "<no error>");
  EXPECT_EQ(error(R"(sdy.all_slice [{"x"}, {"y"}] %arg0 out_sharding=<@m, [{"x"}, {"y"}]> : tensor<4x4xi32>)"),
            "<no error>");
}

// Partial values combined by a max or min: `unreduced=max{...}` in a layout and the kind word of
// sdy.all_reduce read and print back (the pretty form and the generic one); a sum prints no word.
// An unknown kind is an error at its place.
TEST(RoundTrip, ShardyReductionKinds) {
  const std::string text = R"(sdy.mesh @m = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{}], unreduced=min{"x"}>}) -> tensor<4xf32> {
  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}], unreduced=max{"x", "y"}>]>} : tensor<4xf32>
  %1 = sdy.all_reduce max {"x", "y"} %0 out_sharding=<@m, [{}]> : tensor<4xf32>
  %2 = sdy.all_reduce sum {"x"} %1 out_sharding=<@m, [{}]> : tensor<4xf32>
  return %2 : tensor<4xf32>
}
)";
  std::unique_ptr<Module> m = parse(text, "t.mlir");
  EXPECT_EQ(m->functions[0]->arg_sharding(0)->unreduced_kind, ReductionKind::kMin);
  const auto& ops = m->functions[0]->body().ops();
  EXPECT_EQ(ops[0]->attrs().get<ShardingList>("sdy.sharding")[0].unreduced_kind, ReductionKind::kMax);
  EXPECT_EQ(ops[1]->attrs().get<std::string>("reduction_kind"), "max");
  EXPECT_FALSE(ops[2]->attrs().has("reduction_kind"));
  std::string printed = print(*m);
  for (const char* line : {R"(unreduced=min{"x"})", R"(unreduced=max{"x", "y"})",
                           R"(%1 = sdy.all_reduce max {"x", "y"} %0 out_sharding=<@m, [{}]> : tensor<4xf32>)",
                           R"(%2 = sdy.all_reduce {"x"} %1 out_sharding=<@m, [{}]> : tensor<4xf32>)"})
    EXPECT_NE(printed.find(line), std::string::npos) << line << "\n" << printed;
  EXPECT_EQ(print(*parse(printed, "printed.mlir")), printed);
  expect_round_trip(*m);
  for (const char* bad : {R"(unreduced=avg{"x"})", R"(sdy.all_reduce prod {"x"})"}) {
    std::string t = text;
    if (std::string(bad).rfind("unreduced", 0) == 0) t.replace(t.find(R"(unreduced=min{"x"})"), 18, bad);
    else t.replace(t.find(R"(sdy.all_reduce max {"x", "y"})"), 29, bad);
    try {
      parse(t, "t.mlir");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const support::UserError& e) {
      EXPECT_NE(std::string(e.what()).find("t.mlir:"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("unknown reduction kind"), std::string::npos) << e.what();
    }
  }
}

TEST(RoundTrip, LiteralsOfEveryKind) {
  Module m("lits");
  build_function(m, "f", [](FunctionBuilder& f) {
    std::vector<Tensor> out;
    out.push_back(f.constant(Literal::from<double>(f32({5}), {0.1, -0.0, 1e30, INFINITY, NAN})));
    out.push_back(f.constant(Literal::from<double>(Type(ElementType::bf16, {2}), {0.1, -3.5})));
    out.push_back(f.constant(Literal::from<double>(Type(ElementType::f16, {2}), {65504, 1e-7})));
    out.push_back(f.constant(Literal::from<double>(Type(ElementType::f8E4M3FN, {2}), {448, -0.5})));
    out.push_back(f.constant(Literal::from<double>(f64({2}), {3.141592653589793, 1e-300})));
    out.push_back(f.constant(Literal::from<int64_t>(Type(ElementType::ui64, {2}), {0, -1})));
    out.push_back(f.constant(Literal::from<int64_t>(Type(ElementType::i4, {3}), {-8, 7, 0})));
    out.push_back(f.constant(Literal::from<int64_t>(i1({2, 2}), {1, 0, 0, 1})));
    out.push_back(f.constant(Literal(Type(ElementType::i32, {0, 3}))));
    Literal c(Type(ElementType::c64, {2}));
    c.set_complex(0, {1.5, -2});
    c.set_complex(1, {0, 1e-3});
    out.push_back(f.constant(c));
    Literal big(f32({200}));
    for (int64_t i = 0; i < 200; ++i) big.set_double(i, 0.5 * double(i));
    out.push_back(f.constant(big));
    return out;
  });
  expect_round_trip(m);
}

TEST(Parse, JaxOutputWithLocationsAndDiscardableAttributes) {
  const std::string jax = R"(#loc = loc(unknown)
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32> {mhlo.layout_mode = "default"} loc("x")) -> (tensor<4xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.tanh %arg0 : tensor<4xf32> loc(#loc2)
    %1 = stablehlo.multiply %0, %0 {mhlo.frontend_attributes = {_xla_compute_type = "host"}} : tensor<4xf32> loc(#loc3)
    return %1 : tensor<4xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc1 = loc("/tmp/f.py":4:11)
#loc2 = loc("jit(f)/jit(main)/tanh"(#loc1))
#loc3 = loc("jit(f)/jit(main)/mul"(#loc1))
)";
  std::unique_ptr<Module> m = parse(jax, "jax.mlir");
  const Function& f = *m->functions[0];
  EXPECT_EQ(f.arg_attrs[0].get<std::string>("mhlo.layout_mode"), "default");
  EXPECT_EQ(f.result_attrs[0].get<std::string>("jax.result_info"), "");
  EXPECT_EQ(m->attrs.get<int64_t>("mhlo.num_partitions"), 1);
  EXPECT_EQ(f.body().ops()[1]->attrs().get<Opaque>("mhlo.frontend_attributes"),
            Opaque{"{_xla_compute_type = \"host\"}"});
  expect_round_trip(*m);
}


// Older StableHLO wrote the generic form's list attributes as 1-D dense tensors; they read as the
// same lists as today's array<i64>/array<i1> (so both texts print alike), while a constant's 1-D
// integer value stays a tensor.
TEST(RoundTrip, LegacyDenseListsReadAsTheirArrays) {
  auto text = [](bool legacy) {
    auto ints = [&](const std::string& v, int n) {
      return legacy ? fmt::format("dense<[{}]> : tensor<{}xi64>", v, n) : fmt::format("array<i64: {}>", v);
    };
    std::string reversal = legacy ? "dense<false> : tensor<1xi1>" : "array<i1: false>";
    return fmt::format(R"(module {{
  func.func public @main(%x: tensor<4x6xf32>, %i: tensor<1xi64>, %k: tensor<3x2x1xf32>, %w: tensor<1x1x2xf32>) -> (tensor<6xf32>, tensor<2x3xf32>, tensor<6x4xf32>, tensor<2x4x6xf32>, tensor<3x2x2xf32>, tensor<2xi64>) {{
    %z = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %c = "stablehlo.constant"() {{value = dense<[1, 2]> : tensor<2xi64>}} : () -> tensor<2xi64>
    %0 = "stablehlo.gather"(%x, %i) {{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [0], start_index_map = [0]>, slice_sizes = {}}} : (tensor<4x6xf32>, tensor<1xi64>) -> tensor<6xf32>
    %1 = "stablehlo.reduce_window"(%x, %z) ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }}) {{window_dimensions = {}, window_strides = {}, base_dilations = {}, window_dilations = {}}} : (tensor<4x6xf32>, tensor<f32>) -> tensor<2x3xf32>
    %2 = "stablehlo.transpose"(%x) {{permutation = {}}} : (tensor<4x6xf32>) -> tensor<6x4xf32>
    %3 = "stablehlo.broadcast_in_dim"(%x) {{broadcast_dimensions = {}}} : (tensor<4x6xf32>) -> tensor<2x4x6xf32>
    %4 = "stablehlo.convolution"(%k, %w) {{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>, feature_group_count = 1 : i64, window_reversal = {}}} : (tensor<3x2x1xf32>, tensor<1x1x2xf32>) -> tensor<3x2x2xf32>
    return %0, %1, %2, %3, %4, %c : tensor<6xf32>, tensor<2x3xf32>, tensor<6x4xf32>, tensor<2x4x6xf32>, tensor<3x2x2xf32>, tensor<2xi64>
  }}
}}
)",
                       ints("1, 6", 2), ints("2, 2", 2), ints("2, 2", 2), ints("1, 1", 2), ints("1, 1", 2),
                       ints("1, 0", 2), ints("1, 2", 2), reversal);
  };
  std::unique_ptr<Module> legacy, modern;
  try {
    legacy = parse(text(true), "legacy.mlir");
    modern = parse(text(false), "modern.mlir");
  } catch (const ParseError& e) {
    FAIL() << e.what();
  }
  std::string printed = print(*modern);
  EXPECT_EQ(print(*legacy), printed);
  EXPECT_NE(printed.find("stablehlo.constant dense<[1, 2]> : tensor<2xi64>"), std::string::npos) << printed;
  EXPECT_NE(printed.find("window = {reverse = [false]}"), std::string::npos) << printed;
}

// Forms StableHLO's and Shardy's own printers and parsers take, found in their public test files:
// each reads as the same module as its plain spelling, and the printed module reads back.
TEST(Parse, FormsTheUpstreamPrintersWrite) {
  const char* written = R"(module {
  func.func public @main(%a: tensor<2x3xf32>, %i: tensor<1xi64>) -> (tensor<2x3xf32>, tensor<3xi32>, tensor<3xf32>, tensor<3xf32>, tensor<4x!quant.uniform<u8:f32, 3.400000e+01:16>>) {
    "stablehlo.optimization_barrier"() : () -> ()
    %0 = stablehlo.optimization_barrier {x = 1 : i32} %a : tensor<2x3xf32>
    %1 = stablehlo.constant() {value = dense<[1, 512, 4]> : tensor<3xi32>} : () -> tensor<3xi32>
    %2 = "stablehlo.gather"(%a, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 0,>, slice_sizes = array<i64: 1, 3>} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<3xf32>
    %3 = stablehlo.constant dense<"0x0000C07F"> : tensor<3xf32>
    %4 = "stablehlo.sort"(%0) ({
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      %c = stablehlo.compare LT, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %5 = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
    %6 = stablehlo.uniform_quantize %5 : (tensor<4xf32>) -> tensor<4x!quant.uniform<u8:f32, 3.400000e+01:16>>
    return {y = 2 : i32} %4, %1, %2, %3, %6 : tensor<2x3xf32>, tensor<3xi32>, tensor<3xf32>, tensor<3xf32>, tensor<4x!quant.uniform<u8:f32, 3.400000e+01:16>>
  }
}
)";
  std::unique_ptr<Module> m;
  try {
    m = parse(written, "forms.mlir");
  } catch (const ParseError& e) {
    FAIL() << e.what();
  }
  const Block& body = m->find_function("main")->body();
  EXPECT_EQ(body.ops()[0]->kind(), OpKind::OptimizationBarrier);
  EXPECT_EQ(body.ops()[0]->operands().size(), 0u);
  const Op* sort = nullptr;
  for (const auto& op : body.ops())
    if (op->kind() == OpKind::Sort) sort = op.get();
  ASSERT_NE(sort, nullptr);
  EXPECT_EQ(sort->attrs().get<int64_t>("dimension"), -1);  // the default stablehlo-opt leaves out
  const Literal& nan_splat = body.ops()[4]->attrs().get<Literal>("value");
  ASSERT_EQ(nan_splat.num_elements(), 3);
  for (int64_t k = 0; k < 3; ++k) EXPECT_TRUE(std::isnan(nan_splat.get_double(k)));
  std::string printed = print(*m);
  EXPECT_NE(printed.find("stablehlo.optimization_barrier()"), std::string::npos) << printed;
  EXPECT_NE(printed.find("!quant.uniform<u8:f32, 34.0:16>"), std::string::npos) << printed;
  expect_round_trip(*m);
}

// custom_call's api_version is an i32 enum: it prints as one (an i64 would not read back upstream).
TEST(RoundTrip, CustomCallApiVersionStaysI32) {
  auto m = parse(R"(func.func @main(%a: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.custom_call @foo(%a) {api_version = 2 : i32} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
)",
                 "call.mlir");
  std::string printed = print(*m);
  EXPECT_NE(printed.find("api_version = 2 : i32"), std::string::npos) << printed;
}

// A mesh written inline in a sharding is declared as Shardy's lift-inlined-meshes pass declares it:
// the module's equal mesh where it has one, else a new one (and one for both of its uses).
TEST(Parse, InlineMeshesAreLiftedIntoTheModule) {
  auto m = parse(R"(sdy.mesh @m = <["a"=2]>
func.func @main(%x: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<mesh<["a"=2]>, [{"a"}, {}]>}, %y: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<mesh<["x"=2, "y"=2]>, [{"x"}, {"y"}]>}) -> tensor<8x8xf32> {
  %0 = stablehlo.add %x, %y : tensor<8x8xf32>
  %1 = sdy.sharding_constraint %0 <mesh<["x"=2, "y"=2]>, [{}, {"x"}]> : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
)",
                 "inline.mlir");
  ASSERT_EQ(m->meshes.size(), 2u);
  EXPECT_EQ(m->meshes[1].name, "inlined_mesh");
  const Function& f = *m->find_function("main");
  EXPECT_EQ(f.arg_sharding(0)->mesh, "m");
  EXPECT_EQ(f.arg_sharding(1)->mesh, "inlined_mesh");
  EXPECT_EQ(f.body().ops()[1]->attrs().get<Sharding>("sharding").mesh, "inlined_mesh");
  expect_round_trip(*m);
}

// MLIR's type and attribute aliases stand for their text; location aliases are read as before.
TEST(Parse, TypeAndAttributeAliasesStandForTheirText) {
  const char* aliased = R"(!t = tensor<2x3xf32>
#dn = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>
#loc1 = loc("x.py":3:4)
func.func @main(%a: !t, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %0 = "stablehlo.dot_general"(%a, %b) {dot_dimension_numbers = #dn} : (!t, tensor<3x4xf32>) -> tensor<2x4xf32> loc(#loc1)
  return %0 : tensor<2x4xf32>
}
)";
  const char* plain = R"(func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
)";
  std::unique_ptr<Module> a;
  try {
    a = parse(aliased, "aliased.mlir");
  } catch (const ParseError& e) {
    FAIL() << e.what();
  }
  EXPECT_EQ(print(*a), print(*parse(plain, "plain.mlir")));
  // A definition's line stays (empty): an error after it names the line as written.
  try {
    parse("!t = tensor<2xf32>\nfunc.func @main(%a: !t) -> !t {\n  %0 = stablehlo.frob %a : !t\n  return %0 : !t\n}\n", "e.mlir");
    FAIL() << "no error";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line, 3);
  }
}

// The spec's ReplicaGroupMeshAxes reads as the dense groups it stands for: the devices that differ
// only along the listed axes (or sub-axes), ordered by their coordinates along them, named by the
// mesh's device ids. (It was kept as opaque text, and the collectives ran over every process.)
TEST(Parse, ReplicaGroupMeshAxesAreTheirGroups) {
  auto groups = [](const std::string& mesh, const std::string& axes) {
    auto m = parse("func.func @main(%a: tensor<1xi64>) -> tensor<1xi64> {\n"
                   "  %0 = \"stablehlo.all_reduce\"(%a) ({\n  ^bb0(%x: tensor<i64>, %y: tensor<i64>):\n"
                   "    %s = stablehlo.add %x, %y : tensor<i64>\n    stablehlo.return %s : tensor<i64>\n"
                   "  }) {replica_groups = #stablehlo.replica_group_mesh_axes<mesh = " + mesh + ", axes = [" + axes +
                       "]>} : (tensor<1xi64>) -> tensor<1xi64>\n  return %0 : tensor<1xi64>\n}\n",
                   "groups.mlir");
    return m->find_function("main")->body().ops()[0]->attrs().get<IntMatrix>("replica_groups").to_rows();
  };
  const std::string x2y4 = "#stablehlo.mesh<axes = [#stablehlo.mesh_axis<name = \"x\", size = 2>, "
                           "#stablehlo.mesh_axis<name = \"y\", size = 4>]>";
  using Rows = std::vector<std::vector<int64_t>>;
  // The spec interpreter's @mesh_axes_subaxis: y's first sub-axis of 2 pairs y with y + 2.
  EXPECT_EQ(groups(x2y4, "#stablehlo.axis_ref<name = \"y\", sub_axis_info = (1)2>"), (Rows{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(groups(x2y4, "#stablehlo.axis_ref<name = \"y\", sub_axis_info = (2)2>"), (Rows{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(groups(x2y4, "#stablehlo.axis_ref<name = \"x\">"), (Rows{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(groups(x2y4, "#stablehlo.axis_ref<name = \"y\">, #stablehlo.axis_ref<name = \"x\">"),
            (Rows{{0, 4, 1, 5, 2, 6, 3, 7}}));
  EXPECT_EQ(groups("#stablehlo.mesh<axes = [#stablehlo.mesh_axis<name = \"x\", size = 2>, #stablehlo.mesh_axis<name = "
                   "\"y\", size = 2>], device_ids = [3, 2, 1, 0]>",
                   "#stablehlo.axis_ref<name = \"x\">"),
            (Rows{{3, 1}, {2, 0}}));
  std::string e = "<no error>";
  try {
    groups(x2y4, "#stablehlo.axis_ref<name = \"z\">");
  } catch (const ParseError& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("#stablehlo.replica_group_mesh_axes: the mesh has no axis \"z\""), std::string::npos) << e;
}

}  // namespace
}  // namespace tessera::stablehlo
