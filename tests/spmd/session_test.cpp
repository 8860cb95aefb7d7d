// The Session on host devices: the worked example and its gradient sharded equal the single-device
// interpreter, shard_dims reports the pieces, and the report pins the collectives inserted.
#include <gtest/gtest.h>

#include <random>

#include "autodiff/reverse.h"
#include "common/error_of.h"
#include "common/random_literal.h"
#include "common/worked_example.h"
#include "interp/interpreter.h"
#include "runtime/session.h"
#include "stablehlo/printer.h"

namespace tessera::runtime {
namespace {

using namespace tessera::ir;

constexpr double kTolerance = 1e-5;  // relative, sharded vs unsharded (DESIGN.md §2)

using testing::random_literal;

void expect_close(const Literal& a, const Literal& b) {
  ASSERT_EQ(to_string(a.type()), to_string(b.type()));
  for (int64_t i = 0; i < a.num_elements(); ++i)
    EXPECT_NEAR(a.get_double(i), b.get_double(i), kTolerance * (1 + std::abs(b.get_double(i)))) << "element " << i;
}

std::vector<Literal> inputs_for(const Function& f) { return testing::random_inputs(f, 7); }

void expect_sharded_equals_unsharded(const Module& m, const std::string& fn, const CompiledProgram& p, const Session& s) {
  std::vector<Literal> in = inputs_for(*m.find_function(fn));
  std::vector<Literal> want = interp::evaluate(m, fn, in);
  std::vector<Literal> got = s.run_sharded(p, in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i]);
}

TEST(Session, WorkedExampleShardedEqualsInterpreter) {
  Module m("sharded_loss");
  testing::build_sharded_loss(m);
  Session s = Session::host(4);
  CompiledProgram p = s.compile(m, "sharded_loss");
  expect_sharded_equals_unsharded(m, "sharded_loss", p, s);
  auto dims = s.shard_dims(p);
  ASSERT_EQ(dims.size(), 2u);
  for (const auto& piece : dims[0]) EXPECT_EQ(piece, (std::vector<int64_t>{2, 4}));
  for (const auto& piece : dims[1]) EXPECT_EQ(piece, (std::vector<int64_t>{4, 3}));
  // The loss is a sum over the split rows: one all_reduce of a scalar, nothing else.
  EXPECT_EQ(p.report().collectives.size(), 1u) << p.report().to_string();
  EXPECT_EQ(p.report().count("all_reduce"), 1);
}

TEST(Session, WorkedExampleGradientShardedEqualsInterpreter) {
  Module m("sharded_loss");
  Function& f = testing::build_sharded_loss(m);
  autodiff::reverse(m, f, {});
  Session s = Session::host(4);
  CompiledProgram p = s.compile(m, "sharded_loss_grad");
  expect_sharded_equals_unsharded(m, "sharded_loss_grad", p, s);
  // x's gradient stays in row pieces; w's gradient (replicated) sums over the rows: one all_reduce.
  EXPECT_EQ(p.report().count("all_reduce"), 1) << p.report().to_string();
  EXPECT_EQ(p.report().count("all_gather"), 0) << p.report().to_string();
}

TEST(Session, ElementwiseChainOnRowsMovesNothing) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  build_function(m, "chain", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({16, 8}), Sharding{"m", {{"data"}, {}}, {}, {}});
    Tensor y = f.param(f32({16, 8}));
    Tensor z = tanh(x * y + 1.0);
    return exp(z) - z * z;
  });
  Session s = Session::host(4);
  CompiledProgram p = s.compile(m, "chain");
  EXPECT_EQ(p.report().collectives.size(), 0u) << p.report().to_string();
  // y follows x's rows: every piece is a quarter.
  auto dims = s.shard_dims(p);
  for (const auto& piece : dims[1]) EXPECT_EQ(piece, (std::vector<int64_t>{4, 8}));
  expect_sharded_equals_unsharded(m, "chain", p, s);
}

