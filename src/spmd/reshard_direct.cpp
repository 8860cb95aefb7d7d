// The direct reshard of reshard_direct.h: blocks, holders, rounds, then the rounds emitted.
#include "spmd/reshard_direct.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "spmd/mesh_math.h"
#include "support/error.h"

namespace tessera::spmd {
namespace {

using ir::Sharding;
using ir::Tensor;

// Beyond this many collective_permutes the plan is not offered (its latency would outweigh the
// bytes it saves, and the program grows with every round).
constexpr size_t kMaxRounds = 64;

struct Block {
  int64_t src = 0, dst = 0;  // devices (equal for a local copy)
  std::vector<int64_t> src_at, dst_at;  // offsets in the sender's and the receiver's local pieces
};

struct Round {
  std::vector<int64_t> shape;
  bool local = false;  // a copy within each device, no communication
  std::vector<Block> blocks;
};

struct Plan {
  std::vector<Round> rounds;
  int64_t bytes = 0;
  std::vector<int64_t> target_shape;
};

// A layout's pieces: per mesh position, the device and the piece index along each dimension.
struct Pieces {
  std::vector<int64_t> device;
  std::vector<std::vector<int64_t>> index;
  std::vector<int64_t> length;  // per dimension, padding included
};

Pieces pieces_of(const ir::Mesh& mesh, const Sharding& s, const std::vector<int64_t>& shape) {
  Pieces out;
  for (size_t d = 0; d < shape.size(); ++d) out.length.push_back(piece_size(shape[d], shard_count(mesh, s.dims[d].axes)));
  for (int64_t p = 0; p < mesh.num_devices(); ++p) {
    out.device.push_back(device_at(mesh, p));
    std::vector<int64_t> idx;
    for (const auto& dim : s.dims) idx.push_back(shard_index(mesh, p, dim.axes));
    out.index.push_back(std::move(idx));
  }
  return out;
}

// With `rounds` false only the bytes are counted: by König's theorem the rounds of one block
// shape are as many as the most blocks one device sends or receives, so costing a plan needs no
// colouring (the costly part, on meshes of hundreds of devices). A plan that must move at least
// `give_up_at` bytes (each device receives its blocks in rounds of their shape) is not made.
std::optional<Plan> make_plan(const LocalContext& ctx, const ir::Type& global, const Sharding& from_in,
                              const Sharding& to_in, bool rounds = true,
                              int64_t give_up_at = std::numeric_limits<int64_t>::max()) {
  const size_t rank = static_cast<size_t>(global.rank());
  const Sharding from = normalized(from_in, rank), to = normalized(to_in, rank);
  if (!from.unreduced.empty() || !to.unreduced.empty()) return std::nullopt;
  const ir::Mesh& fm = ctx.mesh(from.mesh);
  const ir::Mesh& tm = ctx.mesh(to.mesh);
  if (is_maximal(fm) || is_maximal(tm) || fm.num_devices() != tm.num_devices()) return std::nullopt;
  const std::vector<int64_t>& n = global.shape;
  Pieces src = pieces_of(fm, from, n), dst = pieces_of(tm, to, n);
  {
    std::vector<int64_t> a = src.device, b = dst.device;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (a != b) return std::nullopt;
  }
  // The distinct source pieces, the devices holding each, and the piece each device holds.
  std::map<std::vector<int64_t>, std::vector<int64_t>> holders;
  const int64_t nodes = *std::max_element(src.device.begin(), src.device.end()) + 1;
  std::vector<const std::vector<int64_t>*> held(static_cast<size_t>(nodes), nullptr);
  for (size_t p = 0; p < src.device.size(); ++p) holders[src.index[p]].push_back(src.device[p]);
  for (size_t p = 0; p < src.device.size(); ++p)
    held[static_cast<size_t>(src.device[p])] = &holders.find(src.index[p])->first;

  // Every block each device needs: local where it holds the piece, else to be sent. The source
  // pieces a target piece meets are, per dimension, a range of piece indices (only their product
  // is visited: on a mesh of thousands of devices, not every pair of pieces).
  struct Need {
    int64_t dst;
    const std::vector<int64_t>* holders;
    std::vector<int64_t> src_at, dst_at, shape;
  };
  std::vector<Need> remote;
  std::map<std::vector<int64_t>, Round> local_rounds;
  for (size_t q = 0; q < dst.device.size(); ++q) {
    const int64_t t = dst.device[q];
    std::vector<int64_t> first(rank), last(rank);
    bool any = true;
    for (size_t d = 0; d < rank && any; ++d) {
      // Padding only (every element at or beyond the dimension's end): nothing to move.
      int64_t t0 = dst.index[q][d] * dst.length[d], t1 = std::min(t0 + dst.length[d], n[d]);
      any = t0 < t1;
      if (any) first[d] = t0 / src.length[d], last[d] = (t1 - 1) / src.length[d];
    }
    if (!any) continue;
    size_t remote_here = 0;
    for (std::vector<int64_t> key = first;;) {
      std::vector<int64_t> src_at(rank), dst_at(rank), shape(rank);
      for (size_t d = 0; d < rank; ++d) {
        int64_t s0 = key[d] * src.length[d], t0 = dst.index[q][d] * dst.length[d];
        int64_t lo = std::max(s0, t0), hi = std::min(s0 + src.length[d], t0 + dst.length[d]);
        src_at[d] = lo - s0;
        dst_at[d] = lo - t0;
        shape[d] = hi - lo;
      }
      auto hs = holders.find(key);
      TESSERA_CHECK(hs != holders.end(), "no device holds a source piece of a direct reshard");
      if (held[static_cast<size_t>(t)] != nullptr && *held[static_cast<size_t>(t)] == key) {
        Round& r = local_rounds[shape];
        r.shape = shape;
        r.local = true;
        r.blocks.push_back({t, t, src_at, dst_at});
      } else {
        // A device receives at most one block a round: more blocks than rounds allowed, no plan.
        if (++remote_here > kMaxRounds) return std::nullopt;
        remote.push_back({t, &hs->second, src_at, dst_at, shape});
      }
      size_t d = rank;
      while (d > 0 && ++key[d - 1] > last[d - 1]) key[d - 1] = first[d - 1], --d;
      if (d == 0) break;
    }
  }
  Plan plan;
  for (auto& [shape, r] : local_rounds) plan.rounds.push_back(std::move(r));
  // Sends of one shape: each from its least loaded holder, then rounds in which a device sends
  // and receives at most once: an edge colouring of the bipartite sender-receiver graph with as
  // many colours as its largest degree (König), each edge taking a colour free at both ends after
  // the colours of an alternating path are swapped where needed.
  std::map<std::vector<int64_t>, std::vector<const Need*>> by_shape;
  for (const Need& need : remote) by_shape[need.shape].push_back(&need);
  const int64_t element_bytes = byte_size(ir::Type(global.element, {}));
  {
    int64_t least = 0;
    for (const auto& [shape, needs] : by_shape) {
      std::vector<int64_t> received(static_cast<size_t>(nodes), 0);
      int64_t most = 0, block_bytes = element_bytes;
      for (const Need* need : needs) most = std::max(most, ++received[static_cast<size_t>(need->dst)]);
      for (int64_t e : shape) block_bytes *= e;
      least += most * block_bytes;
    }
    if (least >= give_up_at) return std::nullopt;
  }
  size_t remote_rounds = 0;
  for (const auto& [shape, needs] : by_shape) {
    std::vector<int64_t> load(static_cast<size_t>(nodes), 0);
    struct Edge {
      int64_t ends[2];  // sender node s, receiver node nodes + t
      const Need* need;
      int64_t colour = -1;
    };
    std::vector<Edge> edges;
    for (const Need* need : needs) {
      int64_t s = need->holders->front();
      for (int64_t h : *need->holders)
        if (load[static_cast<size_t>(h)] < load[static_cast<size_t>(s)]) s = h;
      ++load[static_cast<size_t>(s)];
      edges.push_back({{s, nodes + need->dst}, need});
    }
    std::vector<int64_t> degree(static_cast<size_t>(2 * nodes), 0);
    int64_t most = 0;
    for (const Edge& edge : edges)
      for (int64_t end : edge.ends) most = std::max(most, ++degree[static_cast<size_t>(end)]);
    int64_t block_bytes = element_bytes;
    for (int64_t e : shape) block_bytes *= e;
    plan.bytes += block_bytes * most;
    remote_rounds += static_cast<size_t>(most);
    if (remote_rounds > kMaxRounds) return std::nullopt;
    if (!rounds) continue;
    std::vector<std::map<int64_t, size_t>> at(static_cast<size_t>(2 * nodes));  // node -> colour -> edge
    auto free_colour = [&](int64_t node) {
      int64_t c = 0;
      while (at[static_cast<size_t>(node)].contains(c)) ++c;
      return c;
    };
    int64_t colours = 0;
    for (size_t e = 0; e < edges.size(); ++e) {
      const int64_t u = edges[e].ends[0], v = edges[e].ends[1];
      const int64_t a = free_colour(u), b = free_colour(v);
      if (at[static_cast<size_t>(v)].contains(a)) {
        // The path from v along colours a, b, a, ... never reaches u (u has no edge of colour
        // a); swapping a and b along it frees a at v.
        std::vector<size_t> path;
        for (int64_t node = v, c = a; at[static_cast<size_t>(node)].contains(c); c = c == a ? b : a) {
          size_t f = at[static_cast<size_t>(node)].at(c);
          path.push_back(f);
          node = edges[f].ends[0] == node ? edges[f].ends[1] : edges[f].ends[0];
        }
        for (size_t f : path)
          for (int64_t end : edges[f].ends) at[static_cast<size_t>(end)].erase(edges[f].colour);
        for (size_t f : path) {
          edges[f].colour = edges[f].colour == a ? b : a;
          for (int64_t end : edges[f].ends) at[static_cast<size_t>(end)][edges[f].colour] = f;
        }
      }
      edges[e].colour = a;
      at[static_cast<size_t>(u)][a] = e;
      at[static_cast<size_t>(v)][a] = e;
    }
    for (const Edge& edge : edges) colours = std::max(colours, edge.colour + 1);
    TESSERA_CHECK(colours == most, "{} rounds for blocks of which a device has {}", colours, most);
    std::vector<Round> shape_rounds(static_cast<size_t>(colours), Round{shape, false, {}});
    for (const Edge& edge : edges)
      shape_rounds[static_cast<size_t>(edge.colour)].blocks.push_back(
          {edge.ends[0], edge.ends[1] - nodes, edge.need->src_at, edge.need->dst_at});
    for (Round& r : shape_rounds) plan.rounds.push_back(std::move(r));
  }
  plan.target_shape = dst.length;
  return plan;
}

// values[device] on each device, as an i32 scalar (a constant when all are equal).
Tensor per_device(LocalContext& ctx, ir::Builder& b, const std::vector<int64_t>& values) {
  if (std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == values[0]; }))
    return b.scalar(ir::ElementType::i32, static_cast<double>(values[0]));
  Tensor table = b.constant(ir::Literal::from_ints(ir::i32({ctx.num_devices}), values));
  return ir::reshape(ir::dynamic_slice(table, {partition_id_i32(ctx, b)}, {1}), {});
}

