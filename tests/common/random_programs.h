// Random programs shared by the tests that check one runner against another:
//   - the SPMD property generator (tests/spmd/property_test.cpp): chains of 5-30 ops drawn from the
//     op table, with random shardings on a mesh (ProgramGen, build_sharded_program, uniform_input);
//   - the fusion generator (tests/exec/fusion_test.cpp): element-wise chains with broadcasts, iota
//     one-hots, compares, selects, converts and reductions (build_elementwise_chains, chain_input);
//   - same_bits, the bitwise comparison those tests use.
// tests/exec/executable_test.cpp runs both through exec::Executable.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>
#include <vector>

#include "ir/builder.h"
#include "ir/builder_window.h"
#include "ir/literal.h"
#include "ir/module.h"

namespace tessera::testing {

using namespace tessera::ir;

// ---- The SPMD property generator ----

// TESSERA_PROPERTY_CASES and TESSERA_PROPERTY_SEED widen a random-program test by hand (e.g. 5000
// cases from seed 20000); without them each test runs its own default range. `per_case` is what a
// case costs against the property test's (a test of 12 devices takes a third as many cases).
inline int property_cases(int default_cases, int per_case = 1) {
  const char* n = std::getenv("TESSERA_PROPERTY_CASES");
  return n ? std::max(1, std::atoi(n) / per_case) : default_cases;
}
inline uint32_t property_first_seed(uint32_t default_seed) {
  const char* s = std::getenv("TESSERA_PROPERTY_SEED");
  return s ? static_cast<uint32_t>(std::atol(s)) : default_seed;
}

struct ProgramGen {
  std::mt19937 rng;
  Mesh mesh;

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(rng); }

  // Every way to name a slice of the mesh: whole axes and, for axes of 4 or more, sub-axes.
  std::vector<AxisRef> refs() const {
    std::vector<AxisRef> out;
    for (const auto& a : mesh.axes) {
      out.emplace_back(a.name);
      if (a.size >= 4) {
        out.emplace_back(a.name, SubAxis{1, 2});
        out.emplace_back(a.name, SubAxis{2, a.size / 2});
      }
    }
    return out;
  }

  Sharding random_sharding(size_t rank) {
    Sharding s{mesh.name, std::vector<DimSharding>(rank), {}, {}};
    std::vector<AxisRef> used;
    for (auto& d : s.dims) {
      if (coin(0.4)) continue;
      int n = 1 + pick(2);
      for (int k = 0; k < n; ++k) {
        auto all = refs();
        const AxisRef& r = all[static_cast<size_t>(pick(static_cast<int>(all.size())))];
        bool clash = false;
        for (const auto& u : used)
          if (u.name == r.name) clash = true;  // one use of an axis (or part of it) per tensor
        if (clash) continue;
        used.push_back(r);
        d.axes.push_back(r);
      }
    }
    return s;
  }

  // A random sharding that is sometimes also partial (unreduced) along axes its dimensions leave
  // free: the array is then the sum of the pieces along them.
  Sharding random_partial_sharding(size_t rank, double p = 0.5) {
    Sharding s = random_sharding(rank);
    for (const auto& a : mesh.axes) {
      bool used = false;
      for (const auto& d : s.dims)
        for (const auto& r : d.axes) used |= r.name == a.name;
      if (!used && coin(p)) s.unreduced.emplace_back(a.name);
    }
    return s;
  }

  std::vector<int64_t> random_shape() {
    static const int64_t sizes[] = {1, 2, 3, 4, 5, 6, 8};
    std::vector<int64_t> s(static_cast<size_t>(1 + pick(3)));
    for (auto& d : s) d = sizes[pick(7)];
    return s;
  }
};

// A window along one random dimension of `shape` (size up to 3, stride up to 2, padding up to 1,
// sometimes a base or window dilation), trivial along the others.
inline Window random_window(ProgramGen& g, const std::vector<int64_t>& shape) {
  size_t rank = shape.size(), d = static_cast<size_t>(g.pick(static_cast<int>(rank)));
  Window w;
  w.size.assign(rank, 1);
  w.stride.assign(rank, 1);
  w.base_dilation.assign(rank, 1);
  w.window_dilation.assign(rank, 1);
  w.pad_lo.assign(rank, 0);
  w.pad_hi.assign(rank, 0);
  w.reversal.assign(rank, false);
  w.size[d] = 1 + g.pick(static_cast<int>(std::min<int64_t>(shape[d], 3)));
  w.stride[d] = 1 + g.pick(2);
  w.pad_lo[d] = g.pick(2);
  w.pad_hi[d] = g.pick(2);
  if (g.coin(0.2)) w.base_dilation[d] = 2;
  if (g.coin(0.2)) w.window_dilation[d] = 2;
  if (w.num_windows(d, shape[d]) == 0) w.window_dilation[d] = 1;  // no empty results
  if (w.num_windows(d, shape[d]) == 0) w.size[d] = 1;
  return w;
}

