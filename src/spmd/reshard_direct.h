// Direct reshard: each device takes exactly the blocks of its new piece that it lacks, from the
// devices that hold them, in rounds of collective_permute.
//
// The collectives of reshard_plan.h's search move whole pieces between layouts that nest (every
// intermediate layout split evenly, one mesh). Between layouts that do not nest (a dimension
// split unevenly, e.g. 8 rows over 32 devices; meshes with other device ids) a piece of the
// target overlaps pieces of the source in ways no all_gather or all_to_all groups follow, and
// reshard()'s own steps gather whole dimensions. Here the target piece of every device is cut
// into its intersections with the source pieces (in padded coordinates, so pieces of one layout
// share one shape); a block the device holds is copied locally, every other is sent by one of its
// holders. The sends are scheduled in rounds, each a collective_permute in which a device sends
// and receives at most one block and every block has the round's shape; the receiver writes the
// block at its place (dynamic_update_slice, kept only where the device received). Bytes per
// device, as the report counts them: the sum of the rounds' block sizes. The blocks may also go
// to a layout finer than the target by one atom (an axis, or part of one, the target leaves
// free), then an all_gather of that atom makes the target: like Shardy's permute of "x":(1)2
// before a gather, smaller blocks in fewer rounds. reshard() takes this when it moves fewer bytes
// than the search's plan or its own steps.
#pragma once

#include <optional>

#include "spmd/reshard.h"

namespace tessera::spmd {

// The bytes per device of the cheapest direct plan between two layouts without partial axes on
// meshes holding the same devices (nullopt otherwise, or beyond kMaxRounds rounds).
std::optional<int64_t> direct_reshard_bytes(const LocalContext& ctx, const ir::Type& global, const ir::Sharding& from,
                                            const ir::Sharding& to);
// The reshard itself (call only where direct_reshard_bytes gave a value).
ir::Tensor direct_reshard(LocalContext& ctx, ir::Tensor x, const ir::Type& global, const ir::Sharding& from,
                          const ir::Sharding& to);

}  // namespace tessera::spmd
