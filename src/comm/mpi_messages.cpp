// One-sided messages across MPI ranks (send and recv). A message between two devices of one rank
// goes through the rank's HostWorld, as on host devices. Between ranks it is a point-to-point
// message of the world: the sender's rank sends it at once (a post never waits, so a ring of
// sends then receives cannot deadlock), and the receiving device waits for it, up to the world's
// timeout. Each end numbers the messages under a key (channel, sender, receiver) in its own
// program order, and the wire key carries that number, so the n-th take receives the n-th post
// whatever order the ranks' messages arrive in.
#include <fmt/format.h>

#include <cstring>

#include "comm/mpi_communicator.h"

namespace tessera::comm {

namespace {

// What both ends call a device message on the wire (send and recv name it differently).
constexpr std::string_view kWire = "send/recv message";

// The wire key of device messages: -2 tells them apart from rank-to-rank transfers (-1).
Group message_group(const MessageKey& key) { return {-2, key.channel, key.source, key.target}; }

// The rank that owns the other end of `key`, or refuses a message with no such end.
int peer_rank(std::string_view op, const MpiWorld& world, const MessageKey& key, int64_t device, bool posting) {
  if (key.source < 0) {
    if (world.num_ranks() == 1) return world.rank();
    support::fail("{} on device {}: a message matched by channel alone ({}, no source_target_pairs) has no rank to "
                  "go to among {} MPI ranks; give the op source_target_pairs",
                  op, device, describe(key), world.num_ranks());
  }
  int64_t peer = posting ? key.target : key.source;
  if (peer < 0 || peer >= world.num_devices())
    support::fail("{} on device {}: the message on {} names device {}, but the MPI world has devices 0..{}", op,
                  device, describe(key), peer, world.num_devices() - 1);
  return world.owner(peer);
}

}  // namespace

int64_t MpiWorld::next_message(bool posting, const MessageKey& key) {
  std::lock_guard lock(mu_);
  return messages_[{posting, key}]++;
}

void MpiCommunicator::post(std::string_view op, const MessageKey& key, std::span<const std::byte> bytes) {
  int to = peer_rank(op, *world_, key, device_, true);
  if (to == world_->rank()) {
    local_.post(op, key, bytes);
  } else {
    world_->send_keyed(to, kWire, message_group(key), world_->next_message(true, key),
                       std::vector<std::byte>(bytes.begin(), bytes.end()));
  }
  count(op, 2, bytes.size(), bytes.size(), 0);
}

void MpiCommunicator::take(std::string_view op, const MessageKey& key, std::span<std::byte> out) {
  int from = peer_rank(op, *world_, key, device_, false);
  if (from == world_->rank()) {
    local_.take(op, key, out);
  } else {
    std::vector<std::byte> message =
        world_->receive_keyed(from, op, kWire, message_group(key), world_->next_message(false, key),
                              fmt::format("a message on {}", describe(key)), world_->timeout());
    if (message.size() != out.size())
      support::fail("{} on device {}: the message on {} has {} bytes, but the values it receives need {}", op,
                    device_, describe(key), message.size(), out.size());
    if (!out.empty()) std::memcpy(out.data(), message.data(), out.size());
  }
  count(op, 2, out.size(), 0, out.size());
}

}  // namespace tessera::comm
