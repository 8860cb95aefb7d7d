// Splitting and assembling sharded arrays (see layout.h).
#include "runtime/layout.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "spmd/mesh_math.h"
#include "spmd/reshard.h"
#include "support/error.h"

namespace tessera::runtime {

using ir::Literal;

void copy_box(const Literal& from, const std::vector<int64_t>& start, Literal& to,
              const std::vector<int64_t>& to_start, const std::vector<int64_t>& extent) {
  size_t rank = extent.size();
  for (int64_t e : extent)
    if (e <= 0) return;
  auto bytes = static_cast<size_t>(ir::info(from.element()).bytes);
  auto fs = from.strides(), ts = to.strides();
  if (rank == 0) {
    std::memcpy(to.bytes().data(), from.bytes().data(), bytes);
    return;
  }
  std::vector<int64_t> idx(rank, 0);
  size_t row = static_cast<size_t>(extent[rank - 1]) * bytes;
  while (true) {
    int64_t fo = 0, to_off = 0;
    for (size_t d = 0; d < rank; ++d) {
      fo += (start[d] + idx[d]) * fs[d];
      to_off += (to_start[d] + idx[d]) * ts[d];
    }
    std::memcpy(to.bytes().data() + static_cast<size_t>(to_off) * bytes,
                from.bytes().data() + static_cast<size_t>(fo) * bytes, row);
    size_t d = rank - 1;
    while (d-- > 0) {
      if (++idx[d] < extent[d]) break;
      idx[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

namespace {

struct Box {
  std::vector<int64_t> start, extent, local;
};

// The part of the whole array that mesh position p holds.
Box box_of(const ir::Type& global, const ir::Sharding& s, const ir::Mesh& mesh, int64_t p) {
  Box b;
  for (size_t d = 0; d < global.shape.size(); ++d) {
    const auto& axes = d < s.dims.size() ? s.dims[d].axes : std::vector<ir::AxisRef>{};
    int64_t n = spmd::shard_count(mesh, axes);
    int64_t piece = spmd::piece_size(global.shape[d], n);
    int64_t start = spmd::shard_index(mesh, p, axes) * piece;
    b.start.push_back(start);
    b.extent.push_back(std::max<int64_t>(0, std::min(piece, global.shape[d] - start)));
    b.local.push_back(piece);
  }
  return b;
}

// Whether mesh position p is not the first along the sharding's unreduced axes: from a whole
// array, its piece is zeros. Host arrays are split and assembled as partial sums only; a layout
// whose pieces combine by a max or min (unreduced=max{...}) is refused by name.
bool zero_part(const ir::Sharding& s, const ir::Mesh& mesh, int64_t p) {
  if (!s.unreduced.empty() && s.unreduced_kind != ir::ReductionKind::kSum)
    support::fail("a host array laid out unreduced={}{{...}} over mesh @{}: the runtime splits and assembles "
                  "partial sums only; reshard it to a layout without unreduced axes (or a sum's)",
                  ir::to_string(s.unreduced_kind), mesh.name);
  return !s.unreduced.empty() && spmd::shard_index(mesh, p, s.unreduced) != 0;
}

// acc += x, element by element (x's box [0, extent) onto acc's at `start`); bools or.
void add_box(const Literal& x, Literal& acc, const std::vector<int64_t>& start, const std::vector<int64_t>& extent) {
  Literal part(acc.type());
  std::vector<int64_t> zero(extent.size(), 0);
  copy_box(x, zero, part, start, extent);
  ir::ElementType e = acc.element();
  for (int64_t i = 0; i < acc.num_elements(); ++i) {
    if (ir::is_complex(e)) acc.set_complex(i, acc.get_complex(i) + part.get_complex(i));
    else if (ir::is_float(e)) acc.set_double(i, acc.get_double(i) + part.get_double(i));
    else if (e == ir::ElementType::i1) acc.set_int(i, (acc.get_int(i) | part.get_int(i)) != 0);
    else if (ir::info(e).kind == ir::ElementKind::Unsigned)
      acc.set_int(i, static_cast<int64_t>(acc.get_uint(i) + part.get_uint(i)));  // wraps, as add does
    else acc.set_int(i, static_cast<int64_t>(static_cast<uint64_t>(acc.get_int(i)) + static_cast<uint64_t>(part.get_int(i))));
  }
}

// A value every device holds whole: on a maximal mesh, or a mesh without axes.
bool whole_everywhere(const ir::Mesh& mesh) { return spmd::is_maximal(mesh) || mesh.axes.empty(); }

}  // namespace

PieceBox piece_box(const ir::Type& global, const ir::Sharding& sharding, const ir::Mesh& mesh, int64_t device) {
  if (whole_everywhere(mesh)) return {std::vector<int64_t>(global.shape.size(), 0), global.shape, global.shape};
  for (int64_t p = 0; p < mesh.num_devices(); ++p)
    if (spmd::device_at(mesh, p) == device) {
      Box b = box_of(global, sharding, mesh, p);
      return {b.start, b.extent, b.local, zero_part(sharding, mesh, p)};
    }
  support::internal_failure(__FILE__, __LINE__, fmt::format("device {} is not on mesh @{}", device, mesh.name));
}

std::vector<Literal> split(const Literal& whole, const ir::Sharding& sharding, const ir::Mesh& mesh,
                           int64_t num_devices, const std::function<bool(int64_t)>& keep) {
  std::vector<Literal> out(static_cast<size_t>(num_devices));
  // Tokens (and tuples) have no dimensions to split: every device gets the value as it is.
  if (whole_everywhere(mesh) || !whole.type().is_tensor()) {
    for (int64_t d = 0; d < num_devices; ++d)
      if (!keep || keep(d)) out[static_cast<size_t>(d)] = whole;
    return out;
  }
  for (int64_t p = 0; p < mesh.num_devices(); ++p) {
    int64_t device = spmd::device_at(mesh, p);
    if (keep && !keep(device)) continue;
    Box b = box_of(whole.type(), sharding, mesh, p);
    Literal piece(ir::Type(whole.element(), b.local));  // zeros
    if (!zero_part(sharding, mesh, p)) copy_box(whole, b.start, piece, std::vector<int64_t>(b.start.size(), 0), b.extent);
    out[static_cast<size_t>(device)] = std::move(piece);
  }
  return out;
}

std::vector<int64_t> holders(const ir::Type& global, const ir::Sharding& sharding, const ir::Mesh& mesh) {
  if (spmd::is_maximal(mesh)) return {mesh.device_ids[0]};
  if (mesh.axes.empty()) return {0};
  std::set<std::pair<std::vector<int64_t>, int64_t>> seen;  // box start, index along the unreduced axes
  std::vector<int64_t> out;
  for (int64_t p = 0; p < mesh.num_devices(); ++p) {
    int64_t u = sharding.unreduced.empty() ? 0 : spmd::shard_index(mesh, p, sharding.unreduced);
    if (seen.insert({box_of(global, sharding, mesh, p).start, u}).second) out.push_back(spmd::device_at(mesh, p));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Literal assemble(const std::vector<Literal>& pieces, const ir::Type& global, const ir::Sharding& sharding,
                 const ir::Mesh& mesh) {
  if (whole_everywhere(mesh) || !global.is_tensor())
    return pieces.at(static_cast<size_t>(holders(global, sharding, mesh)[0]));
  Literal whole(global);
  for (int64_t d : holders(global, sharding, mesh)) {
    PieceBox pb = piece_box(global, sharding, mesh, d);
    if (pb.zeros) continue;  // added below
    copy_box(pieces.at(static_cast<size_t>(d)), std::vector<int64_t>(pb.start.size(), 0), whole, pb.start, pb.extent);
  }
  for (int64_t d : holders(global, sharding, mesh)) {
    PieceBox pb = piece_box(global, sharding, mesh, d);
    if (pb.zeros) add_box(pieces.at(static_cast<size_t>(d)), whole, pb.start, pb.extent);
  }
  return whole;
}

}  // namespace tessera::runtime
