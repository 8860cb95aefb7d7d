// The fast kernels and the dispatch that picks them (see accelerate.h).
#include "exec/accelerate.h"

#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>
#include <string_view>

#include "exec/accelerate_internal.h"
#include "exec/contraction.h"
#include "exec/fusion.h"
#include "exec/strided.h"
#include "interp/kernels.h"
#include "interp/scalar_ops.h"
#include "support/run_cache.h"
#include "support/threads.h"

namespace tessera::exec {

namespace {

using namespace accel;  // NOLINT: the kernels' shared helpers

// ---- Contractions: strided GEMM calls (contraction.h) ----

// bf16 x bf16 (mixed-precision training's matmuls): the operands widened to f32 exactly, one f32
// GEMM, and each result rounded once to bf16 -- the reference's f32 accumulation, in BLAS's order.
// The widened copies live in buffers of the run's cache kept for the next call.
struct WideningBuffers {
  std::vector<float> a, b, c;
};

bool dot_bf16(const Op& op, Operands in, std::vector<Literal>& out) {
  const ContractionPlan& plan =
      cached_contraction(&op, in[0]->shape(), in[1]->shape(), op.attrs().get<ir::DotDims>("dot_dimension_numbers"));
  if (!fits_blas(plan)) return false;
  auto& [a, b, c] = support::run_local<WideningBuffers>();
  auto widen = [](const Literal& x, std::vector<float>& to) {
    const auto* bits = data<uint16_t>(x);
    to.resize(static_cast<size_t>(x.num_elements()));
    for (size_t i = 0; i < to.size(); ++i) to[i] = ir::bf16_to_f32(bits[i]);
  };
  widen(*in[0], a);
  widen(*in[1], b);
  c.assign(static_cast<size_t>(plan.out_elements), 0.0f);
  run_contraction(plan, a.data(), b.data(), c.data(), true);
  Result r(op.result(0)->type(), out, false);  // every element written
  auto* bits = data<uint16_t>(*r);
  for (size_t i = 0; i < c.size(); ++i) bits[i] = ir::f32_to_bf16(c[i]);
  return true;
}

bool dot_general(const Op& op, Operands in, std::vector<Literal>& out) {
  ElementType e = op.result(0)->type().element;
  if (e == ElementType::bf16 && in[0]->element() == e && in[1]->element() == e) return dot_bf16(op, in, out);
  if (!is_f(e) || in[0]->element() != e || in[1]->element() != e) return false;
  const ContractionPlan& plan =
      cached_contraction(&op, in[0]->shape(), in[1]->shape(), op.attrs().get<ir::DotDims>("dot_dimension_numbers"));
  if (!fits_blas(plan)) return false;
  Result r(op.result(0)->type(), out, false);  // a fresh one is zero-filled: the GEMMs add into it
  if (e == ElementType::f32) run_contraction(plan, data<float>(*in[0]), data<float>(*in[1]), data<float>(*r), r.fresh());
  else run_contraction(plan, data<double>(*in[0]), data<double>(*in[1]), data<double>(*r), r.fresh());
  return true;
}

// ---- Reductions ----

// The binary op of a reduction body, if it is one the fast loops know.
std::optional<OpKind> combiner(const Op& op) {
  auto kind = ir::region_combiner(op);
  if (!kind) return std::nullopt;
  switch (*kind) {
    case OpKind::Add: case OpKind::Multiply: case OpKind::Maximum: case OpKind::Minimum: return kind;
    default: return std::nullopt;
  }
}

// A reduction over the trailing dimensions (softmax, RMSNorm): out[r] folds the n contiguous
// elements of row r in order. One row is a chain of dependent adds (latency-bound); folding
// kRows rows side by side keeps each row's order, so each result's bits, and overlaps the chains.
template <typename E, typename Fn>
void reduce_rows(const typename E::storage* src, typename E::storage* dst, int64_t rows, int64_t n) {
  using T = typename E::storage;
  constexpr int64_t kRows = 8;
  int64_t r = 0;
  for (; r + kRows <= rows; r += kRows) {
    T acc[kRows];
    for (int64_t k = 0; k < kRows; ++k) acc[k] = dst[r + k];
    const T* row = src + r * n;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < kRows; ++k) acc[k] = Fn::template apply<E>(acc[k], row[k * n + i]);
    for (int64_t k = 0; k < kRows; ++k) dst[r + k] = acc[k];
  }
  for (; r < rows; ++r) {
    T acc = dst[r];
    for (int64_t i = 0; i < n; ++i) acc = Fn::template apply<E>(acc, src[r * n + i]);
    dst[r] = acc;
  }
}

template <typename E, typename Fn>
void reduce_loop(const Literal& x, const Literal& init, const Ints& dims, Literal& out) {
  using T = typename E::storage;
  const T* src = data<T>(x);
  T* dst = data<T>(out);
  std::fill(dst, dst + out.num_elements(), data<T>(init)[0]);
  // Reduced dimensions all trailing: rows of contiguous elements.
  size_t kept = x.shape().size() - dims.size();
  bool trailing = !dims.empty() && x.num_elements() > 0;
  for (size_t k = 0; k < dims.size(); ++k) trailing = trailing && std::count(dims.begin(), dims.end(), int64_t(kept + k)) == 1;
  if (trailing) {
    // Rows spread over the free threads (support/threads.h) in groups of whole kRows blocks: each
    // row is folded by one thread in its own order, so the bits do not depend on the threads.
    int64_t rows = out.num_elements(), n = x.num_elements() / rows;
    int64_t threads = x.num_elements() >= kSpreadElements ? support::available_threads() : 1;
    int64_t per = std::max<int64_t>((rows + 4 * threads - 1) / (4 * threads), kSpreadElements / 4 / n);
    per = (per + 7) / 8 * 8;
    if (threads <= 1 || per >= rows) {
      reduce_rows<E, Fn>(src, dst, rows, n);
      return;
    }
    support::parallel_chunks((rows + per - 1) / per, [&](int64_t c) {
      int64_t first = c * per;
      reduce_rows<E, Fn>(src + first * n, dst + first, std::min(per, rows - first), n);
    });
    return;
  }
  size_t rank = x.shape().size();
  if (x.num_elements() == 0) return;
  // The output offset each input dimension moves by: 0 along reduced dimensions.
  Dims os(rank);
  RowMajor ostr(out.shape());
  for (size_t d = 0, o = 0; d < rank; ++d)
    if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) == dims.end()) os[d] = ostr[o++];
  if (rank == 0) {
    dst[0] = Fn::template apply<E>(dst[0], src[0]);
    return;
  }
  const int64_t n = x.shape()[rank - 1], step = os[rank - 1];
  // Folds columns [first, last) of the innermost dimension (all of it when that is reduced).
  auto sweep = [&](int64_t first, int64_t last) {
    Dims index(rank);
    int64_t in = 0, o = 0;
    while (true) {
      // Input in row-major order, as the reference kernel folds it.
      if (step == 0) {
        T acc = dst[o];
        for (int64_t i = 0; i < n; ++i) acc = Fn::template apply<E>(acc, src[in + i]);
        dst[o] = acc;
      } else {
        for (int64_t i = first; i < last; ++i) dst[o + i] = Fn::template apply<E>(dst[o + i], src[in + i]);
      }
      in += n;
      size_t d = rank - 1;
      while (d-- > 0) {
        o += os[d];
        if (++index[d] < x.shape()[d]) break;
        o -= os[d] * x.shape()[d];
        index[d] = 0;
      }
      if (d == static_cast<size_t>(-1)) return;
    }
  };
  // The innermost dimension kept (a gradient summed over tokens): its columns spread over the free
  // threads, in pieces of whole cache lines; each result element still folds its inputs in order.
  int64_t threads = step != 0 && n >= 32 && x.num_elements() >= kSpreadElements ? support::available_threads() : 1;
  if (threads <= 1) {
    sweep(0, n);
    return;
  }
  int64_t per = (std::max<int64_t>((n + 4 * threads - 1) / (4 * threads), 16) + 15) / 16 * 16;
  support::parallel_chunks((n + per - 1) / per, [&](int64_t c) { sweep(c * per, std::min(n, (c + 1) * per)); });
}

