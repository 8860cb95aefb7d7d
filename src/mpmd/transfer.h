// Point-to-point transfers between the stage threads of a pipeline run.
//
// A Mailbox holds one blocking queue per (from, to, payload, microbatch, virtual stage): a SEND
// pushes and never waits (as in the simulator, a send is posted and the link carries it), a RECV
// waits on its own key only, so values of different microbatches never overtake or block each
// other. Waits end with the value, with a timeout (so a missing send is reported, never a hang)
// or when another stage has failed and aborted the run.
#pragma once

#include <chrono>
#include <compare>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>

#include "ir/literal.h"
#include "mpmd/schedule.h"

namespace tessera::mpmd {

struct TransferKey {
  int64_t from = 0, to = 0;
  Payload payload = Payload::kNone;
  int64_t microbatch = 0;
  int64_t virtual_stage = 0;  // of the action that produced the value (schedule.h)
  auto operator<=>(const TransferKey&) const = default;
};

enum class ReceiveStatus { kReceived, kTimedOut, kAborted };

class Mailbox {
 public:
  void send(const TransferKey& key, ir::Literal value);
  // Waits up to `timeout` for a value under `key` and moves it into `out`.
  ReceiveStatus receive(const TransferKey& key, std::chrono::milliseconds timeout, ir::Literal& out);
  // Wakes every waiting receive, and makes every later one return kAborted at once.
  void abort();
  // Values sent and never received (a schedule that sends something nobody takes).
  size_t undelivered() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::map<TransferKey, std::deque<ir::Literal>> queues_;
  bool aborted_ = false;
};

}  // namespace tessera::mpmd
