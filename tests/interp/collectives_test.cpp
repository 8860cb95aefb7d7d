// Collectives in a single process (DESIGN.md §2): each op's meaning when every process of the
// group holds this process's value, the grouping modes, replica_id/partition_id, a custom
// Collectives receiving the op, and every refusal of bad groups with its message.
#include <gtest/gtest.h>

#include "test_util.h"

namespace tessera::interp::testing {
namespace {

using E = ElementType;
using ir::OpKind;
using Groups = ir::Groups;

Literal x_4x2() { return lit(Type(E::f32, {4, 2}), {1, 2, 3, 4, 5, 6, 7, 8}); }

Literal scaled(const Literal& x, double k) {
  Literal y = x;
  for (int64_t i = 0; i < y.num_elements(); ++i) y.set_double(i, x.get_double(i) * k);
  return y;
}

Literal on_x(const std::function<Tensor(const Tensor&)>& f, Options options = {}) {
  return run1({x_4x2()}, [&](auto& p) { return f(p[0]); }, options);
}

TEST(SingleProcess, AllReduceFoldsTheBodyOverTheGroup) {
  Literal x = x_4x2();
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::all_reduce(t, {{0, 1, 2, 3}}); }), scaled(x, 4)));
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::all_reduce(t, {{0, 1}, {2, 3}}); }), scaled(x, 2)));
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::all_reduce(t, {{0, 1, 2}}, OpKind::Maximum); }), x));
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::all_reduce(t, {{0, 1, 2}}, OpKind::Minimum); }), x));
  Literal fourth = lit(Type(E::f32, {4, 2}), {1, 16, 81, 256, 625, 1296, 2401, 4096});
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::all_reduce(t, {{3, 2, 0, 1}}, OpKind::Multiply); }), fourth));
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::all_reduce(t, {{0}}); }), x));
}

TEST(SingleProcess, AllGatherRepeatsTheOperand) {
  Literal got = on_x([](const Tensor& t) { return ir::all_gather(t, 1, {{0, 1, 2}}); });
  EXPECT_TRUE(same(got, lit(Type(E::f32, {4, 6}), {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4,
                                                   5, 6, 5, 6, 5, 6, 7, 8, 7, 8, 7, 8})));
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::all_gather(t, 0, {{0, 1}, {2, 3}}); }),
                   lit(Type(E::f32, {8, 2}), {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8})));
}

TEST(SingleProcess, ReduceScatterKeepsThisProcesssBlockOfTheFold) {
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::reduce_scatter(t, 0, {{0, 1}}); }),
                   lit(Type(E::f32, {2, 2}), {2, 4, 6, 8})));
  // Process 0 is second in its group, so it receives the second block.
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::reduce_scatter(t, 0, {{1, 0}, {2, 3}}); }),
                   lit(Type(E::f32, {2, 2}), {10, 12, 14, 16})));
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::reduce_scatter(t, 1, {{0, 1}}, OpKind::Maximum); }),
                   lit(Type(E::f32, {4, 1}), {1, 3, 5, 7})));
}

TEST(SingleProcess, AllToAllRepeatsThisProcesssChunk) {
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::all_to_all(t, 0, 1, {{0, 1}}); }),
                   lit(Type(E::f32, {2, 4}), {1, 2, 1, 2, 3, 4, 3, 4})));
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::all_to_all(t, 0, 1, {{1, 0}}); }),
                   lit(Type(E::f32, {2, 4}), {5, 6, 5, 6, 7, 8, 7, 8})));
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::all_to_all(t, 1, 0, {{0, 1}}); }),
                   lit(Type(E::f32, {8, 1}), {1, 3, 5, 7, 1, 3, 5, 7})));
}

TEST(SingleProcess, CollectivePermuteGivesZerosUnlessProcessZeroIsATarget) {
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::collective_permute(t, {{1, 0}, {0, 1}}); }), x_4x2()));
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::collective_permute(t, {{0, 1}, {1, 2}}); }),
                   Literal(Type(E::f32, {4, 2}))));
  // In cross-partition mode (a channel) the ids are partitions: process (0, 1) is target 1.
  Options on_partition_1;
  on_partition_1.process = {0, 1, 1, 2};
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::collective_permute(t, {{0, 1}}); }, on_partition_1), x_4x2()));
}