// The digits of the mesh axes `s` leaves free, whole or cut at a divisor: the atoms a finer
// layout may add. An axis `s` uses in part ("z":(2)2 of z=4) leaves the rest of its digits free
// ("z":(1)2): a finer layout may add those too, so a target that keeps part of an axis replicated
// can still be reached by smaller blocks and a gather of that part.
std::vector<ir::AxisRef> unused_atoms(const ir::Mesh& mesh, const Sharding& s) {
  std::vector<ir::AxisRef> out;
  for (const ir::MeshAxis& a : mesh.axes) {
    if (a.size < 2) continue;
    // The used digits as [pre, pre * size) ranges of the axis' major-to-minor products.
    std::vector<std::pair<int64_t, int64_t>> used;
    for (const auto& d : s.dims)
      for (const ir::AxisRef& r : d.axes)
        if (r.name == a.name) used.push_back(r.sub ? std::pair{r.sub->pre_size, r.sub->pre_size * r.sub->size}
                                                   : std::pair<int64_t, int64_t>{1, a.size});
    std::sort(used.begin(), used.end());
    std::vector<std::pair<int64_t, int64_t>> free;
    int64_t at = 1;
    for (const auto& [lo, hi] : used) {
      if (lo > at) free.push_back({at, lo});
      at = std::max(at, hi);
    }
    if (at < a.size) free.push_back({at, a.size});
    for (const auto& [lo, hi] : free) {
      const int64_t size = hi / lo;
      if (size < 2 || hi % lo != 0) continue;
      out.push_back(size == a.size ? ir::AxisRef(a.name) : ir::AxisRef(a.name, ir::SubAxis{lo, size}));
      for (int64_t p = 2; p < size; ++p)
        if (size % p == 0) {
          out.push_back(ir::AxisRef(a.name, ir::SubAxis{lo, p}));
          out.push_back(ir::AxisRef(a.name, ir::SubAxis{lo * (size / p), p}));
        }
    }
  }
  return out;
}

