// Tokens, tuples, composite and map through propagation, the partitioner and a sharded run on host
// devices: token values get no sharding and pass as they are (a token parameter in, a token result
// out), a composite is inlined and partitioned as its decomposition, map is split like any
// elementwise op, get_tuple_element of a tuple built in the program is its member, and a tuple
// result is whole on every device (its members gathered for it). Sharded equals unsharded. The
// streams keep their values whole: each device reads a whole infeed value and writes whole values;
// batch-norm ops are expanded before propagation, so a split batch sums its statistics across
// devices.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "comm/parallel.h"
#include "spmd/partition.h"

#include "interp/interpreter.h"
#include "ir/batch_norm.h"
#include "ir/builder_effects.h"
#include "ir/rng.h"
#include "runtime/session.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::spmd {
namespace {

using namespace tessera::ir;

TEST(Effects, TokensCompositeAndMapPartitionLikeTheirElementwiseOps) {
  Module m("effects");
  m.add_mesh(Mesh{"m", {{"a", 2}, {"b", 2}}, {}});
  const Function& d = build_function(m, "decomp", [](FunctionBuilder& g) {
    Tensor x = g.param(f32({8, 6})), y = g.param(f32({8, 6}));
    return tanh(x) * y;
  });
  Sharding split{"m", {{"a"}, {"b"}}, {}, {}};
  build_function(m, "main", [&](FunctionBuilder& f) -> std::vector<Tensor> {
    Tensor tok = f.param(Type::token());
    Tensor x = f.param(f32({8, 6}), split);
    Tensor y = f.param(f32({8, 6}), split);
    Tensor t = tuple(f, {x, y});
    Tensor c = composite(f, "test.tanh_mul", d, {get_tuple_element(t, 0), get_tuple_element(t, 1)})[0];
    Tensor z = map({c, x}, ElementType::f32, [](Builder&, const std::vector<Tensor>& a) { return a[0] - a[1] * a[1]; });
    return {after_all(f, {tok, create_token(f)}), z, tuple(f, {z, get_tuple_element(t, 1)})};
  });
  std::vector<Literal> in = {Literal::token(), Literal(f32({8, 6})), Literal(f32({8, 6}))};
  for (int64_t i = 0; i < 48; ++i) {
    in[1].set_double(i, 0.1 * static_cast<double>(i % 7) - 0.3);
    in[2].set_double(i, 0.05 * static_cast<double>(i % 11) + 0.2);
  }
  std::vector<Literal> want = interp::evaluate(m, "main", in);
  runtime::Session s = runtime::Session::host(4);
  runtime::CompiledProgram p = s.compile(m, "main");
  std::vector<Literal> got = s.run_sharded(p, in);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], Literal::token());
  EXPECT_EQ(got[1], want[1]) << stablehlo::print(m);
  // A tuple result is whole on every device: its members are gathered for it.
  EXPECT_EQ(got[2], want[2]);
  EXPECT_EQ(got[2], Literal::tuple({want[1], in[2]}));
  EXPECT_EQ(p.report().collectives.size(), 4u);  // each member gathered along a, then b
}

