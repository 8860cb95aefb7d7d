// The leader's MPI part of each collective over MPI ranks (see mpi_collectives.h): the per-group
// communicators, the datatypes that address devices' buffers in place, the polled wait, and one
// routine per kind of collective.
#include "comm/mpi_collectives.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "comm/mpi_internal.h"
#include "ir/element_type.h"
#include "support/strings.h"

namespace tessera::comm::mpi {

Layout layout(const Group& group, int64_t local_devices, int my_rank) {
  Layout l;
  l.group = group;
  l.rank_of.resize(group.size());
  for (size_t i = 0; i < group.size(); ++i) {
    int r = static_cast<int>(group[i] / local_devices);
    auto it = std::find(l.ranks.begin(), l.ranks.end(), r);
    if (it == l.ranks.end()) {
      l.ranks.push_back(r);
      l.members.emplace_back();
      it = l.ranks.end() - 1;
    }
    auto q = static_cast<size_t>(it - l.ranks.begin());
    l.members[q].push_back(i);
    l.rank_of[i] = q;
  }
  l.me = static_cast<size_t>(std::find(l.ranks.begin(), l.ranks.end(), my_rank) - l.ranks.begin());
  return l;
}

namespace {
std::atomic<int64_t> g_sent{0};
}  // namespace

int64_t bytes_sent() { return g_sent.load(std::memory_order_relaxed); }
void count_sent(int64_t bytes) { g_sent.fetch_add(bytes, std::memory_order_relaxed); }

namespace {

using Clock = std::chrono::steady_clock;

// The communicator of each device group (with the devices per rank that map it to ranks), made
// once: MPI_Comm_create_group is collective over the group's ranks only, which the handshake of
// mpi_communicator.cpp has just seen all present. Its parent is a communicator nobody probes, so
// its messages cannot be taken by the MPI thread's receive of any tag.
struct CommKey {
  Group group;
  int64_t local_devices;
  auto operator<=>(const CommKey&) const = default;
};
std::mutex g_comms_mu;
std::map<CommKey, MPI_Comm> g_comms;

MPI_Comm group_comm(const Layout& l, int64_t local_devices) {
  CommKey key{l.group, local_devices};
  {
    std::lock_guard lock(g_comms_mu);
    if (auto it = g_comms.find(key); it != g_comms.end()) return it->second;
  }
  MPI_Comm parent = creation_comm();
  MPI_Group all, mine;
  MPI_Comm_group(parent, &all);
  MPI_Group_incl(all, static_cast<int>(l.ranks.size()), l.ranks.data(), &mine);
  // Concurrent creations on one rank are told apart by the tag: two groups being created at once
  // by different device threads cannot share their smallest device (it is in one collective at a
  // time).
  int tag = static_cast<int>(*std::min_element(l.group.begin(), l.group.end()) % 32767);
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_create_group(parent, mine, tag, &comm);
  MPI_Group_free(&mine);
  MPI_Group_free(&all);
  std::lock_guard lock(g_comms_mu);
  g_comms.emplace(key, comm);
  return comm;
}

[[noreturn]] void abandon(const Watch& w, const std::string& why) {
  fmt::print(stderr, "tessera: {}: {}; MPI still holds the collective's buffers, so the rank aborts the MPI job\n",
             w.where, why);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

// Polls until every request is done. Peers' notices and the deadline are checked every
// millisecond; between polls the thread yields (more busy threads than cores is the rule here).
void wait_all(std::vector<MPI_Request>& requests, const Watch& w) {
  auto check_at = Clock::now();
  while (true) {
    int done = 0;
    MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
    if (done) return;
    auto now = Clock::now();
    if (now >= check_at) {
      if (std::optional<std::string> t = w.trouble()) abandon(w, *t);
      if (now >= w.deadline) abandon(w, fmt::format("timed out after {} ms in MPI", w.timeout.count()));
      check_at = now + std::chrono::milliseconds(1);
    }
    std::this_thread::yield();
  }
}

// Bytes at an address, as one block of a hindexed datatype (addresses are absolute: MPI_BOTTOM).
struct Piece {
  const std::byte* at;
  size_t bytes;
};
using Pieces = std::vector<std::vector<Piece>>;  // per index into the layout's ranks

// One MPI_Ialltoallw over the group's communicator: pieces[q] go to (come from) rank index q.
class Alltoallw {
 public:
  Alltoallw(std::string_view op, const Pieces& send, const Pieces& recv) {
    size_t r = send.size();
    counts_[0].assign(r, 0);
    counts_[1].assign(r, 0);
    displs_[0].assign(r, 0);
    displs_[1].assign(r, 0);
    types_[0].assign(r, MPI_BYTE);
    types_[1].assign(r, MPI_BYTE);
    for (int side = 0; side < 2; ++side)
      for (size_t q = 0; q < r; ++q) {
        const std::vector<Piece>& list = (side == 0 ? send : recv)[q];
        std::vector<int> lengths;
        std::vector<MPI_Aint> at;
        for (const Piece& p : list) {
          if (p.bytes == 0) continue;
          if (p.bytes > static_cast<size_t>(INT_MAX))
            support::fail("{}: a piece of {} bytes; the MPI backend moves at most {} bytes per device and peer", op,
                          p.bytes, INT_MAX);
          if (side == 0) sent_ += static_cast<int64_t>(p.bytes);
          MPI_Aint a;
          MPI_Get_address(p.at, &a);
          at.push_back(a);
          lengths.push_back(static_cast<int>(p.bytes));
        }
        if (lengths.empty()) continue;
        MPI_Datatype t;
        MPI_Type_create_hindexed(static_cast<int>(lengths.size()), lengths.data(), at.data(), MPI_BYTE, &t);
        MPI_Type_commit(&t);
        types_[side][q] = t;
        counts_[side][q] = 1;
        made_.push_back(t);
      }
  }
  ~Alltoallw() {
    for (MPI_Datatype& t : made_) MPI_Type_free(&t);
  }
  void run(MPI_Comm comm, const Watch& w) {
    std::vector<MPI_Request> request(1);
    count_sent(sent_);
    MPI_Ialltoallw(MPI_BOTTOM, counts_[0].data(), displs_[0].data(), types_[0].data(), MPI_BOTTOM, counts_[1].data(),
                   displs_[1].data(), types_[1].data(), comm, request.data());
    wait_all(request, w);
  }

 private:
  std::vector<int> counts_[2], displs_[2];  // kept until the call completes, as MPI requires
  std::vector<MPI_Datatype> types_[2];
  std::vector<MPI_Datatype> made_;
  int64_t sent_ = 0;  // bytes of the send side, for bytes_sent()
};

// Where this rank's local members sit among its posts: group position -> local index.
size_t local_index(const Layout& l, size_t position) {
  const std::vector<size_t>& mine = l.members[l.me];
  return static_cast<size_t>(std::find(mine.begin(), mine.end(), position) - mine.begin());
}
bool is_local(const Layout& l, size_t position) { return l.rank_of[position] == l.me; }

// Folds `len` bytes of srcs[0] (op) srcs[1] (op) ... per element, left to right (group order),
// into dst, a cache-sized block at a time. Each block is folded in scratch space, so dst may be
// one of the sources.
void fold(ir::ElementType type, ReduceOp reduce, const std::vector<const std::byte*>& srcs, size_t len,
          std::byte* dst) {
  constexpr size_t kBlock = 16 * 1024;
  thread_local std::vector<std::byte> scratch(kBlock);
  for (size_t at = 0; at < len; at += kBlock) {
    size_t n = std::min(kBlock, len - at);
    std::span<std::byte> acc = std::span(scratch).first(n);
    std::memcpy(acc.data(), srcs[0] + at, n);
    for (size_t m = 1; m < srcs.size(); ++m) reduce_into(type, reduce, acc, {srcs[m] + at, n});
    std::memcpy(dst + at, acc.data(), n);
  }
}

void copy(std::byte* to, const std::byte* from, size_t n) {
  if (n != 0 && to != from) std::memcpy(to, from, n);
}

// all_reduce and reduce_scatter: member m's span [offset(m), offset(m) + length(m)) of every
// input goes to m's rank, where the leader folds it in group order into m's output (at the same
// offset for all_reduce, at 0 for reduce_scatter); all_reduce then gathers the folded spans.
// Member m's span of a reduction's operand: for all_reduce, chunk_of of host_communicator.cpp (n
// chunks of ceil(elements / n), the last ones short); for reduce_scatter, its block.
struct Spans {
  Spans(const Call& c, const Layout& l, const LocalPost& p)
      : all(c.kind == Kind::AllReduce), n(l.group.size()), es(static_cast<size_t>(ir::info(c.type).bytes)),
        elements(p.in_bytes / es), block(p.out_bytes) {}
  size_t offset(size_t m) const { return all ? std::min(m * per(), elements) * es : m * block; }
  size_t length(size_t m) const {
    if (!all) return block;
    size_t lo = std::min(m * per(), elements);
    return (std::min(lo + per(), elements) - lo) * es;
  }
  size_t per() const { return (elements + n - 1) / n; }
  bool all;
  size_t n, es, elements, block;
};

void reduce(const Call& c, const Layout& l, std::span<const LocalPost> posts, MPI_Comm comm, const Watch& w) {
  size_t n = l.group.size(), ranks = l.ranks.size();
  bool all = c.kind == Kind::AllReduce;
  Spans spans(c, l, posts[0]);
  auto offset = [&](size_t m) { return spans.offset(m); };
  auto span_length = [&](size_t m) { return spans.length(m); };
  const std::vector<size_t>& mine = l.members[l.me];
  // where[j][mm]: member j's data for local member mm's span.
  std::vector<std::vector<const std::byte*>> where(n, std::vector<const std::byte*>(mine.size()));
  for (size_t jj = 0; jj < mine.size(); ++jj)
    for (size_t mm = 0; mm < mine.size(); ++mm) where[mine[jj]][mm] = posts[jj].in + offset(mine[mm]);
  size_t incoming = 0;
  for (size_t q = 0; q < ranks; ++q)
    if (q != l.me)
      for (size_t mm = 0; mm < mine.size(); ++mm) incoming += l.members[q].size() * span_length(mine[mm]);
  // Kept by the leader's thread across calls: a fresh buffer per call would pay the first touch of
  // every page each time (DESIGN.md §6).
  thread_local std::vector<std::byte> received;
  if (received.size() < incoming) received.resize(incoming);
  Pieces send(ranks), recv(ranks);
  size_t at = 0;
  for (size_t q = 0; q < ranks; ++q) {
    if (q == l.me) continue;
    for (size_t jj = 0; jj < mine.size(); ++jj)
      for (size_t m : l.members[q]) send[q].push_back({posts[jj].in + offset(m), span_length(m)});
    for (size_t j : l.members[q])
      for (size_t mm = 0; mm < mine.size(); ++mm) {
        where[j][mm] = received.data() + at;
        recv[q].push_back({received.data() + at, span_length(mine[mm])});
        at += span_length(mine[mm]);
      }
  }
  if (ranks > 1) Alltoallw(c.op, send, recv).run(comm, w);
  for (size_t mm = 0; mm < mine.size(); ++mm) {
    std::vector<const std::byte*> srcs(n);
    for (size_t j = 0; j < n; ++j) srcs[j] = where[j][mm];
    fold(c.type, c.reduce, srcs, span_length(mine[mm]), posts[mm].out + (all ? offset(mine[mm]) : 0));
  }
  if (!all) return;
  // The folded spans to every rank, into the leader's output; each local member then fills its own
  // output from there and its local peers' (finish).
  std::byte* lead = posts[0].out;
  Pieces gsend(ranks), grecv(ranks);
  for (size_t q = 0; q < ranks; ++q) {
    if (q == l.me) continue;
    for (size_t mm = 0; mm < mine.size(); ++mm)
      gsend[q].push_back({posts[mm].out + offset(mine[mm]), span_length(mine[mm])});
    for (size_t m : l.members[q]) grecv[q].push_back({lead + offset(m), span_length(m)});
  }
  if (ranks > 1) Alltoallw(c.op, gsend, grecv).run(comm, w);
}

void all_gather(const Call& c, const Layout& l, std::span<const LocalPost> posts, MPI_Comm comm, const Watch& w) {
  size_t ranks = l.ranks.size(), b = posts[0].in_bytes;
  const std::vector<size_t>& mine = l.members[l.me];
  std::byte* lead = posts[0].out;
  Pieces send(ranks), recv(ranks);
  for (size_t q = 0; q < ranks; ++q) {
    if (q == l.me) continue;
    for (size_t jj = 0; jj < mine.size(); ++jj) send[q].push_back({posts[jj].in, b});
    for (size_t j : l.members[q]) recv[q].push_back({lead + j * b, b});
  }
  if (ranks > 1) Alltoallw(c.op, send, recv).run(comm, w);
}

void all_to_all(const Call& c, const Layout& l, std::span<const LocalPost> posts, MPI_Comm comm, const Watch& w) {
  size_t ranks = l.ranks.size(), chunk = posts[0].in_bytes / l.group.size();
  const std::vector<size_t>& mine = l.members[l.me];
  Pieces send(ranks), recv(ranks);
  for (size_t q = 0; q < ranks; ++q) {
    if (q == l.me) continue;
    for (size_t jj = 0; jj < mine.size(); ++jj)  // sender-major on both sides
      for (size_t m : l.members[q]) send[q].push_back({posts[jj].in + m * chunk, chunk});
    for (size_t j : l.members[q])
      for (size_t mm = 0; mm < mine.size(); ++mm) recv[q].push_back({posts[mm].out + j * chunk, chunk});
  }
  if (ranks > 1) Alltoallw(c.op, send, recv).run(comm, w);
  for (size_t jj = 0; jj < mine.size(); ++jj)
    for (size_t mm = 0; mm < mine.size(); ++mm)
      copy(posts[mm].out + mine[jj] * chunk, posts[jj].in + mine[mm] * chunk, chunk);
}

void broadcast(const Call& c, const Layout& l, std::span<const LocalPost> posts, MPI_Comm comm, const Watch& w) {
  size_t b = posts[0].in_bytes;
  // Member 0 is the first member of the first rank: on that rank it is the leader.
  const std::byte* root = l.me == 0 ? posts[0].in : posts[0].out;
  if (l.ranks.size() > 1) {
    if (b > static_cast<size_t>(INT_MAX))
      support::fail("{}: {} bytes; the MPI backend broadcasts at most {} bytes", c.op, b, INT_MAX);
    if (l.me == 0) count_sent(static_cast<int64_t>(b * (l.ranks.size() - 1)));
    std::vector<MPI_Request> request(1);
    MPI_Ibcast(const_cast<std::byte*>(root), static_cast<int>(b), MPI_BYTE, 0, comm, request.data());
    wait_all(request, w);
  }
}

// Every member's 8-byte value (its source, or its input's size) on every rank, in group order.
std::vector<uint64_t> gather_words(const Call& c, const Layout& l, const std::vector<uint64_t>& local, MPI_Comm comm,
                                   const Watch& w) {
  size_t ranks = l.ranks.size();
  const std::vector<size_t>& mine = l.members[l.me];
  std::vector<uint64_t> all(l.group.size());
  for (size_t jj = 0; jj < mine.size(); ++jj) all[mine[jj]] = local[jj];
  Pieces send(ranks), recv(ranks);
  for (size_t q = 0; q < ranks; ++q) {
    if (q == l.me) continue;
    for (size_t jj = 0; jj < mine.size(); ++jj)
      send[q].push_back({reinterpret_cast<const std::byte*>(&local[jj]), sizeof(uint64_t)});
    for (size_t j : l.members[q]) recv[q].push_back({reinterpret_cast<const std::byte*>(&all[j]), sizeof(uint64_t)});
  }
  if (ranks > 1) Alltoallw(c.op, send, recv).run(comm, w);
  return all;
}

void permute(const Call& c, const Layout& l, std::span<const LocalPost> posts, MPI_Comm comm, const Watch& w,
             std::vector<int64_t>& positions) {
  size_t b = posts[0].in_bytes;
  std::vector<uint64_t> local;
  for (const LocalPost& p : posts) local.push_back(static_cast<uint64_t>(p.source));
  std::vector<uint64_t> sources = gather_words(c, l, local, comm, w);
  positions.assign(sources.begin(), sources.end());
  if (b > static_cast<size_t>(INT_MAX))
    support::fail("{}: {} bytes; the MPI backend sends at most {} bytes per device and peer", c.op, b, INT_MAX);
  std::vector<MPI_Request> requests;
  for (size_t r = 0; r < l.group.size(); ++r) {
    auto s = static_cast<int64_t>(sources[r]);
    if (s < 0) {
      if (is_local(l, r)) std::memset(posts[local_index(l, r)].out, 0, b);
      continue;
    }
    auto from = static_cast<size_t>(s);
    bool sender = is_local(l, from), receiver = is_local(l, r);
    int tag = static_cast<int>(r);  // the receiver's position tells a pair apart
    if (sender && receiver) {
      copy(posts[local_index(l, r)].out, posts[local_index(l, from)].in, b);
    } else if (sender) {
      count_sent(static_cast<int64_t>(b));
      requests.emplace_back();
      MPI_Isend(posts[local_index(l, from)].in, static_cast<int>(b), MPI_BYTE, static_cast<int>(l.rank_of[r]), tag,
                comm, &requests.back());
    } else if (receiver) {
      requests.emplace_back();
      MPI_Irecv(posts[local_index(l, r)].out, static_cast<int>(b), MPI_BYTE, static_cast<int>(l.rank_of[from]), tag,
                comm, &requests.back());
    }
  }
  if (!requests.empty()) wait_all(requests, w);
}

void exchange(const Call& c, const Layout& l, std::span<const LocalPost> posts, MPI_Comm comm, const Watch& w,
              std::vector<std::byte>& bundle, std::vector<std::span<const std::byte>>& inputs) {
  size_t ranks = l.ranks.size();
  const std::vector<size_t>& mine = l.members[l.me];
  std::vector<uint64_t> local;
  for (const LocalPost& p : posts) local.push_back(p.in_bytes);
  std::vector<uint64_t> sizes = gather_words(c, l, local, comm, w);
  size_t remote = 0;
  for (size_t j = 0; j < l.group.size(); ++j)
    if (!is_local(l, j)) remote += sizes[j];
  bundle.resize(remote);
  inputs.assign(l.group.size(), {});
  Pieces send(ranks), recv(ranks);
  size_t at = 0;
  for (size_t q = 0; q < ranks; ++q) {
    if (q == l.me) continue;
    for (size_t jj = 0; jj < mine.size(); ++jj) send[q].push_back({posts[jj].in, posts[jj].in_bytes});
    for (size_t j : l.members[q]) {
      inputs[j] = std::span<const std::byte>(bundle.data() + at, sizes[j]);
      recv[q].push_back({bundle.data() + at, sizes[j]});
      at += sizes[j];
    }
  }
  if (ranks > 1) Alltoallw(c.op, send, recv).run(comm, w);
  for (size_t jj = 0; jj < mine.size(); ++jj) inputs[mine[jj]] = {posts[jj].in, posts[jj].in_bytes};
}

}  // namespace

void finish(const Call& c, const Layout& l, std::span<const LocalPost> posts, size_t self) {
  std::byte* out = posts[self].out;
  auto local_post = [&](size_t position) -> const LocalPost& { return posts[local_index(l, position)]; };
  if (c.kind == Kind::AllReduce) {
    Spans spans(c, l, posts[0]);
    for (size_t m = 0; m < l.group.size(); ++m) {
      const std::byte* from = is_local(l, m) ? local_post(m).out : posts[0].out;
      copy(out + spans.offset(m), from + spans.offset(m), spans.length(m));
    }
  } else if (c.kind == Kind::AllGather) {
    size_t b = posts[0].in_bytes;
    for (size_t j = 0; j < l.group.size(); ++j)
      copy(out + j * b, is_local(l, j) ? local_post(j).in : posts[0].out + j * b, b);
  } else if (c.kind == Kind::Broadcast) {
    copy(out, l.me == 0 ? posts[0].in : posts[0].out, posts[0].in_bytes);
  }
}

void run(const Call& call, const Layout& l, std::span<const LocalPost> posts, int64_t local_devices,
         const Watch& watch, Results& results) {
  MPI_Comm comm = l.ranks.size() > 1 ? group_comm(l, local_devices) : MPI_COMM_NULL;
  switch (call.kind) {
    case Kind::AllReduce:
    case Kind::ReduceScatter:
      return reduce(call, l, posts, comm, watch);
    case Kind::AllGather:
      return all_gather(call, l, posts, comm, watch);
    case Kind::AllToAll:
      return all_to_all(call, l, posts, comm, watch);
    case Kind::Broadcast:
      return broadcast(call, l, posts, comm, watch);
    case Kind::Permute:
      return permute(call, l, posts, comm, watch, results.sources);
    case Kind::Exchange:
      return exchange(call, l, posts, comm, watch, results.bundle, results.inputs);
    case Kind::Barrier:
      if (comm != MPI_COMM_NULL) {
        std::vector<MPI_Request> request(1);
        MPI_Ibarrier(comm, request.data());
        wait_all(request, watch);
      }
      return;
  }
}

}  // namespace tessera::comm::mpi