template <typename E>
bool reduce_typed(OpKind kind, const Literal& x, const Literal& init, const Ints& dims, Literal& out) {
  namespace s = interp::scalar;
  switch (kind) {
    case OpKind::Add: reduce_loop<E, s::Add>(x, init, dims, out); return true;
    case OpKind::Multiply: reduce_loop<E, s::Multiply>(x, init, dims, out); return true;
    case OpKind::Maximum: reduce_loop<E, s::Maximum>(x, init, dims, out); return true;
    case OpKind::Minimum: reduce_loop<E, s::Minimum>(x, init, dims, out); return true;
    default: return false;
  }
}

bool reduce(const Op& op, Operands in, std::vector<Literal>& out) {
  if (in.size() != 2) return false;
  ElementType e = in[0]->element();
  if (!is_f(e) || in[1]->element() != e || op.result(0)->type().element != e) return false;
  auto kind = combiner(op);
  if (!kind || op.region(0).argument(0)->type().element != e) return false;
  Result r(op.result(0)->type(), out, false);  // reduce_loop fills it with the init value first
  bool ok = e == ElementType::f32 ? reduce_typed<ir::Elem<ElementType::f32>>(*kind, *in[0], *in[1], ints(op, "dimensions"), *r)
                                  : reduce_typed<ir::Elem<ElementType::f64>>(*kind, *in[0], *in[1], ints(op, "dimensions"), *r);
  return r.done(ok);
}

