// MpiRanks (mpi_ranks.h): pipeline transfers as MpiWorld point-to-point messages.
#include "mpmd/mpi_ranks.h"

#include <fmt/format.h>

#include <algorithm>

#include "support/error.h"

namespace tessera::mpmd {

namespace {

// The name both ends give a transfer: MpiWorld checks that a message meets a receive of the same
// name, and a timeout names it.
std::string transfer_name(const WireKey& key) {
  return fmt::format("pipeline transfer of value {} (piece {}) from stage {} to stage {}", key.value, key.piece,
                     key.from, key.to);
}

// A receive waits at most this long at a time, then looks whether its run was aborted.
constexpr std::chrono::milliseconds kSlice{20};

}  // namespace

int64_t MpiRanks::tag(uint64_t run, const WireKey& key) {
  // Bits, low to high: piece 10, value 28, to 12, run 12 (modulo: two runs 4096 apart never
  // overlap, every run ends with an exchange among all ranks).
  auto field = [&](int64_t value, int bits, const char* what) {
    if (value < 0 || value >= (int64_t{1} << bits))
      support::fail("pipeline stages on ranks: {} {} does not fit the transfer tag's {} bits", what, value, bits);
    return value;
  };
  int64_t t = static_cast<int64_t>(run % 4096);
  t = (t << 12) | field(key.to, 12, "stage");
  t = (t << 28) | field(key.value, 28, "value");
  t = (t << 10) | field(key.piece, 10, "piece");
  return t;
}

void MpiRanks::send(int to, uint64_t run, const WireKey& key, std::vector<std::byte> payload) {
  if (to == rank()) return self_.send(0, run, key, std::move(payload));
  world_.send_to(to, transfer_name(key), tag(run, key), std::move(payload));
}

ReceiveStatus MpiRanks::receive(int from, uint64_t run, const WireKey& key, std::chrono::milliseconds timeout,
                                const std::atomic<bool>& aborted, std::vector<std::byte>& out) {
  if (from == rank()) return self_.receive(0, run, key, timeout, aborted, out);
  const std::string what = transfer_name(key);
  const int64_t t = tag(run, key);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (aborted) return ReceiveStatus::kAborted;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return ReceiveStatus::kTimedOut;
    try {
      // A failed or departed rank `from` throws a UserError naming it: passed on as it is.
      out = world_.receive_from(from, what, t, std::min(left, kSlice));
      return ReceiveStatus::kReceived;
    } catch (const comm::TimeoutError&) {
      // Only this slice ran out; the deadline is checked above.
    }
  }
}

std::unique_ptr<runtime::Session> MpiRanks::stage_session(int first, int count, int64_t local_devices,
                                                          const runtime::SessionOptions& options) {
  runtime::SessionRanks r{world_.first_rank() + first, count, world_.id()};
  return std::make_unique<runtime::Session>(runtime::Session::mpi(local_devices, options, r));
}

std::vector<std::vector<std::byte>> MpiRanks::exchange(const std::string& what, std::span<const std::byte> payload) {
  return world_.exchange_ranks(what, payload);
}

}  // namespace tessera::mpmd
