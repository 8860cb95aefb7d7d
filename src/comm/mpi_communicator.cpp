// The Communicator over MPI ranks and a run of a program on every rank (see mpi_communicator.h).
#include "comm/mpi_communicator.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "comm/interp_collectives.h"
#include "comm/mpi_collectives.h"
#include "comm/mpi_wire.h"
#include "support/strings.h"
#include "support/threads.h"

namespace tessera::comm {
namespace {

int64_t checked_local_devices(int64_t n) {
  if (n < 1) support::fail("an MPI world needs at least one local device per rank, got {}", n);
  return n;
}

std::string plural(std::string_view word, size_t n) { return fmt::format("{}{}", word, n == 1 ? "" : "s"); }

}  // namespace

MpiWorld::MpiWorld(int64_t local_devices, std::chrono::milliseconds timeout, WorldRanks ranks)
    : process_(&MpiProcess::get()), first_rank_(ranks.first),
      num_ranks_(ranks.count == 0 ? process_->size() : ranks.count),
      local_devices_(checked_local_devices(local_devices)), timeout_(timeout),
      // Local peers wait in the second meeting while their leader waits on MPI (up to timeout_),
      // so the local deadline must be later than the MPI one.
      local_(local_devices_, timeout + std::chrono::seconds(1)) {
  if (first_rank_ < 0 || num_ranks_ < 1 || first_rank_ + num_ranks_ > process_->size())
    support::fail("an MPI world over ranks {}..{}: the job has ranks 0..{}", first_rank_, first_rank_ + num_ranks_ - 1,
                  process_->size() - 1);
  if (process_->rank() < first_rank_ || process_->rank() >= first_rank_ + num_ranks_)
    support::fail("rank {} makes an MPI world over ranks {}..{}, which it is not one of", process_->rank(), first_rank_,
                  first_rank_ + num_ranks_ - 1);
  rank_ = process_->rank() - first_rank_;
  id_ = ranks.count == 0 ? process_->next_world_id() : process_->next_world_id(first_rank_, num_ranks_);
  if (ranks.parent) process_->link_failures(id_, *ranks.parent);
  process_->extend_exit_timeout(timeout);
}

MpiWorld::~MpiWorld() { process_->forget(id_); }

void MpiWorld::report_failure(const std::string& reason) { process_->notify_failure(id_, reason); }

std::string MpiWorld::devices_of(const std::vector<int>& ranks, const Group& group) const {
  std::vector<int64_t> devices;
  for (int r : ranks)
    for (int64_t d = r * local_devices_; d < (r + 1) * local_devices_; ++d)
      if (group.empty() || std::find(group.begin(), group.end(), d) != group.end()) devices.push_back(d);
  return fmt::format("{} {}", plural("device", devices.size()), support::join(devices, ", "));
}

namespace {

// The key group of the messages from rank `from` to rank `to`: -1 marks it as no device group.
Group point_to_point(int from, int to) { return {-1, from, to}; }

}  // namespace

void MpiWorld::send_to(int rank, const std::string& what, int64_t tag, std::vector<std::byte> payload) {
  if (rank < 0 || rank >= num_ranks_ || rank == rank_)
    support::fail("{}: rank {} cannot send to rank {} of {}", what, rank_, rank, num_ranks_);
  send_keyed(rank, what, point_to_point(job_rank(), first_rank_ + rank), tag, std::move(payload));
}

void MpiWorld::send_keyed(int rank, std::string_view wire, Group key, int64_t tag, std::vector<std::byte> payload) {
  process_->send(MpiProcess::Key{id_, std::move(key), tag}, wire, {first_rank_ + rank}, std::move(payload));
}

std::vector<std::byte> MpiWorld::receive_from(int rank, const std::string& what, int64_t tag,
                                              std::chrono::milliseconds timeout) {
  if (rank < 0 || rank >= num_ranks_ || rank == rank_)
    support::fail("{}: rank {} cannot receive from rank {} of {}", what, rank_, rank, num_ranks_);
  return receive_keyed(rank, what, what, point_to_point(first_rank_ + rank, job_rank()), tag,
                       fmt::format("message {}", tag), timeout);
}

std::vector<std::byte> MpiWorld::receive_keyed(int rank, std::string_view what, std::string_view wire, Group key,
                                               int64_t tag, std::string_view message,
                                               std::chrono::milliseconds timeout) {
  // Errors name the job's ranks, as mpirun numbers them.
  const int me = job_rank();
  rank += first_rank_;
  auto waiting = [&](const std::vector<int>&) {
    return fmt::format("tessera: rank {} stopped by SIGTERM while in {}, waiting for rank {}", me, what, rank);
  };
  MpiProcess::Outcome o = process_->receive(MpiProcess::Key{id_, std::move(key), tag}, wire, {rank},
                                            std::chrono::steady_clock::now() + timeout, waiting);
  switch (o.kind) {
    case MpiProcess::Outcome::Ok:
      return std::move(o.payloads.at(0));
    case MpiProcess::Outcome::Timeout:
      throw TimeoutError(fmt::format("{} on rank {} timed out after {} ms waiting for rank {} ({})", what, me,
                                     timeout.count(), rank, message));
    case MpiProcess::Outcome::PeerFailed:
      support::fail("{} on rank {}: rank {} failed: {}", what, me, o.peer, o.detail);
    case MpiProcess::Outcome::PeerLeft:
      support::fail("{} on rank {}: rank {} exited before sending it", what, me, o.peer);
    case MpiProcess::Outcome::Mismatch:
      support::fail("{} on rank {} meets {} of rank {}: the ranks run different programs", what, me, o.detail,
                    o.peer);
  }
  support::fail("{}: unknown outcome of a receive", what);
}

MpiWorld::Received MpiWorld::transfer(std::string_view op, const Group& group, const std::string& who,
                                      const std::vector<int>& ranks, std::vector<std::byte> payload) {
  // exchange_ranks uses the empty group: "all ranks", with a sequence of its own.
  std::string context = group.empty() ? "all ranks" : fmt::format("group [{}]", support::join(group, ", "));
  MpiProcess::Key key{id_, group, 0};
  {
    std::lock_guard lock(mu_);
    key.sequence = sequence_[group]++;
  }
  process_->send(key, op, ranks, std::move(payload));
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  auto waiting = [&](const std::vector<int>& missing) {
    return fmt::format("tessera: rank {} stopped by SIGTERM while in {} ({}), waiting for {} {} ({})", job_rank(), op,
                       context, plural("rank", missing.size()), support::join(missing, ", "),
                       devices_of(missing, group));
  };
  MpiProcess::Outcome o = process_->receive(key, op, ranks, deadline, waiting);
  Received r;
  switch (o.kind) {
    case MpiProcess::Outcome::Ok:
      r.payloads = std::move(o.payloads);
      break;
    case MpiProcess::Outcome::Timeout:
      r.status = 1;
      r.error = fmt::format("{} on {} timed out after {} ms waiting for {} {} ({}) ({})", op, who, timeout_.count(),
                            plural("rank", o.missing.size()), support::join(o.missing, ", "),
                            devices_of(o.missing, group), context);
      break;
    case MpiProcess::Outcome::PeerFailed:
      r.status = 2;
      r.error = fmt::format("{} on {}: rank {} failed: {} ({})", op, who, o.peer, o.detail, context);
      break;
    case MpiProcess::Outcome::PeerLeft:
      r.status = 2;
      r.error = fmt::format("{} on {}: rank {} exited without joining it ({})", op, who, o.peer, context);
      break;
    case MpiProcess::Outcome::Mismatch:
      r.status = 2;
      r.error = fmt::format("{} on {} meets {} of rank {} ({}): ranks issued different collectives", op, who,
                            o.detail, o.peer, context);
      break;
  }
  return r;
}

std::vector<std::vector<std::byte>> MpiWorld::exchange_ranks(const std::string& what,
                                                             std::span<const std::byte> payload) {
  std::vector<int> others;
  for (int r = 0; r < num_ranks_; ++r)
    if (r != rank_) others.push_back(first_rank_ + r);
  Received rec = transfer(what, {}, fmt::format("rank {}", job_rank()), others,
                          std::vector<std::byte>(payload.begin(), payload.end()));
  if (rec.status == 1) throw TimeoutError(rec.error);
  if (rec.status != 0) throw support::UserError(rec.error);
  std::vector<std::vector<std::byte>> all;
  auto theirs = rec.payloads.begin();
  for (int r = 0; r < num_ranks_; ++r)
    all.push_back(r == rank_ ? std::vector<std::byte>(payload.begin(), payload.end()) : std::move(*theirs++));
  return all;
}

MpiCommunicator::MpiCommunicator(MpiWorld& world, int64_t device)
    : world_(&world), device_(device), job_offset_(int64_t{world.first_rank()} * world.local_devices()),
      local_(world.local_, [&] {
        if (device < world.first_local_device() || device >= world.first_local_device() + world.local_devices())
          support::fail("device {} is not on rank {}, which owns devices {}..{}", device, world.rank(),
                        world.first_local_device(), world.first_local_device() + world.local_devices() - 1);
        return device - world.first_local_device();
      }()) {}

namespace {

void check_size(std::string_view op, std::string_view what, size_t got, size_t want) {
  if (got != want) support::fail("{}: {} has {} bytes, expected {}", op, what, got, want);
}

// What every member of a collective sees (exchange): the inputs, held by the leader's Run.
class MpiExchange : public Exchange {
 public:
  MpiExchange(size_t count, size_t index, std::vector<std::span<const std::byte>> inputs,
              std::unique_ptr<MpiCommunicator::Run> run)
      : Exchange(count, index), inputs_(std::move(inputs)), run_(std::move(run)) {}
  std::span<const std::byte> input(size_t member) const override { return inputs_.at(member); }

