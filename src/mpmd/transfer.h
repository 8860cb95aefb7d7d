// Point-to-point transfers between the stages of a pipeline run.
//
// A Transport is how a StageWorker (runtime.cpp) hands a value to another stage and waits for one.
// Within one process it is a Mailbox: one blocking queue per (from, to, payload, microbatch,
// virtual stage); a SEND pushes and never waits (as in the simulator, a send is posted and the
// link carries it), a RECV waits on its own key only, so values of different microbatches never
// overtake or block each other. Waits end with the value, with a timeout (so a missing send is
// reported, never a hang) or when another stage has failed and aborted the run.
//
// When the stages are spread over processes (MPI ranks, mpi_transfer.h), a RoutedTransport keeps
// the transfers between two stages of this process in its Mailbox and passes the others to
// `Ranks`, the processes' point-to-point layer. Stage s of P runs on rank s·R/P of R (R divides
// P): consecutive stages share a rank, so with fewer ranks than stages most hops stay local.
#pragma once

#include <atomic>
#include <chrono>
#include <compare>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

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

class Transport {
 public:
  virtual ~Transport() = default;
  // Posts `value` for key.to; never waits.
  virtual void send(const TransferKey& key, ir::Literal value) = 0;
  // Waits up to `timeout` for the value under `key` and moves it into `out`. A UserError (naming
  // the process) when the sender's process failed or left: waiting longer is pointless.
  virtual ReceiveStatus receive(const TransferKey& key, std::chrono::milliseconds timeout, ir::Literal& out) = 0;
  // Wakes every waiting receive of this process, and makes every later one return kAborted at once.
  virtual void abort() = 0;
  // Values sent to this process's stages and never received.
  virtual size_t undelivered() const = 0;
};

class Mailbox final : public Transport {
 public:
  void send(const TransferKey& key, ir::Literal value) override;
  ReceiveStatus receive(const TransferKey& key, std::chrono::milliseconds timeout, ir::Literal& out) override;
  void abort() override;
  size_t undelivered() const override;

 private:
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::map<TransferKey, std::deque<ir::Literal>> queues_;
  bool aborted_ = false;
};

// The processes a pipeline's stages are spread over, as the runtime needs them. Every process
// makes the same calls in the same order (exchange is collective).
class Ranks {
 public:
  virtual ~Ranks() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Posts `value` (stage key.from's) for stage key.to on rank `to`; never waits. `run` numbers the
  // runs made over these ranks, so that values of different runs never meet.
  virtual void send(int to, uint64_t run, const TransferKey& key, const ir::Literal& value) = 0;
  // Waits up to `timeout` for that value from rank `from`; gives up (kAborted) soon after
  // `aborted` becomes true. A UserError naming rank `from` when it failed or exited.
  virtual ReceiveStatus receive(int from, uint64_t run, const TransferKey& key, std::chrono::milliseconds timeout,
                                const std::atomic<bool>& aborted, ir::Literal& out) = 0;
  // Every rank's `payload`, in rank order (this rank's included). `what` names it in errors.
  virtual std::vector<std::vector<std::byte>> exchange(const std::string& what, std::span<const std::byte> payload) = 0;
  // Tells every other rank that this rank's part failed: their waits on it end now with `reason`.
  virtual void report_failure(const std::string& reason) = 0;

  // The number of the next run over these ranks (every rank counts its runs alike).
  uint64_t next_run() { return runs_++; }

 private:
  uint64_t runs_ = 0;
};

// A literal as bytes (its element type, shape and storage) and back: what crosses between ranks.
void encode_literal(std::vector<std::byte>& out, const ir::Literal& x);
ir::Literal decode_literal(std::span<const std::byte> in);

// The rank that runs stage `stage` of `stages` over `ranks` ranks: stage·ranks/stages. A
// UserError unless ranks divides stages.
int owner_rank(int64_t stage, int64_t stages, int ranks);

// The stages of `stages` that this process runs: all of them without ranks, else those
// owner_rank gives this rank, ascending.
std::vector<int64_t> local_stages(int64_t stages, const Ranks* ranks);

// Local stages through a Mailbox, the others through `ranks`. Counts what it sends to and receives
// from each rank, so that a run can check that every value sent was taken.
class RoutedTransport final : public Transport {
 public:
  RoutedTransport(Ranks& ranks, int64_t stages, uint64_t run);
  void send(const TransferKey& key, ir::Literal value) override;
  ReceiveStatus receive(const TransferKey& key, std::chrono::milliseconds timeout, ir::Literal& out) override;
  void abort() override;
  size_t undelivered() const override { return local_.undelivered(); }

  // Values sent to rank r's stages, and received from rank r's, by this process.
  std::vector<int64_t> sent() const;
  std::vector<int64_t> received() const;

 private:
  Ranks& ranks_;
  int64_t stages_;
  uint64_t run_;
  Mailbox local_;
  std::atomic<bool> aborted_{false};
  std::vector<std::atomic<int64_t>> sent_, received_;
};

}  // namespace tessera::mpmd