// y = x * infeed(), written to the outfeed, with x split in two along rows: the local program reads
// the whole w on each device (infeed's factor rule keeps it whole) and slices its rows, and gathers
// y whole before writing it, so each device writes the unsharded y; y itself stays split.
TEST(Effects, StreamsKeepTheirValuesWhole) {
  Module m("streams");
  m.add_mesh(Mesh{"m", {{"a", 2}}, {}});
  build_function(m, "main", [&](FunctionBuilder& f) -> std::vector<Tensor> {
    Tensor x = f.param(f32({8, 6}), Sharding{"m", {{"a"}, {}}, {}, {}});
    Tensor tok = f.param(Type::token());
    AttrMap in;
    in.set("infeed_config", std::string());
    std::vector<Tensor> fed = f.emit(OpKind::Infeed, {tok}, in, {f32({8, 6}), Type::token()});
    Tensor y = x * fed[0];
    AttrMap out;
    out.set("outfeed_config", std::string());
    Tensor done = f.emit(OpKind::Outfeed, {y, fed[1]}, out, {Type::token()})[0];
    return {y, done};
  });
  Literal x(f32({8, 6})), w(f32({8, 6}));
  for (int64_t i = 0; i < 48; ++i) {
    x.set_double(i, 0.25 * static_cast<double>(i % 9) - 1);
    w.set_double(i, 0.5 * static_cast<double>(i % 5) + 0.5);
  }
  std::mutex mu;
  int reads = 0;
  std::vector<Literal> written;
  interp::Options hooks;
  hooks.infeed = [&](const Type& t) {
    std::lock_guard lock(mu);
    EXPECT_EQ(t, f32({8, 6}));
    ++reads;
    return w;
  };
  hooks.outfeed = [&](std::vector<Literal> v) {
    std::lock_guard lock(mu);
    for (Literal& l : v) written.push_back(std::move(l));
  };
  std::vector<Literal> want = interp::evaluate(m, "main", {x, Literal::token()}, hooks);
  ASSERT_EQ(written.size(), 1u);
  reads = 0;
  written.clear();
  spmd::PartitionOptions po;
  po.name = "local";
  spmd::partition(m, *m.find_function("main"), m, po);
  std::vector<Literal> rows(2, Literal(f32({4, 6})));
  for (int64_t d = 0; d < 2; ++d)
    for (int64_t i = 0; i < 24; ++i) rows[d].set_double(i, x.get_double(24 * d + i));
  comm::ParallelOptions p;
  p.base = hooks;
  std::vector<Literal> got =
      comm::run_parallel(m, {{"local", "local"}}, {rows[0], Literal::token(), rows[1], Literal::token()}, p);
  EXPECT_EQ(reads, 2);
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(written[0], want[0]) << stablehlo::print(m);
  EXPECT_EQ(written[1], want[0]);
  ASSERT_EQ(got.size(), 4u);
  for (int64_t d = 0; d < 2; ++d) {
    ASSERT_EQ(got[2 * d].type(), f32({4, 6})) << stablehlo::print(m);
    for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(got[2 * d].get_double(i), want[0].get_double(24 * d + i)) << d << " " << i;
  }
}

// Batch-norm training and its gradient with the batch split along a and the features along b:
// expanded into reductions, whose partial sums are combined. Sums taken in another order may differ
// in the last f32 bits, so results agree to 1e-5 relative (of the largest magnitude, about 4).
TEST(Effects, BatchNormIsPartitionedAsItsExpansion) {
  Module m("bn");
  m.add_mesh(Mesh{"m", {{"a", 2}, {"b", 2}}, {}});
  Sharding split{"m", {{"a"}, {"b"}}, {}, {}};
  BatchNormAttrs bn{1e-3f, 1};
  build_function(m, "main", [&](FunctionBuilder& f) -> std::vector<Tensor> {
    Tensor x = f.param(f32({8, 4}), split);
    Tensor scale = f.param(f32({4})), offset = f.param(f32({4}));
    std::vector<Tensor> t = batch_norm_training(x, scale, offset, bn);
    std::vector<Tensor> g = batch_norm_grad(x, scale, t[1], t[2], t[0], bn);
    Tensor y = batch_norm_inference(x, scale, offset, t[1], t[2], bn);
    return {t[0], t[1], t[2], g[0], g[1], g[2], y};
  });
  std::vector<Literal> in = {Literal(f32({8, 4})), Literal(f32({4})), Literal(f32({4}))};
  for (int64_t i = 0; i < 32; ++i) in[0].set_double(i, 0.25 * static_cast<double>((i * 5) % 9) - 1.0);
  for (int64_t i = 0; i < 4; ++i) {
    in[1].set_double(i, 0.5 + 0.25 * static_cast<double>(i));
    in[2].set_double(i, 0.125 * static_cast<double>(i) - 0.25);
  }
  std::vector<Literal> want = interp::evaluate(m, "main", in);
  runtime::Session s = runtime::Session::host(4);
  runtime::CompiledProgram p = s.compile(m, "main");
  std::vector<Literal> got = s.run_sharded(p, in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].type(), want[i].type());
    for (int64_t j = 0; j < want[i].num_elements(); ++j)
      EXPECT_TRUE(std::abs(got[i].get_double(j) - want[i].get_double(j)) <= 4e-5)
          << "result " << i << "[" << j << "]: " << got[i].get_double(j) << " vs " << want[i].get_double(j);
  }
  EXPECT_FALSE(p.report().collectives.empty());  // the batch statistics are summed across a
}