// `n` row numbers below `size` (distinct when `distinct`, and then n <= size) as i32[n, 1].
inline Literal random_rows(ProgramGen& g, int64_t n, int64_t size, bool distinct) {
  std::vector<int64_t> rows(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) rows[static_cast<size_t>(i)] = i;
  std::shuffle(rows.begin(), rows.end(), g.rng);
  rows.resize(static_cast<size_t>(n));
  if (!distinct)
    for (auto& r : rows) r = g.pick(static_cast<int>(size));
  return Literal::from_ints(i32({n, 1}), rows);
}

// JAX's argmax (or argmin) of f32 `x` along d, as jax.lax lowers it: a reduce of (value, iota
// index) pairs from (-inf, 0) (or (+inf, 0)), the first pair winning when better or NaN, of equal
// values the lower index. Returns {value, index}.
inline std::vector<Tensor> jax_argminmax(const Tensor& x, int64_t d, bool max) {
  Builder& f = x.builder();
  Tensor index = f.iota(Type(ElementType::i32, x.shape()), d);
  AttrMap dims;
  dims.set("dimensions", std::vector<int64_t>{d});
  Tensor init = f.scalar(ElementType::f32, max ? -INFINITY : INFINITY);
  return f.emit_with_regions(OpKind::Reduce, {x, index, init, f.scalar(ElementType::i32, 0)}, dims, {}, [&](Op& op) {
    Block& body = op.add_region();
    Builder b(f.module(), body);
    std::vector<Tensor> a;  // acc value, acc index, value, index
    for (int k = 0; k < 2; ++k) {
      a.push_back(b.wrap(body.add_argument(Type(ElementType::f32, {}))));
      a.push_back(b.wrap(body.add_argument(Type(ElementType::i32, {}))));
    }
    Tensor pick = compare(a[0], a[2], max ? ComparisonDirection::GT : ComparisonDirection::LT) |
                  compare(a[0], a[0], ComparisonDirection::NE);
    Tensor pick_index = pick | (compare(a[0], a[2], ComparisonDirection::EQ) & compare(a[1], a[3], ComparisonDirection::LT));
    std::vector<Value*> results = {select(pick, a[0], a[2]).value(), select(pick_index, a[1], a[3]).value()};
    body.append(std::make_unique<Op>(OpKind::Return, results, std::vector<Type>{}));
  });
}

// A reduce of two f32 results each combined alone: the sum of x from 5 and the max of y from 0.25
// (inits that are not the identities) along d. Returns {sum, max}.
inline std::vector<Tensor> sum_and_max(const Tensor& x, const Tensor& y, int64_t d) {
  Builder& f = x.builder();
  AttrMap dims;
  dims.set("dimensions", std::vector<int64_t>{d});
  std::vector<Tensor> operands = {x, y, f.scalar(ElementType::f32, 5), f.scalar(ElementType::f32, 0.25)};
  return f.emit_with_regions(OpKind::Reduce, operands, dims, {}, [&](Op& op) {
    Block& body = op.add_region();
    Builder b(f.module(), body);
    std::vector<Tensor> a;  // acc sum, acc max, x, y
    for (int k = 0; k < 4; ++k) a.push_back(b.wrap(body.add_argument(Type(ElementType::f32, {}))));
    std::vector<Value*> results = {(a[0] + a[2]).value(), maximum(a[3], a[1]).value()};
    body.append(std::make_unique<Op>(OpKind::Return, results, std::vector<Type>{}));
  });
}

