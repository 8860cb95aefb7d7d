// Whole arrays and their pieces: splitting a host array by a sharding into one piece per device,
// the box of the whole array one device's piece holds (so a piece can be made alone, without the
// whole), and putting pieces back together. Pieces of uneven dimensions are padded with zeros; a
// value on a maximal mesh is whole on its device (and, so every device has an input, on the others
// too).
//
// Unreduced axes (a partial-sum layout, `unreduced={"x"}`): the array is the sum of the pieces
// along them. A whole array split into such a layout goes whole to the first device along the
// unreduced axes and as zeros to the others, so the pieces sum to it; assembling sums them.
#pragma once

#include <functional>
#include <vector>

#include "ir/literal.h"
#include "ir/module.h"

namespace tessera::runtime {

// The part of the whole array device `device` holds: its valid box [start, start + extent) and
// its piece's shape (extent, padded where a dimension is uneven).
struct PieceBox {
  std::vector<int64_t> start, extent, shape;
  // The piece of an unreduced layout on a device other than the first along its unreduced axes:
  // made from a whole array, it holds zeros (the box still says where its partial sums belong).
  bool zeros = false;
};
PieceBox piece_box(const ir::Type& global, const ir::Sharding& sharding, const ir::Mesh& mesh, int64_t device);

// Device d's piece (d = partition id, 0..num_devices-1); with `keep`, only the pieces of the devices
// it keeps are made (the others stay empty Literals).
std::vector<ir::Literal> split(const ir::Literal& whole, const ir::Sharding& sharding, const ir::Mesh& mesh,
                               int64_t num_devices, const std::function<bool(int64_t device)>& keep = {});
// The devices whose pieces make up the whole array, one per distinct box (for replicated axes, the
// first device holding it) and, for unreduced axes, every device along them, ascending: what
// assemble reads.
std::vector<int64_t> holders(const ir::Type& global, const ir::Sharding& sharding, const ir::Mesh& mesh);
// The whole array from the holders' pieces (the other entries of `pieces` are not read); pieces
// along unreduced axes are added up.
ir::Literal assemble(const std::vector<ir::Literal>& pieces, const ir::Type& global, const ir::Sharding& sharding,
                     const ir::Mesh& mesh);

// Copies the box [start, start + extent) of `from` to `to` at `to_start` (same element type).
void copy_box(const ir::Literal& from, const std::vector<int64_t>& start, ir::Literal& to,
              const std::vector<int64_t>& to_start, const std::vector<int64_t>& extent);

}  // namespace tessera::runtime
