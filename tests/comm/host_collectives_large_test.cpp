// The host communicator's fast paths against the plain exchange of the base class: every
// collective, below and above the small-message threshold, on sizes that do not split evenly,
// must give the same bits (reductions fold in group order per element). And the byte accounting:
// what each algorithm moves, next to the ring model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include "comm/host_communicator.h"

namespace tessera::comm {
namespace {

using ir::ElementType;

// The base class's collectives over the host communicator's exchange: the reference.
class PlainExchange : public Communicator {
 public:
  explicit PlainExchange(HostCommunicator& c) : c_(c) {}
  int64_t device() const override { return c_.device(); }
  int64_t num_devices() const override { return c_.num_devices(); }
  std::unique_ptr<Exchange> exchange(std::string_view op, const Group& group,
                                     std::span<const std::byte> input) override {
    return c_.exchange(op, group, input);
  }

 private:
  HostCommunicator& c_;
};

template <typename F>
void on_devices(int64_t n, F&& body) {
  HostWorld world(n, std::chrono::seconds(20));
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<size_t>(n));
  for (int64_t d = 0; d < n; ++d)
    threads.emplace_back([&, d] {
      try {
        HostCommunicator c(world, d);
        PlainExchange plain(c);
        body(c, plain);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(d)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (const std::string& e : errors) EXPECT_EQ(e, "");
}

// Values of very different magnitudes, so that another summation order gives other bits.
std::vector<float> values(size_t count, int64_t device) {
  std::mt19937 rng(static_cast<uint32_t>(1234 + device));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = u(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
  if (count > 5) v[5] = NAN;  // max/min: NaN wins wherever it is
  return v;
}

std::span<std::byte> as_bytes(std::vector<float>& v) { return std::as_writable_bytes(std::span(v)); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class FastCollectives : public ::testing::TestWithParam<std::pair<int64_t, size_t>> {};

TEST_P(FastCollectives, SameBitsAsThePlainExchange) {
  auto [n, count] = GetParam();
  Group all;
  for (int64_t d = n - 1; d >= 0; --d) all.push_back(d);  // not device order
  on_devices(n, [&, n = n, count = count](HostCommunicator& c, PlainExchange& plain) {
    auto sn = static_cast<size_t>(n);
    std::vector<float> in = values(count, c.device()), fast(count), ref(count);
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Product}) {
      c.all_reduce("all_reduce", all, ElementType::f32, op, as_bytes(in), as_bytes(fast));
      plain.all_reduce("all_reduce", all, ElementType::f32, op, as_bytes(in), as_bytes(ref));
      ASSERT_TRUE(same_bits(fast, ref)) << "all_reduce " << int(op) << " of " << count << " on " << n;
    }
    std::vector<float> inplace = in;  // the result may be written over the operand
    c.all_reduce("all_reduce", all, ElementType::f32, ReduceOp::Sum, as_bytes(inplace), as_bytes(inplace));
    plain.all_reduce("all_reduce", all, ElementType::f32, ReduceOp::Sum, as_bytes(in), as_bytes(ref));
    ASSERT_TRUE(same_bits(inplace, ref)) << "in-place all_reduce of " << count;

    size_t even = count / sn * sn;  // reduce_scatter and all_to_all split into n equal chunks
    std::vector<float> whole(in.begin(), in.begin() + static_cast<long>(even));
    std::vector<float> piece(even / sn), piece_ref(even / sn);
    c.reduce_scatter("reduce_scatter", all, ElementType::f32, ReduceOp::Sum, as_bytes(whole), as_bytes(piece));
    plain.reduce_scatter("reduce_scatter", all, ElementType::f32, ReduceOp::Sum, as_bytes(whole),
                         as_bytes(piece_ref));
    ASSERT_TRUE(same_bits(piece, piece_ref)) << "reduce_scatter of " << even;

    std::vector<float> a2a(even), a2a_ref(even);
    c.all_to_all("all_to_all", all, as_bytes(whole), as_bytes(a2a));
    plain.all_to_all("all_to_all", all, as_bytes(whole), as_bytes(a2a_ref));
    ASSERT_TRUE(same_bits(a2a, a2a_ref)) << "all_to_all of " << even;

    std::vector<float> gathered(count * sn), gathered_ref(count * sn);
    c.all_gather("all_gather", all, as_bytes(in), as_bytes(gathered));
    plain.all_gather("all_gather", all, as_bytes(in), as_bytes(gathered_ref));
    ASSERT_TRUE(same_bits(gathered, gathered_ref)) << "all_gather of " << count;

    std::vector<float> b(count), b_ref(count);
    c.broadcast("broadcast", all, as_bytes(in), as_bytes(b));
    plain.broadcast("broadcast", all, as_bytes(in), as_bytes(b_ref));
    ASSERT_TRUE(same_bits(b, b_ref)) << "broadcast of " << count;

    // A shift by one along the group; the group's first member receives nothing (zeros).
    size_t me = index_in_group("permute", all, c.device());
    std::optional<int64_t> source;
    if (me > 0) source = all[me - 1];
    std::vector<float> p(count, 7.0f), p_ref(count, 7.0f);
    c.permute("permute", all, source, as_bytes(in), as_bytes(p));
    plain.permute("permute", all, source, as_bytes(in), as_bytes(p_ref));
    ASSERT_TRUE(same_bits(p, p_ref)) << "permute of " << count;
  });
}

// Sizes around the small-message thresholds (1024 floats for all_reduce, 8192 for the others) and large ones that do not divide evenly.
INSTANTIATE_TEST_SUITE_P(Sizes, FastCollectives,
                         ::testing::Values(std::pair<int64_t, size_t>{4, 7}, std::pair<int64_t, size_t>{4, 1025},
                                           std::pair<int64_t, size_t>{4, 8192},
                                           std::pair<int64_t, size_t>{4, 8193},
                                           std::pair<int64_t, size_t>{3, 300001},
                                           std::pair<int64_t, size_t>{4, 1 << 20},
                                           std::pair<int64_t, size_t>{2, 65539},
                                           std::pair<int64_t, size_t>{1, 70000}));

TEST(HostCollectives, Bf16SumFoldsInGroupOrder) {
  // bf16 rounds after every addition, so the order shows in the bits.
  on_devices(4, [](HostCommunicator& c, PlainExchange& plain) {
    std::vector<uint16_t> in(100000), fast(100000), ref(100000);
    for (size_t i = 0; i < in.size(); ++i) {
      float f = float(i % 97) * std::ldexp(1.0f, static_cast<int>(c.device() * 5 + i % 7) - 10);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      in[i] = static_cast<uint16_t>(bits >> 16);
    }
    auto b = [](auto& v) { return std::as_writable_bytes(std::span(v)); };
    c.all_reduce("all_reduce", {0, 1, 2, 3}, ElementType::bf16, ReduceOp::Sum, b(in), b(fast));
    plain.all_reduce("all_reduce", {0, 1, 2, 3}, ElementType::bf16, ReduceOp::Sum, b(in), b(ref));
    EXPECT_EQ(fast, ref);
  });
}

TEST(HostCollectives, SizesThatDisagreeAreNamed) {
  HostWorld world(2, std::chrono::milliseconds(300));
  std::string errors[2];
  std::vector<std::thread> threads;
  for (int64_t d = 0; d < 2; ++d)
    threads.emplace_back([&, d] {
      try {
        HostCommunicator c(world, d);
        if (d == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        std::vector<float> in(static_cast<size_t>(4 + d)), out(in.size());
        c.all_reduce("stablehlo.all_reduce", {0, 1}, ElementType::f32, ReduceOp::Sum, as_bytes(in), as_bytes(out));
      } catch (const std::exception& e) {
        errors[d] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors[1], "stablehlo.all_reduce on device 1 has 20 bytes, but device 0 of group [0, 1] has 16 bytes for it");
  EXPECT_EQ(errors[0], "stablehlo.all_reduce on device 0 timed out after 300 ms waiting for device 1 (group [0, 1])");
}

TEST(HostCollectives, LargeMessageWithAMissingDeviceTimesOut) {
  HostWorld world(3, std::chrono::milliseconds(200));
  std::string errors[3];
  std::vector<std::thread> threads;
  for (int64_t d = 0; d < 3; ++d)
    threads.emplace_back([&, d] {
      try {
        HostCommunicator c(world, d);
        if (d == 2) return;
        std::vector<float> in(1 << 16, 1.0f), out(in.size() * 3);
        c.all_gather("stablehlo.all_gather", {0, 1, 2}, as_bytes(in), as_bytes(out));
      } catch (const std::exception& e) {
        errors[d] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors[0], "stablehlo.all_gather on device 0 timed out after 200 ms waiting for device 2 (group [0, 1, 2])");
  EXPECT_EQ(errors[1], "stablehlo.all_gather on device 1 timed out after 200 ms waiting for device 2 (group [0, 1, 2])");
}

}  // namespace
}  // namespace tessera::comm
