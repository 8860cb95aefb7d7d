// Pipeline stages spread over processes (MPI ranks): the point-to-point layer between stages on
// different ranks, and which ranks run which stage.
//
// R ranks and P stages (stage_ranks): with R dividing P, stage s runs on rank s·R/P (consecutive
// stages share a rank, their hops stay in the process); with P dividing R, on the R/P ranks from
// s·R/P, its device group split over them (a session over those ranks only: stage_session).
//
// A value moves shard by shard (transfer_messages): each destination piece receives from each
// rank holding source pieces it overlaps one message with exactly those parts, named by its
// WireKey, whatever the order of arrival. This is the pipeline's only transport: LocalRanks is one
// process as one rank (its stages' threads hand values to each other through it), MpiRanks
// implements it over MPI (built only with the MPI backend: TESSERA_HAVE_MPI).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <compare>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "ir/literal.h"
#include "ir/module.h"
#include "runtime/layout.h"
#include "runtime/session.h"
#ifdef TESSERA_HAVE_MPI
#include "comm/mpi_communicator.h"
#endif

namespace tessera::mpmd {

// One piece of one value on its way: the plan's value id, both stages, the destination device.
struct WireKey {
  int64_t value = 0, from = 0, to = 0, piece = 0;
  auto operator<=>(const WireKey&) const = default;
};

enum class ReceiveStatus { kReceived, kTimedOut, kAborted };

class Ranks {
 public:
  virtual ~Ranks() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Posts `payload` (pack_parts') to rank `to`; never waits. `run` keeps runs apart.
  virtual void send(int to, uint64_t run, const WireKey& key, std::vector<std::byte> payload) = 0;
  // Waits up to `timeout` for that message from rank `from`, or until `aborted` (looked at every
  // 20 ms: a stage that failed sets it, so no thread waits on past its run). A UserError names rank
  // `from` when it failed or exited.
  ReceiveStatus receive(int from, uint64_t run, const WireKey& key, std::chrono::milliseconds timeout,
                        const std::atomic<bool>& aborted, std::vector<std::byte>& out);
  // One slice of a receive: true when the message came within `wait`.
  virtual bool take(int from, uint64_t run, const WireKey& key, std::chrono::milliseconds wait,
                    std::vector<std::byte>& out) = 0;
  // Every rank's `payload`, in rank order. `what` names it in errors.
  virtual std::vector<std::vector<std::byte>> exchange(const std::string& what, std::span<const std::byte> payload) = 0;
  // Ends the other ranks' waits on this one with `reason`.
  virtual void report_failure(const std::string& reason) = 0;
  // A session over `count` ranks from `first`, `local_devices` each: a stage spanning ranks.
  // Its waits end at another rank's failure. By default a UserError (ranks in one process cannot).
  virtual std::unique_ptr<runtime::Session> stage_session(int first, int count, int64_t local_devices,
                                                          const runtime::SessionOptions& options);

  uint64_t next_run() { return runs_++; }

 private:
  uint64_t runs_ = 0;
};

// One process as one rank: a send puts the message in a slot keyed by (run, key) and never waits;
// a receive waits for its slot. A send of a newer run drops what older runs left (a failed run's
// messages nobody took). MpiRanks sends to itself through one.
class LocalRanks final : public Ranks {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void send(int to, uint64_t run, const WireKey& key, std::vector<std::byte> payload) override;
  bool take(int from, uint64_t run, const WireKey& key, std::chrono::milliseconds wait,
            std::vector<std::byte>& out) override;
  std::vector<std::vector<std::byte>> exchange(const std::string&, std::span<const std::byte> payload) override {
    return {{payload.begin(), payload.end()}};
  }
  void report_failure(const std::string&) override {}  // no other rank waits on this one

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<uint64_t, WireKey>, std::vector<std::byte>> slots_;
  uint64_t newest_run_ = 0;
};

// A literal as bytes (element type, shape, storage) and back.
std::vector<std::byte> encode_literal(const ir::Literal& x);
ir::Literal decode_literal(std::span<const std::byte> in);

// The ranks that run a stage: `count` consecutive ranks from `first`.
struct StageRanks {
  int first = 0, count = 1;
  bool contains(int rank) const { return rank >= first && rank < first + count; }
};
// A UserError unless one of ranks and stages divides the other.
StageRanks stage_ranks(int64_t stage, int64_t stages, int ranks);

// Where a value's pieces are: `sharding` on `mesh` (null: one whole piece), device d on rank
// ranks.first + d / (devices / ranks.count).
struct Placement {
  const ir::Mesh* mesh = nullptr;
  ir::Sharding sharding;
  StageRanks ranks;
  int64_t devices() const { return mesh ? mesh->num_devices() : 1; }
  int rank_of(int64_t device) const {
    return ranks.first + static_cast<int>(device / std::max<int64_t>(1, devices() / ranks.count));
  }
  runtime::PieceBox box(const ir::Type& type, int64_t device) const;
};

// One box copied from the source device's piece at `at_src` to a destination piece at `at_dst`.
struct PiecePart {
  int64_t source_device = 0;
  std::vector<int64_t> at_src, at_dst, extent;
  int64_t elements() const;
};
// What one source rank sends for one destination piece (possibly nothing: the receiver still
// counts the message).
struct PieceMessage {
  int from = 0, to = 0;
  int64_t piece = 0;
  std::vector<PiecePart> parts;
};
// The plan for moving a `type` value from `from` to `to`: each destination piece gets each distinct
// source box it overlaps once, from a holder on its own rank if any (else replicas take turns),
// in one message per source rank.
std::vector<PieceMessage> transfer_messages(const ir::Type& type, const Placement& from, const Placement& to);

// A message's wire form: each part's place in the destination piece and its elements.
std::vector<std::byte> pack_parts(const PieceMessage& m, const std::vector<ir::Literal>& source_pieces);
// Writes a message's parts into `piece`; returns the data bytes (UserError: they do not fit).
int64_t unpack_parts(std::span<const std::byte> message, ir::Literal& piece);

#ifdef TESSERA_HAVE_MPI
// The Ranks over a comm::MpiWorld. Every rank makes its MpiWorld (and this) in the same order and
// runs the same pipeline calls. A stage on several ranks runs on a Session over them whose waits
// also end at this world's failure notices. A piece's parts go as one point-to-point message whose
// tag packs the run, destination stage, value and piece (a UserError when a field does not fit its
// bits). Messages to this rank itself (between two stages it runs) go through a LocalRanks.
class MpiRanks final : public Ranks {
 public:
  explicit MpiRanks(comm::MpiWorld& world) : world_(world) {}
  int rank() const override { return world_.rank(); }
  int size() const override { return world_.num_ranks(); }
  void send(int to, uint64_t run, const WireKey& key, std::vector<std::byte> payload) override;
  bool take(int from, uint64_t run, const WireKey& key, std::chrono::milliseconds wait,
            std::vector<std::byte>& out) override;
  std::vector<std::vector<std::byte>> exchange(const std::string& what, std::span<const std::byte> payload) override;
  void report_failure(const std::string& reason) override { world_.report_failure(reason); }
  std::unique_ptr<runtime::Session> stage_session(int first, int count, int64_t local_devices,
                                                  const runtime::SessionOptions& options) override;

 private:
  comm::MpiWorld& world_;
  LocalRanks self_;
};
#endif

}  // namespace tessera::mpmd
