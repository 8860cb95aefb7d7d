// Shape rules of data-movement ops: broadcast, reshape, transpose, slices, concatenate, pad,
// reverse, gather, scatter.
#include <algorithm>
#include <set>

#include "ir/shape_rules.h"
#include "support/memory.h"
#include "support/strings.h"

namespace tessera::ir::shape_rules {
namespace {

using Types = std::vector<Type>;
using support::join;

const std::vector<int64_t>& ints(const ShapeQuery& q, const std::string& name) {
  const auto* v = q.attrs.find<std::vector<int64_t>>(name);
  if (v == nullptr) reject(q, "has no '{}' attribute", name);
  return *v;
}

void check_length(const ShapeQuery& q, std::string_view name, size_t n, int64_t rank) {
  if (static_cast<int64_t>(n) != rank)
    reject(q, "{} has {} entries for operand rank {}", name, n, rank);
}

void check_unique_dims(const ShapeQuery& q, std::string_view name, const std::vector<int64_t>& d,
                       int64_t rank) {
  std::set<int64_t> seen;
  for (int64_t x : d) {
    check_dimension(q, name, x, rank);
    if (!seen.insert(x).second) reject(q, "{} repeats dimension {}", name, x);
  }
}

void check_sorted(const ShapeQuery& q, std::string_view name, const std::vector<int64_t>& d) {
  if (!std::is_sorted(d.begin(), d.end())) reject(q, "{} [{}] must be sorted", name, join(d, ", "));
}

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The names of gather's or scatter's index attributes, for messages.
struct IndexNames {
  std::string_view operand, indices, operand_batching, indices_batching, index_map;
};

// What gather and scatter require alike of their indices (gather C2, C3, C10, C13-C19; scatter
// C12, C14-C22): the index vector dimension, one index per mapped operand dimension, and batching
// dimensions that pair operand and index dimensions of equal sizes.
void check_index_dims(const ShapeQuery& q, const IndexNames& n, const Type& operand, const Type& idx, int64_t ivd,
                      const std::vector<int64_t>& operand_batching, const std::vector<int64_t>& indices_batching,
                      const std::vector<int64_t>& index_map) {
  if (ivd < 0 || ivd > idx.rank()) reject(q, "index_vector_dim = {} is out of range for {} {}", ivd, n.indices, to_string(idx));
  int64_t index_len = ivd == idx.rank() ? 1 : idx.shape[static_cast<size_t>(ivd)];
  if (index_len != kDynamic && static_cast<int64_t>(index_map.size()) != index_len)
    reject(q, "{} has {} entries, but index vectors have {}", n.index_map, index_map.size(), index_len);
  check_unique_dims(q, fmt::format("{} and {}", n.index_map, n.operand_batching), concat(index_map, operand_batching),
                    operand.rank());
  check_sorted(q, n.operand_batching, operand_batching);
  check_unique_dims(q, n.indices_batching, indices_batching, idx.rank());
  if (std::find(indices_batching.begin(), indices_batching.end(), ivd) != indices_batching.end())
    reject(q, "{} holds index_vector_dim {}", n.indices_batching, ivd);
  if (operand_batching.size() != indices_batching.size())
    reject(q, "{} has {} entries and {} has {}", n.operand_batching, operand_batching.size(), n.indices_batching,
           indices_batching.size());
  for (size_t i = 0; i < operand_batching.size(); ++i) {
    int64_t a = operand.shape[static_cast<size_t>(operand_batching[i])];
    int64_t b = idx.shape[static_cast<size_t>(indices_batching[i])];
    if (a != kDynamic && b != kDynamic && a != b)
      reject(q, "{} dimension {} has size {}, but {} dimension {} (its batching pair) has {}", n.operand,
             operand_batching[i], a, n.indices, indices_batching[i], b);
  }
}

void check_scalar_indices(const ShapeQuery& q, size_t first, size_t count) {
  if (q.operands.size() != first + count)
    reject(q, "expects {} index operands for operand rank {}, got {}", count, count,
           q.operands.size() - std::min(first, q.operands.size()));
  for (size_t i = first; i < q.operands.size(); ++i)
    if (q.operands[i].rank() != 0 || !is_integer(q.operands[i].element))
      reject(q, "index operand {} has type {}, must be an integer scalar", i,
             to_string(q.operands[i]));
  // dynamic_slice C3, dynamic_update_slice C5: the start indices have one type.
  for (size_t i = first + 1; i < q.operands.size(); ++i)
    if (q.operands[i] != q.operands[first])
      reject(q, "index operand {} has type {}, but index operand {} has {}: the start indices have one type", i,
             to_string(q.operands[i]), first, to_string(q.operands[first]));
}

}  // namespace

Types infer_BroadcastInDim(const ShapeQuery& q) {
  const Type& in = q.operands[0];
  const Type& out = declared_result(q);
  const auto& dims = ints(q, "broadcast_dimensions");
  check_length(q, "broadcast_dimensions", dims.size(), in.rank());
  check_unique_dims(q, "broadcast_dimensions", dims, out.rank());
  if (out.element != in.element)
    reject(q, "result {} has another element type than operand {}", to_string(out), to_string(in));
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t a = in.shape[i], b = out.shape[static_cast<size_t>(dims[i])];
    if (a != 1 && a != b)
      reject(q, "operand dimension {} (size {}) cannot broadcast to result dimension {} (size {})",
             i, a, dims[i], b);
  }
  return {out};
}

