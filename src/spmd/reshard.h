// The one place layouts change: reshard(x, from, to) emits the collectives and local slices that
// turn a local piece laid out as `from` into one laid out as `to`.
//
// Order of work, each step only where needed: sum partial values (all_reduce, or reduce_scatter
// when the target splits a dimension by exactly the summed axes). Between even layouts of one
// mesh the rest is the cheapest sequence of slices, all_to_alls, gathers and permutes that
// reshard_plan.h's search finds, or, where it moves fewer bytes (always between layouts that do
// not nest: uneven splits, meshes with other device ids), reshard_direct.h's blocks sent in rounds
// of collective_permute; otherwise, in this order: move an axis from one dimension
// to another (all_to_all); gather the axes a dimension loses (all_gather; an uneven dimension is
// gathered whole and trimmed); slice the axes a dimension gains (dynamic_slice at this device's
// offset, read from a table indexed by partition id, which also covers meshes with explicit device
// ids). A value on a maximal mesh is broadcast from its device; between two meshes the value goes
// through the replicated layout.
#pragma once

#include <string>
#include <unordered_map>

#include "ir/builder.h"
#include "spmd/report.h"

namespace tessera::spmd {

struct LocalContext {
  const ir::Module& global;  // for its meshes
  int64_t num_devices = 1;
  Report& report;
  std::string origin;  // the global op being partitioned, for the report
  std::unordered_map<const ir::Block*, ir::Value*> partition_ids;  // one per block
  bool devices_are_replicas = false;  // see PartitionOptions
  std::string forced_by;  // which of its operands or results is being resharded ("operand 1"), for the report

  const ir::Mesh& mesh(const std::string& name) const { return global.mesh(name); }
};

// A sharding of rank `rank` with open flags and priorities dropped, dimensions filled in.
ir::Sharding normalized(const ir::Sharding& s, size_t rank);
bool same_layout(const ir::Sharding& a, const ir::Sharding& b, size_t rank);

// `from.unreduced` lists axes along which x holds partial results of `combiner`.
ir::Tensor reshard(LocalContext& ctx, ir::Tensor x, const ir::Type& global, const ir::Sharding& from,
                   const ir::Sharding& to, ir::OpKind combiner = ir::OpKind::Add);

// Single steps, each recorded in the report (reshard_plan.cpp composes them too):
// gather the pieces of dimension `dim` along `axes` (the dimension's minor axes);
ir::Tensor gather_axes(LocalContext& ctx, ir::Tensor x, int64_t dim, const ir::Mesh& mesh,
                       const std::vector<ir::AxisRef>& axes);
// move `axes` (the minor axes of `from_dim`) to the minor end of `to_dim`;
ir::Tensor all_to_all_axes(LocalContext& ctx, ir::Tensor x, int64_t from_dim, int64_t to_dim, const ir::Mesh& mesh,
                           const std::vector<ir::AxisRef>& axes);
// between two layouts that cut every dimension into the same number of pieces, each device takes
// the piece it needs from a device that holds it (itself when it can); nullopt when the counts differ.
std::optional<ir::Tensor> permute_pieces(LocalContext& ctx, ir::Tensor x, const ir::Sharding& from,
                                         const ir::Sharding& to, const ir::Mesh& fm, const ir::Mesh& tm);

// The cost model: the bytes per device (as the report counts them) that reshard(from, to) of a
// value of type `global` moves, found by making it in a scratch function (so the estimate is the
// routine's own choice, never a second account of it).
int64_t reshard_bytes(const LocalContext& ctx, const ir::Type& global, const ir::Sharding& from,
                      const ir::Sharding& to, ir::OpKind combiner = ir::OpKind::Add);

// This device's id (its partition id, or replica id on an N x 1 grid) as an i32 scalar.
ir::Tensor partition_id_i32(LocalContext& ctx, ir::Builder& b);
// values[i] on the devices whose shard index along `axes` is i, as an i32 scalar (a table indexed
// by partition id; a constant when every device has the same value).
ir::Tensor per_shard(LocalContext& ctx, ir::Builder& b, const ir::Mesh& mesh, const std::vector<ir::AxisRef>& axes,
                     const std::vector<int64_t>& values);
// This device's start along a dimension split by `axes` into pieces of length `piece`.
ir::Tensor piece_offset(LocalContext& ctx, ir::Builder& b, const ir::Mesh& mesh,
                        const std::vector<ir::AxisRef>& axes, int64_t piece);
// True where the local piece of a value of `global` shape laid out as `s` holds real elements
// (false on the padding of uneven dimensions); nullopt when nothing is padded.
std::optional<ir::Tensor> valid_mask(LocalContext& ctx, ir::Builder& b, const ir::Type& global,
                                     const ir::Sharding& s);

}  // namespace tessera::spmd