TEST(SingleProcess, CollectiveBroadcastAndCollectiveReduce) {
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::collective_broadcast(t, {{0, 1}}); }), x_4x2()));
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::collective_reduce(t, {{0, 1, 2}}); }), scaled(x_4x2(), 3)));
  // Process 0 is not its group's root (the first id): it receives nothing.
  EXPECT_TRUE(same(on_x([](const Tensor& t) { return ir::collective_reduce(t, {{1, 0, 2}}); }),
                   Literal(Type(E::f32, {4, 2}))));
}

// An all_reduce written out by hand, to choose its channel and use_global_device_ids.
Tensor all_reduce_with(const Tensor& x, const Groups& groups, bool channel, bool global) {
  ir::AttrMap a;
  a.set("replica_groups", ir::IntMatrix::from_rows(groups));
  if (channel) a.set("channel_handle", ir::ChannelHandle{1, 1});
  if (global) a.set("use_global_device_ids", true);
  ir::Builder& b = x.builder();
  return b.emit_with_regions(OpKind::AllReduce, {x}, a, {}, [&](ir::Op& op) {
    ir::Block& r = op.add_region();
    ir::Builder rb(b.module(), r);
    Tensor lhs = rb.wrap(r.add_argument(Type(E::f32, {})));
    Tensor rhs = rb.wrap(r.add_argument(Type(E::f32, {})));
    r.append(std::make_unique<ir::Op>(OpKind::Return, std::vector<ir::Value*>{(lhs + rhs).value()},
                                      std::vector<Type>{}));
  })[0];
}

TEST(SingleProcess, GroupSizesFollowTheModeAndTheGrid) {
  Options grid;
  grid.process = {0, 0, 2, 3};  // 2 replicas x 3 partitions
  auto sum_with = [&](Groups g, bool channel, bool global) {
    return on_x([&](const Tensor& t) { return all_reduce_with(t, g, channel, global); }, grid);
  };
  EXPECT_TRUE(same(sum_with({}, false, false), scaled(x_4x2(), 2)));       // cross_replica: all replicas
  EXPECT_TRUE(same(sum_with({}, true, true), scaled(x_4x2(), 6)));         // flattened: all processes
  EXPECT_TRUE(same(sum_with({{0, 1}}, true, false), scaled(x_4x2(), 6)));  // replicas x every partition
  EXPECT_TRUE(same(sum_with({{0, 1}}, false, false), scaled(x_4x2(), 2)));
  EXPECT_TRUE(same(sum_with({{0, 4}, {1, 2}, {3, 5}}, true, true), scaled(x_4x2(), 2)));
  EXPECT_THROW(sum_with({{0, 1}}, false, true), support::UserError);
  ir::Module m;
  Literal x = x_4x2();
  ir::build_function(m, "f", [&](ir::FunctionBuilder& f) {
    Tensor r = all_reduce_with(f.param(x.type()), {{0, 1}}, true, false);
    auto groups = process_groups(*r.value()->defining_op(), grid.process);
    EXPECT_EQ(groups.size(), 1u);
    EXPECT_TRUE(groups.at(0) == std::vector<ProcessId>({{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 2}, {1, 2}}));
    return r;
  });
}

TEST(SingleProcess, ReplicaAndPartitionIdsComeFromTheProcess) {
  Options options;
  options.process = {2, 1, 4, 2};
  std::vector<Literal> got = run({}, [](ir::FunctionBuilder& f, auto&) {
    return std::vector<Tensor>{f.replica_id(), f.partition_id()};
  }, options);
  EXPECT_TRUE(same(got.at(0), ints(Type(E::ui32, {}), {2})));
  EXPECT_TRUE(same(got.at(1), ints(Type(E::ui32, {}), {1})));
}

// A Collectives that records what it is given and answers all_reduce with combine(x, x).
class Recorder : public Collectives {
 public:
  std::vector<std::string> ops;
  ProcessInfo seen;
  std::vector<Literal> run(const ir::Op& op, std::vector<Literal> operands, const Combiner& combine,
                           const ProcessInfo& process) override {
    ops.emplace_back(op.name());
    seen = process;
    if (op.kind() == OpKind::AllReduce) return {combine(operands[0], operands[0])};
    return operands;
  }
};