Types infer_Reshape(const ShapeQuery& q) {
  const Type& in = q.operands[0];
  const Type& out = declared_result(q);
  // Before shape refinement a '?' size leaves the count unknown: only the element types are checked.
  if (!in.is_static() || !out.is_static()) {
    if (out.element != in.element)
      reject(q, "cannot reshape {} to {}: the element types differ", to_string(in), to_string(out));
    return {out};
  }
  if (out.element != in.element || out.num_elements() != in.num_elements())
    reject(q, "cannot reshape {} ({} elements) to {} ({} elements)", to_string(in),
           in.num_elements(), to_string(out), out.num_elements());
  return {out};
}

Types infer_Transpose(const ShapeQuery& q) {
  const Type& in = q.operands[0];
  const auto& perm = ints(q, "permutation");
  check_length(q, "permutation", perm.size(), in.rank());
  check_unique_dims(q, "permutation", perm, in.rank());
  std::vector<int64_t> shape;
  for (int64_t p : perm) shape.push_back(in.shape[static_cast<size_t>(p)]);
  return {in.with_shape(shape)};
}

Types infer_Slice(const ShapeQuery& q) {
  const Type& in = q.operands[0];
  const auto& start = ints(q, "start_indices");
  const auto& limit = ints(q, "limit_indices");
  const auto& strides = ints(q, "strides");
  check_length(q, "start_indices", start.size(), in.rank());
  check_length(q, "limit_indices", limit.size(), in.rank());
  check_length(q, "strides", strides.size(), in.rank());
  std::vector<int64_t> shape;
  for (size_t d = 0; d < start.size(); ++d) {
    if (start[d] < 0 || start[d] > limit[d] || limit[d] > in.shape[d] || strides[d] < 1)
      reject(q, "dimension {}: slice [{}:{}:{}] does not fit size {}", d, start[d], limit[d],
             strides[d], in.shape[d]);
    shape.push_back(support::ceil_div(limit[d] - start[d], strides[d]));
  }
  return {in.with_shape(shape)};
}

Types infer_DynamicSlice(const ShapeQuery& q) {
  if (q.operands.empty()) reject(q, "expects an operand");
  const Type& in = q.operands[0];
  check_scalar_indices(q, 1, static_cast<size_t>(in.rank()));
  const auto& sizes = ints(q, "slice_sizes");
  check_length(q, "slice_sizes", sizes.size(), in.rank());
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] < 0 || (in.shape[d] != kDynamic && sizes[d] > in.shape[d]))
      reject(q, "slice_sizes[{}] = {} does not fit dimension size {}", d, sizes[d], in.shape[d]);
  return {in.with_shape(sizes)};
}

Types infer_DynamicUpdateSlice(const ShapeQuery& q) {
  if (q.operands.size() < 2) reject(q, "expects an operand and an update");
  const Type& in = q.operands[0];
  const Type& up = q.operands[1];
  if (up.element != in.element || up.rank() != in.rank())
    reject(q, "update {} does not match operand {}", to_string(up), to_string(in));
  for (size_t d = 0; d < in.shape.size(); ++d)
    if (up.shape[d] > in.shape[d])
      reject(q, "update dimension {} (size {}) is larger than the operand's ({})", d, up.shape[d],
             in.shape[d]);
  check_scalar_indices(q, 2, static_cast<size_t>(in.rank()));
  return {in};
}

