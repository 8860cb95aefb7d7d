// The collectives' VJP rules against the adjoint identity, in the single-process interpreter.
//
// DESIGN.md §2: the loss is the sum of every process's loss, so a collective's VJP f* is its adjoint
// as a map on all processes' values together: sum_d <f(x)_d, w_d> = sum_d <x_d, f*(w)_d>. The
// single-process interpreter imagines every process holding the same value, so the identity is
// checked for x_d = x and w_d = w on every process d of the grid: f and f_grad are evaluated as
// each process in turn (Options.process) and the inner products summed. (The identity for process
// 0 alone does not hold: for all_gather over n processes it would ask <repeat(x), w> = n <x, w_0>.)
// Each row also checks that the gradient program uses the adjoint collective.
#include "autodiff_test_util.h"

namespace tessera::autodiff::testing {

std::vector<OpKind> adjoint_checked_ops() {
  return {OpKind::AllReduce, OpKind::AllGather, OpKind::ReduceScatter, OpKind::AllToAll,
          OpKind::CollectivePermute, OpKind::CollectiveBroadcast, OpKind::CollectiveReduce};
}

namespace {

using Groups = ir::Groups;

constexpr int64_t kProcesses = 4;

struct Row {
  std::string name;
  OpKind forward, adjoint;
  std::vector<int64_t> shape;
  std::function<Tensor(const Tensor&)> op;
  bool cross_replica = false;  // the op groups replicas (no channel); else partitions or flat ids
};

// The channel-less (cross_replica) form, whose adjoint is defined for broadcast and reduce.
Tensor without_channel(Tensor t) {
  t.value()->defining_op()->attrs().erase("channel_handle");
  return t;
}

std::vector<Row> rows() {
  return {
      {"all_reduce_one_group", OpKind::AllReduce, OpKind::AllReduce, {4, 2},
       [](const Tensor& x) { return ir::all_reduce(x, {{0, 1, 2, 3}}); }},
      {"all_reduce_pairs", OpKind::AllReduce, OpKind::AllReduce, {4, 2},
       [](const Tensor& x) { return ir::all_reduce(x, {{0, 2}, {1, 3}}); }},
      {"all_gather_one_group", OpKind::AllGather, OpKind::ReduceScatter, {3, 2},
       [](const Tensor& x) { return ir::all_gather(x, 1, {{0, 1, 2, 3}}); }},
      {"all_gather_permuted_group", OpKind::AllGather, OpKind::ReduceScatter, {3, 2},
       [](const Tensor& x) { return ir::all_gather(x, 0, {{3, 1, 0, 2}}); }},
      {"all_gather_pairs", OpKind::AllGather, OpKind::ReduceScatter, {3, 2},
       [](const Tensor& x) { return ir::all_gather(x, 1, {{0, 2}, {1, 3}}); }},
      {"reduce_scatter_pairs", OpKind::ReduceScatter, OpKind::AllGather, {4, 3},
       [](const Tensor& x) { return ir::reduce_scatter(x, 0, {{0, 1}, {2, 3}}); }},
      {"reduce_scatter_permuted_group", OpKind::ReduceScatter, OpKind::AllGather, {2, 8},
       [](const Tensor& x) { return ir::reduce_scatter(x, 1, {{2, 0, 3, 1}}); }},
      {"all_to_all_pairs", OpKind::AllToAll, OpKind::AllToAll, {4, 3},
       [](const Tensor& x) { return ir::all_to_all(x, 0, 1, {{0, 1}, {2, 3}}); }},
      {"all_to_all_permuted_group", OpKind::AllToAll, OpKind::AllToAll, {4, 8},
       [](const Tensor& x) { return ir::all_to_all(x, 1, 0, {{1, 3, 0, 2}}); }},
      {"collective_permute_ring_of_three", OpKind::CollectivePermute, OpKind::CollectivePermute, {3, 2},
       [](const Tensor& x) { return ir::collective_permute(x, {{0, 1}, {1, 2}, {2, 0}}); }},
      {"collective_permute_one_pair", OpKind::CollectivePermute, OpKind::CollectivePermute, {3, 2},
       [](const Tensor& x) { return ir::collective_permute(x, {{0, 3}}); }},
      {"collective_broadcast_pairs", OpKind::CollectiveBroadcast, OpKind::CollectiveReduce, {3, 2},
       [](const Tensor& x) { return without_channel(ir::collective_broadcast(x, {{0, 1}, {2, 3}})); }, true},
      {"collective_reduce_pairs", OpKind::CollectiveReduce, OpKind::CollectiveBroadcast, {3, 2},
       [](const Tensor& x) { return without_channel(ir::collective_reduce(x, {{1, 0}, {3, 2}})); }, true},
  };
}

void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

class CollectiveAdjoint : public ::testing::TestWithParam<Row> {};

TEST_P(CollectiveAdjoint, InnerProductsSumAlikeOverTheProcesses) {
  const Row& row = GetParam();
  ir::Module m("adjoint");
  const ir::Function& f = ir::build_function(m, "f", [&](ir::FunctionBuilder& b) {
    return row.op(b.param(ir::f64(row.shape)));
  });
  ASSERT_TRUE(contains_op(f, row.forward));
  const ir::Function& g = reverse(m, f);
  ASSERT_NO_THROW(ir::verify(m));
  EXPECT_TRUE(contains_op(g, row.adjoint)) << "the gradient of " << ir::spelling(row.forward)
                                           << " uses no " << ir::spelling(row.adjoint);
  Literal x = random_f64(row.shape, 1);
  Literal w = random_f64(f.result_types[0].shape, 2);
  double forward = 0, backward = 0;
  for (int64_t d = 0; d < kProcesses; ++d) {
    interp::Options o;
    auto id = static_cast<uint32_t>(d), n = static_cast<uint32_t>(kProcesses);
    o.process = row.cross_replica ? interp::ProcessInfo{id, 0, n, 1} : interp::ProcessInfo{0, id, 1, n};
    Literal y = interp::evaluate(m, "f", {x}, o)[0];
    Literal v = interp::evaluate(m, "f_grad", {x, w}, o)[0];
    ASSERT_EQ(v.type(), x.type());
    forward += dot(y, w);
    backward += dot(x, v);
  }
  EXPECT_NEAR(forward, backward, 1e-12 * (1 + std::abs(forward))) << row.name;
  EXPECT_NE(forward, 0) << row.name << ": a vacuous check";
}

INSTANTIATE_TEST_SUITE_P(Collectives, CollectiveAdjoint, ::testing::ValuesIn(rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

// The adjoint keeps the forward op's grouping mode and groups, with a channel id of its own.
TEST(CollectiveAdjointAttributes, KeepGroupsAndModeWithAFreshChannel) {
  ir::Module m("attrs");
  const ir::Function& f = ir::build_function(m, "f", [](ir::FunctionBuilder& b) {
    return ir::all_gather(b.param(ir::f64({2, 3})), 1, {{0, 2}, {1, 3}});
  });
  const ir::Function& g = reverse(m, f);
  const ir::Op* fwd = nullptr;
  const ir::Op* adj = nullptr;
  for (const auto& op : f.body().ops())
    if (op->kind() == OpKind::AllGather) fwd = op.get();
  for (const auto& op : g.body().ops())
    if (op->kind() == OpKind::ReduceScatter) adj = op.get();
  ASSERT_TRUE(fwd && adj);
  EXPECT_EQ(adj->attrs().get<ir::IntMatrix>("replica_groups"), fwd->attrs().get<ir::IntMatrix>("replica_groups"));
  EXPECT_EQ(adj->attrs().get<int64_t>("scatter_dimension"), 1);
  EXPECT_TRUE(adj->attrs().get<bool>("use_global_device_ids"));
  EXPECT_NE(adj->attrs().get<ir::ChannelHandle>("channel_handle").handle,
            fwd->attrs().get<ir::ChannelHandle>("channel_handle").handle);
  EXPECT_EQ(adj->result(0)->type(), ir::f64({2, 3}));
}

}  // namespace
}  // namespace tessera::autodiff::testing
