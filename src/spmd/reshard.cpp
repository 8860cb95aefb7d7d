// reshard (see reshard.h).
#include "spmd/reshard.h"
#include "spmd/reshard_direct.h"
#include "spmd/reshard_plan.h"

#include <algorithm>
#include <map>

#include "spmd/mesh_math.h"
#include "support/error.h"

namespace tessera::spmd {

using ir::AxisRef;
using ir::Mesh;
using ir::OpKind;
using ir::Sharding;
using ir::Tensor;
using Axes = std::vector<AxisRef>;

Sharding normalized(const Sharding& s, size_t rank) {
  Sharding out;
  out.mesh = s.mesh;
  out.dims.resize(rank);
  for (size_t d = 0; d < rank && d < s.dims.size(); ++d) out.dims[d].axes = s.dims[d].axes;
  // An axis cannot both split a dimension and hold partial sums; propagation can still meet a
  // declared unreduced result with a dimension split by the same axis. The split wins: the value
  // is whole along it (a declared layout, which is validated, never has both).
  auto overlap = [](const AxisRef& a, const AxisRef& r) {  // the same axis, intersecting parts
    if (a.name != r.name) return false;
    if (!a.sub || !r.sub) return true;
    return a.sub->pre_size < r.sub->pre_size * r.sub->size && r.sub->pre_size < a.sub->pre_size * a.sub->size;
  };
  for (const AxisRef& a : s.unreduced) {
    bool splits = false;
    for (const auto& d : out.dims)
      for (const AxisRef& r : d.axes) splits |= overlap(a, r);
    if (!splits) out.unreduced.push_back(a);
  }
  if (!out.unreduced.empty()) out.unreduced_kind = s.unreduced_kind;
  return out;
}

bool same_layout(const Sharding& a, const Sharding& b, size_t rank) {
  // Equal shardings need no normalizing (which allocates: execute checks every input, every step).
  return a == b || normalized(a, rank) == normalized(b, rank);
}

namespace {

// On an N x 1 grid, collectives without global device ids must group replicas: no channel.
Tensor across_devices(LocalContext& ctx, Tensor t) {
  if (ctx.devices_are_replicas) t.value()->defining_op()->attrs().erase("channel_handle");
  return t;
}

int64_t elements_bytes(const Tensor& t) { return byte_size(t.type()); }

// `what`: the dimensions or axes the collective works on, for --explain.
void record(LocalContext& ctx, std::string kind, int64_t group, int64_t bytes, const Tensor& result,
            const std::string& what) {
  std::string forced_by = ctx.forced_by.empty() ? what : ctx.forced_by + " " + what;
  ctx.report.collectives.push_back(
      {std::move(kind), ctx.origin, group, bytes, result.value()->defining_op(), std::move(forced_by), ""});
}

std::string axes_string(const Axes& axes) {
  std::string out;
  for (const AxisRef& a : axes) out += (out.empty() ? "" : ",") + ir::to_string(a);
  return out;
}

bool starts_with(const Axes& a, const Axes& prefix) {
  return a.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), a.begin());
}

size_t common_prefix(const Axes& a, const Axes& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}


Tensor sum_over(LocalContext& ctx, Tensor x, const Mesh& mesh, const Axes& axes, OpKind combiner) {
  Groups g = groups_over(mesh, axes);
  Tensor y = ir::all_reduce(x, g, combiner);
  int64_t n = static_cast<int64_t>(g[0].size());
  record(ctx, "all_reduce", n, 2 * elements_bytes(x) * (n - 1) / n, y, fmt::format("partial over {}", axes_string(axes)));
  return y;
}

}  // namespace

Tensor gather_axes(LocalContext& ctx, Tensor x, int64_t dim, const Mesh& mesh, const Axes& axes) {
  Groups g = groups_over(mesh, axes);
  Tensor y = ir::all_gather(x, dim, g);
  int64_t n = static_cast<int64_t>(g[0].size());
  record(ctx, "all_gather", n, elements_bytes(y) * (n - 1) / n, y, fmt::format("dimension {}", dim));
  return y;
}

Tensor all_to_all_axes(LocalContext& ctx, Tensor x, int64_t from_dim, int64_t to_dim, const Mesh& mesh, const Axes& axes) {
  Groups g = groups_over(mesh, axes);
  int64_t n = static_cast<int64_t>(g[0].size());
  x = across_devices(ctx, ir::all_to_all(x, to_dim, from_dim, g));
  record(ctx, "all_to_all", n, elements_bytes(x) * (n - 1) / n, x, fmt::format("dimension {} to {}", from_dim, to_dim));
  return x;
}

