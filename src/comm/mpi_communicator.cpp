// The Communicator over MPI ranks and a run of a program on every rank (see mpi_communicator.h).
#include "comm/mpi_communicator.h"

#include <algorithm>
#include <set>

#include "comm/interp_collectives.h"
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

// Member i of a collective's input: the local ones live in the first local meeting, the remote
// ones in the leader's bundle of what the other ranks sent.
class MpiExchange : public Exchange {
 public:
  MpiExchange(size_t index, std::vector<std::span<const std::byte>> inputs, std::vector<std::byte> bundle,
              std::unique_ptr<Exchange> local, std::unique_ptr<Exchange> handout)
      : Exchange(inputs.size(), index), inputs_(std::move(inputs)), bundle_(std::move(bundle)),
        local_(std::move(local)), handout_(std::move(handout)) {}
  std::span<const std::byte> input(size_t member) const override { return inputs_.at(member); }

 private:
  std::vector<std::span<const std::byte>> inputs_;
  // Destroyed last to first: the handout (waits until every local member has read the bundle),
  // then the local meeting (waits until every local input has been read), then the bundle.
  std::vector<std::byte> bundle_;
  std::unique_ptr<Exchange> local_, handout_;
};

}  // namespace

MpiWorld::MpiWorld(int64_t local_devices, std::chrono::milliseconds timeout)
    : process_(&MpiProcess::get()), rank_(process_->rank()), num_ranks_(process_->size()),
      local_devices_(checked_local_devices(local_devices)), timeout_(timeout), id_(process_->next_world_id()),
      // Local peers wait in the second meeting while their leader waits on MPI (up to timeout_),
      // so the local deadline must be later than the MPI one.
      local_(local_devices_, timeout + std::chrono::seconds(1)) {
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
  process_->send(MpiProcess::Key{id_, point_to_point(rank_, rank), tag}, what, {rank}, std::move(payload));
}

