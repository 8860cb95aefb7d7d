// The MPI half of a collective over MPI ranks: what a group's leader on each rank does once the
// rank's members of the group have met locally (mpi_communicator.h).
//
// Each device group gets its own MPI communicator (MPI_Comm_create_group over the group's ranks,
// in the order they first appear in the group), made at the group's first collective and cached
// for the life of the process: two groups over the same ranks run concurrently from different
// device threads, and collectives on one communicator must be issued in one order. The leader
// calls MPI itself (MPI_THREAD_MULTIPLE), with non-blocking calls polled against a deadline and
// against FAIL/BYE notices from the group's ranks.
//
// Algorithms (n members on R ranks; every device's data is addressed in place through hindexed
// datatypes, so several devices per rank need no packing copies):
//   all_reduce      reduce-scatter by MPI_Ialltoallw (member m's span of every input goes to m's
//                   rank), each span folded by the leader in group order, all-gather of the folded
//                   spans by MPI_Ialltoallw: 2·S·(n−1)/n bytes per device, the ring model's, and
//                   the fold order of host devices, so the bits are theirs.
//   reduce_scatter  the first half of the above.
//   all_gather      MPI_Ialltoallw of each rank's inputs into the leader's output.
//   all_to_all      MPI_Ialltoallw from each input chunk straight into its receiver's output.
//   broadcast       MPI_Ibcast from member 0.
//   permute         each rank learns every member's source (MPI_Ialltoallw of 8 bytes a member),
//                   then MPI_Isend/MPI_Irecv pairs (a Sendrecv per pair, non-blocking).
//   barrier         MPI_Ibarrier.
//   exchange        sizes as for permute, then every input to every rank (the generic primitive).
// MPI's own reductions (MPI_Allreduce, MPI_Reduce_scatter_block) are not used: their sum order is
// the implementation's, so results would differ from host devices in the last bits, and the
// fixed-order algorithm above already moves the ring's bytes.
//
// Faults. A collective abandoned while MPI holds its buffers (a peer failed or left, or the
// deadline passed, after the MPI call started) cannot be cancelled, and MPI may still read and
// write the devices' buffers later: the rank prints what happened, naming the op and the ranks, and
// aborts the MPI job (MPI_Abort), which ends every rank. Failures before any MPI call (the
// handshake of mpi_communicator.cpp) stay ordinary errors.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.h"

namespace tessera::comm::mpi {

// One local member's buffers for a collective (its post in the local meeting).
struct LocalPost {
  const std::byte* in = nullptr;
  uint64_t in_bytes = 0;
  std::byte* out = nullptr;
  uint64_t out_bytes = 0;
  int64_t source = -1;  // permute: the group position this member receives from, or -1
};

// A group laid out over ranks.
struct Layout {
  Group group;                               // global device ids, group order
  std::vector<int> ranks;                    // the ranks of the group, by first appearance
  std::vector<std::vector<size_t>> members;  // per index into ranks: its members' group positions
  std::vector<size_t> rank_of;               // per group position: its index into ranks
  size_t me = 0;                             // this rank's index into ranks
};
Layout layout(const Group& group, int64_t local_devices, int my_rank);

enum class Kind { AllReduce, ReduceScatter, AllGather, AllToAll, Broadcast, Permute, Barrier, Exchange };

struct Call {
  Kind kind = Kind::Barrier;
  std::string_view op;
  ir::ElementType type = ir::ElementType::f32;
  ReduceOp reduce = ReduceOp::Sum;
};

// What the leader's wait watches: the deadline, and a check for failed or departed peers that
// returns a message naming them (nullopt while all is well). `where` names the op, this rank and
// the group, for messages.
struct Watch {
  std::chrono::steady_clock::time_point deadline;
  std::chrono::milliseconds timeout;
  std::function<std::optional<std::string>()> trouble;
  std::string where;
};

// What a leader learns besides the outputs, for its local peers.
struct Results {
  std::vector<std::byte> bundle;                   // exchange: the remote members' inputs
  std::vector<std::span<const std::byte>> inputs;  // exchange: every member's input, group order
  std::vector<int64_t> sources;                    // permute: every member's source position, or -1
};

// The leader's part: runs `call` for the rank's local members `posts` (in group order of
// layout.members[layout.me]). Afterwards what each local member's output needs is in its own
// output, the leader's, or its local peers' (inputs or outputs).
void run(const Call& call, const Layout& layout, std::span<const LocalPost> posts, int64_t local_devices,
         const Watch& watch, Results& results);

// The bytes this process has handed MPI to send to other ranks since it started: the collectives'
// payloads (what each MPI call's send side names for peers: an MPI_Ialltoallw's blocks for other
// ranks, a permute's MPI_Isend, a broadcast root's buffer once per other rank of the group) and the
// messages of mpi_process.h (handshakes, exchanges among ranks, transfers, notices, envelopes
// included). A byte counter of the rank, for comparing with the ring model (accounting.h).
int64_t bytes_sent();
void count_sent(int64_t bytes);

// Each local member's part once the leader is done: fills its own output (posts[self]) from
// there, so that the local copies of several devices per rank run on all of them at once.
void finish(const Call& call, const Layout& layout, std::span<const LocalPost> posts, size_t self);

}  // namespace tessera::comm::mpi
