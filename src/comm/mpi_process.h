// This process's MPI rank: the thread that carries its messages, and the mailbox it fills.
//
// MPI is initialized lazily (MPI_THREAD_MULTIPLE) by a dedicated thread, which sends what device
// threads queue, receives whatever arrives (MPI_Improbe on any source and tag of its own
// communicator) into a mailbox keyed by (world, group, sequence), and keeps MPI progressing for
// large transfers. Device threads never block inside MPI: they wait on a condition variable with a
// deadline, so a missing peer is a timeout, never a hang. The one exception to "only this thread
// calls MPI" is a group's leader running MPI's non-blocking collectives on the group's own
// communicator, polled against a deadline (mpi_collectives.h).
//
// Faults. Besides data, ranks send two notices: FAIL (this rank's part of a run failed: waits on
// it end at once, naming it) and BYE (this process is leaving: sent at exit, by a normal return as
// by exit(3)). A wait whose missing rank has sent either ends with an error naming that rank.
// Leaving waits until every rank has said BYE (draining what arrives meanwhile) and then calls
// MPI_Finalize; a peer that never comes makes it MPI_Abort the job after the exit timeout. A rank
// killed by a signal or aborted is noticed by mpirun, which sends SIGTERM to the others; our
// SIGTERM handler prints which collective the rank was in and which ranks it was waiting for.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"

namespace tessera::comm {

class MpiProcess {
 public:
  // The process's rank; starts MPI (and its thread) on first use.
  static MpiProcess& get();
  ~MpiProcess();  // at exit: BYE, wait for the other ranks, MPI_Finalize (or MPI_Abort)

  int rank() const { return rank_; }
  int size() const { return size_; }

  // What a message belongs to: one collective of one world (a run) on one group.
  struct Key {
    uint64_t world = 0;
    Group group;
    int64_t sequence = 0;
    auto operator<=>(const Key&) const = default;
  };

  // Queues `payload` for `key` (issued as collective `op`) to each of `ranks`.
  void send(const Key& key, std::string_view op, const std::vector<int>& ranks,
            std::vector<std::byte> payload);

  struct Outcome {
    enum Kind { Ok, Timeout, PeerFailed, PeerLeft, Mismatch } kind = Ok;
    std::vector<std::vector<std::byte>> payloads;  // Ok: one per rank, in the order asked
    std::vector<int> missing;                      // Timeout: ranks that sent nothing
    int peer = -1;                                 // PeerFailed, PeerLeft, Mismatch
    std::string detail;                            // PeerFailed: its reason; Mismatch: its op
  };
  // Waits until each of `ranks` has sent its message for `key`, or one of them failed or left,
  // or `deadline` passed. `waiting` describes the wait for the SIGTERM handler, given the ranks
  // still missing.
  Outcome receive(const Key& key, std::string_view op, const std::vector<int>& ranks,
                  std::chrono::steady_clock::time_point deadline,
                  const std::function<std::string(const std::vector<int>&)>& waiting);

  // The first of `ranks` that reported a failure in world `world` or left the job, and a message
  // naming it ("rank 1 failed: ...", "rank 1 exited without joining it").
  std::optional<std::pair<int, std::string>> peer_trouble(uint64_t world, const std::vector<int>& ranks);
  // What the SIGTERM handler prints while a device waits outside receive() (in an MPI
  // collective); "" restores the text for no wait.
  void report_waiting(const std::string& text);

  // Tells every other rank that this rank's part of world `world` failed, with `reason`.
  void notify_failure(uint64_t world, const std::string& reason);

  // Runs `fn` on the MPI thread and waits for it: the way for other code (benchmarks comparing
  // with MPI's own collectives) to call MPI, since only that thread may. Exceptions propagate.
  void call(std::function<void()> fn);

  // A fresh id for a world; every rank creates its worlds in the same order, so ids agree.
  uint64_t next_world_id() { return next_world_++; }
  // The same for a world over `count` ranks from `first` only: a counter per rank range, which
  // only those ranks advance (ids of different ranges never meet).
  uint64_t next_world_id(int first, int count);
  // A failure notice of world `parent` also ends the waits of world `world` (until it is
  // forgotten): a part of a run that spans several worlds failed.
  void link_failures(uint64_t world, uint64_t parent);
  // Drops what is left of a world that ended (messages of collectives that failed, notices).
  void forget(uint64_t world);
  // Leaving waits at most this long for the other ranks (at least every world's timeout).
  void extend_exit_timeout(std::chrono::milliseconds t);

 private:
  MpiProcess();
  void main();                    // the MPI thread
  bool progress();                // one round of sends, tests and receives; true if anything moved
  void deliver(int source, int tag, std::vector<std::byte> message);
  void leave();
  void set_waiting(const std::string& text);

  struct Outgoing {
    int dest, tag;
    std::shared_ptr<const std::vector<std::byte>> data;
  };
  struct Message {
    std::string op;
    std::vector<std::byte> payload;
  };

  std::mutex mu_;
  std::condition_variable arrived_;  // device threads: something came in
  std::condition_variable wake_;     // the MPI thread: something to send, or stop
  bool started_ = false, stop_ = false;
  std::string init_error_;
  int rank_ = 0, size_ = 1;
  bool own_mpi_ = true;  // false when someone else initialized MPI (then they finalize it)
  int waiting_ = 0;      // device threads in receive(): poll MPI often
  std::atomic<uint64_t> next_world_{0};
  std::chrono::milliseconds exit_timeout_{60000};
  std::deque<Outgoing> outbox_;
  std::deque<std::packaged_task<void()>> calls_;
  std::map<Key, std::map<int, Message>> mailbox_;
  std::map<uint64_t, std::map<int, std::string>> failed_;  // world -> rank -> reason
  std::map<uint64_t, uint64_t> parent_;                    // link_failures: world -> parent
  std::map<std::pair<int, int>, uint64_t> range_worlds_;   // next_world_id(first, count)
  // The reason rank `rank` failed in `world` or its parent, or null (mu_ held).
  const std::string* failure(uint64_t world, int rank) const;
  std::set<int> departed_;                                 // ranks that said BYE
  std::thread thread_;

  // MPI-thread-only state: sends in flight (their buffers kept alive until done).
  struct InFlight;
  std::vector<std::unique_ptr<InFlight>> in_flight_;
};

}  // namespace tessera::comm
