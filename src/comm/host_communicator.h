// Host devices: one thread per device in one process, exchanging data through shared memory.
//
// A HostWorld is the meeting place of one run's devices; each device thread talks through its own
// HostCommunicator. Each group of devices has a channel: a counter every member bumps when it
// arrives at a meeting ("sync"), and per member a post (its op, sizes, buffer pointers, and for
// small messages a copy of its input). Members of a group issue the same collectives in the same
// order, so the k-th meeting of a group is complete when the counter reaches k * n.
//
// Algorithms (all fold reductions in group order per element, so results are the bits of the
// plain exchange of communicator.cpp):
//   small (input <= kSmallBytes, kSmallReduceBytes for all_reduce): each member copies its input into its post and arrives; then
//     every member computes its own result from the copies. One meeting; posts alternate between
//     two buffers, because a member can only reuse a buffer two meetings later, when every peer
//     has arrived at the meeting in between and so has finished reading it.
//   large: members post pointers to their own buffers and read peers' buffers directly, then
//     meet once more before leaving, so no buffer is freed while read. all_reduce is a
//     reduce-scatter and an all-gather in one pass: member i folds chunk i of every input (group
//     order, cache-sized blocks) and writes each folded block into every member's output.
//     reduce_scatter folds only its chunk; all_gather, all_to_all, broadcast and permute copy what
//     they need. Each device moves the ring model's bytes, at memory speed; results larger than
//     the caches are written with non-temporal stores.
// Waits spin briefly, then yield, then block on a condition variable (DESIGN.md §6: spinning
// threads on 2 cores are ruinous), and give up after the world's timeout with a TimeoutError
// naming the op and the missing devices; a device that gives up on the first meeting withdraws
// its arrival, so late peers never read its buffers. (Giving up on the last meeting means a peer
// stalled mid-copy for the whole timeout; the device leaves anyway, as the old rendezvous did.)
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/communicator.h"

namespace tessera::comm {

class HostWorld {
 public:
  explicit HostWorld(int64_t num_devices,
                     std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~HostWorld();
  int64_t num_devices() const { return num_devices_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Inputs up to this size travel by copy in one meeting; larger ones are read in place.
  static constexpr size_t kSmallBytes = 32 * 1024;
  // all_reduce's small path reads and folds every member's whole input, n times the large path's
  // work: it pays only while a meeting costs more than that (measured: 4 KiB on 4 devices).
  static constexpr size_t kSmallReduceBytes = 4 * 1024;

 private:
  friend class HostCommunicator;
  struct Channel;
  Channel& channel(const Group& group);

  int64_t num_devices_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::map<Group, std::unique_ptr<Channel>> channels_;
  // One-sided messages (host_messages.cpp), under mu_: what was posted and not yet taken, per key.
  std::map<MessageKey, std::deque<std::vector<std::byte>>> mail_;
  std::condition_variable mail_arrived_;
};

class HostCommunicator : public Communicator {
 public:
  HostCommunicator(HostWorld& world, int64_t device);
  int64_t device() const override { return device_; }
  int64_t num_devices() const override { return world_->num_devices(); }
  std::unique_ptr<Exchange> exchange(std::string_view op, const Group& group,
                                     std::span<const std::byte> input) override;

  void all_reduce(std::string_view op, const Group& group, ir::ElementType type, ReduceOp reduce,
                  std::span<const std::byte> in, std::span<std::byte> out) override;
  void all_gather(std::string_view op, const Group& group, std::span<const std::byte> in,
                  std::span<std::byte> out) override;
  void reduce_scatter(std::string_view op, const Group& group, ir::ElementType type, ReduceOp reduce,
                      std::span<const std::byte> in, std::span<std::byte> out) override;
  void all_to_all(std::string_view op, const Group& group, std::span<const std::byte> in,
                  std::span<std::byte> out) override;
  void broadcast(std::string_view op, const Group& group, std::span<const std::byte> in,
                 std::span<std::byte> out) override;
  void permute(std::string_view op, const Group& group, std::optional<int64_t> source,
               std::span<const std::byte> in, std::span<std::byte> out) override;
  void barrier(std::string_view op, const Group& group) override;
  void post(std::string_view op, const MessageKey& key, std::span<const std::byte> bytes) override;
  void take(std::string_view op, const MessageKey& key, std::span<std::byte> out) override;

  struct Meeting;  // this device's side of one collective on a channel (host_communicator.cpp)

 private:
  HostWorld::Channel& channel(std::string_view op, const Group& group);

  HostWorld* world_;
  int64_t device_;
  std::map<Group, HostWorld::Channel*> channels_;  // this device's groups, checked once
};

}  // namespace tessera::comm