TEST(Session, DataParallelMlpForwardMovesNothing) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  build_function(m, "mlp", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 6}), Sharding{"m", {{"data"}, {}}, {}, {}});
    Tensor w1 = f.param(f32({6, 5}), Sharding{"m", {{}, {}}, {}, {}});
    Tensor w2 = f.param(f32({5, 3}), Sharding{"m", {{}, {}}, {}, {}});
    return matmul(tanh(matmul(x, w1)), w2);
  });
  Session s = Session::host(4);
  CompiledProgram p = s.compile(m, "mlp");
  EXPECT_EQ(p.report().collectives.size(), 0u) << p.report().to_string();
  expect_sharded_equals_unsharded(m, "mlp", p, s);
}

TEST(Session, ContractingDimensionSplitSumsOnce) {
  Module m;
  m.add_mesh(Mesh{"m", {{"model", 4}}, {}});
  build_function(m, "mm", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({6, 8}), Sharding{"m", {{}, {"model"}}, {}, {}});
    Tensor w = f.param(f32({8, 5}), Sharding{"m", {{"model"}, {}}, {}, {}});
    return matmul(x, w);
  });
  Session s = Session::host(4);
  CompiledProgram p = s.compile(m, "mm");
  auto counts = p.report().counts();
  EXPECT_EQ(p.report().collectives.size(), 1u) << p.report().to_string();
  EXPECT_EQ(p.report().count("all_reduce") + p.report().count("reduce_scatter"), 1);
  expect_sharded_equals_unsharded(m, "mm", p, s);
}

TEST(Session, InputsAreCheckedByName) {
  Module m("sharded_loss");
  testing::build_sharded_loss(m);
  Session s = Session::host(4);
  CompiledProgram p = s.compile(m, "sharded_loss");
  std::string e = testing::error_of([&] { s.run_sharded(p, {Literal(f32({8, 4})), Literal(f32({3, 3}))}); });
  EXPECT_NE(e.find("parameter 1"), std::string::npos) << e;
  EXPECT_NE(e.find("tensor<4x3xf32>"), std::string::npos) << e;
  e = testing::error_of([&] { Session::host(2).compile(m, "sharded_loss"); });
  EXPECT_NE(e.find("4 devices"), std::string::npos) << e;
}

TEST(Session, DonatedBufferCannotBeUsedAgain) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 2}}, {}});
  build_function(m, "step", [](FunctionBuilder& f) {
    Tensor w = f.param(f32({4, 2}), Sharding{"m", {{"data"}, {}}, {}, {}});
    return w * 0.5;
  });
  Session s = Session::host(2);
  ShardedProgram sp = s.sharded_program(s.compile(m, "step"), {{0, 0}});
  Literal w0 = random_literal(f32({4, 2}), 3);
  std::vector<ShardedBuffer> in = {sp.stage(0, w0)};
  std::vector<ShardedBuffer> out = sp.execute(in);
  EXPECT_TRUE(in[0].donated());
  Literal got = sp.fetch(out[0]);
  for (int64_t i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(static_cast<float>(got.get_double(i)), static_cast<float>(w0.get_double(i) * 0.5));
  std::string e = testing::error_of([&] { sp.execute(in); });
  EXPECT_NE(e.find("donated"), std::string::npos) << e;
  // Chaining works: the output feeds the next step.
  std::vector<ShardedBuffer> next = {out[0]};
  std::vector<ShardedBuffer> out2 = sp.execute(next);
  EXPECT_FLOAT_EQ(static_cast<float>(sp.fetch(out2[0]).get_double(0)), static_cast<float>(w0.get_double(0) * 0.25));
}

}  // namespace
}  // namespace tessera::runtime

