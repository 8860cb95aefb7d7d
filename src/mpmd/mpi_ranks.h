// Pipeline stages on MPI ranks: the Ranks of ranks.h over a comm::MpiWorld. Every rank makes its
// MpiWorld (and this) in the same order and runs the same pipeline calls. A stage on several ranks
// runs on a Session over them whose waits also end at this world's failure notices. A piece's
// parts go as one point-to-point message whose tag packs the run, destination stage, value and
// piece. Messages to this rank itself (between two stages it runs) go through a LocalRanks. Built
// only with the MPI backend (TESSERA_HAVE_MPI).
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
  bool take(int from, uint64_t run, const WireKey& key, std::chrono::milliseconds wait,
            std::vector<std::byte>& out) override;
  std::vector<std::vector<std::byte>> exchange(const std::string& what, std::span<const std::byte> payload) override;
  void report_failure(const std::string& reason) override { world_.report_failure(reason); }
  std::unique_ptr<runtime::Session> stage_session(int first, int count, int64_t local_devices,
                                                  const runtime::SessionOptions& options) override;

  // UserError when a field does not fit its bits.
  static int64_t tag(uint64_t run, const WireKey& key);

 private:
  comm::MpiWorld& world_;
  LocalRanks self_;
};

}  // namespace tessera::mpmd
