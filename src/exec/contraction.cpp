// Planning a dot_general as strided GEMM calls, and running the plan through BLAS (contraction.h),
// spread over the threads the budget has free (support/threads.h).
#include "exec/contraction.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <memory>
#include <numeric>
#include <optional>
#include <type_traits>
#include <unordered_map>

#include "exec/gemm.h"
#include "exec/strided.h"
#include "support/error.h"
#include "support/run_cache.h"
#include "support/threads.h"

namespace tessera::exec {

namespace {

using Ints = std::vector<int64_t>;
using Shape = std::span<const int64_t>;

bool contains(const Ints& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

Ints free_dims(size_t rank, const Ints& batch, const Ints& contracting) {
  Ints f;
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d)
    if (!contains(batch, d) && !contains(contracting, d)) f.push_back(d);
  return f;
}

int64_t product(Shape shape, const Ints& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= shape[static_cast<size_t>(d)];
  return n;
}

// The stride of a group of dimensions (listed outermost first) that lie one inside the next in
// memory, so that the group reads as one dimension; 0 when the group holds at most one element
// (any stride reads it); nothing when the group is scattered. Size-1 dimensions do not count.
std::optional<int64_t> group_stride(Shape shape, const Ints& strides, const Ints& dims) {
  int64_t innermost = 0, next = -1;  // next: the stride the next outer dimension must have
  for (size_t i = dims.size(); i-- > 0;) {
    auto d = static_cast<size_t>(dims[i]);
    if (shape[d] == 1) continue;
    if (next < 0) innermost = strides[d];
    else if (strides[d] != next) return std::nullopt;
    next = strides[d] * shape[d];
  }
  return next < 0 ? 0 : innermost;
}

// How BLAS reads a rows x cols matrix whose rows lie `rs` apart and columns `cs` apart (0: that
// dimension has one element, any stride will do): row-major with leading dimension ld (columns at
// unit stride, ld >= cols), or transposed (stored cols x rows: rows at unit stride, ld >= rows).
struct Fit {
  bool ok = false, trans = false;
  int64_t ld = 1;
};

Fit fit(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  int64_t ld = rows <= 1 ? std::max<int64_t>(1, cols) : rs;
  if ((cols <= 1 || cs == 1) && ld >= std::max<int64_t>(1, cols)) return {true, false, ld};
  ld = cols <= 1 ? std::max<int64_t>(1, rows) : cs;
  if ((rows <= 1 || rs == 1) && ld >= std::max<int64_t>(1, rows)) return {true, true, ld};
  return {};
}

// An operand as a matrix: `rows` and `cols` groups of dimensions, with nrows and ncols elements.
Fit fit_operand(Shape shape, const Ints& strides, const Ints& rows, int64_t nrows, const Ints& cols, int64_t ncols) {
  auto rs = group_stride(shape, strides, rows), cs = group_stride(shape, strides, cols);
  if (!rs || !cs) return {};
  return fit(nrows, ncols, *rs, *cs);
}

// Copies an operand into the order `perm` (all its dimensions): the plan's copy, and the operand's
// strides after it (indexed by the operand's own dimensions).
ContractionPlan::Copy copy_into(Shape shape, const Ints& perm, Ints& strides) {
  ContractionPlan::Copy c;
  c.needed = true;
  for (int64_t d : perm) {
    c.shape.push_back(shape[static_cast<size_t>(d)]);
    c.strides.push_back(strides[static_cast<size_t>(d)]);
  }
  Ints rm = ir::row_major_strides(c.shape);
  for (size_t i = 0; i < perm.size(); ++i) strides[static_cast<size_t>(perm[i])] = rm[i];
  c.elements = product(shape, perm);
  return c;
}

Ints concat(std::initializer_list<const Ints*> parts) {
  Ints out;
  for (const Ints* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

// Whether a product is computed as C^T = B^T A (the operands' roles swapped) though the result is
// row-major: one call of A^T B (both operands stored K x M and K x N) with M >= 4N. On oneDNN's
// dnnl_sgemm (the session-18 machine: Xeon, AVX-512) such calls ran 19-24 % slower than the same
// product with M and N exchanged (4096x256x1024, lda 4096: 121 against 149 GFLOP/s, cold caches;
// 1024x256, 2048x256, 4096x128 alike), the LM head's weight gradient the step's slowest GEMM; at
// 684x256x1024 the swap was neutral alone and slower in the step, hence 4N. A function of the
// operands' sizes and layouts alone (docs/PERFORMANCE.md, "Session 18").
bool prefers_transposed_product(int64_t calls, int64_t m, int64_t n, bool ta, bool tb) {
  return calls == 1 && ta && !tb && n > 1 && m >= 4 * n;
}

}  // namespace

bool same_gemm_calls(const ContractionPlan& a, const ContractionPlan& b) {
  auto loops_match = [](const std::vector<GemmLoop>& x, const std::vector<GemmLoop>& y) {
    return std::equal(x.begin(), x.end(), y.begin(), y.end(),
                      [](const GemmLoop& l, const GemmLoop& r) { return l.size == r.size && l.a == r.a && l.b == r.b; });
  };
  return a.ok && b.ok && a.m == b.m && a.n == b.n && a.k == b.k && a.ta == b.ta && a.tb == b.tb && a.lda == b.lda &&
         a.ldb == b.ldb && a.swapped == b.swapped && a.calls == b.calls && loops_match(a.batch, b.batch);
}

ContractionPlan plan_contraction(Shape lhs, Shape rhs, const ir::DotDims& dd) { return plan_contraction(lhs, rhs, dd, {}); }

ContractionPlan plan_contraction(Shape lhs, Shape rhs, const ir::DotDims& dd, const ContractionStrides& st) {
  ContractionPlan p;
  Ints lf = free_dims(lhs.size(), dd.lhs_batch, dd.lhs_contracting);
  Ints rf = free_dims(rhs.size(), dd.rhs_batch, dd.rhs_contracting);
  int64_t batch = product(lhs, dd.lhs_batch);
  p.m = product(lhs, lf);
  p.n = product(rhs, rf);
  p.k = product(lhs, dd.lhs_contracting);
  p.out_elements = batch * p.m * p.n;
  p.ldc = std::max<int64_t>(1, p.n);
  p.calls = batch;
  if (p.out_elements == 0 || p.k == 0) return p;  // no GEMM: nothing to write, or zeros
  auto strides_of = [](Shape shape, std::span<const int64_t> given) {
    return given.empty() ? ir::row_major_strides(shape) : Ints(given.begin(), given.end());
  };
  Ints ls = strides_of(lhs, st.lhs), rs = strides_of(rhs, st.rhs);

  // The result [batch..., lhs free..., rhs free...] as a matrix: rows (lhs free) by columns (rhs
  // free), one group at unit stride; with lhs's at unit stride each call computes C^T (swapped).
  Ints out_shape, out_rows, out_cols;
  for (int64_t d : dd.lhs_batch) out_shape.push_back(lhs[static_cast<size_t>(d)]);
  for (int64_t d : lf) {
    out_rows.push_back(static_cast<int64_t>(out_shape.size()));
    out_shape.push_back(lhs[static_cast<size_t>(d)]);
  }
  for (int64_t d : rf) {
    out_cols.push_back(static_cast<int64_t>(out_shape.size()));
    out_shape.push_back(rhs[static_cast<size_t>(d)]);
  }
  Ints os = strides_of(out_shape, st.out);
  auto ors = group_stride(out_shape, os, out_rows), ocs = group_stride(out_shape, os, out_cols);
  Fit fc = ors && ocs ? fit(p.m, p.n, *ors, *ocs) : Fit{};
  if (!fc.ok) {
    p.ok = false;
    return p;
  }
  int64_t lhs_elements = product(lhs, concat({&dd.lhs_batch, &lf, &dd.lhs_contracting}));
  int64_t rhs_elements = product(rhs, concat({&dd.rhs_batch, &rf, &dd.rhs_contracting}));

  // The contracting pairs that count (size > 1), in the memory order of either operand; the
  // order that reads more elements in place wins (lhs's on a tie).
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (size_t i = 0; i < dd.lhs_contracting.size(); ++i)
    if (lhs[static_cast<size_t>(dd.lhs_contracting[i])] != 1) pairs.emplace_back(dd.lhs_contracting[i], dd.rhs_contracting[i]);
  Ints lc, rc;
  Fit fa, fb;
  int64_t best_cost = -1;
  for (bool by_lhs : {true, false}) {
    auto order = pairs;
    std::stable_sort(order.begin(), order.end(), [&](const auto& x, const auto& y) {
      return by_lhs ? ls[static_cast<size_t>(x.first)] > ls[static_cast<size_t>(y.first)]
                    : rs[static_cast<size_t>(x.second)] > rs[static_cast<size_t>(y.second)];
    });
    Ints l, r;
    for (const auto& [a, b] : order) {
      l.push_back(a);
      r.push_back(b);
    }
    Fit a = fit_operand(lhs, ls, lf, p.m, l, p.k), b = fit_operand(rhs, rs, r, p.k, rf, p.n);
    int64_t cost = (a.ok ? 0 : lhs_elements) + (b.ok ? 0 : rhs_elements);
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      lc = l, rc = r, fa = a, fb = b;
    }
  }
  // Size-1 contracting dimensions go last in a copy (anywhere would do).
  Ints lc_all = lc, rc_all = rc;
  for (size_t i = 0; i < dd.lhs_contracting.size(); ++i)
    if (lhs[static_cast<size_t>(dd.lhs_contracting[i])] == 1) {
      lc_all.push_back(dd.lhs_contracting[i]);
      rc_all.push_back(dd.rhs_contracting[i]);
    }
  if (!fa.ok) {
    p.lhs_copy = copy_into(lhs, concat({&dd.lhs_batch, &lf, &lc_all}), ls);
    fa = fit_operand(lhs, ls, lf, p.m, lc, p.k);
  }
  if (!fb.ok) {
    p.rhs_copy = copy_into(rhs, concat({&dd.rhs_batch, &rc_all, &rf}), rs);
    fb = fit_operand(rhs, rs, rc, p.k, rf, p.n);
  }
  TESSERA_CHECK(fa.ok && fb.ok, "a copied dot_general operand must read as a matrix");
  p.ldc = fc.ld;
  p.swapped = fc.trans;
  if (!p.swapped && prefers_transposed_product(p.calls, p.m, p.n, fa.trans, fb.trans)) {
    p.swapped = p.via_buffer = true;
    p.out_ld = fc.ld;
    p.ldc = p.m;  // the buffer holds C^T row-major: n rows of m
  }
  if (!p.swapped) {
    p.ta = fa.trans, p.lda = fa.ld, p.tb = fb.trans, p.ldb = fb.ld;
  } else {
    // C^T[n x m] = op(B)^T op(A)^T: rhs's matrix is the new A, transposed the other way.
    std::swap(p.m, p.n);
    p.ta = !fb.trans, p.lda = fb.ld, p.tb = !fa.trans, p.ldb = fa.ld;
  }

  // Batch loops, outermost first: the result's batch dimensions come in lhs_batch order.
  std::vector<GemmLoop> loops(dd.lhs_batch.size());
  for (size_t i = 0; i < loops.size(); ++i) {
    int64_t l = ls[static_cast<size_t>(dd.lhs_batch[i])], r = rs[static_cast<size_t>(dd.rhs_batch[i])];
    loops[i] = {lhs[static_cast<size_t>(dd.lhs_batch[i])], p.swapped ? r : l, p.swapped ? l : r, os[i]};
  }
  for (const GemmLoop& l : loops) {
    if (l.size == 1) continue;
    GemmLoop* outer = p.batch.empty() ? nullptr : &p.batch.back();
    // One loop when the outer one steps exactly over the inner one in all three arrays.
    if (outer && outer->a == l.a * l.size && outer->b == l.b * l.size && outer->out == l.out * l.size)
      *outer = {outer->size * l.size, l.a, l.b, l.out};
    else
      p.batch.push_back(l);
  }
  return p;
}

namespace {
struct KnownPlan {
  Ints lhs, rhs, lhs_strides, rhs_strides, out_strides;
  ir::DotDims dims;
  ContractionPlan plan;
};
struct KnownPlans {
  std::unordered_map<const void*, KnownPlan> map;
};
}  // namespace

const ContractionPlan& cached_contraction(const void* key, Shape lhs, Shape rhs, const ir::DotDims& dims,
                                          const ContractionStrides& strides) {
  using Entry = KnownPlan;
  // A program's dot_generals are a few hundred at most; a cache that has seen many more (a thread
  // running program after program in tests) starts afresh rather than grow without bound.
  constexpr size_t kMostEntries = 4096;
  auto& plans = support::run_local<KnownPlans>().map;
  auto it = plans.find(key);
  auto same = [](Shape a, const Ints& b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); };
  if (it != plans.end() && same(lhs, it->second.lhs) && same(rhs, it->second.rhs) &&
      same(strides.lhs, it->second.lhs_strides) && same(strides.rhs, it->second.rhs_strides) &&
      same(strides.out, it->second.out_strides) && it->second.dims == dims)
    return it->second.plan;
  if (it == plans.end() && plans.size() >= kMostEntries) plans.clear();
  Entry& e = plans[key];
  auto ints = [](Shape a) { return Ints(a.begin(), a.end()); };
  e = Entry{ints(lhs), ints(rhs), ints(strides.lhs), ints(strides.rhs), ints(strides.out), dims,
            plan_contraction(lhs, rhs, dims, strides)};
  return e.plan;
}

bool fits_blas(const ContractionPlan& p) {
  for (int64_t v : {p.m, p.n, p.k, p.lda, p.ldb, p.ldc})
    if (v > INT_MAX) return false;
  return true;
}

namespace {

// Buffers for operand copies, kept between calls in the run's cache (support/run_cache.h): a
// steady-state step allocates nothing for them, and its pages stay faulted in (DESIGN.md §6). Not
// zero-filled: the copy writes every element.
template <typename T>
struct CopyBuffers {
  support::GrowingBuffer<T> buffers[3];  // lhs and rhs copies, and a result computed as C^T (via_buffer)
};

template <typename T>
T* scratch(int which, int64_t n) {
  return support::run_local<CopyBuffers<T>>().buffers[which].reserve(n);
}

template <typename T>
const T* read(const ContractionPlan::Copy& c, const T* x, int which) {
  if (!c.needed) return x;
  T* dst = scratch<T>(which, c.elements);
  strided_copy(x, 0, c.shape, c.strides, dst);
  return dst;
}


// How the GEMM calls of a plan are cut into tasks for the free threads: whole calls, each cut
// into `parts` pieces of `size` rows of C (split_m) or columns. K is never cut. The cut depends on
// the shape alone, never on the number of threads: neither library computes an element of C from
// its row of A, its column of B and K alone (on a Zen 5 core OpenBLAS's Haswell kernels give other
// bits for a column of C when the call's N changes; oneDNN's for a transposed-B call's last piece
// of under 16 rows, and for a 1024x256x4096 transposed-B call cut into columns), so the same
// pieces are computed whether one thread runs them in turn or several run them at once, and the
// result has the same bits under any thread budget (tests/exec/parallel_kernels_test.cpp).
struct Split {
  bool parallel = false;  // worth spreading over threads at all
  int64_t parts = 1, tiles = 0;  // pieces per call; kPieceAlign-wide tiles of the cut dimension
  bool split_m = false;
};

// A piece below this many multiply-adds (about 20 µs on a core) would cost a good share of its
// time in handing it to another thread.
constexpr int64_t kMinPieceWork = int64_t{1} << 21;
// Pieces start at multiples of this many rows or columns: whole register tiles of the kernels.
constexpr int64_t kPieceAlign = 16;
// A piece has at least this many rows or columns: each piece packs the operand the pieces share
// again, which cost the narrow ones a good share of their time on one thread (oneDNN, cold caches:
// 256x256x1024 cut into 8 pieces of 32 columns 129 GFLOP/s, into 2 of 128 141, whole 146;
// 128x256x1024 127 / 141 / 158; docs/PERFORMANCE.md, "Session 18"). A shorter dimension is still
// cut in two (when it has two tiles), so that two threads share every product worth splitting.
constexpr int64_t kMinPieceDim = 128;
// At most this many pieces per call (and no cut once the calls alone are this many): tasks that
// divide evenly among 1, 2, 4 or 8 threads.
constexpr int64_t kMaxPieces = 8;

Split split_for(const ContractionPlan& p) {
  Split s;
  int64_t work = p.m * p.n * p.k;
  if (work * p.calls < 2 * kMinPieceWork) return s;
  s.parallel = true;
  if (p.calls >= kMaxPieces) return s;
  s.split_m = p.m > p.n;
  int64_t dim = s.split_m ? p.m : p.n;
  // A power of two, so that the pieces divide evenly among 1, 2, 4 or 8 threads (684 rows in 5
  // pieces of 128 would leave two threads 3 and 2).
  int64_t parts = std::min({kMaxPieces, work / kMinPieceWork,
                            std::max(dim / kMinPieceDim, std::min<int64_t>(2, dim / kPieceAlign))});
  parts = parts <= 1 ? parts : static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(parts)));
  if (parts <= 1) return s;
  // The tiles dealt out evenly (piece sizes differ by one tile at most): equal pieces of rounded-up
  // size left a short last one (684 rows: seven of 96 and one of 12, so two threads ran 384 and
  // 300 rows), and the threads that ran the others waited for the longest share.
  s.tiles = (dim + kPieceAlign - 1) / kPieceAlign;
  s.parts = parts;
  return s;
}

