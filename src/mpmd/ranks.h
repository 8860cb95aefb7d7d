// Pipeline stages spread over processes (MPI ranks): the point-to-point layer a pipeline run needs
// between its stages on different ranks, and which rank runs which stage.
//
// Stage s of P runs on rank s·R/P of R (R divides P): consecutive stages share a rank, so with
// fewer ranks than stages most hops stay in the process (ValueSlots). A value between stages of
// two ranks goes as one message per destination piece, named by its WireKey, so each receive takes
// exactly its piece whatever the order of arrival. MpiRanks (mpi_ranks.h) is the implementation
// over comm::MpiWorld; tests may implement it in process.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/literal.h"

namespace tessera::mpmd {

// One piece of one value on its way to a stage: the plan's value id, both stages, the piece's
// destination device within its stage.
struct WireKey {
  int64_t value = 0, from = 0, to = 0, piece = 0;
};

enum class ReceiveStatus { kReceived, kTimedOut, kAborted };

class Ranks {
 public:
  virtual ~Ranks() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Posts `value` for stage key.to on rank `to`; never waits. `run` numbers the runs made over
  // these ranks, so that values of different runs never meet.
  virtual void send(int to, uint64_t run, const WireKey& key, const ir::Literal& value) = 0;
  // Waits up to `timeout` for that value from rank `from`; gives up (kAborted) soon after
  // `aborted` becomes true. A UserError naming rank `from` when it failed or exited.
  virtual ReceiveStatus receive(int from, uint64_t run, const WireKey& key, std::chrono::milliseconds timeout,
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

}  // namespace tessera::mpmd
