// Host devices: one thread per device in one process, exchanging data through shared memory.
//
// A HostWorld is the meeting place of one run's devices; each device thread talks through its own
// HostCommunicator. A collective is a rendezvous keyed by (group, how many collectives this device
// has issued on that group): each member posts a pointer to its input, waits until the group is
// complete, reads its peers' inputs directly, and on leaving waits until all have finished reading.
// Waits block on a condition variable (DESIGN.md §6: spinning threads on 2 cores are ruinous) and
// give up after the world's timeout with a TimeoutError naming the op and the missing devices.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

#include "comm/communicator.h"

namespace tessera::comm {

class HostWorld {
 public:
  explicit HostWorld(int64_t num_devices,
                     std::chrono::milliseconds timeout = std::chrono::seconds(30));
  int64_t num_devices() const { return num_devices_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  friend class HostCommunicator;
  struct Slot;
  std::shared_ptr<Slot> join(std::string_view op, const Group& group, int64_t sequence,
                             size_t index, std::span<const std::byte> input);

  int64_t num_devices_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<Group, int64_t>, std::shared_ptr<Slot>> open_;
};

class HostCommunicator : public Communicator {
 public:
  HostCommunicator(HostWorld& world, int64_t device);
  int64_t device() const override { return device_; }
  int64_t num_devices() const override { return world_->num_devices(); }
  std::unique_ptr<Exchange> exchange(std::string_view op, const Group& group,
                                     std::span<const std::byte> input) override;

 private:
  HostWorld* world_;
  int64_t device_;
  std::map<Group, int64_t> sequence_;  // collectives issued per group, by this device only
};

}  // namespace tessera::comm
