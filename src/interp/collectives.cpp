// Process groups of collective ops (the four strategies of the StableHLO spec) and the
// single-process meaning of every collective (DESIGN.md §2).
//
// In a single process, every other process of a group is imagined to hold the same value as this
// one. The result is what this process would receive in that world: the reduction body folded
// over n copies, n copies gathered, this process's block of a scatter, and zeros where a real run
// would send this process nothing.
#include <algorithm>
#include <set>

#include "interp/kernels.h"
#include "ir/shape_rules.h"
#include "support/strings.h"

namespace tessera::interp {

using ir::Literal;
using ir::OpKind;
using Groups = std::vector<std::vector<int64_t>>;

namespace {

std::string groups_string(const Groups& groups) {
  std::vector<std::string> rows;
  for (const auto& g : groups) rows.push_back("[" + support::join(g, ", ") + "]");
  return "[" + support::join(rows, ", ") + "]";
}

bool has_channel(const ir::Op& op) {
  const auto* ch = op.attrs().find<ir::ChannelHandle>("channel_handle");
  return ch != nullptr && ch->handle > 0;
}

// The fold of the body over n copies of x: x, then body(acc, x) n-1 times.
Literal fold_copies(const Literal& x, int64_t n, const Combiner& combine, const ir::Op& op) {
  if (!combine) support::fail("{}: has no reduction body", op.name());
  Literal acc = x;
  for (int64_t i = 1; i < n; ++i) acc = combine(acc, x);
  return acc;
}

Literal zeros_like(const Literal& x) { return Literal(x.type()); }

struct Membership {
  int64_t size = 0;      // of this process's group
  int64_t position = 0;  // of this process in it
};

// This process's group, which must exist: the single-process result is this process's result.
Membership membership(const ir::Op& op, const ProcessInfo& process) {
  ProcessId self{process.replica_id, process.partition_id};
  for (const auto& g : process_groups(op, process)) {
    auto it = std::find(g.begin(), g.end(), self);
    if (it != g.end()) return {static_cast<int64_t>(g.size()), it - g.begin()};
  }
  int64_t id = collective_mode(op) == CollectiveMode::CrossPartition ? self.partition
               : collective_mode(op) == CollectiveMode::FlattenedIds
                   ? self.replica * process.num_partitions + self.partition
                   : self.replica;
  support::fail("{}: replica_groups {} do not include process {}, whose result a single-process run "
                "computes", op.name(), groups_string(replica_groups(op)), id);
}

}  // namespace

CollectiveMode collective_mode(const ir::Op& op) {
  bool channel = has_channel(op);
  switch (op.kind()) {
    case OpKind::AllToAll:
    case OpKind::CollectivePermute:
    case OpKind::CollectiveBroadcast:
      return channel ? CollectiveMode::CrossPartition : CollectiveMode::CrossReplica;
    default:
      break;
  }
  bool global = op.attrs().get_or<bool>("use_global_device_ids", false);
  if (global && !channel)
    support::fail("{}: use_global_device_ids needs a positive channel_id", op.name());
  if (!channel) return CollectiveMode::CrossReplica;
  return global ? CollectiveMode::FlattenedIds : CollectiveMode::CrossReplicaAndPartition;
}

Groups replica_groups(const ir::Op& op) {
  const ir::IntMatrix* m = op.attrs().find<ir::IntMatrix>("replica_groups");
  Groups groups;
  if (m == nullptr) return groups;
  // Ragged groups are written padded with -1 at the end of their rows.
  for (auto row : m->to_rows()) {
    while (!row.empty() && row.back() == -1) row.pop_back();
    groups.push_back(std::move(row));
  }
  std::string text = groups_string(groups);
  std::set<int64_t> seen;
  for (const auto& g : groups) {
    if (g.empty()) support::fail("{}: replica_groups {} contain an empty group", op.name(), text);
    for (int64_t id : g) {
      if (id < 0) support::fail("{}: replica_groups {} contain the negative id {}", op.name(), text, id);
      if (!seen.insert(id).second)
        support::fail("{}: replica_groups {} are not disjoint: {} appears twice", op.name(), text, id);
    }
  }
  return groups;
}

namespace {

// The single-process meaning needs every group to be as large as process 0's; real runs take
// ragged groups (StableHLO pads them with -1), as the conformance tests do.
void require_equal_sized(const ir::Op& op) {
  Groups groups = replica_groups(op);
  for (const auto& g : groups)
    if (g.size() != groups[0].size())
      support::fail("{}: replica_groups {} are not equal-sized", op.name(), groups_string(groups));
}

}  // namespace

std::vector<std::vector<ProcessId>> process_groups(const ir::Op& op, const ProcessInfo& grid) {
  CollectiveMode mode = collective_mode(op);
  Groups groups = replica_groups(op);
  int64_t replicas = grid.num_replicas, partitions = grid.num_partitions;
  if (groups.empty()) {  // one group of everything the mode ranges over
    int64_t n = mode == CollectiveMode::CrossPartition ? partitions
                : mode == CollectiveMode::FlattenedIds ? replicas * partitions
                                                       : replicas;
    groups.emplace_back();
    for (int64_t i = 0; i < n; ++i) groups[0].push_back(i);
  }
  std::vector<std::vector<ProcessId>> out;
  for (const auto& g : groups) {
    switch (mode) {
      case CollectiveMode::CrossReplica:
        for (int64_t p = 0; p < partitions; ++p) {
          out.emplace_back();
          for (int64_t r : g) out.back().push_back({r, p});
        }
        break;
      case CollectiveMode::CrossPartition:
        for (int64_t r = 0; r < replicas; ++r) {
          out.emplace_back();
          for (int64_t p : g) out.back().push_back({r, p});
        }
        break;
      case CollectiveMode::CrossReplicaAndPartition:  // the partition loop is the outer one
        out.emplace_back();
        for (int64_t p = 0; p < partitions; ++p)
          for (int64_t r : g) out.back().push_back({r, p});
        break;
      case CollectiveMode::FlattenedIds:
        out.emplace_back();
        for (int64_t id : g) out.back().push_back({id / partitions, id % partitions});
        break;
    }
  }
  return out;
}

void check_group_size(const ir::Op& op, int64_t group_size) {
  bool gather = op.kind() == OpKind::AllGather;
  if (!gather && op.kind() != OpKind::ReduceScatter) return;
  auto dim = static_cast<size_t>(op.attrs().get<int64_t>(gather ? "all_gather_dim" : "scatter_dimension"));
  for (size_t i = 0; i < op.num_results(); ++i) {
    const ir::Type &x = op.operand(i)->type(), &y = op.result(i)->type();
    int64_t want = gather ? x.shape[dim] * group_size : x.shape[dim];
    int64_t have = gather ? y.shape[dim] : y.shape[dim] * group_size;
    if (want != have)
      support::fail("{}: result {} is not operand {} {} the group of {} processes that runs it", op.name(),
                    ir::to_string(y), ir::to_string(x), gather ? "gathered from" : "scattered over", group_size);
  }
}

std::vector<std::pair<int64_t, int64_t>> source_target_pairs(const ir::Op& op) {
  const auto& m = op.attrs().get<ir::IntMatrix>("source_target_pairs");
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::set<int64_t> sources, targets;
  for (const auto& row : m.to_rows()) {
    std::string text = "[" + support::join(row, ", ") + "]";
    if (row.size() != 2) support::fail("{}: source_target_pairs entry {} is not a pair", op.name(), text);
    if (row[0] < 0 || row[1] < 0)
      support::fail("{}: source_target_pairs entry {} has a negative id", op.name(), text);
    if (!sources.insert(row[0]).second)
      support::fail("{}: source_target_pairs name source {} twice", op.name(), row[0]);
    if (!targets.insert(row[1]).second)
      support::fail("{}: source_target_pairs name target {} twice", op.name(), row[1]);
    pairs.emplace_back(row[0], row[1]);
  }
  return pairs;
}

int64_t flat_process_id(const ProcessId& p, const ProcessInfo& grid) {
  return p.replica * grid.num_partitions + p.partition;
}

int64_t flat_process_id(const ProcessInfo& process) {
  return flat_process_id(ProcessId{process.replica_id, process.partition_id}, process);
}

std::vector<std::pair<int64_t, int64_t>> message_pairs(const ir::Op& op) {
  if (op.attrs().get_or<bool>("is_host_transfer", false) || !op.attrs().has("source_target_pairs")) return {};
  return source_target_pairs(op);
}

std::vector<Literal> SingleProcessCollectives::run(const ir::Op& op, std::vector<Literal> operands,
                                                   const Combiner& combine,
                                                   const ProcessInfo& process) {
  std::vector<Literal> out;
  const ir::AttrMap& a = op.attrs();
  if (op.kind() == OpKind::Send || op.kind() == OpKind::Recv) {
    // Every process runs this program on the same values, so what process 0 receives is what it
    // sent itself, on the same channel.
    int64_t channel = a.get<ir::ChannelHandle>("channel_handle").handle;
    int64_t self = flat_process_id(process);
    std::vector<std::pair<int64_t, int64_t>> pairs = message_pairs(op);
    bool takes_part = pairs.empty();
    for (auto [s, t] : pairs) takes_part = takes_part || (op.kind() == OpKind::Send ? s : t) == self;
    if (op.kind() == OpKind::Send) {
      operands.pop_back();  // the token
      if (takes_part) mail_[channel].push_back(std::move(operands));
      out.push_back(Literal::token());
      return out;
    }
    std::vector<ir::Type> types;
    for (size_t k = 0; k + 1 < op.num_results(); ++k) types.push_back(op.result(k)->type());
    if (takes_part) {
      auto it = mail_.find(channel);
      if (it == mail_.end() || it->second.empty())
        support::fail("{}: no stablehlo.send on channel {} ran before it (one process runs every process's part)",
                      op.name(), channel);
      std::vector<Literal> values = std::move(it->second.front());
      it->second.pop_front();
      std::vector<ir::Type> sent;
      for (const Literal& v : values) sent.push_back(v.type());
      if (sent != types)
        support::fail("{}: the send on channel {} sent ({}), but it receives ({})", op.name(), channel,
                      ir::shape_rules::types_string(sent), ir::shape_rules::types_string(types));
      out = std::move(values);
    } else {
      for (const ir::Type& t : types) out.emplace_back(t);
    }
    out.push_back(Literal::token());
    return out;
  }
  if (op.kind() == OpKind::CollectivePermute) {
    int64_t self = collective_mode(op) == CollectiveMode::CrossPartition ? process.partition_id
                                                                          : process.replica_id;
    bool targeted = false;
    for (auto [source, target] : source_target_pairs(op)) targeted = targeted || target == self;
    out.push_back(targeted ? std::move(operands[0]) : zeros_like(operands[0]));
    return out;
  }
  require_equal_sized(op);
  Membership m = membership(op, process);
  check_group_size(op, m.size);
  if (op.kind() == OpKind::CollectiveBroadcast && a.get_or<bool>("has_dynamic_root", false))
    operands.pop_back();  // the roots: every member holds the same value, so any root gives it
  for (Literal& x : operands) {
    switch (op.kind()) {
      case OpKind::AllReduce:
        out.push_back(fold_copies(x, m.size, combine, op));
        break;
      case OpKind::AllGather:
        out.push_back(repeat_literal(x, a.get<int64_t>("all_gather_dim"), m.size));
        break;
      case OpKind::ReduceScatter:
        out.push_back(block_of(fold_copies(x, m.size, combine, op), a.get<int64_t>("scatter_dimension"),
                               m.position, m.size));
        break;
      case OpKind::AllToAll: {
        int64_t count = a.get<int64_t>("split_count");
        if (count != m.size)
          support::fail("{}: split_count {} differs from the group size {}", op.name(), count, m.size);
        Literal chunk = block_of(x, a.get<int64_t>("split_dimension"), m.position, m.size);
        out.push_back(repeat_literal(chunk, a.get<int64_t>("concat_dimension"), m.size));
        break;
      }
      case OpKind::CollectiveBroadcast:
        out.push_back(std::move(x));
        break;
      case OpKind::CollectiveReduce:  // the group's first process is its root
        out.push_back(m.position == 0 ? fold_copies(x, m.size, combine, op) : zeros_like(x));
        break;
      default:
        TESSERA_CHECK(false, "{} is not a collective", op.name());
    }
  }
  return out;
}

}  // namespace tessera::interp