// One random program: parameters with random shardings (some partial: unreduced), then a chain of
// 5-30 ops drawn from the op table on the newest value (contractions, layout ops, reductions with
// any init, scatter and gather, element-wise ops, constraints, some to partial layouts); results
// are sometimes declared partial.
// `extended` adds the cases 24-30 below, partial arguments and partial results (and draws another
// sequence of programs); without it the programs are those of the original op table.
inline void build_sharded_program(Module& m, ProgramGen& g, int length, bool extended = false) {
  Function& fn = build_function(m, "f", [&](FunctionBuilder& f) {
    auto param = [&](const std::vector<int64_t>& shape) {
      if (!extended) return f.param(f32(shape), g.coin(0.8) ? std::optional<Sharding>(g.random_sharding(shape.size())) : std::nullopt);
      if (!g.coin(0.8)) return f.param(f32(shape));
      return f.param(f32(shape), g.coin(0.1) ? g.random_partial_sharding(shape.size()) : g.random_sharding(shape.size()));
    };
    Tensor x = param(g.random_shape());
    std::vector<Tensor> outs;
    for (int step = 0; step < length; ++step) {
      const auto shape = x.shape();
      size_t rank = shape.size();
      switch (g.pick(extended ? 31 : 24)) {
        case 0: x = tanh(x); break;
        case 1: x = x * param(shape) + 0.5; break;
        case 2: x = maximum(x, param(shape)) - x; break;
        case 3: {  // transpose
          std::vector<int64_t> perm(rank);
          for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
          std::shuffle(perm.begin(), perm.end(), g.rng);
          x = transpose(x, perm);
          break;
        }
        case 4: {  // reshape: merge two dims or split one
          if (rank >= 2 && g.coin()) {
            size_t d = static_cast<size_t>(g.pick(static_cast<int>(rank - 1)));
            std::vector<int64_t> s;
            for (size_t i = 0; i < rank; ++i) {
              if (i == d + 1) continue;
              s.push_back(i == d ? shape[d] * shape[d + 1] : shape[i]);
            }
            x = reshape(x, s);
          } else if (rank < 4) {
            size_t d = static_cast<size_t>(g.pick(static_cast<int>(rank)));
            if (shape[d] % 2 == 0 && shape[d] > 2) {
              std::vector<int64_t> s = shape;
              s[d] = 2;
              s.insert(s.begin() + static_cast<ptrdiff_t>(d) + 1, shape[d] / 2);
              x = reshape(x, s);
            }
          }
          break;
        }
        case 5:
          if (rank >= 2) x = reduce_sum(x, {g.pick(static_cast<int>(rank))});
          break;
        case 6: {  // contract the last dimension with a new weight
          int64_t k = shape.back(), n = 1 + g.pick(5);
          Tensor w = param({k, n});
          DotDims dd{{}, {}, {static_cast<int64_t>(rank) - 1}, {0}};
          x = dot_general(x, w, dd);
          break;
        }
        case 7:
          if (rank < 4) {
            std::vector<int64_t> s = shape, dims;
            s.insert(s.begin(), 3);
            for (size_t i = 0; i < rank; ++i) dims.push_back(static_cast<int64_t>(i) + 1);
            x = broadcast_in_dim(x, s, dims);
          }
          break;
        case 8: {  // slice a dimension
          size_t d = static_cast<size_t>(g.pick(static_cast<int>(rank)));
          if (shape[d] < 2) break;
          std::vector<int64_t> start(rank, 0), limit = shape;
          start[d] = g.pick(static_cast<int>(shape[d]) - 1);
          limit[d] = start[d] + 1 + g.pick(static_cast<int>(shape[d] - start[d]));
          // (extended: sometimes strided, and the operand and result laid out alike, which a halo
          // exchange serves: spmd/split_reads.h)
          if (extended && g.coin(0.4)) {
            std::vector<int64_t> strides(rank, 1);
            strides[d] = 1 + g.pick(3);
            Sharding s = g.random_sharding(rank);
            x = constrain(slice(constrain(x, s), start, limit, strides), s);
            break;
          }
          x = slice(x, start, limit);
          break;
        }
        case 9: {  // pad a dimension
          size_t d = static_cast<size_t>(g.pick(static_cast<int>(rank)));
          std::vector<int64_t> lo(rank, 0), hi(rank, 0);
          lo[d] = g.pick(3);
          hi[d] = g.pick(3) - (shape[d] > 1 ? 1 : 0);
          // (extended: sometimes cropping at the start too, and the operand and result laid out
          // alike, which a halo exchange serves: spmd/split_reads.h)
          if (extended && g.coin(0.4)) {
            if (shape[d] > 2 && g.coin(0.5)) lo[d] = -1;
            std::vector<int64_t> interior(rank, 0);  // (sometimes interior padding too)
            if (g.coin(0.3)) interior[d] = 1 + g.pick(2);
            Sharding s = g.random_sharding(rank);
            x = constrain(pad(constrain(x, s), x.builder().scalar(ElementType::f32, 0.25), lo, hi, interior), s);
            break;
          }
          x = pad(x, x.builder().scalar(ElementType::f32, 0.25), lo, hi);
          break;
        }
        // (not x and -x: a later sum over the doubled dimension cancels to ~0 exactly, where a
        // last-bit difference of the sharded sum flips a following max or argmax: seeds 5158, 6663)
        case 10: {
          auto d = g.pick(static_cast<int>(rank));
          // (extended: sometimes the operands and result laid out alike, as for pad)
          if (extended && g.coin(0.4)) {
            Sharding s = g.random_sharding(rank);
            Tensor y = constrain(x, s);
            x = constrain(concatenate({y, negate(y) * 0.75 + 0.125}, d), s);
            break;
          }
          x = concatenate({x, negate(x) * 0.75 + 0.125}, d);
          break;
        }
        case 11: x = reverse(x, {g.pick(static_cast<int>(rank))}); break;
        case 12: x = constrain(x, g.random_sharding(rank)); break;
        case 13:
          x = x + convert(x.builder().iota(i32(shape), g.pick(static_cast<int>(rank))), ElementType::f32) * 0.125;
          break;
        case 14: x = select(compare(x, x.builder().scalar(ElementType::f32, 0) + x * 0.0, ComparisonDirection::GT), x, x * 0.5); break;
        case 15:
          if (rank >= 2) x = reduce_max(x, {g.pick(static_cast<int>(rank))});
          break;
        case 16:
          if (rank >= 2) {  // batched contraction over the first dimension
            int64_t n = 1 + g.pick(4);
            Tensor w = param({shape[0], shape[rank - 1], n});
            DotDims dd{{0}, {0}, {static_cast<int64_t>(rank) - 1}, {1}};
            x = dot_general(x, w, dd);
          }
          break;
        case 17: {  // dynamic_slice from a constant start
          size_t d = static_cast<size_t>(g.pick(static_cast<int>(rank)));
          if (shape[d] < 2) break;
          std::vector<Tensor> start;
          for (size_t i = 0; i < rank; ++i)
            start.push_back(x.builder().scalar(ElementType::i32, i == d ? 1 : 0));
          std::vector<int64_t> sizes = shape;
          sizes[d] = shape[d] - 1;
          x = dynamic_slice(x, start, sizes);
          break;
        }
        // Windows and convolution (random_window below): a window along one dimension.
        case 18: {  // reduce_window: a sum or a max-pool (from -8, not -inf: a window of padding
                    // alone would give -inf, and NaN after a contraction)
          Window w = random_window(g, shape);
          x = g.coin() ? reduce_window(x, x.builder().scalar(ElementType::f32, 0), w, OpKind::Add)
                       : reduce_window(x, x.builder().scalar(ElementType::f32, -8), w, OpKind::Maximum);
          break;
        }
        case 19:
          if (rank == 3 && shape[1] >= 2) {  // a 1-D convolution [b, 0, f]x[0, i, o]->[b, 0, f]
            int64_t k = 1 + g.pick(static_cast<int>(std::min<int64_t>(shape[1], 3)));
            Window w = random_window(g, {shape[1]});
            w.size = {k};
            if (w.num_windows(0, shape[1]) == 0) w.window_dilation = {1};
            Tensor kernel = param({k, shape[2], 1 + g.pick(4)});
            // (extended: sometimes the input and output laid out alike, the spatial dimension
            // perhaps split, which a halo exchange serves: spmd/halo_conv.cpp)
            if (extended && g.coin(0.4)) {
              Sharding s = g.random_sharding(rank);
              x = constrain(convolution(constrain(x, s), kernel, ConvDims{0, 2, {1}, 1, 2, {0}, 0, 2, {1}}, w), s);
              break;
            }
            x = convolution(x, kernel, ConvDims{0, 2, {1}, 1, 2, {0}, 0, 2, {1}}, w);
          }
          break;
        case 20:  // a sort, or the top entries of the last dimension (chlo.top_k, #17)
          if (g.coin()) {
            x = sort({x}, g.pick(static_cast<int>(rank)), ComparisonDirection::LT)[0];
          } else {
            x = top_k(x, 1 + g.pick(static_cast<int>(shape.back())))[0];
          }
          break;
        case 21: {  // select_and_scatter of a new source over the windows' maxima
          Window w = random_window(g, shape);
          w.base_dilation.assign(rank, 1);
          w.window_dilation.assign(rank, 1);
          std::vector<int64_t> windows;
          for (size_t d = 0; d < rank; ++d) windows.push_back(w.num_windows(d, shape[d]));
          // (x plus a ramp of 1/1024 per element in row-major order: earlier ops can leave equal
          // values in a window (rows of a pad's constant, summed alike), and a contraction computes
          // equal rows to different last bits at different places of its tiles, so sharded and
          // unsharded runs then selected different maxima: seed 462 with uneven layouts propagated)
          int64_t stride = 1;
          for (size_t d = rank; d-- > 0; stride *= shape[d])
            x = x + convert(x.builder().iota(i32(shape), static_cast<int64_t>(d)), ElementType::f32) *
                        (static_cast<double>(stride) / 1024.0);
          // (extended: sometimes the operand and result laid out alike, the window dimension
          // perhaps split, padded or not, which a halo exchange serves: spmd/halo_select_scatter.cpp)
          if (extended && g.coin(0.7)) {
            Sharding s = g.random_sharding(rank);
            x = constrain(select_and_scatter(constrain(x, s), param(windows), x.builder().scalar(ElementType::f32, 0), w,
                                             ComparisonDirection::GE, OpKind::Add), s);
            break;
          }
          x = select_and_scatter(x, param(windows), x.builder().scalar(ElementType::f32, 0), w,
                                 ComparisonDirection::GE, OpKind::Add);
          break;
        }
        case 22:  // more elementwise ops (#17), each on a domain where it is finite
          switch (g.pick(11)) {
            case 0: x = tan(tanh(x)); break;
            // (cbrt away from 0 on both sides: its slope is infinite at 0, where a last-bit
            // difference of a sharded sum that cancels to ~0 became a difference of 3e-3, seed 3244)
            case 1: x = cbrt(square(x) + 0.5) + cbrt(tanh(x) - 2.0) + erf(x); break;
            case 2: x = erf_inv(tanh(x) * 0.9) - erfc(x); break;
            case 3: x = lgamma(x * x + 0.5) * digamma(x * x + 0.5); break;
            case 4: x = bessel_i1e(x) + sinh(tanh(x)) * cosh(tanh(x)); break;
            // (not asin(t) + acos(t): that is pi/2 everywhere, and its last-bit differences become
            // ties that a following sort or max-pool breaks differently sharded and unsharded)
            case 5: x = asin(tanh(x) * 0.9) - acos(tanh(x) * 0.5); break;
            case 6: x = atan(x) * asinh(x); break;
            case 7: x = acosh(square(x) + 1.5) + atanh(tanh(x) * 0.9); break;
            case 8: {  // integer ops on an iota (reduce_precision and float-to-int conversions are left
                       // out: a last-bit difference of a contraction's sum order could cross a step)
              Tensor i = x.builder().iota(i32(shape), g.pick(static_cast<int>(rank)));
              x = x + convert(popcnt(i) + count_leading_zeros(i), ElementType::f32) * 0.0625;
              break;
            }
            case 9: x = select(is_inf(x) | is_pos_inf(x) | is_neg_inf(x), x * 0.0, next_after(x, square(x))); break;
            default: x = real(complex(x, x * 0.5)) - imag(conj(complex(x, x * 0.5))); break;
          }
          break;
        case 23: {  // if or case (#17) on a new scalar parameter (whole on every device), branches
                    // reading x and a new parameter; one sums over a dimension (a collective inside
                    // a branch when that dimension is split)
          Tensor q = param({}), y = param(shape);
          auto zero = [&](double v) { return q.builder().scalar(ElementType::f32, v); };
          auto summed = [&] {
            std::vector<int64_t> dims;
            for (size_t i = 1; i < rank; ++i) dims.push_back(static_cast<int64_t>(i));
            return x * broadcast_in_dim(reduce_sum(x, {0}), shape, dims);
          };
          if (g.coin()) {
            x = if_op(compare(q, zero(0), ComparisonDirection::GT), [&](Builder&) { return std::vector<Tensor>{tanh(x) * y}; },
                      [&](Builder&) { return std::vector<Tensor>{summed() - y}; })[0];
          } else {  // index 0, 1 or 4 (out of range: the last branch)
            Tensor index = convert(compare(q, zero(0), ComparisonDirection::GT), ElementType::i32) +
                           convert(compare(q, zero(0.5), ComparisonDirection::GT), ElementType::i32) *
                               q.builder().scalar(ElementType::i32, 3);
            x = case_op(index, {[&](Builder&) { return std::vector<Tensor>{x + y}; },
                                [&](Builder&) { return std::vector<Tensor>{summed()}; },
                                [&](Builder&) { return std::vector<Tensor>{maximum(x, y)}; }})[0];
          }
          break;
        }
        case 24:  // scatter (add, with repeated rows, or replace, with distinct ones) of a new
                  // parameter into rows of a dimension of x, laid out anew; the rows split too
        case 25: {  // gather of rows of a dimension of x
          size_t d = static_cast<size_t>(g.pick(static_cast<int>(rank)));
          bool add = g.coin();
          int64_t n = 1 + g.pick(static_cast<int>(std::min<int64_t>(shape[d], 6)));
          if (!add && n > shape[d]) n = shape[d];
          Tensor rows = x.builder().constant(random_rows(g, n, shape[d], !add));
          if (g.coin()) rows = constrain(rows, g.random_sharding(2));
          if (g.coin()) x = constrain(x, g.random_sharding(rank));
          std::vector<int64_t> window, other;
          for (size_t i = 0; i < rank; ++i) {
            if (i == d) continue;
            window.push_back(static_cast<int64_t>(window.size()) + 1);
            other.push_back(shape[i]);
          }
          other.insert(other.begin(), n);
          if (step % 2 == 0 || g.coin()) {
            ScatterDims sd;
            sd.update_window_dims = window;
            sd.inserted_window_dims = {static_cast<int64_t>(d)};
            sd.scatter_dims_to_operand_dims = {static_cast<int64_t>(d)};
            sd.index_vector_dim = 1;
            x = scatter(x, rows, param(other), sd, add ? OpKind::Add : OpKind::Return);
          } else {
            // (extended: sometimes rows out of range and negative, which gather clamps)
            if (extended && g.coin(0.3)) {
              std::vector<int64_t> wild(static_cast<size_t>(n));
              for (auto& r : wild) r = g.pick(static_cast<int>(shape[d]) + 4) - 2;
              rows = x.builder().constant(Literal::from_ints(i32({n, 1}), wild));
            }
            GatherDims gd;
            gd.offset_dims = window;
            gd.collapsed_slice_dims = {static_cast<int64_t>(d)};
            gd.start_index_map = {static_cast<int64_t>(d)};
            gd.index_vector_dim = 1;
            std::vector<int64_t> sizes = shape;
            sizes[d] = 1;
            x = gather(x, rows, gd, sizes);
          }
          break;
        }
        case 26:  // a constraint to a partial layout, read by a non-linear op or a sum
          x = constrain(x, g.random_partial_sharding(rank, 0.8));
          x = g.coin() ? tanh(x) : x + x;
          break;
        case 27: {  // a reduction from an init that is not the reducer's identity
          int64_t d = g.pick(static_cast<int>(rank));
          if (rank < 2) break;
          switch (g.pick(7)) {
            case 0: x = reduce(x, x.builder().scalar(ElementType::f32, 5), {d}, OpKind::Add); break;
            case 1: x = reduce(x, x.builder().scalar(ElementType::f32, 0.25), {d}, OpKind::Maximum); break;
            case 2: x = reduce(x, x.builder().scalar(ElementType::f32, -0.25), {d}, OpKind::Minimum); break;
            case 3: case 5: {  // JAX's argmax or argmin (a reduce of two results) of a parameter with many
                       // ties (floor(2p): four values), whose answer no upstream rounding can flip
              Tensor p = floor(param(shape) * 2.0);
              if (g.coin(0.75)) {  // (mostly split along the reduced dimension: reduced by pieces)
                Sharding s{g.mesh.name, std::vector<DimSharding>(rank), {}, {}};
                s.dims[static_cast<size_t>(d)].axes.emplace_back(g.mesh.axes[static_cast<size_t>(g.pick(static_cast<int>(g.mesh.axes.size())))].name);
                p = constrain(p, s);
              }
              std::vector<Tensor> r = jax_argminmax(p, d, g.coin());
              x = r[0] + convert(r[1], ElementType::f32) * 0.125 + reduce_max(x, {d});
              break;
            }
            case 4: {  // a sum and a max in one reduce, each result combined alone
              std::vector<Tensor> r = sum_and_max(x, tanh(x), d);
              x = r[0] + r[1];
              break;
            }
            default: x = reduce(tanh(x) * 0.5 + 1.0, x.builder().scalar(ElementType::f32, 2), {d}, OpKind::Multiply); break;
          }
          break;
        }
        case 28: {  // manual_computation over the first mesh axis, which splits a dimension it
                    // divides; other axes (free) may split the same or other dimensions
          const MeshAxis& a = g.mesh.axes[0];
          std::vector<size_t> divisible;
          for (size_t d = 0; d < rank; ++d)
            if (shape[d] % a.size == 0) divisible.push_back(d);
          if (divisible.empty()) break;
          Sharding in{g.mesh.name, std::vector<DimSharding>(rank), {}, {}};
          in.dims[divisible[static_cast<size_t>(g.pick(static_cast<int>(divisible.size())))]].axes.emplace_back(a.name);
          if (g.mesh.axes.size() > 1 && g.coin(0.7))
            in.dims[static_cast<size_t>(g.pick(static_cast<int>(rank)))].axes.emplace_back(g.mesh.axes[1].name);
          Sharding out = in;  // the free axis, if any, moved to another dimension or dropped
          if (g.mesh.axes.size() > 1 && g.coin()) {
            const std::string& free = g.mesh.axes[1].name;
            for (auto& d : out.dims) std::erase_if(d.axes, [&](const AxisRef& r) { return r.name == free; });
            if (g.coin()) out.dims[static_cast<size_t>(g.pick(static_cast<int>(rank)))].axes.emplace_back(free);
          }
          x = manual({x}, {in}, {out}, {a.name}, [](Builder&, const std::vector<Tensor>& v) {
            return std::vector<Tensor>{tanh(v[0]) * 2.0 + v[0]};
          })[0];
          break;
        }
        case 29: {  // Shardy's propagation ops: a barrier one way (or none), an edge that may hold a
                    // layout, and x in a sharding group with what comes out
          static const char* const kDirections[] = {"FORWARD", "BACKWARD", "NONE"};
          Tensor y = tanh(propagation_barrier(x, kDirections[g.pick(3)]));
          y = data_flow_edge(y, g.coin() ? std::optional<Sharding>(g.random_sharding(rank)) : std::nullopt);
          if (g.coin()) {
            sharding_group(x, step);
            sharding_group(y, step);
          }
          x = y * 0.5 + x;
          break;
        }
        case 30: {  // Shardy's explicit all_reduce or reduce_scatter over one axis, identities on the
                    // global values, of a new parameter (each device's piece one of the summands), of
                    // a value whose layout is written (whole, not summed again) or of one computed
                    // as partial sums; the operand is read again afterwards
          const MeshAxis& a = g.mesh.axes[static_cast<size_t>(g.pick(static_cast<int>(g.mesh.axes.size())))];
          int kind = g.pick(3);
          Tensor y = kind == 0 ? param(shape) : kind == 1 ? constrain(tanh(x), g.random_sharding(rank)) : tanh(x) * 2.0;
          Sharding out{g.mesh.name, std::vector<DimSharding>(rank), {}, {}};
          std::vector<size_t> divisible;
          for (size_t d = 0; d < rank; ++d)
            if (shape[d] % a.size == 0) divisible.push_back(d);
          auto reduced = [&] {
            if (divisible.empty() || g.coin()) return sdy_all_reduce(y, {AxisRef{a.name}}, out);
            size_t d = divisible[static_cast<size_t>(g.pick(static_cast<int>(divisible.size())))];
            AxisLists axes(rank);
            axes[d] = {AxisRef{a.name}};
            out.dims[d].axes = {AxisRef{a.name}};
            return sdy_reduce_scatter(y, axes, out);
          };
          x = reduced() * 0.5 + tanh(y);
          break;
        }
      }
      if (x.type().num_elements() > 4096) x = reduce_sum(x, {0});
      if (g.coin(0.1)) outs.push_back(x);
    }
    outs.push_back(x);
    return outs;
  });
  // Some results declared partial: assembled, they are the sum of their pieces.
  for (size_t i = 0; extended && i < fn.result_types.size(); ++i)
    if (g.coin(0.15)) fn.set_result_sharding(i, g.random_partial_sharding(fn.result_types[i].shape.size(), 0.8));
}