// The first row or column of piece `piece` of a call cut by `s`, into a dimension of `dim`.
int64_t piece_begin(const Split& s, int64_t piece, int64_t dim) {
  return std::min(dim, piece * s.tiles / s.parts * kPieceAlign);
}

// Call `t` of a plan cut by `s`: batch call t / parts, piece t % parts.
GemmCall call_of(const ContractionPlan& p, const Split& s, int64_t t) {
  int64_t rest = t / s.parts, piece = t % s.parts;
  GemmCall c{p.m, p.n, 0, 0, 0};
  for (size_t d = p.batch.size(); d-- > 0;) {
    const GemmLoop& l = p.batch[d];
    int64_t i = rest % l.size;
    rest /= l.size;
    c.a += i * l.a, c.b += i * l.b, c.c += i * l.out;
  }
  if (s.parts > 1) {
    int64_t dim = s.split_m ? p.m : p.n;
    int64_t begin = piece_begin(s, piece, dim), size = piece_begin(s, piece + 1, dim) - begin;
    if (s.split_m) {
      c.m = size;
      c.a += p.ta ? begin : begin * p.lda;
      c.c += begin * p.ldc;
    } else {
      c.n = size;
      c.b += p.tb ? begin * p.ldb : begin;
      c.c += begin;
    }
  }
  return c;
}

}  // namespace

