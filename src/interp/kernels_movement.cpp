// Kernels that move elements without looking at them: broadcast_in_dim, reshape, transpose, slice,
// dynamic_slice, dynamic_update_slice, concatenate, pad and reverse, plus the slicing and
// concatenation helpers the collectives use.
//
// They are type-agnostic: each maps result indices to operand indices and copies element bytes,
// so no element-type dispatch is needed here.
#include <algorithm>

#include "interp/kernels.h"

namespace tessera::interp {

using ir::Literal;

namespace {

const std::vector<int64_t>& ints(const EvalContext& ctx, const std::string& name) {
  return ctx.op.attrs().get<std::vector<int64_t>>(name);
}

// Fills `out` by reading, for each of its indices, the element of `in` at the index that
// map(out_index, in_index) writes into in_index.
template <typename Map>
void gather_from(const Literal& in, Literal& out, Map map) {
  std::vector<int64_t> in_strides = in.strides();
  std::vector<int64_t> in_index(in.shape().size());
  int64_t flat = 0;
  for_each_index(out.shape(), [&](const std::vector<int64_t>& index) {
    map(index, in_index);
    copy_element(in, flat_index(in_index, in_strides), out, flat++);
  });
}

// The start indices held by operands first.. of a dynamic slice, clamped so that a block of `sizes`
// fits in `shape` (the spec clamps instead of failing).
std::vector<int64_t> clamped_starts(const EvalContext& ctx, size_t first,
                                    std::span<const int64_t> shape, std::span<const int64_t> sizes) {
  std::vector<int64_t> start(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    start[d] = std::clamp<int64_t>(index_value(ctx.operand(first + d), 0), 0, shape[d] - sizes[d]);
  return start;
}

}  // namespace

Literal slice_literal(const Literal& x, std::span<const int64_t> start, std::span<const int64_t> limit) {
  std::vector<int64_t> shape(start.size());
  for (size_t d = 0; d < shape.size(); ++d) shape[d] = limit[d] - start[d];
  Literal out(x.type().with_shape(shape));
  gather_from(x, out, [&](const std::vector<int64_t>& o, std::vector<int64_t>& i) {
    for (size_t d = 0; d < o.size(); ++d) i[d] = start[d] + o[d];
  });
  return out;
}

Literal block_of(const Literal& x, int64_t dim, int64_t index, int64_t count) {
  std::vector<int64_t> start(x.shape().size(), 0);
  std::vector<int64_t> limit = x.shape();
  int64_t size = x.shape()[static_cast<size_t>(dim)] / count;
  start[static_cast<size_t>(dim)] = index * size;
  limit[static_cast<size_t>(dim)] = (index + 1) * size;
  return slice_literal(x, start, limit);
}

void write_block(const Literal& x, Literal& into, std::span<const int64_t> start) {
  std::vector<int64_t> strides = into.strides();
  std::vector<int64_t> at(start.size());
  int64_t flat = 0;
  for_each_index(x.shape(), [&](const std::vector<int64_t>& index) {
    for (size_t d = 0; d < index.size(); ++d) at[d] = start[d] + index[d];
    copy_element(x, flat++, into, flat_index(at, strides));
  });
}

Literal concatenate_literals(std::span<const Literal* const> xs, int64_t dim) {
  std::vector<int64_t> shape = xs[0]->shape();
  auto d = static_cast<size_t>(dim);
  shape[d] = 0;
  for (const Literal* x : xs) shape[d] += x->shape()[d];
  Literal out(xs[0]->type().with_shape(shape));
  std::vector<int64_t> start(shape.size(), 0);
  for (const Literal* x : xs) {
    write_block(*x, out, start);
    start[d] += x->shape()[d];
  }
  return out;
}

Literal repeat_literal(const Literal& x, int64_t dim, int64_t n) {
  std::vector<const Literal*> copies(static_cast<size_t>(n), &x);
  return concatenate_literals(copies, dim);
}

// Operand dimension i maps to result dimension dims[i]; a size-1 operand dimension is repeated.
Results eval_BroadcastInDim(const EvalContext& ctx) {
  const Literal& x = ctx.operand(0);
  const auto& dims = ints(ctx, "broadcast_dimensions");
  Literal out(ctx.result_type());
  gather_from(x, out, [&](const std::vector<int64_t>& o, std::vector<int64_t>& i) {
    for (size_t d = 0; d < dims.size(); ++d)
      i[d] = x.shape()[d] == 1 ? 0 : o[static_cast<size_t>(dims[d])];
  });
  return one(std::move(out));
}

// Row-major order is kept, so the bytes are the same.
Results eval_Reshape(const EvalContext& ctx) {
  Literal out(ctx.result_type());
  std::copy(ctx.operand(0).bytes().begin(), ctx.operand(0).bytes().end(), out.bytes().begin());
  return one(std::move(out));
}

// Result dimension j is operand dimension permutation[j].
Results eval_Transpose(const EvalContext& ctx) {
  const auto& perm = ints(ctx, "permutation");
  Literal out(ctx.result_type());
  gather_from(ctx.operand(0), out, [&](const std::vector<int64_t>& o, std::vector<int64_t>& i) {
    for (size_t j = 0; j < perm.size(); ++j) i[static_cast<size_t>(perm[j])] = o[j];
  });
  return one(std::move(out));
}

Results eval_Slice(const EvalContext& ctx) {
  const auto& start = ints(ctx, "start_indices");
  const auto& strides = ints(ctx, "strides");
  Literal out(ctx.result_type());
  gather_from(ctx.operand(0), out, [&](const std::vector<int64_t>& o, std::vector<int64_t>& i) {
    for (size_t d = 0; d < o.size(); ++d) i[d] = start[d] + o[d] * strides[d];
  });
  return one(std::move(out));
}

Results eval_DynamicSlice(const EvalContext& ctx) {
  const Literal& x = ctx.operand(0);
  const auto& sizes = ints(ctx, "slice_sizes");
  std::vector<int64_t> start = clamped_starts(ctx, 1, x.shape(), sizes);
  std::vector<int64_t> limit(start.size());
  for (size_t d = 0; d < start.size(); ++d) limit[d] = start[d] + sizes[d];
  return one(slice_literal(x, start, limit));
}

Results eval_DynamicUpdateSlice(const EvalContext& ctx) {
  Literal out = ctx.operand(0);
  const Literal& update = ctx.operand(1);
  write_block(update, out, clamped_starts(ctx, 2, out.shape(), update.shape()));
  return one(std::move(out));
}

Results eval_Concatenate(const EvalContext& ctx) {
  std::vector<const Literal*> xs;
  for (size_t i = 0; i < ctx.num_operands(); ++i) xs.push_back(&ctx.operand(i));
  return one(concatenate_literals(xs, ctx.op.attrs().get<int64_t>("dimension")));
}

// Operand element i lands at low + i * (interior + 1) in each dimension; negative edge padding
// drops the elements that land outside the result.
Results eval_Pad(const EvalContext& ctx) {
  const Literal& x = ctx.operand(0);
  const Literal& value = ctx.operand(1);
  const auto& low = ints(ctx, "edge_padding_low");
  const auto& interior = ints(ctx, "interior_padding");
  Literal out(ctx.result_type());
  for (int64_t i = 0; i < out.num_elements(); ++i) copy_element(value, 0, out, i);
  std::vector<int64_t> strides = out.strides();
  std::vector<int64_t> at(x.shape().size());
  int64_t flat = 0;
  for_each_index(x.shape(), [&](const std::vector<int64_t>& index) {
    bool inside = true;
    for (size_t d = 0; d < index.size(); ++d) {
      at[d] = low[d] + index[d] * (interior[d] + 1);
      inside = inside && at[d] >= 0 && at[d] < out.shape()[d];
    }
    if (inside) copy_element(x, flat, out, flat_index(at, strides));
    ++flat;
  });
  return one(std::move(out));
}

Results eval_Reverse(const EvalContext& ctx) {
  const Literal& x = ctx.operand(0);
  const auto& dims = ints(ctx, "dimensions");
  Literal out(ctx.result_type());
  gather_from(x, out, [&](const std::vector<int64_t>& o, std::vector<int64_t>& i) {
    for (size_t d = 0; d < o.size(); ++d) {
      bool flip = std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) != dims.end();
      i[d] = flip ? x.shape()[d] - 1 - o[d] : o[d];
    }
  });
  return one(std::move(out));
}

}  // namespace tessera::interp
