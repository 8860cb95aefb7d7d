// Pipeline stages on MPI ranks: the Ranks of ranks.h over a comm::MpiWorld.
//
// Every rank creates its MpiWorld (and this) in the same order and runs the same pipeline calls;
// a run executes only the stages the rank owns (stage_ranks). A stage on several ranks runs on a
// runtime::Session over those ranks (stage_session), whose waits also end at a failure notice of
// this world: a rank that fails anywhere in the pipeline ends its stage peers' collectives too.
// The parts of a destination piece go from each source rank as one point-to-point message
// (MpiWorld::send_to, the bytes of pack_parts); its tag packs the run number, the destination
// stage, the value and the piece. A receive waits in short slices, so that a failure of another
// stage of the same rank (an abort) stops it at once too; a rank that failed or exited ends it at
// once with an error naming that rank. Built only with the MPI backend (TESSERA_HAVE_MPI).
#pragma once

#include "comm/mpi_communicator.h"
#include "mpmd/ranks.h"

namespace tessera::mpmd {

class MpiRanks final : public Ranks {
 public:
  explicit MpiRanks(comm::MpiWorld& world) : world_(world) {}
  int rank() const override { return world_.rank(); }
  int size() const override { return world_.num_ranks(); }
  void send(int to, uint64_t run, const WireKey& key, std::vector<std::byte> payload) override;
  ReceiveStatus receive(int from, uint64_t run, const WireKey& key, std::chrono::milliseconds timeout,
                        const std::atomic<bool>& aborted, std::vector<std::byte>& out) override;
  std::vector<std::vector<std::byte>> exchange(const std::string& what, std::span<const std::byte> payload) override;
  void report_failure(const std::string& reason) override { world_.report_failure(reason); }
  std::unique_ptr<runtime::Session> stage_session(int first, int count, int64_t local_devices,
                                                  const runtime::SessionOptions& options) override;

  // The message tag of `key` in run `run` (UserError when a field does not fit its bits).
  static int64_t tag(uint64_t run, const WireKey& key);

 private:
  comm::MpiWorld& world_;
};

}  // namespace tessera::mpmd