// The blocks go to `finer` (the target, or the target with one more atom at the minor end of
// one dimension), then an all_gather of that atom makes the target: like Shardy's permute of a
// part of an axis before a gather, each device receives smaller blocks, in fewer rounds.
struct Choice {
  Sharding finer;
  size_t dim = 0;
  std::optional<ir::AxisRef> gathered;
  int64_t bytes = 0;
};

std::optional<Choice> choose(const LocalContext& ctx, const ir::Type& global, const Sharding& from_in,
                             const Sharding& to_in) {
  const size_t rank = static_cast<size_t>(global.rank());
  const Sharding from = normalized(from_in, rank), to = normalized(to_in, rank);
  std::optional<Choice> best;
  if (std::optional<Plan> plan = make_plan(ctx, global, from, to, false)) best = Choice{to, 0, std::nullopt, plan->bytes};
  if (!best || !to.unreduced.empty() || !from.unreduced.empty()) return best;
  const ir::Mesh& tm = ctx.mesh(to.mesh);
  const int64_t element_bytes = byte_size(ir::Type(global.element, {}));
  for (const ir::AxisRef& a : unused_atoms(tm, to))
    for (size_t d = 0; d < rank; ++d) {
      const int64_t n = global.shape[d], k = shard_count(tm, to.dims[d].axes), m = shard_count(tm, {a});
      // The finer pieces must gather into the target's exactly, or, along a dimension the target
      // keeps whole, into the whole dimension and its padding, trimmed after the gather: one
      // element split 4 ways (3 pieces of padding) is sent to the devices of one half, 4 B, and
      // gathered over the other half, 4 B, where gathering all 4 pieces moves 12 B.
      if (piece_size(n, k * m) * m != piece_size(n, k) && k != 1) continue;
      Sharding finer = to;
      finer.dims[d].axes.push_back(a);
      int64_t gather = element_bytes * (m - 1);  // m - 1 finer pieces received
      for (int64_t e : local_shape(global.shape, finer, tm)) gather *= e;
      if (gather >= best->bytes) continue;
      std::optional<Plan> plan = make_plan(ctx, global, from, finer, false, best->bytes - gather);
      if (plan && plan->bytes + gather < best->bytes) best = Choice{finer, d, a, plan->bytes + gather};
    }
  return best;
}

}  // namespace

