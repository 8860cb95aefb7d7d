// The search of reshard_plan.h: atoms, states, moves, Dijkstra, then the moves emitted.
#include "spmd/reshard_plan.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include "spmd/mesh_math.h"

namespace tessera::spmd {
namespace {

using ir::AxisRef;
using ir::Sharding;
using ir::Tensor;
using Atoms = std::vector<AxisRef>;
using State = std::vector<Atoms>;  // per dimension, major to minor

// Beyond this many states the layouts are left to reshard()'s own steps (a few dimensions and
// axes make tens of states; this bounds a pathological case's compile time).
constexpr size_t kMaxStates = 20000;

int64_t axis_size(const ir::Mesh& mesh, const std::string& name) {
  for (const auto& a : mesh.axes)
    if (a.name == name) return a.size;
  return 0;
}

// Each axis's digit boundaries, 1 = b0 < b1 < ... < bk = size, every one dividing the next; nullopt
// when the two layouts cut an axis in ways that do not nest.
std::optional<std::map<std::string, std::vector<int64_t>>> boundaries(const ir::Mesh& mesh, const Sharding& a,
                                                                       const Sharding& b) {
  std::map<std::string, std::set<int64_t>> points;
  for (const Sharding* s : {&a, &b})
    for (const auto& d : s->dims)
      for (const AxisRef& r : d.axes) {
        auto& p = points[r.name];
        p.insert(1);
        p.insert(axis_size(mesh, r.name));
        if (r.sub) {
          p.insert(r.sub->pre_size);
          p.insert(r.sub->pre_size * r.sub->size);
        }
      }
  std::map<std::string, std::vector<int64_t>> out;
  for (auto& [name, p] : points) {
    std::vector<int64_t> v(p.begin(), p.end());
    for (size_t i = 1; i < v.size(); ++i)
      if (v[i] % v[i - 1] != 0) return std::nullopt;
    out[name] = std::move(v);
  }
  return out;
}

// The atoms of `r`, major to minor.
Atoms expand(const AxisRef& r, const std::vector<int64_t>& b) {
  int64_t lo = r.sub ? r.sub->pre_size : 1, hi = r.sub ? r.sub->pre_size * r.sub->size : b.back();
  Atoms out;
  for (size_t i = 0; i + 1 < b.size(); ++i)
    if (b[i] >= lo && b[i + 1] <= hi)
      out.push_back(b.size() == 2 ? AxisRef(r.name) : AxisRef(r.name, ir::SubAxis{b[i], b[i + 1] / b[i]}));
  return out;
}

int64_t atoms_size(const ir::Mesh& mesh, const Atoms& atoms) { return shard_count(mesh, atoms); }

std::string atom_key(const AxisRef& a) {
  return a.name + (a.sub ? "(" + std::to_string(a.sub->pre_size) + ")" + std::to_string(a.sub->size) : "");
}

std::string key_of(const State& s) {
  std::string k;
  for (const Atoms& d : s) {
    for (const AxisRef& a : d) k += atom_key(a) + ",";
    k += "|";
  }
  return k;
}

Sharding sharding_of(const State& s, const ir::Mesh& mesh) {
  Sharding out = replicated(mesh.name, s.size());
  for (size_t d = 0; d < s.size(); ++d) out.dims[d].axes = merge_sub_axes(s[d], mesh);
  return out;
}

enum class MoveKind { kSlice, kGather, kAllToAll, kPermute };
struct Move {
  MoveKind kind;
  size_t dim = 0, to_dim = 0;  // kSlice: the dimension gaining; kGather: losing; kAllToAll: from -> to
  Atoms atoms;
};

struct Search {
  const ir::Mesh& mesh;
  const std::vector<int64_t>& shape;
  int64_t element_bytes;