// ---- Layout ops: strided copies ----

bool copy_op(const Op& op, Operands in, std::vector<Literal>& out) {
  const Literal& x = *in[0];
  switch (op.kind()) {
    case OpKind::Reshape: case OpKind::Transpose: case OpKind::BroadcastInDim: case OpKind::Slice:
    case OpKind::Reverse:
      break;
    case OpKind::DynamicSlice:
      for (size_t k = 1; k < in.size(); ++k)
        if (!ir::is_integer(in[k]->element())) return false;
      break;
    default: return false;
  }
  Result result(op.result(0)->type(), out, false);  // every element written
  Literal& r = *result;
  const auto& rs = r.shape();
  RowMajor xs(x.shape());
  Dims strides(rs.size());
  int64_t base = 0;
  switch (op.kind()) {
    case OpKind::Reshape:
      // An executable's arena may hold the result where the operand lies (a view): nothing to do.
      // (An empty array's data may be null, which memcpy must not be given even for 0 bytes.)
      if (r.bytes().data() != x.bytes().data() && !x.bytes().empty())
        std::memcpy(r.bytes().data(), x.bytes().data(), x.bytes().size());
      return true;
    case OpKind::Transpose: {
      const Ints& perm = ints(op, "permutation");
      for (size_t d = 0; d < rs.size(); ++d) strides[d] = xs[static_cast<size_t>(perm[d])];
      break;
    }
    case OpKind::BroadcastInDim: case OpKind::Slice: case OpKind::Reverse: base = view_strides(op, strides); break;
    case OpKind::DynamicSlice: {
      // Starts clamped so the slice lies inside the operand, as the reference does.
      const Ints& sizes = ints(op, "slice_sizes");
      for (size_t d = 0; d < rs.size(); ++d) {
        int64_t start = std::clamp<int64_t>(interp::index_value(*in[d + 1], 0), 0, x.shape()[d] - sizes[d]);
        base += start * xs[d];
        strides[d] = xs[d];
      }
      break;
    }
    default: break;
  }
  // An executable's arena may hold a contiguous slice's result where it lies in the operand (a
  // view): nothing to copy.
  if (op.kind() == OpKind::Slice && r.bytes().data() == x.bytes().data() + base * ir::info(x.element()).bytes) return true;
  bool ok = by_bytes(x.element(), [&]<typename T>() { strided_copy_spread(data<T>(x), base, rs, strides, data<T>(r)); });
  return result.done(ok);
}