namespace {

// Trims (or pads with zeros) dimension d of x to `size`.
Tensor resize_dim(Tensor x, int64_t d, int64_t size) {
  auto shape = x.shape();
  int64_t have = shape[static_cast<size_t>(d)];
  if (have == size) return x;
  size_t rank = shape.size();
  if (have > size) {
    std::vector<int64_t> start(rank, 0), limit = shape;
    limit[static_cast<size_t>(d)] = size;
    return ir::slice(x, start, limit);
  }
  std::vector<int64_t> lo(rank, 0), hi(rank, 0);
  hi[static_cast<size_t>(d)] = size - have;
  return ir::pad(x, x.builder().scalar(x.element(), 0), lo, hi);
}

}  // namespace

Tensor partition_id_i32(LocalContext& ctx, ir::Builder& b) {
  auto it = ctx.partition_ids.find(&b.block());
  if (it != ctx.partition_ids.end()) return b.wrap(it->second);
  Tensor pid = ir::convert(ctx.devices_are_replicas ? b.replica_id() : b.partition_id(), ir::ElementType::i32);
  ctx.partition_ids[&b.block()] = pid.value();
  return pid;
}

Tensor per_shard(LocalContext& ctx, ir::Builder& b, const Mesh& mesh, const Axes& axes, const std::vector<int64_t>& values) {
  std::vector<int64_t> table(static_cast<size_t>(ctx.num_devices), 0);
  for (int64_t p = 0; p < mesh.num_devices(); ++p) {
    int64_t dev = device_at(mesh, p);
    TESSERA_CHECK(dev < ctx.num_devices, "device {} of mesh @{} beyond {}", dev, mesh.name, ctx.num_devices);
    table[static_cast<size_t>(dev)] = values.at(static_cast<size_t>(shard_index(mesh, p, axes)));
  }
  // The same value on every device needs no table.
  if (std::all_of(table.begin(), table.end(), [&](int64_t v) { return v == table[0]; }))
    return b.constant(ir::Literal::scalar(ir::ElementType::i32, static_cast<double>(table[0])));
  Tensor t = b.constant(ir::Literal::from_ints(ir::i32({ctx.num_devices}), table));
  Tensor one = ir::dynamic_slice(t, {partition_id_i32(ctx, b)}, {1});
  return ir::reshape(one, {});
}

