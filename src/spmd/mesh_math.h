// Where each device's piece of a sharded value lies, and which devices a collective groups.
//
// A mesh position p (row-major over the mesh's axes) is device `device_ids[p]` (p itself without
// explicit ids); that id is the device's partition id in the local program. Along a tensor
// dimension sharded by axes [a0, a1, ...] (major to minor) the device's shard index is the mixed
// radix number of its coordinates along those axes; a sub-axis "x":(pre)size is one digit of x's
// coordinate. Pieces of an uneven dimension all have the ceiling size; the last ones are padded.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/module.h"

namespace tessera::spmd {

using Groups = std::vector<std::vector<int64_t>>;

int64_t device_at(const ir::Mesh& mesh, int64_t position);
// The coordinate of mesh position p along `ref` (a whole axis or one digit of it).
int64_t axis_coordinate(const ir::Mesh& mesh, int64_t position, const ir::AxisRef& ref);
// The shard index of position p along a dimension split by `axes`, and the number of shards.
int64_t shard_index(const ir::Mesh& mesh, int64_t position, const std::vector<ir::AxisRef>& axes);
int64_t shard_count(const ir::Mesh& mesh, const std::vector<ir::AxisRef>& axes);
// ceil(size / shards): every device's piece length, padding included.
int64_t piece_size(int64_t size, int64_t shards);
std::vector<int64_t> local_shape(const std::vector<int64_t>& shape, const ir::Sharding& s,
                                 const ir::Mesh& mesh);
// True when some dimension's size is not a multiple of its shard count.
bool is_uneven(const std::vector<int64_t>& shape, const ir::Sharding& s, const ir::Mesh& mesh);

// The groups of devices that differ only in their coordinates along `axes`, each ordered by its
// shard index along `axes` (the order in which a gather concatenates their pieces).
Groups groups_over(const ir::Mesh& mesh, const std::vector<ir::AxisRef>& axes);

// Whether two references to the same axis cover overlapping digits of it, or digits no one cut of
// the axis makes ("x":(1)2 and "x":(3)2 of x=6): they cannot split one value together.
bool overlaps(const ir::AxisRef& a, const ir::AxisRef& b, const ir::Mesh& mesh);
// The major-most run of `ref`'s digits that no reference in `taken` covers: `ref` itself when none
// overlaps it, a sub-axis of it when some do ("x" with "x":(2)2 taken leaves "x":(1)2), nothing
// when its digits are all taken (or the free run is no sub-axis the mesh can name).
std::optional<ir::AxisRef> free_part(const ir::AxisRef& ref, const std::vector<ir::AxisRef>& taken, const ir::Mesh& mesh);
// `axes` with consecutive digits of one axis merged ("x":(1)2, "x":(2)2 -> "x" on an axis of 4).
std::vector<ir::AxisRef> merge_sub_axes(const std::vector<ir::AxisRef>& axes, const ir::Mesh& mesh);
// Splits `ref` into its major part of size `major` and the rest.
std::pair<ir::AxisRef, ir::AxisRef> split_axis(const ir::AxisRef& ref, int64_t major, const ir::Mesh& mesh);

// A replicated sharding of rank `rank` on `mesh`.
ir::Sharding replicated(const std::string& mesh, size_t rank);
// Whether the mesh is a maximal one (no axes, one device id): the value lives on that device.
bool is_maximal(const ir::Mesh& mesh);
// The mesh of `module` with the most devices that is not maximal (null without one): a partitioned
// function of the module runs on that many devices (partition.h's num_devices).
const ir::Mesh* largest_mesh(const ir::Module& module);

}  // namespace tessera::spmd
