// Host devices exchanging data: every collective on 4 threads against values computed by hand,
// subgroups, repeated collectives on one group, mismatched ops, bad groups, and the timeout.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "comm/host_communicator.h"

namespace tessera::comm {
namespace {

using ir::ElementType;

template <typename T>
std::span<const std::byte> bytes(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}
template <typename T>
std::span<std::byte> bytes(std::vector<T>& v) {
  return std::as_writable_bytes(std::span(v));
}

// Runs body(communicator) on n device threads; returns each device's error message ("" if none).
template <typename F>
std::vector<std::string> errors_on_devices(int64_t n, F&& body, std::chrono::milliseconds timeout) {
  HostWorld world(n, timeout);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<size_t>(n));
  for (int64_t d = 0; d < n; ++d)
    threads.emplace_back([&, d] {
      try {
        HostCommunicator c(world, d);
        body(c);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(d)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

template <typename F>
void on_devices(int64_t n, F&& body) {
  for (const std::string& e : errors_on_devices(n, body, std::chrono::seconds(10))) EXPECT_EQ(e, "");
}

const Group kAll = {0, 1, 2, 3};

TEST(HostCommunicator, AllReduceSumsInGroupOrder) {
  on_devices(4, [](Communicator& c) {
    std::vector<float> in = {float(c.device()), 1.0f}, out(2);
    c.all_reduce("test", kAll, ElementType::f32, ReduceOp::Sum, bytes(in), bytes(out));
    EXPECT_EQ(out, (std::vector<float>{6.0f, 4.0f}));
    std::vector<int32_t> i = {int32_t(c.device())}, o(1);
    c.all_reduce("test", kAll, ElementType::i32, ReduceOp::Max, bytes(i), bytes(o));
    EXPECT_EQ(o[0], 3);
    c.all_reduce("test", kAll, ElementType::i32, ReduceOp::Min, bytes(i), bytes(o));
    EXPECT_EQ(o[0], 0);
    std::vector<int32_t> p = {int32_t(c.device()) + 1};
    c.all_reduce("test", kAll, ElementType::i32, ReduceOp::Product, bytes(p), bytes(o));
    EXPECT_EQ(o[0], 24);
  });
}

TEST(HostCommunicator, SubgroupsAreIndependent) {
  on_devices(4, [](Communicator& c) {
    Group g = c.device() < 2 ? Group{0, 1} : Group{3, 2};
    std::vector<int64_t> in = {c.device() * 10}, out(2);
    c.all_gather("test", g, bytes(in), bytes(out));
    if (c.device() < 2) {
      EXPECT_EQ(out, (std::vector<int64_t>{0, 10}));
    } else {
      EXPECT_EQ(out, (std::vector<int64_t>{30, 20}));  // group order, not device order
    }
  });
}

TEST(HostCommunicator, ReduceScatterAllToAllBroadcastPermute) {
  on_devices(4, [](Communicator& c) {
    int64_t d = c.device();
    std::vector<int32_t> in = {int32_t(d), int32_t(10 * d), int32_t(100 * d), int32_t(1000 * d)};
    std::vector<int32_t> one(1);
    c.reduce_scatter("test", kAll, ElementType::i32, ReduceOp::Sum, bytes(in), bytes(one));
    EXPECT_EQ(one[0], std::vector<int32_t>({6, 60, 600, 6000})[static_cast<size_t>(d)]);

    std::vector<int32_t> a2a(4);
    c.all_to_all("test", kAll, bytes(in), bytes(a2a));  // chunk j comes from device j
    int32_t scale = std::vector<int32_t>({1, 10, 100, 1000})[static_cast<size_t>(d)];
    EXPECT_EQ(a2a, (std::vector<int32_t>{0, scale, 2 * scale, 3 * scale}));

    std::vector<int32_t> b(4);
    c.broadcast("test", Group{2, 0, 1, 3}, bytes(in), bytes(b));
    EXPECT_EQ(b, (std::vector<int32_t>{2, 20, 200, 2000}));

    std::vector<int32_t> x = {int32_t(d + 1)}, y = {-1};
    std::optional<int64_t> source;
    if (d > 0) source = d - 1;  // 0 -> 1 -> 2 -> 3; device 0 receives nothing
    c.permute("test", kAll, source, bytes(x), bytes(y));
    EXPECT_EQ(y[0], d == 0 ? 0 : int32_t(d));
    c.barrier("test", kAll);
  });
}

TEST(HostCommunicator, RepeatedCollectivesMatchInOrder) {
  on_devices(3, [](Communicator& c) {
    for (int round = 0; round < 50; ++round) {
      std::vector<int64_t> in = {round * 100 + c.device()}, out(1);
      c.all_reduce("test", {0, 1, 2}, ElementType::i64, ReduceOp::Sum, bytes(in), bytes(out));
      ASSERT_EQ(out[0], 3 * round * 100 + 3);
    }
  });
}

TEST(HostCommunicator, MissingDeviceTimesOutNamingIt) {
  auto start = std::chrono::steady_clock::now();
  auto errors = errors_on_devices(
      3,
      [](Communicator& c) {
        if (c.device() == 2) return;  // skips the collective
        std::vector<float> in = {1.0f}, out(1);
        c.all_reduce("stablehlo.all_reduce", {0, 1, 2}, ElementType::f32, ReduceOp::Sum, bytes(in),
                     bytes(out));
      },
      std::chrono::milliseconds(200));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(errors[0],
            "stablehlo.all_reduce on device 0 timed out after 200 ms waiting for device 2 (group "
            "[0, 1, 2])");
  EXPECT_EQ(errors[1],
            "stablehlo.all_reduce on device 1 timed out after 200 ms waiting for device 2 (group "
            "[0, 1, 2])");
  EXPECT_EQ(errors[2], "");
}

TEST(HostCommunicator, MismatchedCollectivesAreNamed) {
  auto errors = errors_on_devices(
      2,
      [](Communicator& c) {
        if (c.device() == 0) {
          c.barrier("first", {0, 1});
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          c.barrier("second", {0, 1});
        }
      },
      std::chrono::milliseconds(300));
  EXPECT_EQ(errors[1],
            "second on device 1 meets first of another device on group [0, 1]: devices issued "
            "different collectives");
  EXPECT_EQ(errors[0],
            "first on device 0 timed out after 300 ms waiting for device 1 (group [0, 1])");
}

TEST(HostCommunicator, BadGroups) {
  HostWorld world(2);
  HostCommunicator c(world, 0);
  auto error = [&](const Group& g) {
    try {
      c.barrier("op", g);
    } catch (const support::UserError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_EQ(error({0, 2}), "op: group [0, 2] is not a set of devices of 0..1");
  EXPECT_EQ(error({0, 0}), "op: group [0, 0] is not a set of devices of 0..1");
  EXPECT_EQ(error({1}), "op: device 0 is not in its group [1]");
  EXPECT_EQ(error({0}), "<no error>");
  try {
    HostCommunicator bad(world, 2);
    FAIL();
  } catch (const support::UserError& e) {
    EXPECT_STREQ(e.what(), "device 2 is outside a host world of 2 devices");
  }
}

}  // namespace
}  // namespace tessera::comm