inline Literal uniform_input(const Type& t, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (double& x : v) x = u(rng);
  return Literal::from_doubles(t, v);
}

// ---- The fusion generator ----

inline Literal chain_input(const Type& t, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-3, 3);
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (double& x : v) x = is_integer(t.element) ? std::floor(u(rng) + 3) : u(rng);
  return Literal::from_doubles(t, v);
}

// A random program on loop shape `shape`: element-wise chains over f32 values of that shape, fed by
// parameters, broadcasts of smaller parameters, an iota one-hot, reductions broadcast back, and
// views read through strides: reverses (of values also read in place), slices of larger values.
inline void build_elementwise_chains(Module& m, const std::vector<int64_t>& shape, uint32_t seed) {
  build_function(m, "f", [&](FunctionBuilder& f) {
    std::mt19937 rng(seed);
    auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    int64_t rank = static_cast<int64_t>(shape.size());
    std::vector<Tensor> pool = {f.param(f32(shape)), f.param(f32(shape))};
    if (rank > 0) {
      std::vector<int64_t> lead(shape.begin(), shape.end() - 1);
      pool.push_back(broadcast_in_dim(f.param(f32({shape.back()})), shape, {rank - 1}));
      std::vector<int64_t> lead_dims;
      for (int64_t d = 0; d + 1 < rank; ++d) lead_dims.push_back(d);
      Tensor labels = f.param(i32(lead));
      Tensor one_hot = compare(f.iota(i32(shape), rank - 1), broadcast_in_dim(labels, shape, lead_dims),
                               ComparisonDirection::EQ);
      pool.push_back(convert(one_hot, ElementType::f32));
      pool.push_back(convert(f.iota(i32(shape), 0), ElementType::f32));
      pool.push_back(select(one_hot, pool[0], pool[1]));
    }
    pool.push_back(broadcast_in_dim(f.param(f32({})), shape, {}));
    std::vector<Tensor> outs;
    for (int i = 0; i < 40; ++i) {
      // Prefer recent values, so chains grow long; any value may be read again later.
      auto operand = [&] { return pool[pool.size() - 1 - std::min(pick(pool.size()), pick(4))]; };
      Tensor a = operand(), b = operand(), r = a;
      switch (pick(21)) {
        case 0: r = a + b; break;
        case 1: r = a - b; break;
        case 2: r = a * b; break;
        case 3: r = a / b; break;
        case 4: r = maximum(a, b); break;
        case 5: r = minimum(a, b); break;
        case 6: r = -a; break;
        case 7: r = exp(a); break;
        case 8: r = log(a); break;  // NaN for negatives: NaNs must match too
        case 9: r = logistic(a); break;
        case 10: r = rsqrt(a * a + b * b); break;
        case 11: r = select(compare(a, b, ComparisonDirection::GT), a, b * a); break;
        case 12: r = convert(convert(a, ElementType::f64) * convert(b, ElementType::f64), ElementType::f32); break;
        case 13: r = tanh(a) + sqrt(b) * rsqrt(a); break;
        case 14:  // a reduction (never fused) in the middle of a chain, broadcast back
          if (rank > 0) {
            std::vector<int64_t> kept;
            for (int64_t d = 0; d + 1 < rank; ++d) kept.push_back(d);
            r = a - broadcast_in_dim(log(reduce_sum(exp(a), {rank - 1})), shape, kept);
          } else {
            r = a * b;
          }
          break;
        case 15:  // a reduction over the leading dimension, of a product computed in its loop
          if (rank > 1) {
            std::vector<int64_t> rest;
            for (int64_t d = 1; d < rank; ++d) rest.push_back(d);
            r = b + broadcast_in_dim(reduce_max(a * b, {0}), shape, rest);
          } else {
            r = a - b;
          }
          break;
        case 16: outs.push_back(sum(a * b + 1.0)); r = -b; break;  // one long fold into a scalar
        case 17: {  // a reverse of some dimensions, its operand also read in place
          std::vector<int64_t> dims;
          for (int64_t d = 0; d < rank; ++d)
            if (pick(2) == 0) dims.push_back(d);
          r = reverse(a, dims) * b + a;
          break;
        }
        case 18: {  // a slice of a larger value, with steps of 1 or 2 from an offset
          std::vector<int64_t> big, start, limit, step;
          for (int64_t n : shape) {
            int64_t s = 1 + static_cast<int64_t>(pick(2)), at = static_cast<int64_t>(pick(3));
            start.push_back(at);
            step.push_back(s);
            limit.push_back(at + (n - 1) * s + 1);
            big.push_back(at + (n - 1) * s + 1 + static_cast<int64_t>(pick(2)));
          }
          Tensor x = f.param(f32(big));
          r = slice(pick(2) == 0 ? x : exp(x), start, limit, step) - a;
          break;
        }
        case 19:  // a broadcast of trailing dimensions (read as one longer row)
          r = rank >= 2 ? a + broadcast_in_dim(f.param(f32({shape[size_t(rank) - 2], shape.back()})), shape, {rank - 2, rank - 1})
                        : a * b;
          break;
        default: outs.push_back(a); r = a + 1.0; break;  // a value that is also returned
      }
      pool.push_back(r);
    }
    outs.push_back(pool.back());
    outs.push_back(sum(pool[pool.size() - 2]));
    return outs;
  });
}

// The same bits, except that any NaN equals any NaN: which operand's NaN a sum of two NaNs keeps
// is the compiler's choice (it may swap the operands of a commutative op), in the reference too.
inline bool same_bits(const Literal& a, const Literal& b) {
  if (a.type() != b.type()) return false;
  if (a == b) return true;
  if (!is_float(a.element())) return false;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    double x = a.get_double(i), y = b.get_double(i);
    if (std::isnan(x) != std::isnan(y)) return false;
    if (!std::isnan(x) && std::bit_cast<uint64_t>(x) != std::bit_cast<uint64_t>(y)) return false;
  }
  return true;
}

}  // namespace tessera::testing