 private:
  std::vector<std::span<const std::byte>> inputs_;
  std::unique_ptr<MpiCommunicator::Run> run_;  // its destruction waits until every local member is done
};

}  // namespace

// One collective on this device. Destroyed last to first: the handout (waits until every local
// member has read the leader's outcome), the leader's results, then the local meeting (waits until
// no local member's buffers are in use).
struct MpiCommunicator::Run {
  size_t members = 0, index = 0;
  mpi::LocalPost post;  // what the local peers read in the first meeting
  std::unique_ptr<Exchange> meeting;
  mpi::Results results;         // the leader's
  std::vector<std::byte> status;  // the leader's outcome, read by its local peers in the handout
  std::unique_ptr<Exchange> handout;
  const Run* leader = nullptr;  // where the results are (this one on the leader)
};

std::unique_ptr<MpiCommunicator::Run> MpiCommunicator::run(mpi::Kind kind, std::string_view op, const Group& group,
                                                           ir::ElementType type, ReduceOp reduce,
                                                           std::span<const std::byte> in, std::span<std::byte> out,
                                                           int64_t source) {
  std::set<int64_t> seen;
  for (int64_t d : group)
    if (d < 0 || d >= world_->num_devices() || !seen.insert(d).second)
      support::fail("{}: group [{}] is not a set of devices of 0..{}", op, support::join(group, ", "),
                    world_->num_devices() - 1);
  auto r = std::make_unique<Run>();
  r->members = group.size();
  r->index = index_in_group(op, group, device_);
  // From here on the job's devices and ranks: MPI communicators, messages and errors use them.
  Group job_group;
  for (int64_t d : group) job_group.push_back(d + job_offset_);
  const int me = world_->job_rank();
  const int64_t device = device_ + job_offset_;
  mpi::Layout l = mpi::layout(job_group, world_->local_devices(), me);
  int64_t first = world_->first_local_device() + job_offset_;
  Group local;
  for (size_t i : l.members[l.me]) local.push_back(job_group[i] - first);

  // The local meeting: every local member's buffers, in group order.
  r->post = mpi::LocalPost{in.data(), in.size(), out.data(), out.size(), source};
  r->meeting = local_.exchange(op, local, std::as_bytes(std::span(&r->post, 1)));
  std::vector<mpi::LocalPost> posts(local.size());
  for (size_t i = 0; i < local.size(); ++i) {
    std::memcpy(&posts[i], r->meeting->input(i).data(), sizeof(mpi::LocalPost));
    if (kind != mpi::Kind::Exchange && posts[i].in_bytes != in.size())
      support::fail("{} on device {} has {} bytes, but device {} of group [{}] has {} bytes for it", op, device,
                    in.size(), local[i] + first, support::join(job_group, ", "), posts[i].in_bytes);
  }

  mpi::Call call{kind, op, type, reduce};
  std::vector<std::byte>& status = r->status;
  if (local.front() == device - first) {
    std::vector<int> others;
    for (int q : l.ranks)
      if (q != me) others.push_back(q);
    std::vector<int64_t> mine;
    for (int64_t d : local) mine.push_back(d + first);
    std::string who = fmt::format("rank {} ({} {})", me, plural("device", mine.size()), support::join(mine, ", "));
    std::string context = fmt::format("group [{}]", support::join(job_group, ", "));
    auto deadline = std::chrono::steady_clock::now() + world_->timeout();
    try {
      bool handshaken;
      {
        std::lock_guard lock(world_->mu_);
        handshaken = others.empty() || world_->handshaken_.count(job_group) > 0;
      }
      if (!handshaken) {
        MpiWorld::Received rec = world_->transfer(op, job_group, who, others, {});
        if (rec.status == 1) throw TimeoutError(rec.error);
        if (rec.status != 0) throw support::UserError(rec.error);
        std::lock_guard lock(world_->mu_);
        world_->handshaken_.insert(job_group);
      }
      MpiProcess* process = world_->process_;
      uint64_t id = world_->id_;
      mpi::Watch watch{deadline, world_->timeout(),
                       [process, id, &others]() -> std::optional<std::string> {
                         if (auto t = process->peer_trouble(id, others)) return t->second;
                         return std::nullopt;
                       },
                       fmt::format("{} on {} ({})", op, who, context)};
      if (!others.empty())
        process->report_waiting(fmt::format("tessera: rank {} stopped by SIGTERM while in {} ({}), waiting for {} {} ({})",
                                            me, op, context, plural("rank", others.size()),
                                            support::join(others, ", "), world_->devices_of(others, job_group)));
      
      struct Clear {  // the SIGTERM text goes back to "outside any collective", however this ends
        MpiProcess* p;
        bool on;
        ~Clear() {
          if (on) p->report_waiting("");
        }
      } clear{process, !others.empty()};
      mpi::run(call, l, posts, world_->local_devices(), watch, r->results);
      wire::put<uint8_t>(status, 0);
      wire::put<uint64_t>(status, reinterpret_cast<uintptr_t>(r.get()));
    } catch (const TimeoutError& e) {
      wire::put<uint8_t>(status, 1);
      wire::put_string(status, e.what());
    } catch (const std::exception& e) {
      wire::put<uint8_t>(status, 2);
      wire::put_string(status, e.what());
    }
  }
  r->handout = local_.exchange(op, local, status);
  wire::Reader h(r->handout->input(0));
  auto outcome = h.get<uint8_t>();
  if (outcome == 1) throw TimeoutError(h.get_string());
  if (outcome != 0) throw support::UserError(h.get_string());
  r->leader = reinterpret_cast<const Run*>(static_cast<uintptr_t>(h.get<uint64_t>()));
  auto self = static_cast<size_t>(std::find(local.begin(), local.end(), device - first) - local.begin());
  mpi::finish(call, l, posts, self);
  return r;
}

std::unique_ptr<Exchange> MpiCommunicator::exchange(std::string_view op, const Group& group,
                                                    std::span<const std::byte> input) {
  std::unique_ptr<Run> r = run(mpi::Kind::Exchange, op, group, ir::ElementType::ui8, ReduceOp::Sum,
                               input, {}, -1);
  std::vector<std::span<const std::byte>> inputs = r->leader->results.inputs;
  size_t members = r->members, index = r->index;
  auto ex = std::make_unique<MpiExchange>(members, index, std::move(inputs), std::move(r));
  count_exchange(op, *ex, input.size());
  return ex;
}

void MpiCommunicator::all_reduce(std::string_view op, const Group& group, ir::ElementType type, ReduceOp reduce,
                                 std::span<const std::byte> in, std::span<std::byte> out) {
  check_size(op, "the result", out.size(), in.size());
  check_reducible(op, type, reduce);
  std::unique_ptr<Run> r = run(mpi::Kind::AllReduce, op, group, type, reduce, in, out, -1);
  // Reduce-scatter of member spans plus all-gather of the folded ones (chunk_of's spans).
  size_t n = group.size(), es = static_cast<size_t>(ir::info(type).bytes), elements = in.size() / es;
  size_t per = (elements + n - 1) / n, lo = std::min(r->index * per, elements);
  size_t mine = (std::min(lo + per, elements) - lo) * es, moved = (in.size() - mine) + (n - 1) * mine;
  count(op, n, in.size(), moved, moved);
}

void MpiCommunicator::reduce_scatter(std::string_view op, const Group& group, ir::ElementType type, ReduceOp reduce,
                                     std::span<const std::byte> in, std::span<std::byte> out) {
  check_size(op, "the operand", in.size(), out.size() * group.size());
  check_reducible(op, type, reduce);
  run(mpi::Kind::ReduceScatter, op, group, type, reduce, in, out, -1);
  count(op, group.size(), in.size(), in.size() - out.size(), (group.size() - 1) * out.size());
}

void MpiCommunicator::all_gather(std::string_view op, const Group& group, std::span<const std::byte> in,
                                 std::span<std::byte> out) {
  check_size(op, "the result", out.size(), in.size() * group.size());
  run(mpi::Kind::AllGather, op, group, ir::ElementType::ui8, ReduceOp::Sum, in, out, -1);
  count(op, group.size(), in.size(), (group.size() - 1) * in.size(), (group.size() - 1) * in.size());
}

void MpiCommunicator::all_to_all(std::string_view op, const Group& group, std::span<const std::byte> in,
                                 std::span<std::byte> out) {
  check_size(op, "the result", out.size(), in.size());
  if (in.size() % group.size() != 0)
    support::fail("{}: {} bytes do not split into {} chunks", op, in.size(), group.size());
  run(mpi::Kind::AllToAll, op, group, ir::ElementType::ui8, ReduceOp::Sum, in, out, -1);
  size_t chunk = in.size() / group.size();
  count(op, group.size(), in.size(), (group.size() - 1) * chunk, (group.size() - 1) * chunk);
}

void MpiCommunicator::broadcast(std::string_view op, const Group& group, std::span<const std::byte> in,
                                std::span<std::byte> out) {
  check_size(op, "the result", out.size(), in.size());
  std::unique_ptr<Run> r = run(mpi::Kind::Broadcast, op, group, ir::ElementType::ui8, ReduceOp::Sum,
                               in, out, -1);
  size_t n = group.size();
  count(op, n, in.size(), r->index == 0 ? (n - 1) * in.size() : 0, r->index == 0 ? 0 : in.size());
}

void MpiCommunicator::permute(std::string_view op, const Group& group, std::optional<int64_t> source,
                              std::span<const std::byte> in, std::span<std::byte> out) {
  check_size(op, "the result", out.size(), in.size());
  int64_t from = source ? static_cast<int64_t>(index_in_group(op, group, *source)) : -1;
  std::unique_ptr<Run> r = run(mpi::Kind::Permute, op, group, ir::ElementType::ui8, ReduceOp::Sum,
                               in, out, from);
  size_t readers = 0;
  for (size_t k = 0; k < r->leader->results.sources.size(); ++k)
    if (k != r->index && r->leader->results.sources[k] == static_cast<int64_t>(r->index)) ++readers;
  bool received = from >= 0 && static_cast<size_t>(from) != r->index;
  count(op, group.size(), in.size(), readers * in.size(), received ? in.size() : 0);
}

void MpiCommunicator::barrier(std::string_view op, const Group& group) {
  run(mpi::Kind::Barrier, op, group, ir::ElementType::ui8, ReduceOp::Sum, {}, {}, -1);
  count(op, group.size(), 0, 0, 0);
}

std::vector<std::vector<ir::Literal>> run_on_ranks(MpiWorld& world, const ir::Module& module,
                                                   const std::string& function,
                                                   std::vector<std::vector<ir::Literal>> inputs,
                                                   const interp::Options& base, const Evaluator& evaluate,
                                                   bool results_everywhere) {
  const ir::Function* fn = module.find_function(function);
  if (fn == nullptr) support::fail("run on MPI ranks: no function @{}", function);
  int64_t n = world.num_devices(), k = world.local_devices(), first = world.first_local_device();
  if (static_cast<int64_t>(inputs.size()) != n)
    support::fail("run of @{} on MPI ranks: inputs for {} devices, but {} ranks of {} make {}", function,
                  inputs.size(), world.num_ranks(), k, n);

  std::vector<std::vector<ir::Literal>> mine(static_cast<size_t>(k));
  std::vector<std::string> errors(static_cast<size_t>(k));
  // The rank's devices run on persistent workers (support/threads.h).
  support::run_concurrently(static_cast<size_t>(k), [&](size_t jj) {
    auto j = static_cast<int64_t>(jj);
    int64_t d = first + j;
    try {
      MpiCommunicator comm(world, d);
      CommCollectives collectives(comm);
      interp::Options o = base;
      o.module = &module;
      o.collectives = &collectives;
      o.process = interp::ProcessInfo{0, static_cast<uint32_t>(d), 1, static_cast<uint32_t>(n)};
      std::vector<ir::Literal> args = std::move(inputs[static_cast<size_t>(d)]);
      mine[static_cast<size_t>(j)] = evaluate ? evaluate(d, *fn, std::move(args), o)
                                              : interp::evaluate(*fn, std::move(args), o);
    } catch (const std::exception& e) {
      errors[static_cast<size_t>(j)] = e.what();
      // At once, so other ranks waiting on this one stop waiting now.
      world.report_failure(fmt::format("device {}: {}", d, e.what()));
    }
  });
  std::string failure;
  for (int64_t j = 0; j < k; ++j)
    if (!errors[static_cast<size_t>(j)].empty())
      failure += fmt::format("{}device {}: {}", failure.empty() ? "" : "; ", first + j, errors[static_cast<size_t>(j)]);
  if (!failure.empty())
    throw support::UserError(fmt::format("@{} on rank {}: {}", function, world.job_rank(), failure));
  if (!results_everywhere) {
    std::vector<std::vector<ir::Literal>> out(static_cast<size_t>(n));
    for (int64_t j = 0; j < k; ++j) out[static_cast<size_t>(first + j)] = std::move(mine[static_cast<size_t>(j)]);
    return out;
  }

  // Every rank gets every device's results (local types are the same on every device).
  std::vector<std::byte> payload;
  for (const auto& results : mine)
    for (const ir::Literal& r : results) wire::put_bytes(payload, r.bytes());
  std::vector<std::vector<std::byte>> all = world.exchange_ranks(fmt::format("the results of @{}", function), payload);
  std::vector<std::vector<ir::Literal>> out(static_cast<size_t>(n));
  for (int r = 0; r < world.num_ranks(); ++r) {
    wire::Reader in(all[static_cast<size_t>(r)]);
    for (int64_t j = 0; j < k; ++j) {
      auto d = static_cast<size_t>(r * k + j);
      if (r == world.rank()) {
        out[d] = std::move(mine[static_cast<size_t>(j)]);
        continue;
      }
      for (const ir::Type& t : fn->result_types) {
        ir::Literal lit(t);
        auto bytes = in.get_bytes();
        TESSERA_CHECK(bytes.size() == lit.bytes().size(), "rank {} sent {} bytes for a {} result of @{}", r,
                      bytes.size(), ir::to_string(t), function);
        std::copy(bytes.begin(), bytes.end(), lit.bytes().begin());
        out[d].push_back(std::move(lit));
      }
    }
  }
  return out;
}

}  // namespace tessera::comm
