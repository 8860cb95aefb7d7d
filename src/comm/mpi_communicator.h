// Devices across MPI ranks: the Communicator over MPI, and a run of a program on every rank.
//
// Ids. Each rank owns `local_devices` devices: rank r owns global ids r*k .. r*k+k-1 (k =
// local_devices), so N ranks make N*k devices. Every rank must create its worlds and issue its
// collectives in the same order (the program is the same on every rank).
//
// A collective. The rank's local members of the group (threads of this process) first meet
// through an in-process HostWorld (host_communicator.h) and post their buffers. The group's first
// local member — the rank's leader for that group — then runs the MPI part for all of them on the
// group's own MPI communicator (mpi_collectives.h: reduce-scatter and all-gather by MPI_Ialltoallw
// for reductions, folded in group order, so results are bitwise those of Session::host and the
// bytes are the ring model's) and hands the outcome to its local peers in a second local meeting;
// then each local member fills its own output (mpi::finish). At a group's first collective in a
// world, the leaders first meet through the rank's mailbox (a handshake): it checks that the ranks
// issued the same collective and names a rank that is missing, failed or gone, before any MPI call.
//
// A world may span some of the job's ranks only (WorldRanks: consecutive ranks, e.g. the ranks of
// one pipeline stage). Its ranks and devices are then numbered from 0 within it (world rank w is
// the job's rank first + w; world device d the job's device first·k + d), which is what its users
// (a Session, a program's partition ids) see; messages, MPI communicators and errors use the job's
// ranks and devices. Only its ranks create it, in the same order among themselves (its id comes
// from a counter of its own rank range). With a parent world, a failure notice of the parent
// (another part of the same run failed) also ends this world's waits on that rank.
//
// Waits have a deadline: a rank that does not answer the handshake in time is a TimeoutError
// naming the op, this rank and its devices, and the missing ranks and their devices; a rank that
// failed (FAIL notice) or exited (BYE) ends the wait at once with a UserError naming it. Once MPI
// holds the buffers, the same events abort the MPI job after printing them (mpi_collectives.h).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/host_communicator.h"
#include "comm/mpi_collectives.h"
#include "comm/mpi_process.h"
#include "comm/parallel.h"
#include "interp/interpreter.h"

namespace tessera::comm {

// The ranks of a world: `count` consecutive ranks of the job from `first` (count 0: every rank),
// and the world whose failure notices end its waits too (see above).
struct WorldRanks {
  int first = 0, count = 0;
  std::optional<uint64_t> parent;
};

// One run's communication over its ranks (every rank by default): created by each of them, in
// the same order.
class MpiWorld {
 public:
  MpiWorld(int64_t local_devices, std::chrono::milliseconds timeout = std::chrono::seconds(30), WorldRanks ranks = {});
  ~MpiWorld();  // drops the world's leftovers (what peers sent to collectives that failed)
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }  // within the world
  int num_ranks() const { return num_ranks_; }
  int first_rank() const { return first_rank_; }  // the job's rank of world rank 0
  int job_rank() const { return first_rank_ + rank_; }
  uint64_t id() const { return id_; }
  int64_t local_devices() const { return local_devices_; }
  int64_t num_devices() const { return local_devices_ * num_ranks_; }
  int64_t first_local_device() const { return rank_ * local_devices_; }
  int owner(int64_t device) const { return static_cast<int>(device / local_devices_); }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Every rank's `payload`, in rank order (this rank's own included): the step of a run outside
  // any device program (handing every rank the results). `what` names it in errors.
  std::vector<std::vector<std::byte>> exchange_ranks(const std::string& what, std::span<const std::byte> payload);

  // Tells every other rank that this rank's part of the run failed, so that their waits on this
  // rank end now with `reason` instead of at their deadline.
  void report_failure(const std::string& reason);

  // Point to point, outside any device program (the transfers between pipeline stages on
  // different ranks); `rank` within the world. `tag` tells apart the messages of one rank to
  // another: a receive takes the message with its tag whatever the order they arrive in. Sends
  // never wait. A receive waits up to `timeout`: then a TimeoutError naming `what`, both ranks and
  // the tag; a UserError at once when the peer failed or exited.
  void send_to(int rank, const std::string& what, int64_t tag, std::vector<std::byte> payload);
  std::vector<std::byte> receive_from(int rank, const std::string& what, int64_t tag,
                                      std::chrono::milliseconds timeout);

 private:
  friend class MpiCommunicator;
  // send_to and receive_from under any key group (not only rank to rank): `rank` within the world;
  // `wire` is the name both ends give the message (a receive that meets another name is a
  // mismatch), `what` names the receive and `message` what it awaits in errors.
  void send_keyed(int rank, std::string_view wire, Group key, int64_t tag, std::vector<std::byte> payload);
  std::vector<std::byte> receive_keyed(int rank, std::string_view what, std::string_view wire, Group key,
                                       int64_t tag, std::string_view message, std::chrono::milliseconds timeout);
  // One-sided messages (mpi_messages.cpp): the number of messages posted (posting) or taken so far
  // under `key` by this rank's devices, then counts one more. Both ends count alike, so the n-th
  // message under a key is matched with the n-th take, as on host devices.
  int64_t next_message(bool posting, const MessageKey& key);
  // The leader's part of a collective: sends `payload` (the local members' inputs) to `ranks` and
  // returns what they sent, in their order, or a failure (status != 0) with its message.
  struct Received {
    uint8_t status = 0;  // 0 ok, 1 timeout, 2 another failure
    std::string error;
    std::vector<std::vector<std::byte>> payloads;
  };
  Received transfer(std::string_view op, const Group& group, const std::string& who, const std::vector<int>& ranks,
                    std::vector<std::byte> payload);
  // `ranks` (the job's) and `group` (the job's devices) as text for errors.
  std::string devices_of(const std::vector<int>& ranks, const Group& group) const;
  // Whether `group` still needs its handshake in this world (and marks it done).
  bool first_in_world(const Group& group);

  MpiProcess* process_;
  int first_rank_, rank_, num_ranks_;
  int64_t local_devices_;
  std::chrono::milliseconds timeout_;
  uint64_t id_;
  HostWorld local_;  // this rank's devices, ids 0..k-1 (global id minus first_local_device())
  std::mutex mu_;
  std::map<Group, int64_t> sequence_;  // collectives this rank has led per group
  std::set<Group> handshaken_;         // groups whose leaders have met in this world
  std::map<std::pair<bool, MessageKey>, int64_t> messages_;  // next_message
};