Types infer_Concatenate(const ShapeQuery& q) {
  if (q.operands.empty()) reject(q, "expects at least one operand");
  const Type& first = q.operands[0];
  int64_t dim = q.attrs.get_or<int64_t>("dimension", -1);
  check_dimension(q, "dimension", dim, first.rank());
  std::vector<int64_t> shape = first.shape;
  shape[static_cast<size_t>(dim)] = 0;
  for (size_t i = 0; i < q.operands.size(); ++i) {
    const Type& t = q.operands[i];
    bool ok = t.element == first.element && t.rank() == first.rank();
    for (size_t d = 0; ok && d < t.shape.size(); ++d)
      ok = static_cast<int64_t>(d) == dim || t.shape[d] == first.shape[d];
    if (!ok)
      reject(q, "operand {} has type {}, which does not concatenate with {} along dimension {}", i,
             to_string(t), to_string(first), dim);
    shape[static_cast<size_t>(dim)] += t.shape[static_cast<size_t>(dim)];
  }
  return {first.with_shape(shape)};
}

Types infer_Pad(const ShapeQuery& q) {
  const Type& in = q.operands[0];
  const Type& value = q.operands[1];
  if (value.rank() != 0 || value.element != in.element)
    reject(q, "padding value {} must be a scalar of {}'s element type", to_string(value),
           to_string(in));
  const auto& lo = ints(q, "edge_padding_low");
  const auto& hi = ints(q, "edge_padding_high");
  const auto& interior = ints(q, "interior_padding");
  check_length(q, "edge_padding_low", lo.size(), in.rank());
  check_length(q, "edge_padding_high", hi.size(), in.rank());
  check_length(q, "interior_padding", interior.size(), in.rank());
  std::vector<int64_t> shape;
  for (size_t d = 0; d < in.shape.size(); ++d) {
    if (interior[d] < 0) reject(q, "interior_padding[{}] = {} is negative", d, interior[d]);
    int64_t n = in.shape[d];
    int64_t size = lo[d] + hi[d] + n + std::max<int64_t>(n - 1, 0) * interior[d];
    if (size < 0) reject(q, "dimension {} would have negative size {}", d, size);
    shape.push_back(size);
  }
  return {in.with_shape(shape)};
}

Types infer_Reverse(const ShapeQuery& q) {
  check_unique_dims(q, "dimensions", ints(q, "dimensions"), q.operands[0].rank());
  return {q.operands[0]};
}

Types infer_Gather(const ShapeQuery& q) {
  const Type& in = q.operands[0];
  const Type& idx = q.operands[1];
  const auto* dn = q.attrs.find<GatherDims>("dimension_numbers");
  if (dn == nullptr) reject(q, "has no dimension_numbers");
  if (!is_integer(idx.element)) reject(q, "start_indices {} must be integers", to_string(idx));
  const auto& sizes = ints(q, "slice_sizes");
  check_length(q, "slice_sizes", sizes.size(), in.rank());
  int64_t ivd = dn->index_vector_dim;
  check_index_dims(q, {"operand", "start_indices", "operand_batching_dims", "start_indices_batching_dims", "start_index_map"},
                   in, idx, ivd, dn->operand_batching_dims, dn->start_indices_batching_dims, dn->start_index_map);
  std::vector<int64_t> collapsed = concat(dn->collapsed_slice_dims, dn->operand_batching_dims);
  check_unique_dims(q, "collapsed_slice_dims and operand_batching_dims", collapsed, in.rank());
  check_sorted(q, "collapsed_slice_dims", dn->collapsed_slice_dims);
  check_sorted(q, "offset_dims", dn->offset_dims);
  std::vector<int64_t> batch_sizes, offset_sizes;
  for (int64_t d = 0; d < idx.rank(); ++d)
    if (d != ivd) batch_sizes.push_back(idx.shape[static_cast<size_t>(d)]);
  for (int64_t d = 0; d < in.rank(); ++d) {
    int64_t s = sizes[static_cast<size_t>(d)];
    // A dynamic ('?') dimension is checked once refined (transforms/refine_shapes.h).
    int64_t size = in.shape[static_cast<size_t>(d)];
    if (s < 0 || (size != kDynamic && s > size))
      reject(q, "slice_sizes[{}] = {} does not fit dimension size {}", d, s, size);
    bool dropped = std::find(collapsed.begin(), collapsed.end(), d) != collapsed.end();
    if (dropped && s > 1) reject(q, "collapsed or batching dimension {} has slice size {}, must be 0 or 1", d, s);
    if (!dropped) offset_sizes.push_back(s);
  }
  if (offset_sizes.size() != dn->offset_dims.size())
    reject(q, "offset_dims has {} entries for {} uncollapsed slice dimensions",
           dn->offset_dims.size(), offset_sizes.size());
  int64_t rank = static_cast<int64_t>(batch_sizes.size() + offset_sizes.size());
  check_unique_dims(q, "offset_dims", dn->offset_dims, rank);
  std::vector<int64_t> shape;
  size_t bi = 0, oi = 0;
  for (int64_t d = 0; d < rank; ++d) {
    bool offset = std::find(dn->offset_dims.begin(), dn->offset_dims.end(), d) != dn->offset_dims.end();
    shape.push_back(offset ? offset_sizes[oi++] : batch_sizes[bi++]);
  }
  return {in.with_shape(shape)};
}