bool concatenate(const Op& op, Operands in, std::vector<Literal>& out) {
  Result result(op.result(0)->type(), out, false);  // the operands cover every element
  Literal& r = *result;
  size_t dim = static_cast<size_t>(op.attrs().get<int64_t>("dimension"));
  RowMajor rs(r.shape());
  int64_t offset = 0;
  bool ok = by_bytes(r.element(), [&]<typename T>() {
    for (const Literal* x : in) {
      // An executable's arena may have had the operand computed where it lies in the result.
      if (data<T>(*x) != data<T>(r) + offset * rs[dim])
        strided_copy(data<T>(*x), 0, x->shape(), RowMajor(x->shape()), data<T>(r) + offset * rs[dim], rs);
      offset += x->shape()[dim];
    }
  });
  return result.done(ok);
}

bool pad(const Op& op, Operands in, std::vector<Literal>& out) {
  const Ints& lo = ints(op, "edge_padding_low");
  const Ints& hi = ints(op, "edge_padding_high");
  const Ints& interior = ints(op, "interior_padding");
  for (size_t d = 0; d < lo.size(); ++d)
    if (lo[d] < 0 || hi[d] < 0 || interior[d] < 0) return false;  // cropping: the reference kernel
  const Literal& x = *in[0];
  Result result(op.result(0)->type(), out, false);  // filled with the padding value first
  Literal& r = *result;
  RowMajor rs(r.shape());
  Dims ds(rs.size());
  int64_t base = 0;
  for (size_t d = 0; d < rs.size(); ++d) {
    base += lo[d] * rs[d];
    ds[d] = rs[d] * (interior[d] + 1);
  }
  bool ok = by_bytes(r.element(), [&]<typename T>() {
    T* dst = data<T>(r);
    std::fill(dst, dst + r.num_elements(), data<T>(*in[1])[0]);
    strided_copy(data<T>(x), 0, x.shape(), RowMajor(x.shape()), dst + base, ds);
  });
  return result.done(ok);
}

// ---- Embedding-style gather and scatter-add: whole rows of a [V, D] table ----

// Whether v holds exactly `l` (compared without making a vector: this runs per op).
bool equals(const Ints& v, std::initializer_list<int64_t> l) { return std::equal(v.begin(), v.end(), l.begin(), l.end()); }

// Row indices read in place (i32 or i64; other index types go to the reference kernel).
bool row_index_type(const Literal& idx) { return idx.element() == ElementType::i32 || idx.element() == ElementType::i64; }
int64_t row_index(const Literal& idx, int64_t i) {
  return idx.element() == ElementType::i32 ? data<int32_t>(idx)[i] : data<int64_t>(idx)[i];
}

// Whether the indices hold one row number per batch position (index_vector_dim is the indices'
// rank, or a trailing dimension of size 1).
bool one_index_per_row(const Literal& idx, int64_t index_vector_dim) {
  int64_t rank = static_cast<int64_t>(idx.shape().size());
  return index_vector_dim == rank || (index_vector_dim == rank - 1 && idx.shape().back() == 1);
}

// Whether `dims` are the trailing `n` dimensions of a rank-r value, r - n .. r - 1 (a row's
// dimensions after the batch). Checked in place: a steady-state run allocates nothing.
bool trailing_dims(const Ints& dims, int64_t r, int64_t n) {
  if (static_cast<int64_t>(dims.size()) != n) return false;
  for (int64_t i = 0; i < n; ++i)
    if (dims[static_cast<size_t>(i)] != r - n + i) return false;
  return true;
}

