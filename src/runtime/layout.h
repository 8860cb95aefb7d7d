// Whole arrays and their pieces: splitting a host array by a sharding into one piece per device,
// and putting pieces back together. Pieces of uneven dimensions are padded with zeros; a value on a
// maximal mesh is whole on its device (and, so every device has an input, on the others too).
#pragma once

#include <vector>

#include "ir/literal.h"
#include "ir/module.h"

namespace tessera::runtime {

// Device d's piece (d = partition id, 0..num_devices-1).
std::vector<ir::Literal> split(const ir::Literal& whole, const ir::Sharding& sharding, const ir::Mesh& mesh,
                               int64_t num_devices);
// The whole array from every device's piece (for replicated axes, the first device's copy).
ir::Literal assemble(const std::vector<ir::Literal>& pieces, const ir::Type& global, const ir::Sharding& sharding,
                     const ir::Mesh& mesh);

// Copies the box [start, start + extent) of `from` to `to` at `to_start` (same element type).
void copy_box(const ir::Literal& from, const std::vector<int64_t>& start, ir::Literal& to,
              const std::vector<int64_t>& to_start, const std::vector<int64_t>& extent);

}  // namespace tessera::runtime
