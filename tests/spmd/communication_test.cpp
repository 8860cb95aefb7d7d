// Communication is minimal, not merely correct: the collectives the partitioner inserts, and the
// bytes each device moves, are pinned for small programs whose best plan is known (element-wise
// chains and data-parallel forwards move nothing; a data-parallel gradient all-reduces each
// gradient once; a split contraction sums once; an FSDP layer gathers its weight and
// reduce-scatters its gradient). Every program is also run sharded against the interpreter.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "autodiff/reverse.h"
#include "common/random_literal.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "runtime/session.h"
#include "spmd/combine.h"

namespace tessera::spmd {
namespace {

using namespace tessera::ir;
using runtime::CompiledProgram;
using runtime::Session;

constexpr double kTolerance = 1e-5;

void expect_same_numbers(const Module& m, const std::string& fn, const Session& s, const CompiledProgram& p) {
  std::vector<Literal> in = testing::random_inputs(*m.find_function(fn), 11);
  std::vector<Literal> want = interp::evaluate(m, fn, in), got = s.run_sharded(p, in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < got.size(); ++r)
    for (int64_t i = 0; i < got[r].num_elements(); ++i)
      EXPECT_NEAR(got[r].get_double(i), want[r].get_double(i), kTolerance * (1 + std::abs(want[r].get_double(i))));
}

// all-reduce of `bytes` over n devices: 2 (n-1)/n of them per device (nccl-tests' accounting).
int64_t all_reduce_bytes(int64_t bytes, int64_t n) { return 2 * bytes * (n - 1) / n; }

Sharding rows(size_t rank) {
  Sharding s{"m", std::vector<DimSharding>(rank), {}, {}};
  s.dims[0] = {"data"};
  return s;
}

TEST(Communication, ElementwiseChainMovesNothingAndHoldsAQuarter) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  Function& f = build_function(m, "chain", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({64, 32}), rows(2));
    Tensor y = b.param(f32({64, 32}));
    Tensor z = x * y;
    for (int i = 0; i < 6; ++i) z = tanh(z) + x;
    return z * 0.5;
  });
  Session s = Session::host(4);
  CompiledProgram p = s.compile(m, "chain");
  EXPECT_TRUE(p.report().collectives.empty()) << p.report().to_string();
  EXPECT_EQ(peak_live_bytes(p.local_function()) * 4, peak_live_bytes(f));
  expect_same_numbers(m, "chain", s, p);
}

ir::Function& mlp_loss(Module& m, std::optional<Sharding> w1s, std::optional<Sharding> w2s) {
  return build_function(m, "loss", [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({16, 8}), rows(2));
    Tensor w1 = b.param(f32({8, 8}), w1s);
    Tensor w2 = b.param(f32({8, 4}), w2s);
    Tensor h = tanh(matmul(x, w1));
    Tensor y = matmul(h, w2);
    return sum(y * y);
  });
}

TEST(Communication, DataParallelGradientAllReducesEachGradientOnce) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  Function& loss = mlp_loss(m, std::nullopt, std::nullopt);
  autodiff::ReverseOptions weights;
  weights.wrt = {1, 2};
  autodiff::reverse(m, loss, weights);
  Session s = Session::host(4);
  PartitionOptions separate;
  separate.combine_all_reduces = false;
  CompiledProgram p = s.compile(m, "loss_grad", separate);
  const Report& r = p.report();
  EXPECT_EQ(r.collectives.size(), 2u) << r.to_string();
  EXPECT_EQ(r.count("all_reduce"), 2) << r.to_string();
  int64_t bytes = all_reduce_bytes(8 * 8 * 4, 4) + all_reduce_bytes(8 * 4 * 4, 4);
  EXPECT_EQ(r.bytes_per_device(), bytes);
  expect_same_numbers(m, "loss_grad", s, p);

  // Combined (the default): one all_reduce of both gradients, the same bytes, the same numbers.
  CompiledProgram c = s.compile(m, "loss_grad");
  EXPECT_EQ(c.report().collectives.size(), 1u) << c.report().to_string();
  EXPECT_EQ(c.report().count("all_reduce"), 1);
  EXPECT_EQ(c.report().bytes_per_device(), bytes);
  expect_same_numbers(m, "loss_grad", s, c);

  // Its forward moves only the scalar loss.
  CompiledProgram fwd = s.compile(m, "loss");
  EXPECT_EQ(fwd.report().collectives.size(), 1u) << fwd.report().to_string();
  EXPECT_EQ(fwd.report().bytes_per_device(), all_reduce_bytes(4, 4));
}