int64_t gemm_calls(const ContractionPlan& plan) { return plan.calls * split_for(plan).parts; }

GemmCall gemm_call(const ContractionPlan& plan, int64_t t) {
  Split s = split_for(plan);
  TESSERA_CHECK(t >= 0 && t < plan.calls * s.parts, "gemm_call: call {} of a plan of {} calls", t, plan.calls * s.parts);
  return call_of(plan, s, t);
}

template <typename T>
void run_contraction(const ContractionPlan& p, const T* lhs, const T* rhs, T* out, bool out_is_zero) {
  TESSERA_CHECK(p.ok, "a contraction run on a plan that found no layout for its result");
  if (p.out_elements == 0) return;
  if (p.k == 0) {
    if (!out_is_zero) std::fill(out, out + p.out_elements, T(0));
    return;
  }
  const T* l = read(p.lhs_copy, lhs, 0);
  const T* r = read(p.rhs_copy, rhs, 1);
  const T* a = p.swapped ? r : l;
  const T* b = p.swapped ? l : r;
  // C += A·B into zeros: OpenBLAS computes C = beta·C + A·B as a pass that scales (beta 0:
  // clears) C, then kernels that add into C, so beta 1 on zeros gives the bits of beta 0 without
  // the extra pass (oneDNN gives the bits of beta 0 too: gemm.h).
  // A result computed as C^T into a buffer (via_buffer): beta 0 there, copied into `out` at the end.
  T* c = p.via_buffer ? scratch<T>(2, p.m * p.n) : out;
  T beta = out_is_zero && !p.via_buffer ? T(1) : T(0);
  Split split = split_for(p);
  // The whole call's library for each of its pieces: a piece's size must not choose another.
  const GemmLibrary library = sgemm_library(p.ta, p.tb, p.m, p.n, p.k, p.ldb);
  auto task = [&](int64_t t) {
    GemmCall g = call_of(p, split, t);
    if constexpr (std::is_same_v<T, float>)
      sgemm_on(library, p.ta, p.tb, g.m, g.n, p.k, a + g.a, p.lda, b + g.b, p.ldb, beta, c + g.c, p.ldc);
    else
      gemm(p.ta, p.tb, g.m, g.n, p.k, a + g.a, p.lda, b + g.b, p.ldb, beta, c + g.c, p.ldc);
  };
  int64_t tasks = p.calls * split.parts;
  if (split.parallel && tasks > 1 && support::available_threads() > 1)
    support::parallel_chunks(tasks, task);
  else
    for (int64_t t = 0; t < tasks; ++t) task(t);
  if (p.via_buffer) {
    // c holds C^T (p.m = the result's columns, p.n = its rows): out[i][j] = c[j][i].
    int64_t shape[2] = {p.n, p.m}, from[2] = {1, p.n}, to[2] = {p.out_ld, 1};
    if (p.out_ld == p.m) strided_copy_spread(c, 0, std::span<const int64_t>(shape), std::span<const int64_t>(from), out);
    else strided_copy(c, 0, std::span<const int64_t>(shape), std::span<const int64_t>(from), out, std::span<const int64_t>(to));
  }
}

template void run_contraction<float>(const ContractionPlan&, const float*, const float*, float*, bool);
template void run_contraction<double>(const ContractionPlan&, const double*, const double*, double*, bool);

}  // namespace tessera::exec
