// The Communicator over MPI ranks, run under mpirun: every collective of the interface, on the
// whole world and on subgroups (within a rank, across ranks, in shuffled order, spread unevenly
// over ranks), against the host backend's results for the same inputs, bit for bit (reductions
// fold in group order on both); the bytes each device counts, against the ring model and the
// host's counts; then the timeout, a failed peer, mismatched collectives and bad groups, each
// named in its message; and MPI's own collectives through the MPI thread.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include "comm/host_communicator.h"
#include "comm/mpi/mpi_test_env.h"
#include "comm/mpi_communicator.h"
#include "stablehlo/parser.h"
#include "support/strings.h"

namespace tessera::comm {
namespace {

using ir::ElementType;
using Buffers = std::vector<std::vector<std::byte>>;  // the outputs of one device, in order
using Body = std::function<void(Communicator&, Buffers&)>;

template <typename T>
std::span<const std::byte> bytes(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}

// Runs body on every device of a host world of n devices; returns each device's outputs.
std::vector<Buffers> on_host(int64_t n, const Body& body) {
  HostWorld world(n, std::chrono::seconds(10));
  std::vector<Buffers> out(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int64_t d = 0; d < n; ++d)
    threads.emplace_back([&, d] {
      try {
        HostCommunicator c(world, d);
        body(c, out[static_cast<size_t>(d)]);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "host device " << d << ": " << e.what();
      }
    });
  for (auto& t : threads) t.join();
  return out;
}

// Runs body on this rank's devices of a fresh MPI world; returns [local device] outputs, and each
// local device's error message ("" if none).
struct MpiRun {
  std::vector<Buffers> out;
  std::vector<std::string> errors;
};
MpiRun on_ranks(MpiWorld& world, const std::function<void(MpiCommunicator&, Buffers&)>& body) {
  auto k = static_cast<size_t>(world.local_devices());
  MpiRun run{std::vector<Buffers>(k), std::vector<std::string>(k)};
  std::vector<std::thread> threads;
  for (size_t j = 0; j < k; ++j)
    threads.emplace_back([&, j] {
      try {
        MpiCommunicator c(world, world.first_local_device() + static_cast<int64_t>(j));
        body(c, run.out[j]);
      } catch (const std::exception& e) {
        run.errors[j] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return run;
}

// Device d's input: `count` values of wide-ranging magnitude, so that the sum depends on the order
// of the fold (checked below), from a seed of (d, salt).
std::vector<float> floats(int64_t d, int salt, size_t count) {
  std::mt19937 gen(static_cast<uint32_t>(1000 * d + salt));
  std::uniform_real_distribution<float> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<float> v(count);
  for (float& x : v) x = std::ldexp(mantissa(gen), exponent(gen));
  return v;
}

// Every collective of the interface, each output recorded. `n` devices, n even.
void every_collective(Communicator& c, Buffers& out) {
  int64_t n = c.num_devices(), d = c.device();
  Group all;
  for (int64_t i = 0; i < n; ++i) all.push_back(i);
  Group shuffled(all.rbegin(), all.rend());
  std::rotate(shuffled.begin(), shuffled.begin() + 1, shuffled.end());  // e.g. 2 1 0 3
  Group pair = {d - d % 2, d - d % 2 + 1};                              // {0,1}, {2,3}, ...
  int64_t j = d % (n / 2);
  Group cross = j % 2 == 0 ? Group{j, j + n / 2} : Group{j + n / 2, j};  // {0,2}, {3,1} for n = 4
  auto record = [&](size_t size) -> std::span<std::byte> {
    out.emplace_back(size, std::byte{0xA5});  // not zero, so an output never written shows
    return out.back();
  };

  std::vector<float> x = floats(d, 1, 4096);
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Product, ReduceOp::Max, ReduceOp::Min}) {
    c.all_reduce("all_reduce", all, ElementType::f32, op, bytes(x), record(x.size() * 4));
    c.all_reduce("all_reduce shuffled", shuffled, ElementType::f32, op, bytes(x), record(x.size() * 4));
  }
  std::vector<double> xd(x.begin(), x.end());
  c.all_reduce("all_reduce f64", cross, ElementType::f64, ReduceOp::Sum, bytes(xd), record(xd.size() * 8));
  std::vector<int32_t> xi(64);
  for (size_t i = 0; i < xi.size(); ++i) xi[i] = static_cast<int32_t>((d + 1) * 1000003 * (i + 7));
  c.all_reduce("all_reduce i32", all, ElementType::i32, ReduceOp::Sum, bytes(xi), record(xi.size() * 4));
  c.all_reduce("all_reduce pair", pair, ElementType::f32, ReduceOp::Sum, bytes(x), record(x.size() * 4));

  c.all_gather("all_gather", all, bytes(x), record(x.size() * 4 * static_cast<size_t>(n)));
  c.all_gather("all_gather cross", cross, bytes(x), record(x.size() * 8));
  c.reduce_scatter("reduce_scatter", shuffled, ElementType::f32, ReduceOp::Sum, bytes(x),
                   record(x.size() * 4 / static_cast<size_t>(n)));
  c.all_to_all("all_to_all", all, bytes(x), record(x.size() * 4));
  c.broadcast("broadcast", shuffled, bytes(x), record(x.size() * 4));
  std::optional<int64_t> source;
  if (d > 0) source = d - 1;  // a chain: device 0 receives zeros
  c.permute("permute", all, source, bytes(x), record(x.size() * 4));
  c.barrier("barrier", all);

  // A group spread unevenly over ranks (two devices on one rank and one on another when ranks
  // hold two), with spans that do not divide evenly; and the generic exchange, with inputs of
  // different sizes.
  if (d < 3) {
    Group three = {2, 0, 1};
    std::vector<float> odd = floats(d, 3, 4099);
    c.all_reduce("all_reduce 3", three, ElementType::f32, ReduceOp::Sum, bytes(odd), record(odd.size() * 4));
    std::vector<float> x3(x.begin(), x.begin() + 3 * 100);
    c.reduce_scatter("reduce_scatter 3", three, ElementType::f32, ReduceOp::Sum, bytes(x3), record(400));
    c.all_gather("all_gather 3", three, bytes(x3), record(x3.size() * 12));
    c.all_to_all("all_to_all 3", three, bytes(x3), record(x3.size() * 4));
    c.broadcast("broadcast 3", three, bytes(x3), record(x3.size() * 4));
    std::optional<int64_t> from;
    if (d != 1) from = d == 0 ? 2 : 0;  // 2 -> 0 -> 2, 1 gets zeros
    c.permute("permute 3", three, from, bytes(x3), record(x3.size() * 4));
  }
  {
    std::vector<std::byte> mine(static_cast<size_t>(3 + 5 * d), std::byte(d + 1));
    auto ex = c.exchange("exchange", shuffled, mine);
    size_t total = 0;
    for (size_t m = 0; m < ex->members(); ++m) total += ex->input(m).size();
    std::span<std::byte> all_in = record(total);
    for (size_t m = 0, at = 0; m < ex->members(); at += ex->input(m).size(), ++m)
      std::memcpy(all_in.data() + at, ex->input(m).data(), ex->input(m).size());
  }

  // Large enough for MPI's rendezvous protocol, and repeated collectives on one group.
  std::vector<float> big = floats(d, 2, 1 << 18);
  c.all_reduce("all_reduce 1 MiB", all, ElementType::f32, ReduceOp::Sum, bytes(big), record(big.size() * 4));
  for (int round = 0; round < 20; ++round) {
    std::vector<float> r = floats(d, 100 + round, 3);
    c.all_reduce("round", cross, ElementType::f32, ReduceOp::Sum, bytes(r), record(12));
  }
}

int64_t k() { return testing::mpi_local_devices(); }

TEST(MpiCommunicator, EveryCollectiveEqualsHostDevicesBitwise) {
  MpiWorld world(k(), std::chrono::seconds(20));
  ASSERT_EQ(world.num_devices() % 2, 0) << "run with an even number of devices";
  std::vector<Buffers> host = on_host(world.num_devices(), every_collective);
  MpiRun mpi = on_ranks(world, [](MpiCommunicator& c, Buffers& out) { every_collective(c, out); });
  for (int64_t j = 0; j < k(); ++j) {
    int64_t d = world.first_local_device() + j;
    ASSERT_EQ(mpi.errors[static_cast<size_t>(j)], "") << "device " << d;
    const Buffers& want = host[static_cast<size_t>(d)];
    const Buffers& got = mpi.out[static_cast<size_t>(j)];
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == want[i]) << "device " << d << ", output " << i;
  }
}

// The bytes each device counts: those of host devices for the same collectives, and the ring
// model's where the buffers split evenly.
void counted_collectives(Communicator& c) {
  int64_t n = c.num_devices(), d = c.device();
  Group all;
  for (int64_t i = 0; i < n; ++i) all.push_back(i);
  std::vector<float> x = floats(d, 7, 1 << 16), out(x.size() * static_cast<size_t>(n));
  auto o = std::as_writable_bytes(std::span(out));
  c.all_reduce("all_reduce", all, ElementType::f32, ReduceOp::Sum, bytes(x), o.first(x.size() * 4));
  c.reduce_scatter("reduce_scatter", all, ElementType::f32, ReduceOp::Sum, bytes(x), o.first(x.size() * 4 / n));
  c.all_gather("all_gather", all, bytes(x), o);
  c.all_to_all("all_to_all", all, bytes(x), o.first(x.size() * 4));
  c.permute("collective_permute", all, (d + n - 1) % n, bytes(x), o.first(x.size() * 4));
}

TEST(MpiCommunicator, CountsTheRingModelsBytesAsHostDevicesDo) {
  MpiWorld world(k(), std::chrono::seconds(20));
  int64_t n = world.num_devices();
  Traffic host(n), mpi(n);
  {
    HostWorld hw(n, std::chrono::seconds(10));
    std::vector<std::thread> threads;
    for (int64_t d = 0; d < n; ++d)
      threads.emplace_back([&, d] {
        HostCommunicator c(hw, d);
        c.set_traffic(&host.device(d));
        counted_collectives(c);
      });
    for (auto& t : threads) t.join();
  }
  MpiRun run = on_ranks(world, [&](MpiCommunicator& c, Buffers&) {
    c.set_traffic(&mpi.device(c.device()));
    counted_collectives(c);
  });
  int64_t operand = (1 << 16) * 4;
  for (int64_t j = 0; j < k(); ++j) {
    int64_t d = world.first_local_device() + j;
    ASSERT_EQ(run.errors[static_cast<size_t>(j)], "");
    const auto& got = mpi.device(d).by_kind();
    ASSERT_EQ(got.size(), 5u);
    for (const auto& [kind, count] : got) {
      const TrafficCount& want = host.device(d).by_kind().at(kind);
      EXPECT_EQ(count.calls, 1) << kind;
      EXPECT_EQ(count.sent, want.sent) << kind << " on device " << d;
      EXPECT_EQ(count.received, want.received) << kind << " on device " << d;
      EXPECT_EQ(count.ring, want.ring) << kind;
      EXPECT_EQ(count.received, count.ring) << kind << " on device " << d;
      EXPECT_EQ(count.sent, count.ring) << kind << " on device " << d;
    }
    EXPECT_EQ(got.at("all_reduce").sent, 2 * (n - 1) * operand / n);
  }
}

// The bitwise comparison above means something: folding the world's inputs in another order gives
// other bits.
TEST(MpiCommunicator, SumDependsOnOrder) {
  int64_t n = MpiProcess::get().size() * k();
  std::vector<std::vector<float>> x;
  for (int64_t d = 0; d < n; ++d) x.push_back(floats(d, 1, 4096));
  size_t differ = 0;
  for (size_t i = 0; i < 4096; ++i) {
    float forward = 0, backward = 0;
    for (int64_t d = 0; d < n; ++d) forward += x[static_cast<size_t>(d)][i];
    for (int64_t d = n - 1; d >= 0; --d) backward += x[static_cast<size_t>(d)][i];
    differ += forward != backward;
  }
  EXPECT_GT(differ, 10u);
}

TEST(MpiCommunicator, MissingRankTimesOutNamingIt) {
  MpiWorld world(k(), std::chrono::milliseconds(300));
  int last = world.num_ranks() - 1;
  Group all;
  for (int64_t i = 0; i < world.num_devices(); ++i) all.push_back(i);
  auto start = std::chrono::steady_clock::now();
  MpiRun run = on_ranks(world, [&](MpiCommunicator& c, Buffers&) {
    if (world.rank() == last) return;  // skips the collective
    std::vector<float> in = {1.0f}, out(1);
    c.all_reduce("stablehlo.all_reduce", all, ElementType::f32, ReduceOp::Sum, bytes(in),
                 std::as_writable_bytes(std::span(out)));
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  std::vector<int64_t> mine, theirs;
  for (int64_t j = 0; j < k(); ++j) {
    mine.push_back(world.first_local_device() + j);
    theirs.push_back(last * k() + j);
  }
  std::string plural = k() == 1 ? "device" : "devices";
  std::string want = world.rank() == last
                         ? ""
                         : fmt::format("stablehlo.all_reduce on rank {} ({} {}) timed out after 300 ms waiting for "
                                       "rank {} ({} {}) (group [{}])",
                                       world.rank(), plural, support::join(mine, ", "), last, plural,
                                       support::join(theirs, ", "), support::join(all, ", "));
  for (const std::string& e : run.errors) EXPECT_EQ(e, want);
}

TEST(MpiCommunicator, FailedRankEndsWaitsAtOnceNamingIt) {
  MpiWorld world(k(), std::chrono::seconds(20));
  int last = world.num_ranks() - 1;
  Group all;
  for (int64_t i = 0; i < world.num_devices(); ++i) all.push_back(i);
  auto start = std::chrono::steady_clock::now();
  if (world.rank() == last) world.report_failure("device 9: injected fault");
  MpiRun run = on_ranks(world, [&](MpiCommunicator& c, Buffers&) {
    if (world.rank() == last) return;
    c.barrier("stablehlo.all_reduce", all);
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  for (const std::string& e : run.errors) {
    if (world.rank() == last) {
      EXPECT_EQ(e, "");
    } else {
      EXPECT_NE(e.find(fmt::format(": rank {} failed: device 9: injected fault (group [{}])", last,
                                   support::join(all, ", "))),
                std::string::npos)
          << e;
      EXPECT_EQ(e.rfind(fmt::format("stablehlo.all_reduce on rank {} (", world.rank()), 0), 0u) << e;
    }
  }
}

TEST(MpiCommunicator, MismatchedCollectivesAcrossRanksAreNamed) {
  MpiWorld world(k(), std::chrono::seconds(10));
  Group all;
  for (int64_t i = 0; i < world.num_devices(); ++i) all.push_back(i);
  MpiRun run = on_ranks(world, [&](MpiCommunicator& c, Buffers&) {
    c.barrier(world.rank() == 0 ? "first" : "second", all);
  });
  for (const std::string& e : run.errors) {
    if (world.rank() == 0) {
      EXPECT_EQ(e.rfind("first on rank 0 (", 0), 0u) << e;
      EXPECT_NE(e.find(" meets second of rank "), std::string::npos) << e;
    } else {
      EXPECT_NE(e.find(fmt::format("second on rank {} (", world.rank())), std::string::npos) << e;
      EXPECT_NE(e.find(fmt::format("meets first of rank 0 (group [{}]): ranks issued different collectives",
                                   support::join(all, ", "))),
                std::string::npos)
          << e;
    }
  }
}

TEST(MpiCommunicator, BadGroupsAndDevices) {
  MpiWorld world(k(), std::chrono::seconds(10));
  int64_t n = world.num_devices(), first = world.first_local_device();
  MpiCommunicator c(world, first);
  auto error = [&](const Group& g) {
    try {
      c.barrier("op", g);
    } catch (const support::UserError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_EQ(error({first, n}), fmt::format("op: group [{}, {}] is not a set of devices of 0..{}", first, n, n - 1));
  EXPECT_EQ(error({first, first}), fmt::format("op: group [{}, {}] is not a set of devices of 0..{}", first, first, n - 1));
  EXPECT_EQ(error({(first + k()) % n}), fmt::format("op: device {} is not in its group [{}]", first, (first + k()) % n));
  EXPECT_EQ(error({first}), "<no error>");  // a group of one device is local: no MPI at all
  int64_t other = (first + k()) % n;
  try {
    MpiCommunicator bad(world, other);
    FAIL() << "device " << other << " is not on this rank";
  } catch (const support::UserError& e) {
    EXPECT_EQ(std::string(e.what()), fmt::format("device {} is not on rank {}, which owns devices {}..{}", other,
                                                 world.rank(), first, first + k() - 1));
  }
  EXPECT_THROW(MpiWorld(0), support::UserError);
}

// send and recv across ranks, against values known in advance: a ring over every device (each
// message crosses ranks with one device per rank; with two, half stay on their rank), two messages
// under one key received in the order sent, and a message matched by channel alone refused by
// name when there are several ranks.
TEST(MpiCommunicator, SendAndRecvAcrossRanks) {
  MpiWorld world(k(), std::chrono::seconds(20));
  const int64_t n = world.num_devices();
  std::string pairs;
  for (int64_t d = 0; d < n; ++d) pairs += fmt::format("{}[{}, {}]", d == 0 ? "" : ", ", d, (d + 1) % n);
  std::string attrs = fmt::format("channel_handle = #stablehlo.channel_handle<handle = 4, type = 1>, is_host_transfer = "
                                  "false, source_target_pairs = dense<[{}]> : tensor<{}x2xi64>",
                                  pairs, n);
  std::string text = fmt::format(R"(func.func @ring(%x : tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>) {{
  %t = stablehlo.create_token : !stablehlo.token
  %c = stablehlo.constant dense<100> : tensor<2xi32>
  %y = stablehlo.add %x, %c : tensor<2xi32>
  %0 = "stablehlo.send"(%x, %t) {{{0}}} : (tensor<2xi32>, !stablehlo.token) -> !stablehlo.token
  %1 = "stablehlo.send"(%y, %0) {{{0}}} : (tensor<2xi32>, !stablehlo.token) -> !stablehlo.token
  %2:2 = "stablehlo.recv"(%1) {{{0}}} : (!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)
  %3:2 = "stablehlo.recv"(%2#1) {{{0}}} : (!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)
  return %2#0, %3#0 : tensor<2xi32>, tensor<2xi32>
}}
func.func @by_channel(%x : tensor<2xi32>) -> tensor<2xi32> {{
  %t = stablehlo.create_token : !stablehlo.token
  %0 = "stablehlo.send"(%x, %t) {{channel_handle = #stablehlo.channel_handle<handle = 5, type = 1>, is_host_transfer = false}} : (tensor<2xi32>, !stablehlo.token) -> !stablehlo.token
  return %x : tensor<2xi32>
}}
)", attrs);
  std::unique_ptr<ir::Module> m = stablehlo::parse(text, "ring.mlir");
  std::vector<std::vector<ir::Literal>> in;
  for (int64_t d = 0; d < n; ++d)
    in.push_back({ir::Literal::from_doubles(ir::i32({2}), std::vector<double>{double(d), double(10 * d)})});
  std::vector<std::vector<ir::Literal>> out = run_on_ranks(world, *m, "ring", in);
  ASSERT_EQ(out.size(), static_cast<size_t>(n));
  for (int64_t d = 0; d < n; ++d) {
    int64_t from = (d + n - 1) % n;
    EXPECT_EQ(out[d].at(0), ir::Literal::from_doubles(ir::i32({2}), std::vector<double>{double(from), 10.0 * from}))
        << "device " << d;
    EXPECT_EQ(out[d].at(1), ir::Literal::from_doubles(ir::i32({2}), std::vector<double>{from + 100.0, 10.0 * from + 100}))
        << "device " << d;
  }
  if (world.num_ranks() > 1) {
    std::string e;
    try {
      run_on_ranks(world, *m, "by_channel", in);
    } catch (const support::UserError& x) {
      e = x.what();
    }
    EXPECT_NE(e.find("stablehlo.send on device " + std::to_string(world.first_local_device()) + ": a message matched by channel alone (channel 5, no source_target_pairs) has no rank to go to "
                     "among " + std::to_string(world.num_ranks()) + " MPI ranks; give the op source_target_pairs"),
              std::string::npos)
        << e;
  }
}

// Every rank gets every rank's payload, in rank order.
TEST(MpiWorld, ExchangeRanksHandsEveryoneEverything) {
  MpiWorld world(k());
  std::string mine = fmt::format("rank {} says {}", world.rank(), std::string(world.rank() * 100, 'x'));
  auto all = world.exchange_ranks("test", std::as_bytes(std::span(mine.data(), mine.size())));
  ASSERT_EQ(all.size(), static_cast<size_t>(world.num_ranks()));
  for (int r = 0; r < world.num_ranks(); ++r) {
    std::string want = fmt::format("rank {} says {}", r, std::string(r * 100, 'x'));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(all[r].data()), all[r].size()), want);
  }
}

std::vector<std::byte> text_bytes(const std::string& s) {
  auto b = std::as_bytes(std::span(s.data(), s.size()));
  return {b.begin(), b.end()};
}
std::string bytes_text(const std::vector<std::byte>& b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

// Point to point around the ring of ranks: each rank sends two tagged messages to the next rank
// and takes them from the previous one in the other order, so a receive must find its own tag.
TEST(MpiWorld, PointToPointFindsItsTag) {
  MpiWorld world(k());
  int n = world.num_ranks(), me = world.rank();
  if (n == 1) GTEST_SKIP() << "one rank has no peer";
  int next = (me + 1) % n, previous = (me + n - 1) % n;
  world.send_to(next, "transfer", 7, text_bytes(fmt::format("7 from {}", me)));
  world.send_to(next, "transfer", 3, text_bytes(fmt::format("3 from {} {}", me, std::string(me * 1000, 'y'))));
  EXPECT_EQ(bytes_text(world.receive_from(previous, "transfer", 3, std::chrono::seconds(10))),
            fmt::format("3 from {} {}", previous, std::string(previous * 1000, 'y')));
  EXPECT_EQ(bytes_text(world.receive_from(previous, "transfer", 7, std::chrono::seconds(10))),
            fmt::format("7 from {}", previous));
  EXPECT_THROW(world.send_to(me, "transfer", 1, {}), support::UserError);
  world.exchange_ranks("done", {});  // nobody leaves before every receive is served
}

// A message that never comes: the receive ends at its timeout naming the peer and the tag.
TEST(MpiWorld, PointToPointTimesOutNamingThePeer) {
  MpiWorld world(k());
  int n = world.num_ranks(), me = world.rank();
  if (n == 1) GTEST_SKIP() << "one rank has no peer";
  int previous = (me + n - 1) % n;
  try {
    world.receive_from(previous, "stage 1 RECV act(mb 0)", 5, std::chrono::milliseconds(200));
    FAIL() << "received a message nobody sent";
  } catch (const TimeoutError& e) {
    EXPECT_EQ(std::string(e.what()), fmt::format("stage 1 RECV act(mb 0) on rank {} timed out after 200 ms waiting "
                                                 "for rank {} (message 5)",
                                                 me, previous));
  }
  world.exchange_ranks("done", {});
}

// Other code reaches MPI through the MPI thread: MPI's own all-reduce agrees with ours.
TEST(MpiProcess, CallRunsMpiOnItsThread) {
  MpiProcess& p = MpiProcess::get();
  int64_t sum = -1, mine = p.rank() + 1;
  p.call([&] { MPI_Allreduce(&mine, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD); });
  EXPECT_EQ(sum, int64_t(p.size()) * (p.size() + 1) / 2);
  EXPECT_THROW(p.call([] { throw support::UserError("from the MPI thread"); }), support::UserError);
}

}  // namespace
}  // namespace tessera::comm