std::vector<std::byte> MpiWorld::receive_from(int rank, const std::string& what, int64_t tag,
                                              std::chrono::milliseconds timeout) {
  if (rank < 0 || rank >= num_ranks_ || rank == rank_)
    support::fail("{}: rank {} cannot receive from rank {} of {}", what, rank_, rank, num_ranks_);
  auto waiting = [&](const std::vector<int>&) {
    return fmt::format("tessera: rank {} stopped by SIGTERM while in {}, waiting for rank {}", rank_, what, rank);
  };
  MpiProcess::Outcome o = process_->receive(MpiProcess::Key{id_, point_to_point(rank, rank_), tag}, what, {rank},
                                            std::chrono::steady_clock::now() + timeout, waiting);
  switch (o.kind) {
    case MpiProcess::Outcome::Ok:
      return std::move(o.payloads.at(0));
    case MpiProcess::Outcome::Timeout:
      throw TimeoutError(fmt::format("{} on rank {} timed out after {} ms waiting for rank {} (message {})", what,
                                     rank_, timeout.count(), rank, tag));
    case MpiProcess::Outcome::PeerFailed:
      support::fail("{} on rank {}: rank {} failed: {}", what, rank_, o.peer, o.detail);
    case MpiProcess::Outcome::PeerLeft:
      support::fail("{} on rank {}: rank {} exited before sending it", what, rank_, o.peer);
    case MpiProcess::Outcome::Mismatch:
      support::fail("{} on rank {} meets {} of rank {}: the ranks run different programs", what, rank_, o.detail,
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
    return fmt::format("tessera: rank {} stopped by SIGTERM while in {} ({}), waiting for {} {} ({})", rank_, op,
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
    if (r != rank_) others.push_back(r);
  Received rec = transfer(what, {}, fmt::format("rank {}", rank_), others,
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
    : world_(&world), device_(device),
      local_(world.local_, [&] {
        if (device < world.first_local_device() || device >= world.first_local_device() + world.local_devices())
          support::fail("device {} is not on rank {}, which owns devices {}..{}", device, world.rank(),
                        world.first_local_device(), world.first_local_device() + world.local_devices() - 1);
        return device - world.first_local_device();
      }()) {}

std::unique_ptr<Exchange> MpiCommunicator::exchange(std::string_view op, const Group& group,
                                                    std::span<const std::byte> input) {
  std::set<int64_t> seen;
  for (int64_t d : group)
    if (d < 0 || d >= world_->num_devices() || !seen.insert(d).second)
      support::fail("{}: group [{}] is not a set of devices of 0..{}", op, support::join(group, ", "),
                    world_->num_devices() - 1);
  size_t index = index_in_group(op, group, device_);
  // The group's members on this rank (local ids, group order) and the other ranks involved.
  int64_t first = world_->first_local_device();
  Group local;
  std::vector<int64_t> local_members;  // their global ids, for messages
  std::vector<size_t> local_position(group.size(), SIZE_MAX);
  std::vector<int> ranks;
  for (size_t i = 0; i < group.size(); ++i) {
    int r = world_->owner(group[i]);
    if (r == world_->rank()) {
      local_position[i] = local.size();
      local.push_back(group[i] - first);
      local_members.push_back(group[i]);
    } else if (std::find(ranks.begin(), ranks.end(), r) == ranks.end()) {
      ranks.push_back(r);
    }
  }
  std::unique_ptr<Exchange> meeting = local_.exchange(op, local, input);
  std::vector<std::span<const std::byte>> inputs(group.size());
  for (size_t i = 0; i < group.size(); ++i)
    if (local_position[i] != SIZE_MAX) inputs[i] = meeting->input(local_position[i]);
  if (ranks.empty())
    return std::make_unique<MpiExchange>(index, std::move(inputs), std::vector<std::byte>{}, std::move(meeting),
                                         nullptr);

  // The leader (the group's first member on this rank) trades with the other ranks.
  std::vector<std::byte> bundle;
  if (local.front() == device_ - first) {
    std::vector<std::byte> payload;
    wire::put<uint32_t>(payload, static_cast<uint32_t>(local.size()));
    for (size_t i = 0; i < group.size(); ++i)
      if (local_position[i] != SIZE_MAX) {
        wire::put<uint32_t>(payload, static_cast<uint32_t>(i));
        wire::put_bytes(payload, inputs[i]);
      }
    std::string who = fmt::format("rank {} ({} {})", world_->rank(), plural("device", local_members.size()),
                                  support::join(local_members, ", "));
    MpiWorld::Received rec = world_->transfer(op, group, who, ranks, std::move(payload));
    wire::put<uint8_t>(bundle, rec.status);
    if (rec.status != 0) wire::put_string(bundle, rec.error);
    for (const auto& p : rec.payloads) wire::put_bytes(bundle, p);
  }
  std::unique_ptr<Exchange> handout = local_.exchange(op, local, bundle);
  wire::Reader in(handout->input(0));
  auto status = in.get<uint8_t>();
  if (status == 1) throw TimeoutError(in.get_string());
  if (status != 0) throw support::UserError(in.get_string());
  for (size_t r = 0; r < ranks.size(); ++r) {
    wire::Reader theirs(in.get_bytes());
    auto count = theirs.get<uint32_t>();
    for (uint32_t c = 0; c < count; ++c) {
      auto member = theirs.get<uint32_t>();
      TESSERA_CHECK(member < group.size() && world_->owner(group[member]) == ranks[r],
                    "{}: rank {} sent the input of member {} of group [{}]", op, ranks[r], member,
                    support::join(group, ", "));
      inputs[member] = theirs.get_bytes();
    }
  }
  TESSERA_CHECK(in.done(), "{}: trailing bytes in the inputs of group [{}]", op, support::join(group, ", "));
  return std::make_unique<MpiExchange>(index, std::move(inputs), std::move(bundle), std::move(meeting),
                                       std::move(handout));
}

std::vector<std::vector<ir::Literal>> run_on_ranks(MpiWorld& world, const ir::Module& module,
                                                   const std::string& function,
                                                   std::vector<std::vector<ir::Literal>> inputs,
                                                   const interp::Options& base, const Evaluator& evaluate) {
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
  if (!failure.empty()) throw support::UserError(fmt::format("@{} on rank {}: {}", function, world.rank(), failure));

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