TEST(SingleProcess, CollectivesAreHandedToTheGivenImplementation) {
  Recorder recorder;
  Options options;
  options.collectives = &recorder;
  options.process = {1, 0, 2, 1};
  Literal got = on_x([](const Tensor& t) { return ir::collective_broadcast(ir::all_reduce(t, {{0, 1}}, OpKind::Maximum), {{0, 1}}); },
                     options);
  EXPECT_TRUE(same(got, x_4x2()));
  EXPECT_EQ(recorder.ops, (std::vector<std::string>{"stablehlo.all_reduce", "stablehlo.collective_broadcast"}));
  EXPECT_EQ(recorder.seen.replica_id, 1u);
  EXPECT_EQ(recorder.seen.num_replicas, 2u);
}

// Runs f on x and expects a UserError whose message is exactly `message`.
void expect_refusal(const std::function<Tensor(const Tensor&)>& f, const std::string& message) {
  EXPECT_EQ(message_of([&] { on_x(f); }), message);
}

TEST(SingleProcessRefusals, GroupsThatAreNotEqualSized) {
  // Ragged groups are written padded with -1, as in StableHLO text.
  expect_refusal([](const Tensor& t) { return ir::all_reduce(t, {{0, 1}, {2, -1}}); },
                 "stablehlo.all_reduce: replica_groups [[0, 1], [2]] are not equal-sized");
  expect_refusal([](const Tensor& t) { return ir::collective_broadcast(t, {{0, -1, -1}, {1, 2, 3}}); },
                 "stablehlo.collective_broadcast: replica_groups [[0], [1, 2, 3]] are not equal-sized");
}

TEST(SingleProcessRefusals, EmptyGroups) {
  expect_refusal([](const Tensor& t) { return ir::all_reduce(t, {{}}); },
                 "stablehlo.all_reduce: replica_groups [[]] contain an empty group");
  expect_refusal([](const Tensor& t) { return ir::collective_reduce(t, {{0, 1}, {-1, -1}}); },
                 "stablehlo.collective_reduce: replica_groups [[0, 1], []] contain an empty group");
}

TEST(SingleProcessRefusals, NegativeIds) {
  expect_refusal([](const Tensor& t) { return ir::reduce_scatter(t, 0, {{0, -2}}); },
                 "stablehlo.reduce_scatter: replica_groups [[0, -2]] contain the negative id -2");
  expect_refusal([](const Tensor& t) { return ir::collective_permute(t, {{-1, 0}}); },
                 "stablehlo.collective_permute: source_target_pairs entry [-1, 0] has a negative id");
}

TEST(SingleProcessRefusals, GroupsThatOverlap) {
  expect_refusal([](const Tensor& t) { return ir::all_gather(t, 0, {{0, 1}, {1, 2}}); },
                 "stablehlo.all_gather: replica_groups [[0, 1], [1, 2]] are not disjoint: 1 appears twice");
  expect_refusal([](const Tensor& t) { return ir::all_to_all(t, 0, 1, {{0, 0}}); },
                 "stablehlo.all_to_all: replica_groups [[0, 0]] are not disjoint: 0 appears twice");
  expect_refusal([](const Tensor& t) { return ir::collective_permute(t, {{0, 1}, {2, 1}}); },
                 "stablehlo.collective_permute: source_target_pairs name target 1 twice");
  expect_refusal([](const Tensor& t) { return ir::collective_permute(t, {{0, 1}, {0, 2}}); },
                 "stablehlo.collective_permute: source_target_pairs name source 0 twice");
}

TEST(SingleProcessRefusals, GroupsWithoutThisProcess) {
  expect_refusal([](const Tensor& t) { return ir::all_reduce(t, {{1, 2}, {3, 4}}); },
                 "stablehlo.all_reduce: replica_groups [[1, 2], [3, 4]] do not include process 0, whose "
                 "result a single-process run computes");
}

}  // namespace
}  // namespace tessera::interp::testing
