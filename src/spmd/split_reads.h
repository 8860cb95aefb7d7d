// Ops that read a dimension their factor rule cannot split, done on the pieces where the operand
// arrives split along it instead of gathering it whole (#18): the partitioner (partition.cpp)
// costs each way with the cost model (reshard_bytes, halo_bytes) and takes the cheaper.
//
// - gather whose indexed dimensions are split (Shardy's and Megatron's vocabulary-parallel
//   lookup): each indexed dimension becomes a reduction factor; every device gathers from the rows
//   it holds, with each index moved to its piece and rows it does not hold set to zero, and the
//   partial results are summed (all_reduce, or reduce_scatter where the result is split).
//   Indices are clamped to the whole dimension first, as the unsharded gather clamps them.
// - slice or reverse along a split dimension: a halo exchange. The result is made split by the
//   same axes (a slice's in pieces of ceil(L / n)); each device needs a range of the operand that
//   lies in a few pieces (near its own for a slice, mirrored for a reverse), which come by one
//   collective_permute per chunk, cut to the part some device needs: the c-th piece of every
//   device's range when no source serves two devices at once (a reverse), else the pieces at
//   each shift k = (source shard - own shard); the chunks are joined (reversed for a reverse)
//   and the device's window is cut from them (then strided).
// - reduce_window along a split window dimension: each device takes the run of the operand its
//   windows read, the positions outside the operand set to the init value (and, with a base
//   dilation, only the operand's own elements brought, dilated with the init value on the
//   device), and reduces it locally without padding or base dilation. convolution along a split input spatial dimension the
//   same, zeros outside the input (halo_conv.cpp, which also sums a kernel gradient over split
//   kernel rows); select_and_scatter takes the windows that touch its piece whole
//   (halo_select_scatter.cpp).
// - pad (edge padding, negative included, and interior) or concatenate along a split dimension:
//   the same exchange for a shifted window. The result is split by the operand's axes; result
//   element j of a pad is operand element j - low, so each device's window of the result is a
//   range of the operand (clipped to it) shifted by low, brought as for a slice; the positions
//   outside the operand take the padding value (a mask on the window's global index). A
//   concatenate is one such window per operand (operand k shifted by the sizes before it), each
//   kept where it is that operand's. With interior padding the operand is dilated (element i at
//   low + i (interior + 1)): each device brings the operand elements that land in its result
//   piece (plan_window with a dilation), dilates them with the padding value and cuts its piece
//   at its own phase (dilate_window), as a convolution's lhs_dilation is done.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "spmd/factor_rule.h"
#include "spmd/reshard.h"

