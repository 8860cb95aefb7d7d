// Byte accounting: the bytes each host device sends and receives per collective, against the ring
// model and against counts worked out by hand for each algorithm.
#include <gtest/gtest.h>

#include <thread>

#include "comm/host_communicator.h"

namespace tessera::comm {
namespace {

using ir::ElementType;

template <typename F>
void on_devices(Traffic& traffic, F&& body) {
  int64_t n = traffic.num_devices();
  HostWorld world(n, std::chrono::seconds(20));
  std::vector<std::thread> threads;
  for (int64_t d = 0; d < n; ++d)
    threads.emplace_back([&, d] {
      HostCommunicator c(world, d);
      c.set_traffic(&traffic.device(d));
      body(c);
    });
  for (auto& t : threads) t.join();
}

TEST(Accounting, RingModel) {
  EXPECT_EQ(ring_bytes("all_reduce", 4, 1 << 20), 1572864);  // 2 (n-1)/n of a 1 MiB gradient
  EXPECT_EQ(ring_bytes("stablehlo.all_reduce", 2, 1 << 20), 1048576);
  EXPECT_EQ(ring_bytes("all_reduce", 8, 1 << 20), 1835008);
  EXPECT_EQ(ring_bytes("all_gather", 4, 100), 300);  // (n-1)/n of the gathered 400
  EXPECT_EQ(ring_bytes("reduce_scatter", 4, 400), 300);
  EXPECT_EQ(ring_bytes("all_to_all", 4, 400), 300);
  EXPECT_EQ(ring_bytes("collective_permute", 4, 400), 400);
  EXPECT_EQ(ring_bytes("barrier", 4, 0), 0);
  EXPECT_EQ(ring_bytes("all_reduce", 1, 400), 0);
  EXPECT_EQ(collective_kind("stablehlo.reduce_scatter"), "reduce_scatter");
}

TEST(Accounting, LargeAllReduceMovesWhatTheRingModelCharges) {
  Traffic traffic(4);
  const size_t count = 1 << 18;  // 1 MiB of floats, above the small-message threshold
  on_devices(traffic, [&](Communicator& c) {
    std::vector<float> in(count, 1.0f), out(count);
    c.all_reduce("all_reduce", {0, 1, 2, 3}, ElementType::f32, ReduceOp::Sum, std::as_bytes(std::span(in)),
                 std::as_writable_bytes(std::span(out)));
    EXPECT_EQ(out[count - 1], 4.0f);
  });
  for (int64_t d = 0; d < 4; ++d) {
    TrafficCount t = traffic.device(d).total();
    EXPECT_EQ(t.calls, 1);
    EXPECT_EQ(t.received, 1572864) << "device " << d;
    EXPECT_EQ(t.sent, 1572864) << "device " << d;
    EXPECT_EQ(t.ring, 1572864) << "device " << d;
  }
}

TEST(Accounting, SmallMessagesAndOtherCollectives) {
  Traffic traffic(4);
  Group all = {0, 1, 2, 3};
  on_devices(traffic, [&](Communicator& c) {
    std::vector<float> in(8, 1.0f), out(8), gathered(32), piece(2);  // 32 bytes: the small path
    auto b = [](auto& v) { return std::as_writable_bytes(std::span(v)); };
    c.all_reduce("stablehlo.all_reduce", all, ElementType::f32, ReduceOp::Sum, b(in), b(out));
    c.all_gather("all_gather", all, b(in), b(gathered));
    c.reduce_scatter("reduce_scatter", all, ElementType::f32, ReduceOp::Sum, b(in), b(piece));
    std::optional<int64_t> source;
    if (c.device() != 0) source = 0;  // device 0 sends to every other device
    c.permute("collective_permute", all, source, b(in), b(out));
    c.barrier("barrier", all);
  });
  // Device 0: the direct all-reduce reads every peer's whole input (3 x 32 B) where the ring
  // model charges 2 (n-1)/n x 32 B = 48 B.
  const auto& kinds = traffic.device(0).by_kind();
  EXPECT_EQ(kinds.at("all_reduce").received, 96);
  EXPECT_EQ(kinds.at("all_reduce").sent, 96);
  EXPECT_EQ(kinds.at("all_reduce").ring, 48);
  EXPECT_EQ(kinds.at("all_gather").received, 96);
  EXPECT_EQ(kinds.at("all_gather").ring, 96);
  EXPECT_EQ(kinds.at("reduce_scatter").received, 24);  // its 8-byte chunk from 3 peers
  EXPECT_EQ(kinds.at("reduce_scatter").sent, 24);
  EXPECT_EQ(kinds.at("reduce_scatter").ring, 24);
  EXPECT_EQ(kinds.at("collective_permute").sent, 96);  // read by 3 peers
  EXPECT_EQ(kinds.at("collective_permute").received, 0);
  EXPECT_EQ(traffic.device(1).by_kind().at("collective_permute").received, 32);
  EXPECT_EQ(traffic.device(1).by_kind().at("collective_permute").sent, 0);
  EXPECT_EQ(kinds.at("barrier").calls, 1);
  EXPECT_EQ(traffic.device(0).total().calls, 5);
  std::string table = traffic.table();
  EXPECT_NE(table.find("all_reduce"), std::string::npos) << table;
  EXPECT_NE(table.find("2.00"), std::string::npos) << table;  // all_reduce: received / ring
}

TEST(Accounting, ExchangeCountsEveryPeersInput) {
  Traffic traffic(3);
  on_devices(traffic, [&](Communicator& c) {
    std::vector<std::byte> in(static_cast<size_t>(10 * (c.device() + 1)));
    auto ex = c.exchange("stablehlo.all_gather", {0, 1, 2}, in);
  });
  EXPECT_EQ(traffic.device(0).total().received, 20 + 30);
  EXPECT_EQ(traffic.device(0).total().sent, 2 * 10);
  EXPECT_EQ(traffic.device(2).total().received, 10 + 20);
  EXPECT_EQ(traffic.device(2).total().ring, 2 * 30);
}

TEST(Accounting, DeviceOutsideTheCountIsNamed) {
  Traffic traffic(2);
  EXPECT_THROW(traffic.device(2), support::UserError);
  try {
    traffic.device(-1);
  } catch (const support::UserError& e) {
    EXPECT_STREQ(e.what(), "byte accounting: device -1 is outside the 2 devices counted");
  }
}

}  // namespace
}  // namespace tessera::comm
