// Session::mpi under mpirun: the worked example (DESIGN.md) and its gradient run over MPI ranks
// give every rank the same bits as Session::host on as many host devices; run_per_device hands
// every rank every device's results; sharded programs keep each piece on its owner only, and
// fetch / fetch_to / replicated give the whole array on request; a device that fails on one rank
// fails the run on every rank at once, naming the rank, the device and the collective.
#include <gtest/gtest.h>

#include <random>

#include "autodiff/reverse.h"
#include "comm/mpi/mpi_test_env.h"
#include "comm/mpi_communicator.h"
#include "common/error_of.h"
#include "common/worked_example.h"
#include "runtime/layout.h"
#include "runtime/session.h"

namespace tessera::runtime {
namespace {

using namespace tessera::ir;

Literal random_literal(const Type& t, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (double& x : v) x = u(gen);
  return Literal::from_doubles(t, v);
}

std::vector<Literal> inputs_for(const Function& f) {
  std::vector<Literal> in;
  for (size_t i = 0; i < f.num_parameters(); ++i) in.push_back(random_literal(f.parameter(i)->type(), 11 + i));
  return in;
}

int64_t k() { return testing::mpi_local_devices(); }

void expect_mpi_equals_host(const Module& m, const std::string& fn) {
  Session mpi = Session::mpi(k(), {std::chrono::seconds(20)});
  ASSERT_EQ(mpi.num_devices(), 4) << "the worked example's mesh has 4 devices: run 2 ranks x 2 or 4 x 1";
  Session host = Session::host(4);
  std::vector<Literal> in = inputs_for(*m.find_function(fn));
  std::vector<Literal> want = host.run_sharded(host.compile(m, fn), in);
  std::vector<Literal> got = mpi.run_sharded(mpi.compile(m, fn), in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(to_string(got[i].type()), to_string(want[i].type()));
    EXPECT_TRUE(got[i] == want[i]) << "result " << i << " of @" << fn << " differs from host devices";
  }
}

TEST(SessionMpi, WorkedExampleEqualsHostDevicesBitwise) {
  Module m("sharded_loss");
  testing::build_sharded_loss(m);
  expect_mpi_equals_host(m, "sharded_loss");
}

TEST(SessionMpi, WorkedExampleGradientEqualsHostDevicesBitwise) {
  Module m("sharded_loss");
  Function& f = testing::build_sharded_loss(m);
  autodiff::reverse(m, f, {});
  expect_mpi_equals_host(m, "sharded_loss_grad");
}

// Unreduced layouts over ranks: an unreduced argument's whole array counts once, and results
// declared unreduced (a split contraction's partial products, the argument itself) are assembled
// as the sums of their pieces, which live on other ranks: the same bits as host devices.
TEST(SessionMpi, UnreducedArgumentsAndResultsEqualHostDevices) {
  Module m("partial");
  m.add_mesh(Mesh{"m", {{"x", 2}, {"y", 2}}, {}});
  Function& f = build_function(m, "partial", [](FunctionBuilder& b) {
    Tensor a = b.param(f32({8, 12}), Sharding{"m", {{}, {"x"}}, {}, {}});
    Tensor w = b.param(f32({12, 6}), Sharding{"m", {{"x"}, {}}, {}, {}});
    Tensor u = b.param(f32({4, 6}), Sharding{"m", {{"y"}, {}}, {}, {AxisRef("x")}});
    return std::vector<Tensor>{dot_general(a, w, DotDims{{}, {}, {1}, {0}}), u * 2.0 + 1.0, u};
  });
  f.set_result_sharding(0, Sharding{"m", {{}, {}}, {}, {AxisRef("x")}});
  f.set_result_sharding(2, Sharding{"m", {{"y"}, {}}, {}, {AxisRef("x")}});
  expect_mpi_equals_host(m, "partial");
  Session mpi = Session::mpi(k());
  ShardedProgram sp = mpi.sharded_program(mpi.compile(m, "partial"));
  std::vector<Literal> in = inputs_for(f);
  std::vector<ShardedBuffer> bufs = {sp.stage(0, in[0]), sp.stage(1, in[1]), sp.stage(2, in[2])};
  std::vector<ShardedBuffer> out = sp.execute(bufs);
  EXPECT_TRUE(sp.fetch(out[2]) == in[2]);  // the argument, given whole, comes back whole
  std::optional<Literal> at_last = sp.fetch_to(out[2], mpi.num_ranks() - 1);
  EXPECT_EQ(at_last.has_value(), mpi.rank() == mpi.num_ranks() - 1);
  if (at_last) {
    EXPECT_TRUE(*at_last == in[2]);
  }
}

TEST(SessionMpi, EveryRankGetsEveryDevicesResults) {
  Module m("sharded_loss");
  testing::build_sharded_loss(m);
  Session mpi = Session::mpi(k());
  EXPECT_EQ(mpi.rank(), comm::MpiProcess::get().rank());
  EXPECT_TRUE(mpi.over_mpi());
  EXPECT_FALSE(Session::host(2).over_mpi());
  CompiledProgram p = mpi.compile(m, "sharded_loss");
  // Device d's rows of x are all d+1; w is all 1: each device's partial loss differs.
  std::vector<std::vector<Literal>> per(4);
  for (int64_t d = 0; d < 4; ++d) {
    std::vector<double> rows(8, double(d + 1) / 10), ones(12, 1.0);
    per[static_cast<size_t>(d)] = {Literal::from_doubles(f32({2, 4}), rows), Literal::from_doubles(f32({4, 3}), ones)};
  }
  std::vector<std::vector<Literal>> host_out = Session::host(4).run_per_device(p, per);
  std::vector<std::vector<Literal>> out = mpi.run_per_device(p, per);
  ASSERT_EQ(out.size(), 4u);
  for (size_t d = 0; d < 4; ++d) {
    ASSERT_EQ(out[d].size(), 1u);
    EXPECT_TRUE(out[d][0] == host_out[d][0]) << "device " << d;
  }
  // A staged program runs twice with its buffers kept on the devices.
  ShardedProgram sp = mpi.sharded_program(p);
  std::vector<Literal> in = inputs_for(*m.find_function("sharded_loss"));
  std::vector<ShardedBuffer> bufs = {sp.stage(0, in[0]), sp.stage(1, in[1])};
  Literal first = sp.fetch(sp.execute(bufs)[0]);
  Literal second = sp.fetch(sp.execute(bufs)[0]);
  EXPECT_TRUE(first == second);
  EXPECT_GT(first.get_double(0), 0.0);
}

TEST(SessionMpi, BuffersHoldOnlyTheirRanksPiecesAndFetchGathersOnRequest) {
  Module m("sharded_loss");
  testing::build_sharded_loss(m);
  Session mpi = Session::mpi(k());
  Session host = Session::host(4);
  CompiledProgram p = mpi.compile(m, "sharded_loss");
  ShardedProgram sp = mpi.sharded_program(p), hp = host.sharded_program(host.compile(m, "sharded_loss"));
  std::vector<Literal> in = inputs_for(*m.find_function("sharded_loss"));
  std::vector<ShardedBuffer> bufs = {sp.stage(0, in[0]), sp.stage(1, in[1])};
  std::vector<ShardedBuffer> hbufs = {hp.stage(0, in[0]), hp.stage(1, in[1])};
  // Only this rank's devices' pieces exist here, the same bits as the host's.
  int64_t held = 0;
  for (int64_t d = 0; d < 4; ++d) {
    const Literal& piece = (*bufs[0].pieces)[static_cast<size_t>(d)];
    if (mpi.owns(d)) {
      EXPECT_TRUE(piece == (*hbufs[0].pieces)[static_cast<size_t>(d)]) << "device " << d;
      held += static_cast<int64_t>(piece.bytes().size());
    } else {
      EXPECT_EQ(piece.bytes().size(), 0u) << "device " << d << " is another rank's";
    }
  }
  EXPECT_EQ(bufs[0].local_bytes(), held);
  EXPECT_EQ(held * mpi.num_ranks(), hbufs[0].local_bytes());
  // Pieces made alone are the staged ones.
  ShardedBuffer made = sp.stage_pieces(0, [&](const std::vector<int64_t>& start, const std::vector<int64_t>& extent) {
    Literal box(Type(in[0].element(), extent));
    copy_box(in[0], start, box, std::vector<int64_t>(start.size(), 0), extent);
    return box;
  });
  for (int64_t d = 0; d < 4; ++d)
    EXPECT_TRUE((*made.pieces)[static_cast<size_t>(d)] == (*bufs[0].pieces)[static_cast<size_t>(d)]) << "device " << d;

  // execute sends only the program's own collectives; results stay on their owners.
  int64_t before = comm::mpi::bytes_sent();
  std::vector<ShardedBuffer> out = sp.execute(bufs);
  int64_t sent = comm::mpi::bytes_sent() - before;
  std::vector<ShardedBuffer> hout = hp.execute(hbufs);
  for (int64_t d = 0; d < 4; ++d)
    EXPECT_EQ((*out[0].pieces)[static_cast<size_t>(d)].bytes().size() != 0, mpi.owns(d)) << "device " << d;
  // The loss is replicated: read where it is, nothing moves.
  before = comm::mpi::bytes_sent();
  Literal loss = sp.replicated(out[0]);
  EXPECT_EQ(comm::mpi::bytes_sent(), before);
  EXPECT_TRUE(loss == hp.fetch(hout[0]));
  // The ring model of the program's collectives bounds what moved, handshakes aside (under 200
  // bytes a group and peer).
  int64_t ring = 0;
  for (int64_t d = 0; d < 4; ++d)
    if (mpi.owns(d)) ring += ring_model_bytes(p);
  EXPECT_LE(sent, ring + 200 * 3) << "ring model " << ring;
  // fetch: the whole array on every rank; fetch_to: on one rank only.
  Literal x = sp.fetch(bufs[0]);
  EXPECT_TRUE(x == in[0]);
  int64_t last = mpi.num_ranks() - 1;
  std::optional<Literal> at_last = sp.fetch_to(bufs[0], last);
  EXPECT_EQ(at_last.has_value(), mpi.rank() == last);
  if (at_last) {
    EXPECT_TRUE(*at_last == in[0]);
  }
}

TEST(SessionMpi, Errors) {
  EXPECT_EQ(testing::error_of([] { Session::mpi(0); }), "Session::mpi: 0 local devices per rank; need at least 1");
  Module m("sharded_loss");
  testing::build_sharded_loss(m);
  Session wide = Session::mpi(2 * k());
  EXPECT_EQ(testing::error_of([&] { wide.compile(m, "sharded_loss"); }),
            "compile: @sharded_loss is sharded over mesh @m of 4 devices, but the session has 8");
}

// The fault: every device of the last rank throws in its first op, before the program's
// all_reduce. The others must not wait for their timeout (20 s).
bool g_fail_here = false;
bool failing_kernel(const Op&, std::span<const Literal* const>, std::vector<Literal>&) {
  if (g_fail_here) throw support::UserError("injected fault");
  return false;  // the reference kernel computes it
}

TEST(SessionMpi, FailedDeviceFailsEveryRankAtOnce) {
  Module m("sharded_loss");
  testing::build_sharded_loss(m);
  Session mpi = Session::mpi(k());
  CompiledProgram p = mpi.compile(m, "sharded_loss");
  ShardedProgram sp = mpi.sharded_program(p);
  std::vector<Literal> in = inputs_for(*m.find_function("sharded_loss"));
  std::vector<std::vector<Literal>> per(4);
  for (size_t i = 0; i < in.size(); ++i) {
    ShardedBuffer b = sp.stage(i, in[i]);
    for (size_t d = 0; d < 4; ++d) per[d].push_back((*b.pieces)[d]);
  }
  comm::MpiWorld world(k(), std::chrono::seconds(20));
  int last = world.num_ranks() - 1;
  g_fail_here = world.rank() == last;
  interp::Options base;
  base.accelerate = failing_kernel;
  auto start = std::chrono::steady_clock::now();
  std::string e = testing::error_of([&] { comm::run_on_ranks(world, *p.module, p.info.function, per, base); });
  g_fail_here = false;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  if (world.rank() == last) {
    EXPECT_EQ(e.rfind(fmt::format("@sharded_loss on rank {}: device {}: injected fault", last, last * k()), 0), 0u) << e;
  } else {
    EXPECT_EQ(e.rfind(fmt::format("@sharded_loss on rank {}: device {}: stablehlo.all_reduce on rank {} (",
                                  world.rank(), world.first_local_device(), world.rank()),
                      0),
              0u)
        << e;
    EXPECT_NE(e.find(fmt::format("rank {} failed: device ", last)), std::string::npos) << e;
    EXPECT_NE(e.find(": injected fault (group [0, 1, 2, 3])"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace tessera::runtime