Types infer_Scatter(const ShapeQuery& q) {
  size_t n = q.operands.size();
  if (n < 3 || n % 2 == 0) reject(q, "expects N inputs, the indices and N updates; got {} operands", n);
  size_t k = (n - 1) / 2;
  const auto* dn = q.attrs.find<ScatterDims>("scatter_dimension_numbers");
  if (dn == nullptr) reject(q, "has no scatter_dimension_numbers");
  const Type& idx = q.operands[k];
  if (!is_integer(idx.element)) reject(q, "scatter_indices {} must be integers", to_string(idx));
  Types out(q.operands.begin(), q.operands.begin() + static_cast<long>(k));
  for (size_t i = 1; i < k; ++i)
    if (out[i].shape != out[0].shape) reject(q, "inputs {} and 0 differ in shape", i);
  const Type& in = out[0];
  int64_t ivd = dn->index_vector_dim;
  check_index_dims(q, {"input", "scatter_indices", "input_batching_dims", "scatter_indices_batching_dims",
                       "scatter_dims_to_operand_dims"},
                   in, idx, ivd, dn->input_batching_dims, dn->scatter_indices_batching_dims,
                   dn->scatter_dims_to_operand_dims);
  std::vector<int64_t> dropped = concat(dn->inserted_window_dims, dn->input_batching_dims);
  check_unique_dims(q, "inserted_window_dims and input_batching_dims", dropped, in.rank());
  check_sorted(q, "inserted_window_dims", dn->inserted_window_dims);
  const std::vector<int64_t>& window = dn->update_window_dims;
  if (static_cast<int64_t>(window.size() + dropped.size()) != in.rank())
    reject(q, "input {} has rank {}, but update_window_dims, inserted_window_dims and input_batching_dims name {}",
           to_string(in), in.rank(), window.size() + dropped.size());
  check_sorted(q, "update_window_dims", window);
  // The updates' shape (C4): the index dimensions but index_vector_dim, in order, at the dimensions
  // update_window_dims does not name, and at those it names window sizes within the input's kept
  // dimensions.
  std::vector<int64_t> scatter_sizes, kept;
  for (int64_t d = 0; d < idx.rank(); ++d)
    if (d != ivd) scatter_sizes.push_back(idx.shape[static_cast<size_t>(d)]);
  for (int64_t d = 0; d < in.rank(); ++d)
    if (std::find(dropped.begin(), dropped.end(), d) == dropped.end()) kept.push_back(in.shape[static_cast<size_t>(d)]);
  int64_t rank = static_cast<int64_t>(scatter_sizes.size() + window.size());
  check_unique_dims(q, "update_window_dims", window, rank);
  for (size_t i = 0; i < k; ++i) {
    const Type& up = q.operands[k + 1 + i];
    if (up.element != out[i].element)
      reject(q, "update {} has type {}, input has {}", i, to_string(up), to_string(out[i]));
    if (up.rank() != rank)
      reject(q, "update {} has rank {}, expected {} scatter plus {} window dimensions", i, up.rank(),
             scatter_sizes.size(), window.size());
    size_t si = 0, wi = 0;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t size = up.shape[static_cast<size_t>(d)];
      bool in_window = std::find(window.begin(), window.end(), d) != window.end();
      int64_t bound = in_window ? kept[wi++] : scatter_sizes[si++];
      bool fits = size == kDynamic || bound == kDynamic || (in_window ? size <= bound : size == bound);
      if (!fits)
        reject(q, "update {} {} has size {} in dimension {}, where {} {}", i, to_string(up), size, d,
               in_window ? "the input's window allows at most" : "scatter_indices give", bound);
    }
  }
  return out;
}

}  // namespace tessera::ir::shape_rules
