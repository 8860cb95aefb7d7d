// Kernels of gather and scatter, written after the index formulas of the StableHLO spec.
//
// Both map an index of one array (gather: the result; scatter: the updates) to an index of the
// operand: a start index read from the index array, plus a batching index (operand_batching_dims /
// input_batching_dims), plus a window offset. One IndexMap does that for both; gather clamps the
// start so the slice fits, scatter instead skips updates that land out of bounds.
#include <algorithm>

#include "interp/kernels.h"

namespace tessera::interp {

using ir::Literal;

namespace {

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

struct IndexMap {
  const Literal& indices;
  int64_t index_vector_dim;
  std::vector<int64_t> start_map;          // start index entry k -> operand dimension
  std::vector<int64_t> operand_batching;   // operand dimensions indexed by a batch dimension ...
  std::vector<int64_t> indices_batching;   // ... of the index array
  std::vector<int64_t> window_dims;        // dimensions of the mapped array that index the window
  std::vector<int64_t> batch_dims;         // the other dimensions of the mapped array
  std::vector<int64_t> window_operand;     // operand dimensions the window indexes, in order

  IndexMap(const Literal& idx, int64_t ivd, std::vector<int64_t> start, std::vector<int64_t> obatch,
           std::vector<int64_t> ibatch, std::vector<int64_t> window, const std::vector<int64_t>& dropped,
           int64_t mapped_rank, int64_t operand_rank)
      : indices(idx), index_vector_dim(ivd), start_map(std::move(start)),
        operand_batching(std::move(obatch)), indices_batching(std::move(ibatch)),
        window_dims(std::move(window)) {
    for (int64_t d = 0; d < mapped_rank; ++d)
      if (!contains(window_dims, d)) batch_dims.push_back(d);
    for (int64_t d = 0; d < operand_rank; ++d)
      if (!contains(dropped, d) && !contains(operand_batching, d)) window_operand.push_back(d);
  }

  // The operand index for `index` of the mapped array. With `clamp_sizes`, each start is clamped
  // so that a slice of those sizes fits in `operand_shape`.
  void operand_index(const std::vector<int64_t>& index, std::span<const int64_t> operand_shape,
                     const std::vector<int64_t>* clamp_sizes, std::vector<int64_t>& out) const {
    std::fill(out.begin(), out.end(), 0);
    std::vector<int64_t> batch;
    for (int64_t d : batch_dims) batch.push_back(index[static_cast<size_t>(d)]);
    // Position in the index array: the batch index with the index vector dimension inserted.
    std::vector<int64_t> pos = batch;
    bool has_vector = index_vector_dim < indices.type().rank();
    if (has_vector) pos.insert(pos.begin() + index_vector_dim, 0);
    std::vector<int64_t> strides = indices.strides();
    for (size_t k = 0; k < start_map.size(); ++k) {
      if (has_vector) pos[static_cast<size_t>(index_vector_dim)] = static_cast<int64_t>(k);
      int64_t start = index_value(indices, flat_index(pos, strides));
      auto d = static_cast<size_t>(start_map[k]);
      if (clamp_sizes) start = std::clamp<int64_t>(start, 0, operand_shape[d] - (*clamp_sizes)[d]);
      out[d] += start;
    }
    for (size_t i = 0; i < operand_batching.size(); ++i) {
      int64_t d_start = indices_batching[i];
      out[static_cast<size_t>(operand_batching[i])] +=
          batch[static_cast<size_t>(d_start - (d_start < index_vector_dim ? 0 : 1))];
    }
    for (size_t i = 0; i < window_dims.size(); ++i)
      out[static_cast<size_t>(window_operand[i])] += index[static_cast<size_t>(window_dims[i])];
  }
};

}  // namespace

Results eval_Gather(const EvalContext& ctx) {
  const Literal& operand = ctx.operand(0);
  const Literal& indices = ctx.operand(1);
  const auto& dn = ctx.op.attrs().get<ir::GatherDims>("dimension_numbers");
  const auto& sizes = ctx.op.attrs().get<std::vector<int64_t>>("slice_sizes");
  Literal out(ctx.result_type());
  IndexMap map(indices, dn.index_vector_dim, dn.start_index_map, dn.operand_batching_dims,
               dn.start_indices_batching_dims, dn.offset_dims, dn.collapsed_slice_dims,
               out.type().rank(), operand.type().rank());
  std::vector<int64_t> strides = operand.strides();
  std::vector<int64_t> at(operand.shape().size());
  int64_t flat = 0;
  for_each_index(out.shape(), [&](const std::vector<int64_t>& index) {
    map.operand_index(index, operand.shape(), &sizes, at);
    copy_element(operand, flat_index(at, strides), out, flat++);
  });
  return one(std::move(out));
}

// N inputs, the indices, N updates; the update computation folds (result, update) per element.
Results eval_Scatter(const EvalContext& ctx) {
  size_t n = (ctx.num_operands() - 1) / 2;
  const Literal& indices = ctx.operand(n);
  const auto& dn = ctx.op.attrs().get<ir::ScatterDims>("scatter_dimension_numbers");
  Results results;
  std::vector<const Literal*> updates;
  for (size_t k = 0; k < n; ++k) {
    results.push_back(ctx.operand(k));
    updates.push_back(&ctx.operand(n + 1 + k));
  }
  const Literal& first = *updates[0];
  IndexMap map(indices, dn.index_vector_dim, dn.scatter_dims_to_operand_dims, dn.input_batching_dims,
               dn.scatter_indices_batching_dims, dn.update_window_dims, dn.inserted_window_dims,
               first.type().rank(), results[0].type().rank());
  ScalarBody body(ctx, 0, n);
  std::span<const int64_t> shape = results[0].shape();
  std::vector<int64_t> strides = results[0].strides();
  std::vector<int64_t> at(shape.size());
  int64_t flat = 0;
  for_each_index(first.shape(), [&](const std::vector<int64_t>& index) {
    map.operand_index(index, shape, nullptr, at);
    bool inside = true;
    for (size_t d = 0; d < at.size(); ++d) inside = inside && at[d] >= 0 && at[d] < shape[d];
    if (inside) body.apply(results, flat_index(at, strides), updates, flat);
    ++flat;
  });
  return results;
}

}  // namespace tessera::interp