Tensor piece_offset(LocalContext& ctx, ir::Builder& b, const Mesh& mesh, const Axes& axes, int64_t piece) {
  std::vector<int64_t> values(static_cast<size_t>(shard_count(mesh, axes)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int64_t>(i) * piece;
  return per_shard(ctx, b, mesh, axes, values);
}

std::optional<Tensor> valid_mask(LocalContext& ctx, ir::Builder& b, const ir::Type& global, const Sharding& s) {
  if (s.dims.empty()) return std::nullopt;
  const Mesh& mesh = ctx.mesh(s.mesh);
  if (!is_uneven(global.shape, s, mesh)) return std::nullopt;
  std::vector<int64_t> local = local_shape(global.shape, s, mesh);
  std::optional<Tensor> mask;
  for (size_t d = 0; d < local.size(); ++d) {
    int64_t n = shard_count(mesh, s.dims[d].axes);
    if (global.shape[d] % n == 0) continue;
    Tensor pos = b.iota(ir::i32(local), static_cast<int64_t>(d)) +
                 ir::broadcast_to(piece_offset(ctx, b, mesh, s.dims[d].axes, local[d]), local);
    Tensor ok = ir::compare(pos, ir::broadcast_to(b.constant(ir::Literal::scalar(ir::ElementType::i32,
                                                                                  static_cast<double>(global.shape[d]))),
                                                   local),
                            ir::ComparisonDirection::LT);
    mask = mask ? (*mask & ok) : ok;
  }
  return mask;
}

std::optional<Tensor> permute_pieces(LocalContext& ctx, Tensor x, const Sharding& from, const Sharding& to,
                                     const Mesh& fm, const Mesh& tm) {
  size_t rank = from.dims.size();
  if (fm.num_devices() != tm.num_devices() || !from.unreduced.empty()) return std::nullopt;
  for (size_t d = 0; d < rank; ++d)
    if (shard_count(fm, from.dims[d].axes) != shard_count(tm, to.dims[d].axes)) return std::nullopt;
  auto piece = [&](const Mesh& mesh, const Sharding& s, int64_t p) {
    std::vector<int64_t> key;
    for (const auto& d : s.dims) key.push_back(shard_index(mesh, p, d.axes));
    return key;
  };
  std::map<std::vector<int64_t>, std::vector<int64_t>> holders;  // piece -> devices holding it
  for (int64_t p = 0; p < fm.num_devices(); ++p) holders[piece(fm, from, p)].push_back(device_at(fm, p));
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::vector<std::pair<int64_t, std::vector<int64_t>>> dsts;
  for (int64_t q = 0; q < tm.num_devices(); ++q) dsts.push_back({device_at(tm, q), piece(tm, to, q)});
  bool moves = false;
  // Devices that already hold their piece keep it; the others take the next free holder.
  std::map<std::vector<int64_t>, std::vector<int64_t>> free = holders;
  std::vector<bool> done(dsts.size());
  for (size_t i = 0; i < dsts.size(); ++i) {
    auto& f = free[dsts[i].second];
    auto it = std::find(f.begin(), f.end(), dsts[i].first);
    if (it == f.end()) continue;
    pairs.push_back({dsts[i].first, dsts[i].first});
    f.erase(it);
    done[i] = true;
  }
  for (size_t i = 0; i < dsts.size(); ++i) {
    if (done[i]) continue;
    auto& f = free[dsts[i].second];
    TESSERA_CHECK(!f.empty(), "no holder left for a piece");
    pairs.push_back({f.front(), dsts[i].first});
    f.erase(f.begin());
    moves = true;
  }
  if (!moves) return x;
  std::sort(pairs.begin(), pairs.end());
  Tensor y = across_devices(ctx, ir::collective_permute(x, pairs));
  record(ctx, "collective_permute", 2, elements_bytes(x), y, "pieces between devices");
  return y;
}

namespace {

// The op that combines pieces partial by `kind`.
OpKind kind_combiner(ir::ReductionKind kind) {
  switch (kind) {
    case ir::ReductionKind::kMax: return OpKind::Maximum;
    case ir::ReductionKind::kMin: return OpKind::Minimum;
    case ir::ReductionKind::kSum: break;
  }
  return OpKind::Add;
}

Tensor reshard_steps(LocalContext& ctx, Tensor x, const ir::Type& global, const Sharding& from_in,
                     const Sharding& to_in, OpKind combiner, bool allow_direct = true);

// The bytes per device of reshard_steps without the direct reshard (made in a scratch function).
int64_t steps_bytes(const LocalContext& ctx, const Tensor& x, const ir::Type& global, const Sharding& from,
                    const Sharding& to, OpKind combiner) {
  ir::Module scratch("cost");
  ir::Function& fn = scratch.add_function("cost");
  ir::FunctionBuilder fb(scratch, fn);
  Tensor param = fb.param(x.type());
  Report report;
  LocalContext dry{ctx.global, ctx.num_devices, report, ctx.origin, {}, ctx.devices_are_replicas, ctx.forced_by};
  reshard_steps(dry, param, global, from, to, combiner, false);
  return report.bytes_per_device();
}

Tensor reshard_steps(LocalContext& ctx, Tensor x, const ir::Type& global, const Sharding& from_in,
                     const Sharding& to_in, OpKind combiner, bool allow_direct) {
  size_t rank = static_cast<size_t>(global.rank());
  Sharding from = normalized(from_in, rank), to = normalized(to_in, rank);
  // A layout that names its kind (unreduced=max{...}) says how its pieces combine; otherwise the
  // caller's combiner does (a reduce's partial results), a sum by default.
  if (!from.unreduced.empty() && from.unreduced_kind != ir::ReductionKind::kSum) combiner = kind_combiner(from.unreduced_kind);
  // Partial results of a combiner other than the target's are combined first, whatever the target
  // says, and made partial again below.
  if (combiner != kind_combiner(to.unreduced_kind) && !from.unreduced.empty() && !to.unreduced.empty()) {
    Sharding whole = from;
    whole.unreduced.clear();
    whole.unreduced_kind = ir::ReductionKind::kSum;
    x = reshard(ctx, x, global, from, whole, combiner);
    from = whole;
  }
  if (from == to) return x;
  ir::Builder& b = x.builder();
  const Mesh& fm = ctx.mesh(from.mesh);
  const Mesh& tm = ctx.mesh(to.mesh);

  // A value on one device: broadcast it from there, then treat it as replicated.
  if (is_maximal(fm)) {
    TESSERA_CHECK(from.unreduced.empty(), "partial value on a maximal mesh");
    int64_t src = fm.device_ids[0];
    std::vector<int64_t> group = {src};
    for (int64_t d = 0; d < ctx.num_devices; ++d)
      if (d != src) group.push_back(d);
    x = across_devices(ctx, ir::collective_broadcast(x, {group}));
    record(ctx, "collective_broadcast", ctx.num_devices, elements_bytes(x), x, "from its device");
    if (is_maximal(tm)) return x;
    return reshard(ctx, x, global, replicated(to.mesh, rank), to);
  }
  if (is_maximal(tm)) return reshard(ctx, x, global, from, replicated(from.mesh, rank), combiner);
  if (from.mesh != to.mesh && !(fm.axes == tm.axes && fm.device_ids == tm.device_ids)) {
    // (a partial target is made on its own mesh, from the replicated value)
    if (to.unreduced.empty())
      if (std::optional<Tensor> p = permute_pieces(ctx, x, from, to, fm, tm)) return *p;
    // Each device takes the blocks it lacks, where that moves less than the replicated detour.
    if (allow_direct && from.unreduced.empty() && to.unreduced.empty())
      if (std::optional<int64_t> direct = direct_reshard_bytes(ctx, global, from, to)) {
        int64_t detour = reshard_bytes(ctx, global, from, replicated(from.mesh, rank), combiner) +
                         reshard_bytes(ctx, global, replicated(to.mesh, rank), to);
        if (*direct < detour) return direct_reshard(ctx, x, global, from, to);
      }
    x = reshard(ctx, x, global, from, replicated(from.mesh, rank), combiner);
    return reshard(ctx, x, global, replicated(to.mesh, rank), to);
  }
  // Two names of one mesh (the same axes and devices): the layouts compare on the target's name.
  from.mesh = to.mesh;
  if (from == to) return x;
  const Mesh& mesh = tm;
  auto shape_even = [&](size_t d, const Axes& axes) { return global.shape[d] % shard_count(mesh, axes) == 0; };

  // 1. Partial sums: reduce_scatter along each dimension the target splits next by summed axes,
  //    all_reduce over the rest. Axes the target wants partial that are not: keep the value on
  //    the first device along them and zeros elsewhere, so the sum is unchanged.
  Axes pending;
  for (const AxisRef& a : from.unreduced)
    if (std::find(to.unreduced.begin(), to.unreduced.end(), a) == to.unreduced.end()) pending.push_back(a);
  if (!pending.empty()) {
    bool scatters = combiner == OpKind::Add || combiner == OpKind::Maximum || combiner == OpKind::Minimum ||
                    combiner == OpKind::Multiply;
    for (size_t d = 0; d < rank && scatters && !pending.empty(); ++d) {
      const Axes& fd = from.dims[d].axes;
      const Axes& td = to.dims[d].axes;
      if (!starts_with(td, fd)) continue;
      Axes take;
      for (size_t k = fd.size(); k < td.size(); ++k) {
        if (std::find(pending.begin(), pending.end(), td[k]) == pending.end()) break;
        take.push_back(td[k]);
      }
      Axes want = fd;
      want.insert(want.end(), take.begin(), take.end());
      if (take.empty() || !shape_even(d, want)) continue;
      Groups g = groups_over(mesh, take);
      int64_t n = static_cast<int64_t>(g[0].size());
      int64_t bytes = elements_bytes(x) * (n - 1) / n;
      x = ir::reduce_scatter(x, static_cast<int64_t>(d), g, combiner);
      record(ctx, "reduce_scatter", n, bytes, x, fmt::format("partial over {}, dimension {}", axes_string(take), d));
      from.dims[d].axes = want;
      for (const AxisRef& a : take) pending.erase(std::find(pending.begin(), pending.end(), a));
    }
    if (!pending.empty()) x = sum_over(ctx, x, mesh, pending, combiner);
  }
  Axes added;
  for (const AxisRef& a : to.unreduced)
    if (std::find(from.unreduced.begin(), from.unreduced.end(), a) == from.unreduced.end()) added.push_back(a);
  from.unreduced = to.unreduced;
  from.unreduced_kind = to.unreduced_kind;  // kept partial axes already hold the target's combiner's pieces
  // Axes the value becomes partial along are masked last, once the pieces are in place: every
  // device along them then holds the same piece, and keeping the first one's makes the sum the
  // value. (Masked before a gather, the gather would spread the first piece and the zeros.) The
  // max or min of equal pieces is the piece: those keep every copy.
  auto partial_along_added = [&](Tensor y) {
    if (added.empty() || to.unreduced_kind != ir::ReductionKind::kSum) return y;
    Tensor index = piece_offset(ctx, b, mesh, added, 1);
    Tensor first = ir::compare(index, b.scalar(ir::ElementType::i32, 0), ir::ComparisonDirection::EQ);
    return ir::select(ir::broadcast_to(first, y.shape()), y, ir::broadcast_to(b.scalar(y.element(), 0), y.shape()));
  };

  // A layout with the same number of pieces along every dimension, other devices holding them:
  // collective_permute.
  if (from == to) return partial_along_added(x);
  // Even layouts: the cheapest sequence of collectives, found by search. Or, for whole values
  // where it moves fewer bytes (layouts that do not nest: uneven splits), each device takes the
  // blocks of its piece it lacks (reshard_direct.h). Pieces partial along axes kept partial
  // differ along them: the search then uses no permute (its other moves group devices only along
  // the axes they move), and the direct blocks are not sent.
  {
    Axes kept;
    for (const AxisRef& a : to.unreduced)
      if (std::find(added.begin(), added.end(), a) == added.end()) kept.push_back(a);
    Sharding whole_from = from, whole_to = to;
    whole_from.unreduced.clear();
    whole_to.unreduced.clear();
    whole_from.unreduced_kind = whole_to.unreduced_kind = ir::ReductionKind::kSum;
    const bool permutes = kept.empty();
    std::optional<int64_t> planned = planned_reshard_bytes(global, whole_from, whole_to, mesh, permutes);
    if (allow_direct && to.unreduced.empty())
      if (std::optional<int64_t> direct = direct_reshard_bytes(ctx, global, from, to))
        if (*direct < (planned ? *planned : steps_bytes(ctx, x, global, from, to, combiner)))
          return direct_reshard(ctx, x, global, from, to);
    if (planned)
      if (std::optional<Tensor> p = planned_reshard(ctx, x, global, whole_from, whole_to, mesh, permutes))
        return partial_along_added(*p);
  }
  // Pieces partial along axes kept partial differ along them, which permute does not track: it
  // is used only when the sole partial axes are the added ones.
  Sharding moved_from = from, moved_to = to;
  moved_from.unreduced.clear();
  for (const AxisRef& a : to.unreduced)
    if (std::find(added.begin(), added.end(), a) == added.end()) moved_from.unreduced.push_back(a);
  moved_to.unreduced.clear();
  moved_to.unreduced_kind = ir::ReductionKind::kSum;
  if (moved_from.unreduced.empty()) moved_from.unreduced_kind = ir::ReductionKind::kSum;
  if (std::optional<Tensor> p = permute_pieces(ctx, x, moved_from, moved_to, fm, tm)) return partial_along_added(*p);

  // 2. An axis leaving dimension i for dimension j: all_to_all.
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t i = 0; i < rank && !moved; ++i) {
      const Axes& fi = from.dims[i].axes;
      if (fi.empty() || starts_with(to.dims[i].axes, fi)) continue;
      Axes rest(fi.begin(), fi.end() - 1);
      if (!starts_with(to.dims[i].axes, rest) || !shape_even(i, fi)) continue;
      const AxisRef a = fi.back();
      for (size_t j = 0; j < rank && !moved; ++j) {
        const Axes& fj = from.dims[j].axes;
        const Axes& tj = to.dims[j].axes;
        if (j == i || !starts_with(tj, fj) || tj.size() <= fj.size() || !(tj[fj.size()] == a)) continue;
        Axes grown = fj;
        grown.push_back(a);
        if (!shape_even(j, grown)) continue;
        x = all_to_all_axes(ctx, x, static_cast<int64_t>(i), static_cast<int64_t>(j), mesh, {a});
        from.dims[i].axes = rest;
        from.dims[j].axes = grown;
        moved = true;
      }
    }
  }

  // 3. Gather the axes each dimension loses.
  for (size_t d = 0; d < rank; ++d) {
    Axes& fd = from.dims[d].axes;
    size_t k = common_prefix(fd, to.dims[d].axes);
    // An axis that another dimension of the target needs must leave even a common prefix.
    if (k == fd.size()) continue;
    if (shape_even(d, fd)) {
      x = gather_axes(ctx, x, static_cast<int64_t>(d), mesh, Axes(fd.begin() + static_cast<ptrdiff_t>(k), fd.end()));
      fd.erase(fd.begin() + static_cast<ptrdiff_t>(k), fd.end());
    } else {
      x = gather_axes(ctx, x, static_cast<int64_t>(d), mesh, fd);
      x = resize_dim(x, static_cast<int64_t>(d), global.shape[d]);
      fd.clear();
    }
  }

  // 4. Slice the axes each dimension gains: one dynamic_slice for all of them.
  std::vector<std::optional<Tensor>> starts(rank);
  std::vector<int64_t> pieces(rank, -1);
  bool any = false;
  for (size_t d = 0; d < rank; ++d) {
    Axes& fd = from.dims[d].axes;
    const Axes& td = to.dims[d].axes;
    if (td.size() == fd.size()) continue;
    if (!fd.empty() && !shape_even(d, td)) {  // an uneven target is cut from the whole dimension
      x = gather_axes(ctx, x, static_cast<int64_t>(d), mesh, fd);
      x = resize_dim(x, static_cast<int64_t>(d), global.shape[d]);
      fd.clear();
    }
    Axes suffix(td.begin() + static_cast<ptrdiff_t>(fd.size()), td.end());
    int64_t cur = x.shape()[d];
    int64_t count = shard_count(mesh, suffix);
    int64_t piece = piece_size(cur, count);
    x = resize_dim(x, static_cast<int64_t>(d), piece * count);
    // The offset within the current piece: this device's index along the new axes.
    starts[d] = piece_offset(ctx, b, mesh, suffix, piece);
    pieces[d] = piece;
    any = true;
    fd = td;
  }
  if (any) {
    std::vector<int64_t> sizes = x.shape();
    std::vector<Tensor> at;
    std::optional<Tensor> zero;
    for (size_t d = 0; d < rank; ++d) {
      if (pieces[d] >= 0) sizes[d] = pieces[d];
      if (!starts[d] && !zero) zero = b.scalar(ir::ElementType::i32, 0);
      at.push_back(starts[d] ? *starts[d] : *zero);
    }
    x = ir::dynamic_slice(x, at, sizes);
  }
  TESSERA_CHECK(from == to, "reshard did not reach its target");
  return partial_along_added(x);
}

}  // namespace