TEST(Communication, FsdpLayerGathersWeightsAndReduceScattersGradients) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  // FSDP: each weight split along its first dimension over the data axis.
  Function& loss = mlp_loss(m, rows(2), rows(2));
  autodiff::ReverseOptions weights;
  weights.wrt = {1, 2};
  autodiff::reverse(m, loss, weights);
  Session s = Session::host(4);
  CompiledProgram p = s.compile(m, "loss_grad");
  const Report& r = p.report();
  // Forward: gather each weight before its use (the backward reuses the gathered copies);
  // backward: each gradient reduce-scattered to its parameter's pieces.
  EXPECT_EQ(r.count("all_gather"), 2) << r.to_string();
  EXPECT_EQ(r.count("reduce_scatter"), 2) << r.to_string();
  EXPECT_EQ(r.count("all_reduce"), 0) << r.to_string();
  int64_t w1 = 8 * 8 * 4, w2 = 8 * 4 * 4;
  EXPECT_EQ(r.bytes_per_device(), 2 * (w1 * 3 / 4 + w2 * 3 / 4));
  auto dims = s.shard_dims(p);
  for (const auto& piece : dims[1]) EXPECT_EQ(piece, (std::vector<int64_t>{2, 8}));
  expect_same_numbers(m, "loss_grad", s, p);
}

TEST(Communication, SplitContractionSumsOnce) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 2}, {"model", 4}}, {}});
  build_function(m, "mm", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({8, 16}), Sharding{"m", {{"data"}, {"model"}}, {}, {}});
    Tensor w = b.param(f32({16, 12}), Sharding{"m", {{"model"}, {}}, {}, {}});
    return matmul(x, w);
  });
  Session s = Session::host(8);
  CompiledProgram p = s.compile(m, "mm");
  const Report& r = p.report();
  EXPECT_EQ(r.collectives.size(), 1u) << r.to_string();
  EXPECT_EQ(r.count("all_reduce"), 1);
  // The [8,12] result in row halves, summed over the 4 model devices.
  EXPECT_EQ(r.bytes_per_device(), all_reduce_bytes(4 * 12 * 4, 4));
  expect_same_numbers(m, "mm", s, p);
}

TEST(Communication, ResultsGetTheShardingTheyDeclare) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 2}, {"model", 2}}, {}});
  Function& f = build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({4, 6}), Sharding{"m", {{"data"}, {}}, {}, {}});
    return exp(x);
  });
  f.set_result_sharding(0, Sharding{"m", {{}, {"model"}}, {}, {}});
  Session s = Session::host(4);
  CompiledProgram p = s.compile(m, "f");
  EXPECT_EQ(p.local_function().result_types[0], f32({4, 3}));
  // One all_to_all would do it with data; here data leaves dimension 0 and model (unused before)
  // slices dimension 1: an all_gather and a local slice.
  EXPECT_EQ(p.report().count("all_gather"), 1) << p.report().to_string();
  expect_same_numbers(m, "f", s, p);
}

// Two groups of combinable all_reduces where merging the first moves a member of the second: a1
// and a2 (groups {0,1},{2,3}) merge after a2, so b1, which reads a1's result through t, moves after
// a2 and so after b2. The second group's merged all_reduce must then go before b1, its last
// member now, not b2, where b1's operand is not yet made (seed 1449 of the property test).
TEST(Communication, CombiningAfterAnEarlierMergeMovedAMemberKeepsOperandsDefinedFirst) {
  Module m;
  Function& f = build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({4})), y = b.param(f32({4})), z = b.param(f32({4}));
    Tensor a1 = all_reduce(x, {{0, 1}, {2, 3}});
    Tensor t = a1 * 2.0;
    Tensor b1 = all_reduce(t, {{0, 2}, {1, 3}});
    Tensor b2 = all_reduce(y, {{0, 2}, {1, 3}});
    Tensor a2 = all_reduce(z, {{0, 1}, {2, 3}});
    return std::vector<Tensor>{a2, b1, b2};
  });
  Report report;
  EXPECT_EQ(combine_all_reduces(m, f, report), 2);
  EXPECT_EQ(report.count("all_reduce"), 2);
  std::set<const Value*> made;
  for (size_t i = 0; i < f.num_parameters(); ++i) made.insert(f.parameter(i));
  for (const auto& op : f.body().ops()) {
    for (const Value* v : op->operands()) EXPECT_TRUE(made.count(v)) << op->name() << " reads a value made after it";
    for (const Value* r : op->results()) made.insert(r);
  }
}

}  // namespace
}  // namespace tessera::spmd
