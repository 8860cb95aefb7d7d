// The Mailbox of transfer.h: one mutex and one condition variable for all keys. A pipeline has a
// handful of stages, so waking every waiter on each send costs less than per-key machinery, and a
// blocking wait (never a spin) keeps idle stages off the cores (DESIGN.md §6).
#include "mpmd/transfer.h"

namespace tessera::mpmd {

void Mailbox::send(const TransferKey& key, ir::Literal value) {
  {
    std::lock_guard lock(mutex_);
    queues_[key].push_back(std::move(value));
  }
  arrived_.notify_all();
}

ReceiveStatus Mailbox::receive(const TransferKey& key, std::chrono::milliseconds timeout, ir::Literal& out) {
  std::unique_lock lock(mutex_);
  const auto ready = [&] {
    if (aborted_) return true;
    auto it = queues_.find(key);
    return it != queues_.end() && !it->second.empty();
  };
  if (!arrived_.wait_for(lock, timeout, ready)) return ReceiveStatus::kTimedOut;
  if (aborted_) return ReceiveStatus::kAborted;
  auto it = queues_.find(key);
  out = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) queues_.erase(it);
  return ReceiveStatus::kReceived;
}

void Mailbox::abort() {
  {
    std::lock_guard lock(mutex_);
    aborted_ = true;
  }
  arrived_.notify_all();
}

size_t Mailbox::undelivered() const {
  std::lock_guard lock(mutex_);
  size_t n = 0;
  for (const auto& [key, queue] : queues_) n += queue.size();
  return n;
}

}  // namespace tessera::mpmd
