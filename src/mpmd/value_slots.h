// The pipeline runner's one transport inside a process (fragment_pipeline_run.cpp): slots for
// values in flight between stage threads, and the runner of the stage threads that aborts every
// wait when one stage fails. Values between ranks go through Ranks (ranks.h) instead.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "runtime/session.h"
#include "support/threads.h"

namespace tessera::mpmd {

// Values in flight between stages in this process: one slot per (value id, destination stage). A
// post never waits; a take waits for its own slot up to a timeout; a failure anywhere aborts every
// wait at once, so no thread outlives a failed run.
class ValueSlots {
 public:
  void post(size_t value, size_t to, runtime::ShardedBuffer v) {
    {
      std::lock_guard lock(mu_);
      slots_.insert_or_assign({value, to}, std::move(v));
    }
    cv_.notify_all();
  }
  // The value, or nothing when the run was aborted or `timeout` passed.
  std::optional<runtime::ShardedBuffer> take(size_t value, size_t to, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    auto key = std::make_pair(value, to);
    if (!cv_.wait_for(lock, timeout, [&] { return aborted_ || slots_.count(key); }) || !slots_.count(key))
      return std::nullopt;
    runtime::ShardedBuffer v = std::move(slots_.at(key));
    slots_.erase(key);
    return v;
  }
  void abort() {
    {
      std::lock_guard lock(mu_);
      aborted_ = true;
    }
    cv_.notify_all();
  }
  bool aborted() const { return aborted_; }
  // For waits elsewhere (a receive from another rank) to give up when the run is aborted.
  const std::atomic<bool>& abort_flag() const { return aborted_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<size_t, size_t>, runtime::ShardedBuffer> slots_;
  std::atomic<bool> aborted_{false};
};

// Runs body(0) ... body(count - 1) at once, each on a persistent worker of its own
// (support/threads.h), and waits for all; one that fails aborts `slots`, so that the others stop
// waiting, and run_concurrently rethrows its exception here (the lowest-numbered one's, when
// several fail: a stage that stops because the run was aborted returns without one).
inline void run_on_threads(size_t count, const std::function<void(size_t)>& body, ValueSlots& slots) {
  support::run_concurrently(count, [&](size_t i) {
    try {
      body(i);
    } catch (...) {
      slots.abort();
      throw;
    }
  });
}

}  // namespace tessera::mpmd
