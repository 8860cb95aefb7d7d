#include "comm/interp_collectives.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "interp/kernels.h"
#include "support/run_cache.h"
#include "support/strings.h"

namespace tessera::comm {
namespace {

using ir::Literal;
using ir::OpKind;

// This process's group, as device ids in group order; none when its groups leave it out.
std::optional<Group> find_my_group(const ir::Op& op, const interp::ProcessInfo& process) {
  interp::ProcessId self{process.replica_id, process.partition_id};
  auto groups = interp::process_groups(op, process);
  // Every id must name a process of this run's grid (a partition id of a replica-only run would
  // otherwise wait for processes that do not exist).
  for (const auto& g : groups)
    for (const auto& p : g)
      if (p.replica >= process.num_replicas || p.partition >= process.num_partitions)
        support::fail("{}: its groups name process (replica {}, partition {}), but the program "
                      "runs on {} replica(s) of {} partition(s)",
                      op.name(), p.replica, p.partition, process.num_replicas,
                      process.num_partitions);
  for (const auto& g : groups) {
    if (std::find(g.begin(), g.end(), self) == g.end()) continue;
    Group out;
    for (const auto& p : g) out.push_back(interp::flat_process_id(p, process));
    return out;
  }
  return std::nullopt;
}

// find_my_group's answer, kept in the run's cache (support/run_cache.h) for the op's next run: a
// step's collectives would
// otherwise parse and check their groups again on every run, allocating each time. An entry holds
// what the answer is computed from (the op's kind, collective mode and replica_groups, and the
// process), compared on every call, so an op address reused by another op gets its own answer.
// The reference stays valid until the next call in the same run (or thread).
struct Known {
  OpKind kind{};
  interp::CollectiveMode mode{};
  bool has_groups = false;
  ir::IntMatrix groups;
  interp::ProcessInfo process;
  std::optional<Group> group;
};
struct KnownGroups {
  std::unordered_map<const ir::Op*, Known> map;
};

const std::optional<Group>& my_group(const ir::Op& op, const interp::ProcessInfo& process) {
  constexpr size_t kMostEntries = 4096;  // a cache that has seen more ops (tests) starts afresh
  auto& known = support::run_local<KnownGroups>().map;
  interp::CollectiveMode mode = interp::collective_mode(op);
  const ir::IntMatrix* groups = op.attrs().find<ir::IntMatrix>("replica_groups");
  auto same = [&](const Known& k) {
    return k.kind == op.kind() && k.mode == mode && k.has_groups == (groups != nullptr) &&
           (groups == nullptr || k.groups == *groups) && k.process.replica_id == process.replica_id &&
           k.process.partition_id == process.partition_id && k.process.num_replicas == process.num_replicas &&
           k.process.num_partitions == process.num_partitions;
  };
  auto it = known.find(&op);
  if (it != known.end() && same(it->second)) return it->second.group;
  std::optional<Group> group = find_my_group(op, process);  // throws for bad groups: nothing kept
  if (it == known.end() && known.size() >= kMostEntries) known.clear();
  Known& k = known[&op];
  k = Known{op.kind(), mode, groups != nullptr, groups ? *groups : ir::IntMatrix{}, process, std::move(group)};
  return k.group;
}

Literal literal_from(const ir::Type& type, std::span<const std::byte> bytes) {
  Literal l(type);
  if (!l.bytes().empty()) std::memcpy(l.bytes().data(), bytes.data(), l.bytes().size());  // null when empty
  return l;
}

// Every member's value of `x`, in group order.
std::vector<Literal> gather_values(Communicator& comm, const ir::Op& op, const Group& group,
                                   const Literal& x) {
  auto ex = comm.exchange(op.name(), group, x.bytes());
  std::vector<Literal> out;
  for (size_t m = 0; m < ex->members(); ++m) out.push_back(literal_from(x.type(), ex->input(m)));
  return out;
}

Literal fold(const std::vector<Literal>& values, const interp::Combiner& combine, const ir::Op& op) {
  if (!combine) support::fail("{}: has no reduction body", op.name());
  Literal acc = values[0];
  for (size_t m = 1; m < values.size(); ++m) acc = combine(acc, values[m]);
  return acc;
}

Literal concat(const std::vector<Literal>& values, int64_t dim) {
  std::vector<const Literal*> ptrs;
  for (const Literal& v : values) ptrs.push_back(&v);
  return interp::concatenate_literals(ptrs, dim);
}

// The reduction a collective's body computes, when the communicator's typed collectives fold it
// exactly as the body would (in group order, one rounding per step): an add or a multiply, on
// float or integer values. Max and min stay with the body, whose IEEE maximum orders -0 below +0.
// (One difference is left: when both sides are NaN with different payloads, a body written
// add(rhs, lhs) keeps the other payload; the value is NaN either way.)
std::optional<ReduceOp> typed_reduction(const ir::Op& op, ir::ElementType type) {
  if (!ir::is_float(type) && !ir::is_integer(type)) return std::nullopt;
  std::optional<OpKind> kind = ir::region_combiner(op);
  if (kind == OpKind::Add) return ReduceOp::Sum;
  if (kind == OpKind::Multiply) return ReduceOp::Product;
  return std::nullopt;
}

// Whether the n blocks of `t` along `dim` are already consecutive in memory (every dimension
// before it has size 1), so the communicator's flat chunks are those blocks.
bool blocks_are_chunks(const ir::Type& t, int64_t dim) {
  for (int64_t i = 0; i < dim; ++i)
    if (t.shape[static_cast<size_t>(i)] != 1) return false;
  return true;
}

// x's bytes with its n blocks along `dim` laid one after another: the communicator's chunks.
std::vector<std::byte> blocks_as_chunks(const Literal& x, int64_t dim, int64_t n) {
  std::vector<std::byte> out;
  out.reserve(x.bytes().size());
  for (int64_t j = 0; j < n; ++j) {
    Literal block = interp::block_of(x, dim, j, n);
    out.insert(out.end(), block.bytes().begin(), block.bytes().end());
  }
  return out;
}

// The n blocks of `t` along `dim` as [outer, slab]: `outer` rows (the product of the dimensions
// before dim) of n slabs of `slab` bytes each (block j's part of the row is its j-th slab).
struct Slabs {
  int64_t outer = 1, slab = 0;
};
Slabs slabs_of(const ir::Type& t, int64_t dim, int64_t n) {
  Slabs s;
  for (int64_t i = 0; i < dim; ++i) s.outer *= t.shape[static_cast<size_t>(i)];
  int64_t inner = ir::info(t.element).bytes;
  for (size_t i = static_cast<size_t>(dim); i < t.shape.size(); ++i) inner *= t.shape[i];
  s.slab = inner / n;
  return s;
}

// A byte buffer of the run's cache kept between collectives (run_into's steady state allocates
// nothing).
struct ChunkBuffer {
  std::vector<std::byte> bytes;
};
std::span<std::byte> scratch_bytes(size_t n) {
  std::vector<std::byte>& buffer = support::run_local<ChunkBuffer>().bytes;
  if (buffer.size() < n) buffer.resize(n);
  return {buffer.data(), n};
}

// The typed collectives of the communicator, which move what the ring model charges (and, on host
// devices, read peers' buffers in place), for the ops whose meaning they express; nullopt sends
// the op through the general exchange. Results are bit for bit the exchange's.
std::optional<Literal> typed_collective(Communicator& comm, const ir::Op& op, const Group& group,
                                        const Literal& x, const ir::Type& result_type) {
  const ir::AttrMap& a = op.attrs();
  auto n = static_cast<int64_t>(group.size());
  ir::ElementType type = x.type().element;
  switch (op.kind()) {
    case OpKind::AllReduce: {
      std::optional<ReduceOp> reduce = typed_reduction(op, type);
      if (!reduce) return std::nullopt;
      Literal out(result_type);
      comm.all_reduce(op.name(), group, type, *reduce, x.bytes(), out.bytes());
      return out;
    }
    case OpKind::ReduceScatter: {
      std::optional<ReduceOp> reduce = typed_reduction(op, type);
      if (!reduce) return std::nullopt;
      int64_t dim = a.get<int64_t>("scatter_dimension");
      if (x.type().shape[static_cast<size_t>(dim)] % n != 0) return std::nullopt;
      Literal out(result_type);
      if (blocks_are_chunks(x.type(), dim)) {
        comm.reduce_scatter(op.name(), group, type, *reduce, x.bytes(), out.bytes());
      } else {
        std::vector<std::byte> chunks = blocks_as_chunks(x, dim, n);
        comm.reduce_scatter(op.name(), group, type, *reduce, chunks, out.bytes());
      }
      return out;
    }
    case OpKind::AllGather: {
      int64_t dim = a.get<int64_t>("all_gather_dim");
      Literal out(result_type);
      if (blocks_are_chunks(x.type(), dim)) {
        comm.all_gather(op.name(), group, x.bytes(), out.bytes());
        return out;
      }
      std::vector<std::byte> gathered(out.bytes().size());
      comm.all_gather(op.name(), group, x.bytes(), gathered);
      std::vector<Literal> pieces;
      for (int64_t m = 0; m < n; ++m)
        pieces.push_back(literal_from(x.type(), std::span<const std::byte>(gathered).subspan(
                                                    static_cast<size_t>(m) * x.bytes().size())));
      return concat(pieces, dim);
    }
    case OpKind::AllToAll: {
      int64_t split = a.get<int64_t>("split_dimension");
      int64_t concat_dim = a.get<int64_t>("concat_dimension");
      if (a.get<int64_t>("split_count") != n || x.type().shape[static_cast<size_t>(split)] % n != 0)
        return std::nullopt;  // the exchange path names the error
      ir::Type chunk_type = x.type();
      chunk_type.shape[static_cast<size_t>(split)] /= n;
      std::vector<std::byte> received(x.bytes().size());
      if (blocks_are_chunks(x.type(), split)) {
        comm.all_to_all(op.name(), group, x.bytes(), received);
      } else {
        std::vector<std::byte> chunks = blocks_as_chunks(x, split, n);
        comm.all_to_all(op.name(), group, chunks, received);
      }
      if (blocks_are_chunks(result_type, concat_dim)) return literal_from(result_type, received);
      std::vector<Literal> pieces;
      size_t chunk_bytes = received.size() / static_cast<size_t>(n);
      for (int64_t m = 0; m < n; ++m)
        pieces.push_back(literal_from(
            chunk_type, std::span<const std::byte>(received).subspan(static_cast<size_t>(m) * chunk_bytes)));
      return concat(pieces, concat_dim);
    }
    default:
      return std::nullopt;
  }
}

// send posts its values, one message per pair whose source is this process (one message matched
// by channel alone when there are no pairs or the host is the peer); recv takes the message of the
// pair whose target is this process, or zeros when it is none's (interp::message_pairs).
std::vector<Literal> send_recv(Communicator& comm, const ir::Op& op, std::vector<Literal> operands,
                               const interp::ProcessInfo& process) {
  int64_t channel = op.attrs().get<ir::ChannelHandle>("channel_handle").handle;
  int64_t self = interp::flat_process_id(process);
  std::vector<std::pair<int64_t, int64_t>> pairs = interp::message_pairs(op);
  int64_t n = int64_t{process.num_replicas} * process.num_partitions;
  for (auto [s, t] : pairs)
    if (s >= n || t >= n)
      support::fail("{}: source_target_pairs name process {}, but the program runs on {} process(es)", op.name(),
                    std::max(s, t), n);
  std::vector<Literal> out;
  if (op.kind() == OpKind::Send) {
    std::vector<std::byte> payload;
    for (size_t k = 0; k + 1 < operands.size(); ++k)
      payload.insert(payload.end(), operands[k].bytes().begin(), operands[k].bytes().end());
    if (pairs.empty()) comm.post(op.name(), MessageKey{channel, -1, -1}, payload);
    for (auto [s, t] : pairs)
      if (s == self) comm.post(op.name(), MessageKey{channel, s, t}, payload);
    out.push_back(Literal::token());
    return out;
  }
  size_t bytes = 0;
  for (size_t k = 0; k + 1 < op.num_results(); ++k) {
    out.emplace_back(op.result(k)->type());
    bytes += out.back().bytes().size();
  }
  std::optional<MessageKey> key;
  if (pairs.empty()) key = MessageKey{channel, -1, -1};
  for (auto [s, t] : pairs)
    if (t == self) key = MessageKey{channel, s, t};
  if (key) {
    std::vector<std::byte> payload(bytes);
    comm.take(op.name(), *key, payload);
    size_t at = 0;
    for (Literal& v : out) {
      if (!v.bytes().empty()) std::memcpy(v.bytes().data(), payload.data() + at, v.bytes().size());
      at += v.bytes().size();
    }
  }
  out.push_back(Literal::token());
  return out;
}

}  // namespace

bool CommCollectives::run_into(const ir::Op& op, const Literal& x, Literal& result, const interp::ProcessInfo& process) {
  if (op.operands().size() != 1 || op.num_results() != 1) return false;
  ir::ElementType type = x.type().element;
  std::optional<ReduceOp> reduce;
  int64_t dim = 0;
  switch (op.kind()) {
    case OpKind::AllReduce:
      reduce = typed_reduction(op, type);
      if (!reduce) return false;
      break;
    case OpKind::ReduceScatter:
      reduce = typed_reduction(op, type);
      dim = op.attrs().get<int64_t>("scatter_dimension");
      if (!reduce) return false;
      break;
    case OpKind::AllGather: dim = op.attrs().get<int64_t>("all_gather_dim"); break;
    default: return false;
  }
  const std::optional<Group>& group = my_group(op, process);
  if (!group) return false;  // run() names the error
  auto n = static_cast<int64_t>(group->size());
  if (op.kind() == OpKind::ReduceScatter && x.type().shape[static_cast<size_t>(dim)] % n != 0) return false;
  // Blocks along a dimension after others of size > 1 are not the communicator's flat chunks: they
  // go through a per-thread buffer laid out as chunks (block after block), as typed_collective's
  // copies do.
  bool chunks = blocks_are_chunks(x.type(), dim);
  switch (op.kind()) {
    case OpKind::AllReduce: comm_.all_reduce(op.name(), *group, type, *reduce, x.bytes(), result.bytes()); break;
    case OpKind::ReduceScatter: {
      if (chunks) {
        comm_.reduce_scatter(op.name(), *group, type, *reduce, x.bytes(), result.bytes());
        break;
      }
      Slabs s = slabs_of(x.type(), dim, n);
      std::span<std::byte> in = scratch_bytes(x.bytes().size());
      const std::byte* src = x.bytes().data();
      for (int64_t j = 0; j < n && s.slab > 0; ++j)
        for (int64_t o = 0; o < s.outer; ++o)
          std::memcpy(in.data() + (j * s.outer + o) * s.slab, src + (o * n + j) * s.slab, static_cast<size_t>(s.slab));
      comm_.reduce_scatter(op.name(), *group, type, *reduce, in, result.bytes());
      break;
    }
    default: {
      if (chunks) {
        comm_.all_gather(op.name(), *group, x.bytes(), result.bytes());
        break;
      }
      // Member m's block arrives as the m-th chunk; the result takes it as slab m of each row.
      Slabs s = slabs_of(result.type(), dim, n);
      std::span<std::byte> gathered = scratch_bytes(result.bytes().size());
      comm_.all_gather(op.name(), *group, x.bytes(), gathered);
      std::byte* dst = result.bytes().data();
      for (int64_t m = 0; m < n && s.slab > 0; ++m)
        for (int64_t o = 0; o < s.outer; ++o)
          std::memcpy(dst + (o * n + m) * s.slab, gathered.data() + (m * s.outer + o) * s.slab, static_cast<size_t>(s.slab));
      break;
    }
  }
  return true;
}

std::vector<Literal> CommCollectives::run(const ir::Op& op, std::vector<Literal> operands,
                                          const interp::Combiner& combine,
                                          const interp::ProcessInfo& process) {
  const ir::AttrMap& a = op.attrs();
  if (op.kind() == OpKind::Send || op.kind() == OpKind::Recv) return send_recv(comm_, op, std::move(operands), process);
  std::vector<Literal> out;
  if (op.kind() == OpKind::CollectivePermute) {
    // Every process of the group takes part; ids in the pairs are replica (or partition) ids.
    bool by_partition = interp::collective_mode(op) == interp::CollectiveMode::CrossPartition;
    int64_t self = by_partition ? process.partition_id : process.replica_id;
    const std::optional<Group>& group = my_group(op, process);
    if (!group) support::fail("{}: process is in none of its groups", op.name());
    std::optional<int64_t> source;
    for (auto [s, t] : interp::source_target_pairs(op)) {
      if (t != self) continue;
      interp::ProcessId from = by_partition ? interp::ProcessId{process.replica_id, s}
                                            : interp::ProcessId{s, process.partition_id};
      source = interp::flat_process_id(from, process);
    }
    Literal result(operands[0].type());
    comm_.permute(op.name(), *group, source, operands[0].bytes(), result.bytes());
    out.push_back(std::move(result));
    return out;
  }
  // has_dynamic_root: the last operand gives, per data operand, the group position of its root.
  std::optional<Literal> roots;
  if (op.kind() == OpKind::CollectiveBroadcast && a.get_or<bool>("has_dynamic_root", false)) {
    roots = std::move(operands.back());
    operands.pop_back();
  }
  const std::optional<Group>& found = my_group(op, process);
  if (!found) {
    // The spec gives broadcast and reduce zeros on processes outside every group; for the other
    // collectives every process must be in a group.
    if (op.kind() != OpKind::CollectiveBroadcast && op.kind() != OpKind::CollectiveReduce)
      support::fail("{}: process (replica {}, partition {}) is in none of its groups", op.name(),
                    process.replica_id, process.partition_id);
    for (const Literal& x : operands) out.emplace_back(x.type());
    return out;
  }
  const Group& group = *found;
  auto n = static_cast<int64_t>(group.size());
  interp::check_group_size(op, n);
  auto position = static_cast<int64_t>(index_in_group(op.name(), group, comm_.device()));
  for (size_t k = 0; k < operands.size(); ++k) {
    const Literal& x = operands[k];
    if (std::optional<Literal> fast = typed_collective(comm_, op, group, x, op.result(k)->type())) {
      out.push_back(std::move(*fast));
      continue;
    }
    std::vector<Literal> values = gather_values(comm_, op, group, x);
    switch (op.kind()) {
      case OpKind::AllReduce:
        out.push_back(fold(values, combine, op));
        break;
      case OpKind::AllGather:
        out.push_back(concat(values, a.get<int64_t>("all_gather_dim")));
        break;
      case OpKind::ReduceScatter:
        out.push_back(interp::block_of(fold(values, combine, op), a.get<int64_t>("scatter_dimension"),
                                       position, n));
        break;
      case OpKind::AllToAll: {
        if (a.get<int64_t>("split_count") != n)
          support::fail("{}: split_count {} differs from the group size {}", op.name(),
                        a.get<int64_t>("split_count"), n);
        std::vector<Literal> chunks;
        for (const Literal& v : values)
          chunks.push_back(interp::block_of(v, a.get<int64_t>("split_dimension"), position, n));
        out.push_back(concat(chunks, a.get<int64_t>("concat_dimension")));
        break;
      }
      case OpKind::CollectiveBroadcast: {
        int64_t root = roots ? roots->get_int(static_cast<int64_t>(k)) : 0;
        if (root < 0 || root >= n)
          support::fail("{}: root {} is outside its group of {}", op.name(), root, n);
        out.push_back(values[static_cast<size_t>(root)]);
        break;
      }
      case OpKind::CollectiveReduce:
        out.push_back(position == 0 ? fold(values, combine, op) : Literal(x.type()));
        break;
      default:
        support::fail("{} is not a collective", op.name());
    }
  }
  return out;
}

}  // namespace tessera::comm