namespace tessera::spmd {

// ---- gather ----
struct IndexedDim {
  size_t dim = 0;        // of the operand
  size_t component = 0;  // of the index vector (its place in start_index_map)
  int factor = -1;       // the reduction factor added for it
};

// Adds a reduction factor to `rule` for each dimension of gather `op`'s operand from which its
// indices pick single rows (in start_index_map, slice size 1, not a batching dimension); none for
// ui64 indices (which cannot be clamped in i64).
std::vector<IndexedDim> add_indexed_factors(const ir::Op& op, FactorRule& rule);

// Gather's local indices where the indexed dimensions `dims` of its operand are split
// (assign[factor] non-empty): each such component clamped as the whole gather clamps it and moved
// to this device's piece of `piece` rows; `in_piece` says, per index, whether every such row is
// on this device.
struct LocalIndices {
  ir::Tensor indices;
  ir::Tensor in_piece;  // i1, the indices' shape without the index vector dimension
};
LocalIndices local_indices(LocalContext& ctx, ir::Builder& b, const ir::Op& op, ir::Tensor indices,
                           const std::vector<IndexedDim>& dims, const FactorAxes& assign,
                           const std::vector<int64_t>& piece, const ir::Mesh& mesh);
// The local gather's result with the slices of indices not in this device's piece set to the
// identity of `combiner`, which combines the partial results (zero for a sum, the lowest value
// for a max, the highest for a min).
ir::Tensor zero_outside(const ir::Op& op, ir::Tensor result, const ir::Tensor& in_piece,
                        ir::OpKind combiner = ir::OpKind::Add);

// ---- slice: halo exchange ----
struct HaloChunk {
  int64_t width = 0;                 // elements sent along the dimension
  std::vector<int64_t> source;       // per receiving shard: the shard it takes this chunk from (-1: none)
  std::vector<int64_t> offset;       // per source shard: where in its piece the chunk starts
  bool remote() const;               // whether some receiver takes it from another shard
};
struct HaloPlan {
  int64_t shards = 1, piece = 0, result_piece = 0, stride = 1;
  std::vector<HaloChunk> chunks;     // in the order the received run joins them
  std::vector<int64_t> start;        // per receiving shard: its window's start in the chunks
  int64_t pad = 0;                   // zeros after the chunks, so every window fits
  bool reversed = false;             // the received run is reversed before the windows are cut
  int64_t lead = 0;                  // elements before the chunks (a shifted window may start before them)
  int64_t window = 0;                // a reduce_window's: the length cut, not strided (0: from result_piece)
  // A shifted window (pad, concatenate): per receiving shard, the operand index of its window's
  // first element; elements outside [0, size) are not the operand's. Empty for slice and reverse.
  std::vector<int64_t> first_index;
  int64_t size = 0;
  // A window over a base dilated by `dilation` > 1 (a convolution's lhs_dilation): the run brought
  // is plan.window undilated elements from first_index; dilated there, the window of
  // dilated_window elements starts phase[i] positions before element first_index[i].
  int64_t dilation = 1, dilated_window = 0;
  std::vector<int64_t> phase;
};

// The exchange for slicing [start, limit) with `stride` a dimension of `size` elements split into
// `shards` pieces; nullopt for an empty result.
std::optional<HaloPlan> plan_halo(int64_t size, int64_t start, int64_t limit, int64_t stride, int64_t shards);
// The exchange for reversing a dimension of `size` elements split into `shards` pieces: the
// result split alike, each device's piece the reverse of the mirrored part of the operand.
std::optional<HaloPlan> plan_reverse(int64_t size, int64_t shards);
// The exchange for a window shifted by `low` (negative: cropped): result element j, of `length`,
// is operand element j - low of a dimension of `size` elements split into `shards` pieces, the
// result split alike; nullopt where no device needs any operand element.
std::optional<HaloPlan> plan_shift(int64_t size, int64_t low, int64_t length, int64_t shards);
// The exchange for a reduce_window along a dimension of `size` elements split into `shards`
// pieces: result element j (of `length`) reads operand elements from `start` + j * stride over
// `extent` ((window - 1) * dilation + 1); each device receives the whole run its result piece
// reads (plan.window elements, those outside [0, size) to be masked), the result split alike.
// With a base `dilation` > 1 (operand element i at position i * dilation, zeros between),
// `start`, `stride` and `extent` count dilated positions and only the operand's own elements
// move (see HaloPlan::dilation).
std::optional<HaloPlan> plan_window(int64_t size, int64_t start, int64_t stride, int64_t extent, int64_t length,
                                    int64_t shards, int64_t dilation = 1);
// The exchange that brings receiving shard i `window` elements from first[i] (those outside
// [0, size) not the operand's) of a dimension of `size` elements split into `shards` pieces;
// with `needed`, only elements [needed[i].first, needed[i].second) of them (the rest of the run
// holds whatever the exchange leaves there).
std::optional<HaloPlan> plan_runs(int64_t size, int64_t shards, const std::vector<int64_t>& first, int64_t window,
                                  const std::vector<std::pair<int64_t, int64_t>>& needed = {});
// Bytes per device it moves (as the report counts a collective_permute: what is sent), for a
// piece of `other` elements of `element_bytes` across the other dimensions.
int64_t halo_bytes(const HaloPlan& plan, int64_t other, int64_t element_bytes);
// x's pieces (dimension `dim` split by `axes`) sliced along `dim`: the result is split by the
// same axes in pieces of plan.result_piece.
ir::Tensor halo_slice(LocalContext& ctx, ir::Tensor x, int64_t dim, const HaloPlan& plan, const ir::Mesh& mesh,
                      const std::vector<ir::AxisRef>& axes);

// True (i1, x's shape) where the window halo_slice cut by a shifted plan holds the operand's
// elements (see HaloPlan::first_index).
ir::Tensor window_valid(LocalContext& ctx, const ir::Tensor& x, int64_t dim, const HaloPlan& plan, const ir::Mesh& mesh,
                        const std::vector<ir::AxisRef>& axes);

// The run halo_slice cut by a plan over a dilated base (HaloPlan::dilation > 1), dilated with
// `fill` (a scalar) between and around its elements and cut to the device's window; x itself for
// dilation 1.
ir::Tensor dilate_window(LocalContext& ctx, ir::Tensor x, int64_t dim, const HaloPlan& plan, const ir::Mesh& mesh,
                         const std::vector<ir::AxisRef>& axes, const ir::Tensor& fill);

// ---- the ops (halo_ops.cpp) ----
// Whether no factor of `assign` uses any of `axes` (an exchange keeps them on one dimension).
bool free_of(const FactorAxes& assign, const std::vector<ir::AxisRef>& axes, const ir::Mesh& mesh);
// A dimension of an operand of slice, reverse, pad, concatenate, reduce_window or convolution
// kept split, exchanged by halo; the result is split alike along result_dim (a convolution's
// output spatial dimension; -1: the same dimension). A convolution whose kernel's spatial
// dimension kernel_dim is split alike (a kernel gradient: the "kernel" is the output gradient)
// sums over it instead: the result is partial over the axes, not split.
struct HaloDim {
  size_t dim;
  std::vector<ir::AxisRef> axes;
  HaloPlan plan;
  size_t operand = 0;
  int64_t result_dim = -1;
  int64_t kernel_dim = -1;
  size_t out() const { return result_dim < 0 ? dim : static_cast<size_t>(result_dim); }
};
// The dimensions slice, reverse, pad or concatenate `op` reads whole (no factor) that can stay
// split by axes no factor of `assign` uses, each with its exchange: those its operand, laid out as
// `have` (one per operand), arrives split on; for concatenate, one per operand along the
// concatenated dimension, split by the axes of the result's layout `result` or else of the
// first operand that arrives split there.
std::vector<HaloDim> halo_dims(const ir::Op& op, const FactorRule& rule, const FactorAxes& assign,
                               const std::vector<ir::Sharding>& have, const ir::Sharding& result, const ir::Mesh& mesh);
// Bytes per device the exchanges of `halo` for operand `operand` move, in order, from its piece
// of shape `local`.
int64_t halo_bytes(const std::vector<HaloDim>& halo, size_t operand, std::vector<int64_t> local, int64_t element_bytes);

// reduce_window `op`'s inputs (among its local operands) made the runs its windows read along the
// dimensions of `halo`, and its attributes with no padding there: the op on those is the result.
std::vector<ir::Tensor> halo_windows(LocalContext& ctx, const ir::Op& op, std::vector<ir::Tensor> operands,
                                     const std::vector<HaloDim>& halo, const ir::Mesh& mesh);
ir::AttrMap halo_window_attrs(const ir::Op& op, const std::vector<HaloDim>& halo);
// The same for a convolution (halo_conv.cpp): its lhs made, along each split spatial dimension,
// the run of the (dilated) input its output piece reads, zeros outside the input, and its
// attributes with no padding and no lhs dilation there.
ir::Tensor halo_conv_lhs(LocalContext& ctx, const ir::Op& op, ir::Tensor lhs, const std::vector<HaloDim>& halo,
                         const ir::Mesh& mesh);
ir::AttrMap halo_conv_attrs(const ir::Op& op, const std::vector<HaloDim>& halo);
// A convolution's split input spatial dimensions (axes no factor of `assign` uses), each with
// the exchange that keeps it split: its output spatial dimension split alike, or, where the
// kernel (`rhs`) arrives split alike along that spatial dimension, a partial sum over it.
std::vector<HaloDim> conv_halo_dims(const ir::Op& op, const FactorAxes& assign, const ir::Sharding& lhs,
                                    const ir::Sharding& rhs, const ir::Mesh& mesh);
// select_and_scatter (halo_select_scatter.cpp) along split window dimensions (padded or not,
// negative padding gathers) and a scatter with an identity: each device takes the windows that touch its piece of the
// operand (the operand's run and the source's, windows outside the source scattering the identity),
// selects and scatters them locally and keeps its piece. Two HaloDims per dimension (operand 0's
// run, then the source's).
std::vector<HaloDim> select_scatter_halo_dims(const ir::Op& op, const FactorAxes& assign, const ir::Sharding& operand,
                                              const ir::Mesh& mesh);
ir::Tensor halo_select_scatter(LocalContext& ctx, const ir::Op& op, std::vector<ir::Tensor> operands,
                               const std::vector<HaloDim>& halo, const ir::Mesh& mesh,
                               const std::function<ir::Tensor(const std::vector<ir::Tensor>&, const ir::Type&)>& emit);
// `op` on its local operands, the dimensions of `halo` by exchange (halo_slice) and the rest of
// the op locally: a slice or reverse of the other dimensions, a pad of the other dimensions, or
// for a concatenate each operand's window kept where it is that operand's.
ir::Tensor halo_op(LocalContext& ctx, const ir::Op& op, const std::vector<ir::Tensor>& operands,
                   const std::vector<HaloDim>& halo, const ir::Mesh& mesh);

}  // namespace tessera::spmd