// The random ops' results are whole on every device (no dimension is shardable): each device draws
// the numbers an unsharded run draws, and a split operand meets them as a replicated value.
TEST(Effects, RandomOpsAreWholeAndEqualTheUnshardedRun) {
  Module m("random");
  m.add_mesh(Mesh{"m", {{"a", 2}, {"b", 2}}, {}});
  Sharding split{"m", {{"a"}, {"b"}}, {}, {}};
  build_function(m, "main", [&](FunctionBuilder& f) -> std::vector<Tensor> {
    Tensor x = f.param(f32({8, 6}), split);
    Tensor state = f.param(Type(ElementType::ui64, {2}));
    std::vector<Tensor> g = rng_bit_generator(state, RngAlgorithm::kPhilox, Type(ElementType::ui32, {8, 6}));
    Tensor shape = f.constant(Literal::from<int64_t>(i64({2}), {8, 6}));
    Tensor u = rng(f.scalar(ElementType::f32, -1), f.scalar(ElementType::f32, 1), shape, RngDistribution::kUniform,
                   f32({8, 6}));
    return {g[0], g[1], x * u};
  });
  std::vector<Literal> in = {Literal(f32({8, 6})), Literal::from<int64_t>(Type(ElementType::ui64, {2}), {7, 3})};
  for (int64_t i = 0; i < 48; ++i) in[0].set_double(i, 0.25 * static_cast<double>(i % 5) - 0.5);
  std::vector<Literal> want = interp::evaluate(m, "main", in);
  runtime::Session s = runtime::Session::host(4);
  runtime::CompiledProgram p = s.compile(m, "main");
  std::vector<Literal> got = s.run_sharded(p, in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "result " << i;
}

// async_start's body reads its operand from outside the region: partitioned, the body reads the
// local piece the op gets (here the whole x, gathered), and the slice equals the unsharded one.
TEST(Effects, AnAsyncSliceOfASplitValueEqualsTheUnshardedRun) {
  auto m = stablehlo::parse(R"(sdy.mesh @m = <["a"=2]>
func.func @main(%x: tensor<8x2xf32> {sdy.sharding = #sdy.sharding<@m, [{"a"}, {}]>}) -> tensor<3x2xf32> {
  %0 = "stablehlo.async_start"(%x) ({
    %1 = "stablehlo.slice"(%x) {start_indices = array<i64: 3, 0>, limit_indices = array<i64: 6, 2>, strides = array<i64: 1, 1>} : (tensor<8x2xf32>) -> tensor<3x2xf32>
    "stablehlo.return"(%1) : (tensor<3x2xf32>) -> ()
  }) : (tensor<8x2xf32>) -> !stablehlo.future<tensor<3x2xf32>>
  %2 = "stablehlo.async_done"(%0) : (!stablehlo.future<tensor<3x2xf32>>) -> tensor<3x2xf32>
  return %2 : tensor<3x2xf32>
}
)",
                            "async.mlir");
  Literal x(f32({8, 2}));
  for (int64_t i = 0; i < 16; ++i) x.set_double(i, static_cast<double>(i));
  std::vector<Literal> want = interp::evaluate(*m, "main", {x});
  runtime::Session s = runtime::Session::host(2);
  runtime::CompiledProgram p = s.compile(*m, "main");
  std::vector<Literal> got = s.run_sharded(p, {x});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], want[0]);
  EXPECT_EQ(want[0].get_double(0), 6.0);  // row 3, column 0
}

}  // namespace
}  // namespace tessera::spmd