std::optional<int64_t> direct_reshard_bytes(const LocalContext& ctx, const ir::Type& global, const Sharding& from,
                                            const Sharding& to) {
  std::optional<Choice> choice = choose(ctx, global, from, to);
  if (!choice) return std::nullopt;
  return choice->bytes;
}

namespace {

Tensor send_blocks(LocalContext& ctx, Tensor x, const ir::Type& global, const Sharding& from, const Sharding& to) {
  std::optional<Plan> plan = make_plan(ctx, global, from, to);
  TESSERA_CHECK(plan.has_value(), "direct reshard without a plan");
  ir::Builder& b = x.builder();
  const size_t rank = plan->target_shape.size();
  const size_t devices = static_cast<size_t>(ctx.num_devices);
  Tensor out = ir::broadcast_to(b.scalar(x.element(), 0), plan->target_shape);
  for (const Round& r : plan->rounds) {
    std::vector<std::vector<int64_t>> src_at(rank, std::vector<int64_t>(devices, 0)),
        dst_at(rank, std::vector<int64_t>(devices, 0));
    std::vector<int64_t> receives(devices, 0);
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (const Block& blk : r.blocks) {
      TESSERA_CHECK(blk.src < ctx.num_devices && blk.dst < ctx.num_devices, "device beyond {}", ctx.num_devices);
      for (size_t d = 0; d < rank; ++d) {
        src_at[d][static_cast<size_t>(blk.src)] = blk.src_at[d];
        dst_at[d][static_cast<size_t>(blk.dst)] = blk.dst_at[d];
      }
      receives[static_cast<size_t>(blk.dst)] = 1;
      if (!r.local) pairs.push_back({blk.src, blk.dst});
    }
    std::vector<Tensor> from_at, to_at;
    for (size_t d = 0; d < rank; ++d) {
      from_at.push_back(per_device(ctx, b, src_at[d]));
      to_at.push_back(per_device(ctx, b, dst_at[d]));
    }
    Tensor block = ir::dynamic_slice(x, from_at, r.shape);
    if (!r.local) {
      std::sort(pairs.begin(), pairs.end());
      Tensor sent = block;
      block = ir::collective_permute(block, pairs);
      // On an N x 1 grid, collectives without global device ids group replicas: no channel.
      if (ctx.devices_are_replicas) block.value()->defining_op()->attrs().erase("channel_handle");
      std::string what = "blocks between devices";
      ctx.report.collectives.push_back({"collective_permute", ctx.origin, 2, byte_size(sent.type()),
                                        block.value()->defining_op(),
                                        ctx.forced_by.empty() ? what : ctx.forced_by + " " + what, ""});
    }
    Tensor written = ir::dynamic_update_slice(out, block, to_at);
    if (std::all_of(receives.begin(), receives.end(), [](int64_t v) { return v == 1; })) {
      out = written;
    } else {
      Tensor mine = ir::compare(per_device(ctx, b, receives), b.scalar(ir::ElementType::i32, 1),
                                ir::ComparisonDirection::EQ);
      out = ir::select(ir::broadcast_to(mine, out.shape()), written, out);
    }
  }
  return out;
}

}  // namespace

Tensor direct_reshard(LocalContext& ctx, Tensor x, const ir::Type& global, const Sharding& from, const Sharding& to) {
  std::optional<Choice> choice = choose(ctx, global, from, to);
  TESSERA_CHECK(choice.has_value(), "direct reshard without a plan");
  x = send_blocks(ctx, x, global, from, choice->finer);
  if (choice->gathered) {
    const auto d = static_cast<int64_t>(choice->dim);
    x = gather_axes(ctx, x, d, ctx.mesh(to.mesh), {*choice->gathered});
    // (gathered past the whole dimension: its padding goes)
    const int64_t whole = global.shape[choice->dim];
    if (x.shape()[choice->dim] > whole) {
      std::vector<int64_t> start(x.shape().size(), 0), limit = x.shape();
      limit[choice->dim] = whole;
      x = ir::slice(x, start, limit);
    }
  }
  return x;
}

}  // namespace tessera::spmd