Tensor reshard(LocalContext& ctx, Tensor x, const ir::Type& global, const Sharding& from,
               const Sharding& to, OpKind combiner) {
  size_t first = ctx.report.collectives.size();
  int64_t source = elements_bytes(x);
  Tensor y = reshard_steps(ctx, x, global, from, to, combiner);
  // A gather to more than both the piece it starts from and the piece it must end as is never
  // needed: slicing first, or an all_to_all, moves less (the fallbacks for uneven splits and
  // between meshes gather whole).
  int64_t bound = std::max(source, elements_bytes(y));
  for (size_t i = first; i < ctx.report.collectives.size(); ++i) {
    CollectiveRecord& r = ctx.report.collectives[i];
    if (r.kind != "all_gather" || !r.avoidable.empty() || r.op == nullptr) continue;
    // (padding past a dimension's end is no data: a direct reshard gathers a one-element
    // dimension from 2 padded pieces and trims it)
    ir::Type held = r.op->result(0)->type();
    for (size_t d = 0; d < held.shape.size() && d < global.shape.size(); ++d)
      held.shape[d] = std::min(held.shape[d], global.shape[d]);
    int64_t gathered = byte_size(held);
    if (gathered > bound)
      r.avoidable = fmt::format("gathers {} bytes per device, more than the piece it starts from ({}) and the one it "
                                "ends as ({}); slicing first or an all_to_all would move less",
                                gathered, source, elements_bytes(y));
  }
  return y;
}

int64_t reshard_bytes(const LocalContext& ctx, const ir::Type& global, const Sharding& from, const Sharding& to,
                      OpKind combiner) {
  size_t rank = static_cast<size_t>(global.rank());
  if (same_layout(from, to, rank)) return 0;
  ir::Module scratch("cost");
  ir::Function& fn = scratch.add_function("cost");
  ir::FunctionBuilder fb(scratch, fn);
  const Mesh& fm = ctx.mesh(from.mesh);
  std::vector<int64_t> shape = is_maximal(fm) ? global.shape : local_shape(global.shape, normalized(from, rank), fm);
  Tensor x = fb.param(ir::Type(global.element, shape));
  Report report;
  LocalContext dry{ctx.global, ctx.num_devices, report, ctx.origin, {}, ctx.devices_are_replicas, ctx.forced_by};
  reshard(dry, x, global, from, to, combiner);
  return report.bytes_per_device();
}

}  // namespace tessera::spmd