  bool even(const State& s) const {
    for (size_t d = 0; d < s.size(); ++d)
      if (shape[d] % atoms_size(mesh, s[d]) != 0) return false;
    return true;
  }
  int64_t bytes(const State& s) const {
    int64_t n = element_bytes;
    for (size_t d = 0; d < s.size(); ++d) n *= shape[d] / atoms_size(mesh, s[d]);
    return n;
  }
};

struct Node {
  int64_t cost, moves;
  std::string key;
  bool operator>(const Node& o) const { return std::tie(cost, moves) > std::tie(o.cost, o.moves); }
};

}  // namespace

namespace {

struct Step {
  State prev, next;  // the states the move goes between
  Move move;
};
struct Plan {
  std::vector<Step> steps;
  int64_t bytes = 0;
};

std::optional<Plan> find_plan(const ir::Type& global, const Sharding& from, const Sharding& to, const ir::Mesh& mesh,
                              bool permutes) {
  if (!from.unreduced.empty() || !to.unreduced.empty() || from.dims.size() != to.dims.size()) return std::nullopt;
  auto cut = boundaries(mesh, from, to);
  if (!cut) return std::nullopt;
  const size_t rank = from.dims.size();
  auto state_of = [&](const Sharding& s) {
    State out(rank);
    for (size_t d = 0; d < rank; ++d)
      for (const AxisRef& r : s.dims[d].axes) {
        Atoms a = expand(r, cut->at(r.name));
        out[d].insert(out[d].end(), a.begin(), a.end());
      }
    return out;
  };
  const State start = state_of(from), goal = state_of(to);
  Search search{mesh, global.shape, byte_size(ir::Type(global.element, {}))};
  if (!search.even(start) || !search.even(goal)) return std::nullopt;
  const std::string goal_key = key_of(goal);
  Atoms wanted;
  std::map<std::string, size_t> goal_dim;  // atom -> the goal's dimension holding it (kNone: none)
  constexpr size_t kNone = ~size_t{0};
  for (size_t d = 0; d < rank; ++d)
    for (const AxisRef& a : goal[d]) {
      wanted.push_back(a);
      goal_dim[atom_key(a)] = d;
    }
  for (const Atoms& d : start)
    for (const AxisRef& a : d) goal_dim.try_emplace(atom_key(a), kNone);

  std::map<std::string, State> states;
  std::map<std::string, std::pair<std::string, Move>> came_from;
  std::map<std::string, std::pair<int64_t, int64_t>> best;
  std::priority_queue<Node, std::vector<Node>, std::greater<>> open;
  std::set<std::string> done;
  auto reach = [&](const std::string& from_key, int64_t cost, int64_t moves, State s, Move m) {
    std::string k = key_of(s);
    auto it = best.find(k);
    if (it != best.end() && std::make_pair(cost, moves) >= it->second) return;
    best[k] = {cost, moves};
    came_from.insert_or_assign(k, std::make_pair(from_key, std::move(m)));
    states.insert_or_assign(k, std::move(s));
    open.push({cost, moves, k});
  };
  const std::string start_key = key_of(start);
  states[start_key] = start;
  best[start_key] = {0, 0};
  open.push({0, 0, start_key});
  bool found = false;
  while (!open.empty() && done.size() < kMaxStates) {
    Node n = open.top();
    open.pop();
    if (!done.insert(n.key).second) continue;
    if (n.key == goal_key) {
      found = true;
      break;
    }
    const State s = states.at(n.key);
    const int64_t here = search.bytes(s);
    std::set<std::string> present;
    for (const Atoms& d : s)
      for (const AxisRef& a : d) present.insert(atom_key(a));
    // Moves that cannot pay off are not tried (this keeps the search to milliseconds): a settled
    // dimension (its atoms a prefix of the goal's) loses nothing and gains only its goal's atoms,
    // and an all_to_all moves atoms to the dimension the goal puts them in.
    std::vector<bool> settled(rank);
    for (size_t d = 0; d < rank; ++d)
      settled[d] = s[d].size() <= goal[d].size() && std::equal(s[d].begin(), s[d].end(), goal[d].begin());
    // Slice an atom the goal needs and no dimension holds onto the minor end of a dimension: the
    // goal's; one holding atoms that an all_to_all will move elsewhere (shrinking what it carries);
    // or a settled one, from which an all_to_all takes it to the goal's later (shrinking a gather
    // in between). Not onto a dimension whose atoms all leave by gathers: that cannot pay off.
    std::vector<bool> moves_out(rank, false);
    for (size_t d = 0; d < rank; ++d)
      for (const AxisRef& a : s[d]) {
        size_t g = goal_dim.at(atom_key(a));
        moves_out[d] = moves_out[d] || (g != d && g != kNone);
      }
    for (const AxisRef& a : wanted) {
      if (present.contains(atom_key(a))) continue;
      for (size_t d = 0; d < rank; ++d) {
        if (d != goal_dim.at(atom_key(a)) && !moves_out[d] && !settled[d]) continue;
        State t = s;
        t[d].push_back(a);
        if (search.even(t)) reach(n.key, n.cost, n.moves + 1, std::move(t), {MoveKind::kSlice, d, d, {a}});
      }
    }
    for (size_t i = 0; i < rank; ++i)
      for (size_t k = 1; k <= s[i].size() && !settled[i]; ++k) {
        Atoms moved(s[i].end() - static_cast<ptrdiff_t>(k), s[i].end());
        State rest = s;
        rest[i].erase(rest[i].end() - static_cast<ptrdiff_t>(k), rest[i].end());
        // Gather them (all_gather): each device receives the pieces it lacks.
        reach(n.key, n.cost + search.bytes(rest) - here, n.moves + 1, rest, {MoveKind::kGather, i, i, moved});
        // Or move them to the minor end of another dimension (all_to_all).
        int64_t group = atoms_size(mesh, moved);
        for (size_t j = 0; j < rank; ++j) {
          if (j == i || goal_dim.at(atom_key(moved[0])) != j) continue;
          State t = rest;
          t[j].insert(t[j].end(), moved.begin(), moved.end());
          if (search.even(t)) reach(n.key, n.cost + here * (group - 1) / group, n.moves + 1, std::move(t), {MoveKind::kAllToAll, i, j, moved});
        }
      }
    // Reorder one dimension's atoms (collective_permute): the order a later all_to_all or gather
    // needs at the minor end.
    for (size_t d = 0; d < rank && permutes; ++d) {
      if (settled[d] || s[d].size() < 2 || s[d].size() > 4) continue;
      std::vector<size_t> order(s[d].size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      while (std::next_permutation(order.begin(), order.end())) {
        State t = s;
        for (size_t i = 0; i < order.size(); ++i) t[d][i] = s[d][order[i]];
        reach(n.key, n.cost + here, n.moves + 1, std::move(t), {MoveKind::kPermute, d, d, {}});
      }
    }
    // Every dimension in the goal's number of pieces: each device takes its piece from a holder.
    bool counts_match = true;
    for (size_t d = 0; d < rank; ++d) counts_match = counts_match && atoms_size(mesh, s[d]) == atoms_size(mesh, goal[d]);
    if (counts_match && permutes) reach(n.key, n.cost + here, n.moves + 1, goal, {MoveKind::kPermute, 0, 0, {}});
  }
  if (!found) return std::nullopt;

  Plan plan;
  plan.bytes = best.at(goal_key).first;
  for (std::string k = goal_key; k != start_key;) {
    const auto& [prev, move] = came_from.at(k);
    plan.steps.push_back({states.at(prev), states.at(k), move});
    k = prev;
  }
  std::reverse(plan.steps.begin(), plan.steps.end());
  return plan;
}

}  // namespace

std::optional<int64_t> planned_reshard_bytes(const ir::Type& global, const Sharding& from, const Sharding& to,
                                             const ir::Mesh& mesh, bool permutes) {
  std::optional<Plan> plan = find_plan(global, from, to, mesh, permutes);
  if (!plan) return std::nullopt;
  return plan->bytes;
}

std::optional<Tensor> planned_reshard(LocalContext& ctx, Tensor x, const ir::Type& global, const Sharding& from,
                                      const Sharding& to, const ir::Mesh& mesh, bool permutes) {
  std::optional<Plan> plan = find_plan(global, from, to, mesh, permutes);
  if (!plan) return std::nullopt;
  const size_t rank = from.dims.size();
  ir::Builder& b = x.builder();
  for (const auto& [s, next, m] : plan->steps) {
    switch (m.kind) {
      case MoveKind::kSlice: {
        std::vector<int64_t> sizes = x.shape();
        int64_t piece = sizes[m.dim] / atoms_size(mesh, m.atoms);
        std::vector<Tensor> at;
        Tensor zero = b.scalar(ir::ElementType::i32, 0);
        for (size_t d = 0; d < rank; ++d) at.push_back(d == m.dim ? piece_offset(ctx, b, mesh, m.atoms, piece) : zero);
        sizes[m.dim] = piece;
        x = ir::dynamic_slice(x, at, sizes);
        break;
      }
      case MoveKind::kGather: x = gather_axes(ctx, x, static_cast<int64_t>(m.dim), mesh, m.atoms); break;
      case MoveKind::kAllToAll:
        x = all_to_all_axes(ctx, x, static_cast<int64_t>(m.dim), static_cast<int64_t>(m.to_dim), mesh, m.atoms);
        break;
      case MoveKind::kPermute: {
        std::optional<Tensor> y = permute_pieces(ctx, x, sharding_of(s, mesh), sharding_of(next, mesh), mesh, mesh);
        TESSERA_CHECK(y.has_value(), "no permute between layouts with the same piece counts");
        x = *y;
        break;
      }
    }
  }
  return x;
}

}  // namespace tessera::spmd