class MpiCommunicator : public Communicator {
 public:
  // `device` is a world device owned by this rank; groups are world devices too.
  MpiCommunicator(MpiWorld& world, int64_t device);
  int64_t device() const override { return device_; }
  int64_t num_devices() const override { return world_->num_devices(); }
  std::unique_ptr<Exchange> exchange(std::string_view op, const Group& group,
                                     std::span<const std::byte> input) override;
  void all_reduce(std::string_view op, const Group& group, ir::ElementType type, ReduceOp reduce,
                  std::span<const std::byte> in, std::span<std::byte> out) override;
  void all_gather(std::string_view op, const Group& group, std::span<const std::byte> in,
                  std::span<std::byte> out) override;
  void reduce_scatter(std::string_view op, const Group& group, ir::ElementType type, ReduceOp reduce,
                      std::span<const std::byte> in, std::span<std::byte> out) override;
  void all_to_all(std::string_view op, const Group& group, std::span<const std::byte> in,
                  std::span<std::byte> out) override;
  void broadcast(std::string_view op, const Group& group, std::span<const std::byte> in,
                 std::span<std::byte> out) override;
  void permute(std::string_view op, const Group& group, std::optional<int64_t> source,
               std::span<const std::byte> in, std::span<std::byte> out) override;
  void barrier(std::string_view op, const Group& group) override;
  // send and recv (mpi_messages.cpp): between devices of one rank through its HostWorld, between
  // ranks as a point-to-point message of the world keyed by channel, sender and receiver. A message
  // matched by channel alone (no source_target_pairs) has no rank to go to and is refused when the
  // world has several ranks.
  void post(std::string_view op, const MessageKey& key, std::span<const std::byte> bytes) override;
  void take(std::string_view op, const MessageKey& key, std::span<std::byte> out) override;

  struct Run;  // one collective in progress (mpi_communicator.cpp)

 private:
  std::unique_ptr<Run> run(mpi::Kind kind, std::string_view op, const Group& group, ir::ElementType type, ReduceOp reduce,
                           std::span<const std::byte> in, std::span<std::byte> out, int64_t source);

  MpiWorld* world_;
  int64_t device_;       // within the world
  int64_t job_offset_;  // world device d is the job's device d + job_offset_
  HostCommunicator local_;
};

// Runs @function of `module` on this rank's devices, device d as partition d of a 1 x N process
// grid with `inputs[d]` (inputs has one entry per global device; only this rank's are used), and
// returns results[d]: with `results_everywhere`, every device's results on every rank (an exchange
// of every result among the ranks after the run); without, only this rank's devices' results (the
// other entries empty), and nothing moves but the program's own collectives. A device that fails
// makes the run fail on every rank, with a message naming the rank and the device. `evaluate`
// (called with the global device) runs a device's program instead of interp::evaluate.
std::vector<std::vector<ir::Literal>> run_on_ranks(MpiWorld& world, const ir::Module& module,
                                                   const std::string& function,
                                                   std::vector<std::vector<ir::Literal>> inputs,
                                                   const interp::Options& base = {},
                                                   const Evaluator& evaluate = {}, bool results_everywhere = true);

}  // namespace tessera::comm