namespace tessera::runtime {
namespace {

using namespace tessera::ir;

// shard_map style: the body sees its rows and sums the squares over "data" itself.
TEST(Session, ManualComputationBodiesRunAsWritten) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  build_function(m, "f", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 3}), Sharding{"m", {{"data"}, {}}, {}, {}});
    Sharding rows{"m", {{"data"}, {}}, {}, {}}, whole{"m", {}, {}, {}};
    return manual({x}, {rows}, {whole}, {"data"}, [](Builder&, const std::vector<Tensor>& in) {
      Tensor local = sum(in[0] * in[0]);
      return std::vector<Tensor>{all_reduce(local, {{0, 1, 2, 3}})};
    })[0];
  });
  Session s = Session::host(4);
  CompiledProgram p = s.compile(m, "f");
  EXPECT_EQ(p.local_function().parameter(0)->type(), f32({2, 3}));
  std::vector<Literal> in = inputs_for(*m.find_function("f"));
  double want = 0;
  for (int64_t i = 0; i < in[0].num_elements(); ++i) want += in[0].get_double(i) * in[0].get_double(i);
  EXPECT_NEAR(s.run_sharded(p, in)[0].get_double(0), want, 1e-5 * want);
}

// A free (non-manual) axis in the in and out shardings: the body, written for pieces split by the
// manual axis x, runs on pieces whole along y, and its results are laid out as declared.
TEST(Session, ManualComputationWithFreeAxes) {
  Module m;
  m.add_mesh(Mesh{"m", {{"x", 2}, {"y", 2}}, {}});
  build_function(m, "f", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 6}), Sharding{"m", {{"x", "y"}, {}}, {}, {}});
    Sharding in{"m", {{"x", "y"}, {}}, {}, {}}, rows{"m", {{"x"}, {"y"}}, {}, {}}, cols{"m", {{"y"}}, {}, {}};
    return manual({x}, {in}, {rows, cols}, {"x"}, [](Builder&, const std::vector<Tensor>& in) {
      Tensor local = tanh(in[0]) * 2.0;                                     // [4, 6]: x's rows, every column
      Tensor total = all_reduce(reduce_sum(in[0], {0}), {{0, 2}, {1, 3}});  // [6]: over x, at each y
      return std::vector<Tensor>{local, total};
    });
  });
  Session s = Session::host(4);
  CompiledProgram p = s.compile(m, "f");
  std::vector<Literal> in = inputs_for(*m.find_function("f"));
  std::vector<Literal> got = s.run_sharded(p, in);
  ASSERT_EQ(got.size(), 2u);
  expect_close(got[0], interp::evaluate(m, "f", in)[0]);  // no collective: the interpreter's value
  Literal sums(f32({6}));  // the interpreter's single-process all_reduce would double one half instead
  for (int64_t j = 0; j < 6; ++j) {
    double t = 0;
    for (int64_t i = 0; i < 8; ++i) t += in[0].get_double(i * 6 + j);
    sums.set_double(j, t);
  }
  expect_close(got[1], sums);
}

// A loop carries a row-split value: the body runs on pieces, nothing moves.
TEST(Session, WhileLoopKeepsItsLayout) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  build_function(m, "f", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 3}), Sharding{"m", {{"data"}, {}}, {}, {}});
    Tensor i0 = x.builder().scalar(ElementType::i32, 0);
    auto out = while_loop(
        {i0, x}, [](Builder& b, const std::vector<Tensor>& v) {
          return compare(v[0], b.scalar(ElementType::i32, 3), ComparisonDirection::LT);
        },
        [](Builder& b, const std::vector<Tensor>& v) {
          return std::vector<Tensor>{v[0] + b.scalar(ElementType::i32, 1), tanh(v[1]) * 1.5};
        });
    return out[1];
  });
  Session s = Session::host(4);
  CompiledProgram p = s.compile(m, "f");
  EXPECT_TRUE(p.report().collectives.empty()) << p.report().to_string();
  expect_sharded_equals_unsharded(m, "f", p, s);
}

}  // namespace
}  // namespace tessera::runtime