// Whether slice `sizes` are a table's rows: dimension 0 indexed, the others (a row, contiguous) whole.
bool whole_rows(const Ints& sizes, const Literal& table) {
  const auto& shape = table.shape();
  if (sizes.size() != shape.size() || sizes.empty() || sizes[0] != 1) return false;
  return std::equal(sizes.begin() + 1, sizes.end(), shape.begin() + 1);
}

// Row gathers: an embedding's ([vocab, d] by token), and a paged KV cache's blocks ([blocks, ...] by
// block table): whole rows of dimension 0, copied.
bool gather(const Op& op, Operands in, std::vector<Literal>& out) {
  const Literal& table = *in[0];
  const auto& dn = op.attrs().get<ir::GatherDims>("dimension_numbers");
  const Ints& sizes = ints(op, "slice_sizes");
  const auto& res = op.result(0)->type();
  const int64_t row_rank = static_cast<int64_t>(table.shape().size()) - 1;
  if (row_rank < 1 || !equals(dn.collapsed_slice_dims, {0}) || !equals(dn.start_index_map, {0}) ||
      !dn.operand_batching_dims.empty() || !trailing_dims(dn.offset_dims, res.rank(), row_rank) ||
      !whole_rows(sizes, table) || !one_index_per_row(*in[1], dn.index_vector_dim))
    return false;
  const Literal& idx = *in[1];
  if (!row_index_type(idx)) return false;
  Result result(res, out, false);  // one whole row per index
  Literal& r = *result;
  size_t row_bytes = static_cast<size_t>(table.num_elements() / table.shape()[0] * ir::info(table.element()).bytes);
  int64_t v = table.shape()[0];
  for (int64_t i = 0; i < idx.num_elements(); ++i) {
    int64_t row = std::clamp<int64_t>(row_index(idx, i), 0, v - 1);  // gather clamps its start indices
    std::memcpy(r.bytes().data() + static_cast<size_t>(i) * row_bytes, table.bytes().data() + static_cast<size_t>(row) * row_bytes, row_bytes);
  }
  return true;
}

template <typename T>
void add_rows(Literal& r, const Literal& updates, const Literal& idx, int64_t v, int64_t d) {
  T* dst = data<T>(r);
  const T* src = data<T>(updates);
  for (int64_t i = 0; i < idx.num_elements(); ++i) {
    int64_t row = row_index(idx, i);
    if (row < 0 || row >= v) continue;  // scatter skips updates out of bounds
    for (int64_t j = 0; j < d; ++j) dst[row * d + j] += src[static_cast<int64_t>(i) * d + j];
  }
}

// Whether a scatter's update computation returns the update: "replace".
bool replaces(const Op& op) {
  if (op.regions().empty()) return false;
  const ir::Block& body = op.region(0);
  return body.ops().size() == 1 && body.arguments().size() == 2 && body.ops()[0]->kind() == OpKind::Return &&
         body.ops()[0]->operands().size() == 1 && body.ops()[0]->operand(0) == body.argument(1);
}

