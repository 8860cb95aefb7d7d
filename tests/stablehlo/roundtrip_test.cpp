// print -> parse -> print is the identity: for modules the builder makes (every op family, every
// attribute kind, shardings, regions), and, in conformance_roundtrip_test, for every conformance
// file.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tessera::stablehlo
