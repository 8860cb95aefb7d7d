// Pipeline stages spread over processes (MPI ranks): the point-to-point layer a pipeline run needs
// between its stages on different ranks, and which ranks run which stage.
//
// R ranks and P stages (stage_ranks): with R dividing P, stage s runs on rank s·R/P, consecutive
// stages share a rank, so with fewer ranks than stages most hops stay in the process (ValueSlots);
// with P dividing R, stage s runs on the R/P ranks from s·R/P, its device group split over them
// (each rank runs group/(R/P) of its devices, a session over those ranks only: stage_session), so
// its collectives involve only its ranks.
//
// A value between stages on different ranks moves shard by shard (transfer_messages): each
// destination piece receives, from each rank holding source pieces it overlaps, one message with
// exactly those overlapping parts, named by its WireKey, so each receive takes exactly its parts
// whatever the order of arrival; a whole array never moves unless a piece is the whole array.
// MpiRanks (mpi_ranks.h) is the implementation over comm::MpiWorld; tests may implement it in
// process (one rank per stage group only).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/literal.h"
#include "ir/module.h"
#include "runtime/layout.h"
#include "runtime/session.h"

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
  // Posts `payload` (a message of pack_parts) for stage key.to on rank `to`; never waits. `run`
  // numbers the runs made over these ranks, so that values of different runs never meet.
  virtual void send(int to, uint64_t run, const WireKey& key, std::vector<std::byte> payload) = 0;
  // Waits up to `timeout` for that message from rank `from`; gives up (kAborted) soon after
  // `aborted` becomes true. A UserError naming rank `from` when it failed or exited.
  virtual ReceiveStatus receive(int from, uint64_t run, const WireKey& key, std::chrono::milliseconds timeout,
                                const std::atomic<bool>& aborted, std::vector<std::byte>& out) = 0;
  // Every rank's `payload`, in rank order (this rank's included). `what` names it in errors.
  virtual std::vector<std::vector<std::byte>> exchange(const std::string& what, std::span<const std::byte> payload) = 0;
  // Tells every other rank that this rank's part failed: their waits on it end now with `reason`.
  virtual void report_failure(const std::string& reason) = 0;
  // A session over `count` of these ranks from `first`, each running `local_devices` devices: a
  // stage whose device group spans several ranks. Only those ranks make it; its waits end when
  // another rank reports a failure here. By default a UserError (ranks in one process cannot).
  virtual std::unique_ptr<runtime::Session> stage_session(int first, int count, int64_t local_devices,
                                                          const runtime::SessionOptions& options);

  // The number of the next run over these ranks (every rank counts its runs alike).
  uint64_t next_run() { return runs_++; }

 private:
  uint64_t runs_ = 0;
};

// A literal as bytes (its element type, shape and storage) and back: losses and parameters
// handed to every rank.
void encode_literal(std::vector<std::byte>& out, const ir::Literal& x);
ir::Literal decode_literal(std::span<const std::byte> in);

// The ranks that run a stage: `count` consecutive ranks from `first`.
struct StageRanks {
  int first = 0, count = 1;
  bool contains(int rank) const { return rank >= first && rank < first + count; }
};
// The ranks of stage `stage` of `stages` over `ranks` ranks (see the top). A UserError unless one
// of ranks and stages divides the other.
StageRanks stage_ranks(int64_t stage, int64_t stages, int ranks);

// Where a value's pieces are: laid out as `sharding` on `mesh` (null: one whole piece) on the
// stage of `ranks`, device d on rank ranks.first + d / (devices / ranks.count).
struct Placement {
  const ir::Mesh* mesh = nullptr;
  ir::Sharding sharding;
  StageRanks ranks;
  int64_t devices() const { return mesh ? mesh->num_devices() : 1; }
  int rank_of(int64_t device) const {
    return ranks.first + static_cast<int>(device / std::max<int64_t>(1, devices() / ranks.count));
  }
  // Where device `device`'s piece of a `type` value lies in the whole array.
  runtime::PieceBox box(const ir::Type& type, int64_t device) const;
};

// One box copied from a source piece into a destination piece: at `at_src` of the source
// device's piece, at `at_dst` of the destination piece, `extent` elements per dimension.
struct PiecePart {
  int64_t source_device = 0;
  std::vector<int64_t> at_src, at_dst, extent;
  int64_t elements() const;
};
// What one rank of the source stage sends for one destination piece: the parts of its source
// pieces that the piece overlaps (none: an empty message, so that the receiver knows it has all).
struct PieceMessage {
  int from = 0, to = 0;
  int64_t piece = 0;
  std::vector<PiecePart> parts;
};
// The plan for moving a `type` value from `from` to `to`: for each destination piece, each distinct
// source box it overlaps once, from one of the devices holding that box (one on the destination
// piece's rank when there is one, else replicas take turns by destination piece, so that no rank
// sends every piece), in one message per rank of the source stage. Between stages on different
// ranks the senders follow it; reshard follows it in the process, so both move the same bits.
std::vector<PieceMessage> transfer_messages(const ir::Type& type, const Placement& from, const Placement& to);

// The mesh-to-mesh reshard in the process: `from` (on `from_mesh`'s devices, or one whole piece when
// the mesh is null or the buffer has one piece) laid out as `to` on `to_mesh`'s devices (null: one
// device, one whole piece). Each destination piece receives exactly the overlapping parts of the
// source pieces (transfer_messages' plan), never a whole array; `bytes` grows by what they
// received. With `on` (the session of to_mesh's devices, a stage over several ranks) only the
// pieces of this rank's devices are made (the others stay empty), from source pieces this rank
// holds (an InternalError when a piece needs another rank's).
runtime::ShardedBuffer reshard(const runtime::ShardedBuffer& from, const ir::Mesh* from_mesh, const ir::Sharding& to,
                               const ir::Mesh* to_mesh, int64_t& bytes, const runtime::Session* on = nullptr);
// A message's wire form: each part's place in the destination piece and its elements, cut from
// this rank's source pieces.
std::vector<std::byte> pack_parts(const PieceMessage& m, const std::vector<ir::Literal>& source_pieces);
// Writes the parts of a message into `piece` (already of its shape); returns the data bytes.
// A UserError when the message does not fit the piece.
int64_t unpack_parts(std::span<const std::byte> message, ir::Literal& piece);

}  // namespace tessera::mpmd