// Row scatters: an embedding's gradient (add [vocab, d] rows) and a paged KV cache's writes (replace
// rows of [slots, kv, hd]). Updates apply in index order, as the reference's loop does, so a row
// written twice keeps the later update.
bool scatter(const Op& op, Operands in, std::vector<Literal>& out) {
  if (in.size() != 3) return false;
  const Literal& table = *in[0];
  const Literal& updates = *in[2];
  const auto& dn = op.attrs().get<ir::ScatterDims>("scatter_dimension_numbers");
  const int64_t urank = static_cast<int64_t>(updates.shape().size());
  const int64_t row_rank = static_cast<int64_t>(table.shape().size()) - 1;
  const bool add = combiner(op) == OpKind::Add, replace = !add && replaces(op);
  if (row_rank < 1 || urank < row_rank || updates.element() != table.element() || !(replace || (add && is_f(table.element()))) ||
      !equals(dn.inserted_window_dims, {0}) || !equals(dn.scatter_dims_to_operand_dims, {0}) ||
      !dn.input_batching_dims.empty() || !trailing_dims(dn.update_window_dims, urank, row_rank) ||
      !std::equal(table.shape().begin() + 1, table.shape().end(), updates.shape().end() - row_rank) ||
      !one_index_per_row(*in[1], dn.index_vector_dim))
    return false;
  const Literal& idx = *in[1];
  const int64_t v = table.shape()[0], d = table.num_elements() / std::max<int64_t>(v, 1);
  if (!row_index_type(idx) || idx.num_elements() * d != updates.num_elements()) return false;
  Result result(op.result(0)->type(), out, false);
  Literal& r = *result;
  std::memcpy(r.bytes().data(), table.bytes().data(), table.bytes().size());
  if (replace) {
    const size_t row_bytes = static_cast<size_t>(d * ir::info(table.element()).bytes);
    for (int64_t i = 0; i < idx.num_elements(); ++i) {
      int64_t row = row_index(idx, i);
      if (row < 0 || row >= v) continue;  // scatter skips updates out of bounds
      std::memcpy(r.bytes().data() + static_cast<size_t>(row) * row_bytes,
                  updates.bytes().data() + static_cast<size_t>(i) * row_bytes, row_bytes);
    }
  } else if (table.element() == ElementType::f32) {
    add_rows<float>(r, updates, idx, v, d);
  } else {
    add_rows<double>(r, updates, idx, v, d);
  }
  return true;
}

// Every op result is a fresh Literal, and first touch of fresh memory costs about 11 µs per 4 KiB
// page here (DESIGN.md §6): a training step of 1 MiB activations spent a quarter of its time in
// page faults. glibc's defaults hand big blocks back to the kernel on free (mmap above a dynamic
// threshold, trimming the heap top), so the next step faults them in again. Serving blocks up to
// 32 MiB (glibc's most) from the heap and never trimming makes malloc the buffer pool: a step
// reuses the pages the previous one freed.
void keep_freed_memory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  // A thread's arena also unmaps a whole 64 MiB heap once it is free, unless the top pad is larger.
  mallopt(M_TOP_PAD, 256 << 20);
}

// Element-wise fusion comes with the fast kernels: the interpreter plans it for every program it
// runs with Options.accelerate set (TESSERA_FUSION=0 in the environment turns it off, for
// measuring what it gains).
const bool kFusionRegistered = [] {
  const char* env = std::getenv("TESSERA_FUSION");
  if (env == nullptr || std::string_view(env) != "0") interp::set_fusion_planner(&plan_fusion);
  return true;
}();

}  // namespace

bool accelerate(const ir::Op& op, std::span<const ir::Literal* const> operands, std::vector<ir::Literal>& results) {
  static std::once_flag once;
  std::call_once(once, [] { keep_freed_memory(); });
  switch (op.kind()) {
    case OpKind::DotGeneral: return dot_general(op, operands, results);
    case OpKind::Convolution: return accelerate_convolution(op, operands, results);
    case OpKind::Reduce: return reduce(op, operands, results);
    case OpKind::Reshape: case OpKind::Transpose: case OpKind::BroadcastInDim: case OpKind::Slice:
    case OpKind::Reverse: case OpKind::DynamicSlice:
      return copy_op(op, operands, results);
    case OpKind::Concatenate: return concatenate(op, operands, results);
    case OpKind::Pad: return pad(op, operands, results);
    case OpKind::Gather: return gather(op, operands, results);
    case OpKind::Scatter: return scatter(op, operands, results);
    case OpKind::Convert: return convert(op, operands, results);
    case OpKind::Add: case OpKind::Subtract: case OpKind::Multiply: case OpKind::Divide:
    case OpKind::Maximum: case OpKind::Minimum: case OpKind::And: case OpKind::Or: case OpKind::Xor:
      return binary(op, operands, results);
    case OpKind::Compare: return compare(op, operands, results);
    case OpKind::Select: return select(op, operands, results);
    case OpKind::Iota: return iota(op, results);
    case OpKind::Constant: return constant(op, results);
    default: return false;
  }
}

}  // namespace tessera::exec
