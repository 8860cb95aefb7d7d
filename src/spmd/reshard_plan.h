// The cheapest sequence of collectives between two layouts of one mesh, found by search.
//
// Both layouts are written over the same "atoms": each mesh axis is cut into the digits that
// either layout names (a layout naming "y" and the other "y":(1)4 cuts y into (1)4 and (4)2). A
// state lists each dimension's atoms, major to minor; the moves are Shardy's: slice an atom the
// target needs onto the minor end of a dimension (free), gather the minor atoms of a dimension
// (all_gather), move the minor atoms of one dimension to the minor end of another (all_to_all),
// and, last, hand each device its piece from another (collective_permute) when every dimension
// has the target's number of pieces. A Dijkstra search over states, costed in bytes per device as
// the report counts them (then by the number of moves), finds the cheapest sequence: slicing
// early shrinks what later moves carry, several atoms move in one all_to_all, a sub-axis is
// gathered alone. Only layouts without partial axes whose every state splits its dimensions
// evenly are planned; reshard() handles the rest itself.
#pragma once

#include <optional>

#include "spmd/reshard.h"

namespace tessera::spmd {

// x (laid out as `from`) in layout `to`, both on `mesh` with no unreduced axes; nullopt when the
// layouts fall outside what the search plans (uneven splits, atoms that do not nest, too many
// states), for reshard()'s own steps. Without `permutes` the plan uses no collective_permute:
// only slices and collectives over the moved axes, which keep each device's coordinates along
// every other axis (so a value partial along an axis neither layout names stays so).
std::optional<ir::Tensor> planned_reshard(LocalContext& ctx, ir::Tensor x, const ir::Type& global,
                                          const ir::Sharding& from, const ir::Sharding& to, const ir::Mesh& mesh,
                                          bool permutes = true);
// The bytes per device of the plan planned_reshard would emit (nullopt where it plans none).
std::optional<int64_t> planned_reshard_bytes(const ir::Type& global, const ir::Sharding& from, const ir::Sharding& to,
                                             const ir::Mesh& mesh, bool permutes = true);

}  // namespace tessera::spmd
