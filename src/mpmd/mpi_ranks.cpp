// MpiRanks (ranks.h): pipeline transfers as MpiWorld point-to-point messages.
#include "mpmd/ranks.h"

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

int64_t tag(uint64_t run, const WireKey& key) {
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

}  // namespace

void MpiRanks::send(int to, uint64_t run, const WireKey& key, std::vector<std::byte> payload) {
  if (to == rank()) return self_.send(0, run, key, std::move(payload));
  world_.send_to(to, transfer_name(key), tag(run, key), std::move(payload));
}

bool MpiRanks::take(int from, uint64_t run, const WireKey& key, std::chrono::milliseconds wait,
                    std::vector<std::byte>& out) {
  if (from == rank()) return self_.take(0, run, key, wait, out);
  try {
    // A failed or departed rank `from` throws a UserError naming it: passed on as it is.
    out = world_.receive_from(from, transfer_name(key), tag(run, key), wait);
    return true;
  } catch (const comm::TimeoutError&) {
    return false;  // only this slice ran out
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
