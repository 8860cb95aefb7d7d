// One-sided messages between host devices (send and recv): a queue per MessageKey in the
// HostWorld, under its mutex. post copies the bytes into the queue and wakes the waiters; take
// waits on the world's condition variable, up to the world's timeout, for the queue's oldest
// message. The queues live as long as the world, so a world remade after a failed run starts with
// none.
#include <fmt/format.h>

#include <cstring>

#include "comm/host_communicator.h"

namespace tessera::comm {

void HostCommunicator::post(std::string_view op, const MessageKey& key, std::span<const std::byte> bytes) {
  {
    std::lock_guard<std::mutex> lock(world_->mu_);
    world_->mail_[key].emplace_back(bytes.begin(), bytes.end());
  }
  world_->mail_arrived_.notify_all();
  count(op, 2, bytes.size(), bytes.size(), 0);
}

void HostCommunicator::take(std::string_view op, const MessageKey& key, std::span<std::byte> out) {
  std::vector<std::byte> message;
  {
    std::unique_lock<std::mutex> lock(world_->mu_);
    auto ready = [&] {
      auto it = world_->mail_.find(key);
      return it != world_->mail_.end() && !it->second.empty();
    };
    if (!world_->mail_arrived_.wait_for(lock, world_->timeout(), ready))
      throw TimeoutError(fmt::format("{} on device {} timed out after {} ms waiting for a message on {}", op, device_,
                                     world_->timeout().count(), describe(key)));
    auto it = world_->mail_.find(key);
    message = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) world_->mail_.erase(it);
  }
  if (message.size() != out.size())
    support::fail("{} on device {}: the message on {} has {} bytes, but the values it receives need {}", op, device_,
                  describe(key), message.size(), out.size());
  if (!out.empty()) std::memcpy(out.data(), message.data(), out.size());
  count(op, 2, out.size(), 0, out.size());
}

}  // namespace tessera::comm
