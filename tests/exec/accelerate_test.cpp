// Each fast kernel against the reference interpreter, on random programs of the shapes and
// layouts it handles (and some it declines): copies, reductions, gathers and scatter-adds must give
// the reference's bits; contractions agree within BLAS's summation order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "exec/accelerate.h"
#include "exec/strided.h"
#include "exec_tolerance.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "ir/builder_window.h"

namespace tessera::exec {
namespace {

using namespace tessera::ir;

struct Case {
  std::string name;
  std::vector<Type> params;
  std::function<Tensor(FunctionBuilder&, const std::vector<Tensor>&)> body;
  bool exact = true;
  bool taken = true;  // whether the fast path takes the program's last op
};

// Counts the ops of kind `watched` that the fast path took.
OpKind watched;
int taken_count = 0;
bool counting(const Op& op, std::span<const Literal* const> in, std::vector<Literal>& out) {
  bool took = accelerate(op, in, out);
  if (took && op.kind() == watched) ++taken_count;
  return took;
}

Literal random_literal(const Type& t, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (double& x : v) x = is_integer(t.element) ? std::floor(u(rng) * 3) : u(rng);
  return Literal::from_doubles(t, v);
}

// Runs `c` with and without the fast kernels; returns how many ops the fast path took.
void check(const Case& c) {
  Module m;
  build_function(m, "f", [&](FunctionBuilder& f) {
    std::vector<Tensor> ps;
    for (const Type& t : c.params) ps.push_back(f.param(t));
    return c.body(f, ps);
  });
  std::mt19937 rng(7);
  std::vector<Literal> in;
  for (const Type& t : c.params) in.push_back(random_literal(t, rng));
  std::vector<Literal> want = interp::evaluate(m, "f", in);
  interp::Options o;
  o.accelerate = counting;
  watched = m.find_function("f")->body().ops().end()[-2]->kind();
  taken_count = 0;
  std::vector<Literal> got = interp::evaluate(m, "f", in, o);
  EXPECT_EQ(taken_count > 0, c.taken) << c.name << ": the fast path " << (c.taken ? "did not take" : "took") << " it";
  ASSERT_EQ(got[0].type(), want[0].type()) << c.name;
  for (int64_t i = 0; i < got[0].num_elements(); ++i) {
    double a = got[0].get_double(i), b = want[0].get_double(i);
    if (c.exact) {
      ASSERT_EQ(a, b) << c.name << " element " << i;
    } else {
      double tolerance = want[0].element() == ElementType::bf16 ? testing::kBf16ContractionTolerance
                                                                : testing::kContractionTolerance;
      ASSERT_TRUE(testing::close(a, b, tolerance)) << c.name << " element " << i << ": " << a << " against " << b;
    }
  }
}

TEST(Accelerate, ContractionsMatchTheReference) {
  auto dot = [](DotDims dd) {
    return [dd](FunctionBuilder&, const std::vector<Tensor>& p) { return dot_general(p[0], p[1], dd); };
  };
  std::vector<Case> cases = {
      {"matmul", {f32({5, 7}), f32({7, 3})}, dot({{}, {}, {1}, {0}}), false},
      {"lhs transposed", {f32({7, 5}), f32({7, 3})}, dot({{}, {}, {0}, {0}}), false},
      {"rhs transposed", {f32({5, 7}), f32({3, 7})}, dot({{}, {}, {1}, {1}}), false},
      {"both transposed", {f32({7, 5}), f32({3, 7})}, dot({{}, {}, {0}, {1}}), false},
      {"batched", {f32({2, 5, 7}), f32({2, 7, 3})}, dot({{0}, {0}, {2}, {1}}), false},
      {"batch in the middle", {f32({5, 2, 7}), f32({7, 2, 3})}, dot({{1}, {1}, {2}, {0}}), false},
      {"two contracting", {f32({4, 3, 5}), f32({3, 5, 6})}, dot({{}, {}, {1, 2}, {0, 1}}), false},
      {"vector", {f32({7}), f32({7, 3})}, dot({{}, {}, {0}, {0}}), false},
      {"f64", {f64({6, 4}), f64({4, 2})}, dot({{}, {}, {1}, {0}}), false},
      {"empty contraction", {f32({3, 0}), f32({0, 2})}, dot({{}, {}, {1}, {0}}), true},
      {"bf16", {Type(ElementType::bf16, {5, 40}), Type(ElementType::bf16, {40, 3})}, dot({{}, {}, {1}, {0}}), false},
      {"bf16 batched, rhs transposed", {Type(ElementType::bf16, {2, 5, 7}), Type(ElementType::bf16, {2, 3, 7})},
       dot({{0}, {0}, {2}, {2}}), false},
  };
  for (const Case& c : cases) check(c);
}

// The fast bf16 rounding gives the bits of the interpreter's general encoder on every bf16 value
// and on the f32 values around each one's rounding boundaries (ties both ways, just off them),
// NaNs, infinities, subnormals and overflow included.
TEST(Accelerate, Bf16RoundingMatchesTheReferenceEncoder) {
  int64_t checked = 0;
  for (uint32_t high = 0; high < 0x10000u; ++high)
    for (uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
      uint32_t u = (high << 16) | low;
      float f;
      std::memcpy(&f, &u, sizeof f);
      // A NaN widened bit by bit (a hardware widening would quiet a signalling one, which bf16's
      // narrowing keeps: negate and abs must not change it).
      auto want = static_cast<uint16_t>(double_to_minifloat(ElementType::bf16, std::isnan(f) ? ir::nan_to_double(f) : double(f)));
      ASSERT_EQ(ir::f32_to_bf16(f), want) << std::hex << "f32 bits 0x" << u;
      if (low == 0 && !std::isnan(f)) {
        ASSERT_EQ(ir::bf16_to_f32(uint16_t(high)), f);
      }
      ++checked;
    }
  EXPECT_EQ(checked, 6 * 65536);
}

TEST(Accelerate, ReductionsGiveTheReferenceBits) {
  auto red = [](std::vector<int64_t> dims, int kind) {
    return [dims, kind](FunctionBuilder&, const std::vector<Tensor>& p) {
      switch (kind) {
        case 0: return reduce_sum(p[0], dims);
        case 1: return reduce_max(p[0], dims);
        default: return reduce_min(p[0], dims);
      }
    };
  };
  for (int kind = 0; kind < 3; ++kind)
    for (std::vector<int64_t> dims : std::vector<std::vector<int64_t>>{{0}, {1}, {2}, {0, 2}, {0, 1, 2}, {1, 2}})
      check({"reduce", {f32({3, 4, 5})}, red(dims, kind)});
  check({"reduce f64", {f64({6, 7})}, red({1}, 0)});
}

TEST(Accelerate, LayoutOpsCopyExactly) {
  std::vector<Case> cases = {
      {"transpose", {f32({2, 3, 4})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return transpose(p[0], {2, 0, 1}); }},
      {"transpose i32", {i32({3, 4})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return transpose(p[0], {1, 0}); }},
      // Copied in tiles (strided.h): partial tiles at both edges, a batch dimension around them, the
      // tiled source dimension not the outermost, f64, and a broadcast along the rows.
      {"transpose in tiles", {f32({37, 70})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return transpose(p[0], {1, 0}); }},
      {"transpose in tiles, batched", {f32({3, 40, 5, 33})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return transpose(p[0], {0, 3, 2, 1}); }},
      {"transpose in tiles, inner", {f32({4, 12, 3, 10})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return transpose(p[0], {0, 2, 3, 1}); }},
      {"transpose in tiles f64", {f64({9, 50})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return transpose(p[0], {1, 0}); }},
      // 8x8 blocks in AVX2 registers (transpose_avx2.cpp): whole tiles, ragged edges, i32.
      {"transpose in blocks", {f32({70, 260})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return transpose(p[0], {1, 0}); }},
      {"transpose in blocks i32", {i32({41, 17})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return transpose(p[0], {1, 0}); }},
      {"transpose in blocks, batched", {f32({2, 24, 3, 40})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return transpose(p[0], {0, 3, 2, 1}); }},
      {"broadcast in tiles", {f32({20})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return broadcast_in_dim(p[0], {20, 9}, {0}); }},
      {"broadcast", {f32({3, 1})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return broadcast_in_dim(p[0], {2, 3, 4}, {1, 2}); }},
      {"broadcast scalar", {f64({})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return broadcast_in_dim(p[0], {3, 2}, {}); }},
      {"slice", {f32({6, 7})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return slice(p[0], {1, 2}, {6, 7}, {2, 3}); }},
      // Reversed dimensions walked backwards: an outer one, the innermost (stride -1), both, none.
      {"reverse", {f32({5, 3, 4})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return reverse(p[0], {1}); }},
      {"reverse inner i32", {i32({3, 7})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return reverse(p[0], {1}); }},
      {"reverse both", {f64({4, 6})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return reverse(p[0], {1, 0}); }},
      {"reverse none", {f32({2, 3})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return reverse(p[0], {}); }},
      {"reshape", {f32({6, 4})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return reshape(p[0], {3, 8}); }},
      {"concatenate", {f32({2, 3}), f32({2, 5})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return concatenate({p[0], p[1], p[0]}, 1); }},
      {"pad", {f32({3, 4})}, [](FunctionBuilder& f, const std::vector<Tensor>& p) { return pad(p[0], f.scalar(ElementType::f32, 0.5), {1, 0}, {2, 3}, {1, 2}); }},
      {"pad cropping", {f32({3, 4})}, [](FunctionBuilder& f, const std::vector<Tensor>& p) { return pad(p[0], f.scalar(ElementType::f32, 0.5), {-1, 0}, {2, -1}); }, true, false},
      {"convert", {i32({4, 5})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return convert(p[0], ElementType::f32); }},
      {"convert f64", {f32({4, 5})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return convert(p[0], ElementType::f64); }},
      {"convert to bf16", {f32({4, 5})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return convert(p[0], ElementType::bf16); }},
      {"convert from bf16", {Type(ElementType::bf16, {4, 5})}, [](FunctionBuilder&, const std::vector<Tensor>& p) { return convert(p[0], ElementType::f32); }},
  };
  for (const Case& c : cases) check(c);
}

// The 2-D transposes of 4-byte elements in 8x8 AVX2 blocks (strided.h, transpose_avx2.cpp) move
// every element's bits, NaN payloads (quiet and signalling) and -0 included, at every size around
// a block's and a tile's; and they ran.
TEST(Accelerate, TransposesInBlocksMoveTheBits) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(9);
  const uint32_t specials[] = {0x7fc01234u, 0xffc00000u, 0x7f800001u, 0x80000000u, 0x7f800000u, 0u};
  int64_t before = transpose_blocks_done();
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{8, 8}, {9, 17}, {33, 70}, {64, 31}, {256, 684}, {7, 100}}) {
    std::vector<uint32_t> x(static_cast<size_t>(rows * cols)), got(x.size()), want(x.size());
    for (uint32_t& v : x) v = rng() % 4 == 0 ? specials[rng() % std::size(specials)] : static_cast<uint32_t>(rng());
    // x [rows, cols] transposed: a strided copy of shape [cols, rows], strides [1, cols].
    const int64_t shape[] = {cols, rows}, strides[] = {1, cols};
    strided_copy(x.data(), 0, shape, strides, got.data());
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t j = 0; j < rows; ++j) want[static_cast<size_t>(i * rows + j)] = x[static_cast<size_t>(j * cols + i)];
    EXPECT_EQ(got, want) << rows << "x" << cols;
    std::vector<float> xf(x.size()), gf(x.size());
    std::memcpy(xf.data(), x.data(), x.size() * 4);
    strided_copy(xf.data(), 0, shape, strides, gf.data());
    EXPECT_EQ(std::memcmp(gf.data(), want.data(), want.size() * 4), 0) << "f32 " << rows << "x" << cols;
  }
  // Blocks of 8x8 per copy: 1, 2, 4 x 8, 3 x 8 and 85 x 32, twice (u32 and f32); none in the 7-row copy.
  EXPECT_EQ(transpose_blocks_done() - before, 2 * (1 + 2 + 32 + 24 + 85 * 32));
}

TEST(Accelerate, ElementwiseGivesTheReferenceBits) {
  auto bin = [](auto f) { return [f](FunctionBuilder&, const std::vector<Tensor>& p) { return f(p[0], p[1]); }; };
  std::vector<Case> cases = {
      {"add", {f32({4, 5}), f32({4, 5})}, bin([](Tensor a, Tensor b) { return a + b; })},
      {"subtract", {f64({7}), f64({7})}, bin([](Tensor a, Tensor b) { return a - b; })},
      {"multiply", {f32({3, 3}), f32({3, 3})}, bin([](Tensor a, Tensor b) { return a * b; })},
      {"divide", {f32({9}), f32({9})}, bin([](Tensor a, Tensor b) { return a / b; })},
      {"maximum", {f32({9}), f32({9})}, bin([](Tensor a, Tensor b) { return maximum(a, b); })},
      {"minimum", {f64({9}), f64({9})}, bin([](Tensor a, Tensor b) { return minimum(a, b); })},
      {"select", {f32({4, 6}), f32({4, 6})},
       bin([](Tensor a, Tensor b) { return select(compare(a, b, ComparisonDirection::LT), a, b); })},
      {"select scalar", {f32({}), f32({5})},
       bin([](Tensor a, Tensor b) { return select(compare(a, a, ComparisonDirection::EQ), b, b * 2.0); })},
      {"iota", {f32({3, 4}), f32({3, 4})},
       bin([](Tensor a, Tensor) { return a.builder().iota(f32({3, 4}), 1); })},
      {"iota i32", {f32({3, 4}), f32({3, 4})},
       bin([](Tensor a, Tensor) { return a.builder().iota(i32({3, 4, 2}), 1); })},
      {"convert i1", {f32({3, 4}), f32({3, 4})},
       bin([](Tensor a, Tensor b) { return convert(compare(a, b, ComparisonDirection::GT), ElementType::f32); })},
  };
  for (const Case& c : cases) check(c);
}

// The index arithmetic the partitioner emits around split reads (offsets from partition_id,
// indices moved into a device's piece, masks of the rows it holds): integer arithmetic (integer
// division by zero included: random operands hold zeros), bitwise ops, compares, integer converts
// and dynamic_slice with starts the reference clamps, all taken by the fast path.
TEST(Accelerate, IndexArithmeticGivesTheReferenceBits) {
  auto bin = [](auto f) { return [f](FunctionBuilder&, const std::vector<Tensor>& p) { return f(p[0], p[1]); }; };
  auto u32 = [](Tensor x) { return convert(x, ElementType::ui32); };
  auto lt = [](Tensor a, Tensor b) { return compare(a, b, ComparisonDirection::LT); };
  std::vector<Case> cases = {
      {"add i32", {i32({4, 5}), i32({4, 5})}, bin([](Tensor a, Tensor b) { return a + b; })},
      {"subtract i64", {i64({7}), i64({7})}, bin([](Tensor a, Tensor b) { return a - b; })},
      {"multiply i64", {i64({3, 3}), i64({3, 3})}, bin([](Tensor a, Tensor b) { return a * b; })},
      {"divide i32 (zeros included)", {i32({40}), i32({40})}, bin([](Tensor a, Tensor b) { return a / b; })},
      {"divide ui32", {i32({40}), i32({40})}, bin([u32](Tensor a, Tensor b) { return u32(a) / u32(b); })},
      {"maximum i64", {i64({9}), i64({9})}, bin([](Tensor a, Tensor b) { return maximum(a, b); })},
      {"and i32", {i32({9}), i32({9})}, bin([](Tensor a, Tensor b) { return a & b; })},
      {"xor i64", {i64({9}), i64({9})}, bin([](Tensor a, Tensor b) { return a ^ b; })},
      {"or i1", {i32({9}), i32({9})}, bin([lt](Tensor a, Tensor b) { return lt(a, b) | lt(b, a); })},
      {"and i1", {i32({9}), i32({9})}, bin([lt](Tensor a, Tensor b) { return lt(a, b) & lt(a, a + b); })},
      {"compare i64 GE", {i64({12}), i64({12})},
       bin([](Tensor a, Tensor b) { return compare(a, b, ComparisonDirection::GE); })},
      {"compare ui32 LT", {i32({12}), i32({12})}, bin([u32, lt](Tensor a, Tensor b) { return lt(u32(a), u32(b)); })},
      {"compare f32 NE with NaN", {f32({12}), f32({12})},
       bin([](Tensor a, Tensor b) { return compare(a / (b - b), a, ComparisonDirection::NE); })},
      {"convert i32 to i64", {i32({6}), i32({6})}, bin([](Tensor a, Tensor) { return convert(a, ElementType::i64); })},
      {"convert i64 to i32 (wraps)", {i64({6}), i64({6})},
       bin([](Tensor a, Tensor b) { return convert(a * b * a.builder().scalar(ElementType::i64, 3e9), ElementType::i32); })},
      {"convert i32 to ui32", {i32({6}), i32({6})}, bin([u32](Tensor a, Tensor) { return u32(a); })},
      {"convert i32 to i1", {i32({6}), i32({6})}, bin([](Tensor a, Tensor) { return convert(a, ElementType::i1); })},
      {"convert i64 to f64", {i64({6}), i64({6})}, bin([](Tensor a, Tensor) { return convert(a, ElementType::f64); })},
      {"dynamic_slice, starts clamped", {f32({6, 5}), i32({2})}, bin([](Tensor x, Tensor s) {
         Tensor lo = reshape(slice(s, {0}, {1}, {1}), {}), hi = reshape(slice(s, {1}, {2}, {1}), {});
         return dynamic_slice(x, {lo * 7, hi}, {3, 4});
       })},
  };
  for (const Case& c : cases) check(c);
}

TEST(Accelerate, EmbeddingGatherAndScatterAdd) {
  GatherDims g{{2}, {0}, {}, {}, {0}, 2};
  check({"gather", {f32({10, 4}), i32({3, 5})}, [g](FunctionBuilder& f, const std::vector<Tensor>& p) {
           Tensor idx = clamp(f.scalar(ElementType::i32, -1), p[1] + 4, f.scalar(ElementType::i32, 12));
           return gather(p[0], idx, g, {1, 4});
         }});
  ScatterDims s{{2}, {0}, {}, {}, {0}, 2};
  check({"scatter-add", {f32({10, 4}), i32({3, 5}), f32({3, 5, 4})}, [s](FunctionBuilder& f, const std::vector<Tensor>& p) {
           Tensor idx = clamp(f.scalar(ElementType::i32, -1), p[1] + 4, f.scalar(ElementType::i32, 12));
           return scatter(p[0], idx, p[2], s, OpKind::Add);
         }});
}

// A paged KV cache's reads and writes (nn/generate.cpp): whole blocks [bs, kv, hd] of a pool
// gathered by a block table, and rows [kv, hd] of slots replaced, some indices out of bounds and
// some repeated (the later update must win, as in the reference's loop).
TEST(Accelerate, BlockGatherAndScatterReplace) {
  GatherDims g{{2, 3, 4}, {0}, {}, {}, {0}, 2};
  check({"block gather", {f32({6, 4, 2, 3}), i32({2, 3})}, [g](FunctionBuilder& f, const std::vector<Tensor>& p) {
           Tensor idx = clamp(f.scalar(ElementType::i32, -1), p[1] * 4 + 2, f.scalar(ElementType::i32, 7));
           return gather(p[0], idx, g, {1, 4, 2, 3});
         }});
  ScatterDims s{{2, 3}, {0}, {}, {}, {0}, 2};
  for (ElementType e : {ElementType::f32, ElementType::bf16, ElementType::i32})
    check({"scatter replace", {Type(e, {12, 2, 3}), i32({2, 5, 1}), Type(e, {2, 5, 2, 3})},
           [s](FunctionBuilder& f, const std::vector<Tensor>& p) {
             Tensor idx = clamp(f.scalar(ElementType::i32, -1), p[1] * 4 + 5, f.scalar(ElementType::i32, 13));
             return scatter(p[0], idx, p[2], s, OpKind::Return);
           }});
}

// The kernels take what they claim: a call on a case they handle returns true.
TEST(Accelerate, TakesTheCasesItHandlesAndDeclinesOthers) {
  Module m;
  Function& f = build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({4, 3}));
    Tensor y = b.param(Type(ElementType::bf16, {3, 2}));
    return std::vector<Tensor>{matmul(x, x.builder().constant(Literal(f32({3, 2})))), transpose(x, {1, 0}),
                               matmul(convert(x, ElementType::bf16), y)};
  });
  Literal x(f32({4, 3})), w(f32({3, 2})), t(f32({3, 4}));
  std::vector<Literal> out;
  const Literal* dot_in[] = {&x, &w};
  EXPECT_TRUE(accelerate(*f.body().ops()[1], dot_in, out));
  // A bf16 matmul is taken too (dot_bf16), and a bf16 x f32 mix is declined, leaving out empty.
  Literal xb(Type(ElementType::bf16, {4, 3})), yb(Type(ElementType::bf16, {3, 2}));
  const Literal* bf[] = {&xb, &yb};
  std::vector<Literal> taken;
  const Op& bf_dot = *f.body().ops()[4];
  ASSERT_EQ(bf_dot.kind(), OpKind::DotGeneral);
  EXPECT_TRUE(accelerate(bf_dot, bf, taken));
  EXPECT_EQ(taken.size(), 1u);
  const Literal* mixed[] = {&xb, &w};
  std::vector<Literal> none;
  EXPECT_FALSE(accelerate(bf_dot, mixed, none));
  EXPECT_TRUE(none.empty());
}

// ---- Windows and convolution ----

// im2col + GEMM against the reference convolution: layouts, strides, padding, both dilations;
// groups and integer convolutions are declined.
TEST(Accelerate, ConvolutionsMatchTheReference) {
  auto conv = [](ConvDims d, Window w, int64_t groups = 1) {
    return [d, w, groups](FunctionBuilder&, const std::vector<Tensor>& p) { return convolution(p[0], p[1], d, w, groups); };
  };
  auto window = [](std::vector<int64_t> stride, std::vector<int64_t> base, std::vector<int64_t> dil,
                   std::vector<int64_t> lo, std::vector<int64_t> hi) {
    Window w;
    w.size.assign(stride.size(), 1);
    w.stride = stride;
    w.base_dilation = base;
    w.window_dilation = dil;
    w.pad_lo = lo;
    w.pad_hi = hi;
    w.reversal.assign(stride.size(), false);
    return w;
  };
  ConvDims nhwc{0, 3, {1, 2}, 2, 3, {0, 1}, 0, 3, {1, 2}};
  ConvDims nchw{0, 1, {2, 3}, 1, 0, {2, 3}, 0, 1, {2, 3}};
  ConvDims nwc{0, 2, {1}, 1, 2, {0}, 0, 2, {1}};
  std::vector<Case> cases = {
      {"nhwc same padding", {f32({2, 5, 5, 2}), f32({2, 2, 2, 4})}, conv(nhwc, window({1, 1}, {1, 1}, {1, 1}, {1, 0}, {0, 1})), false},
      {"nchw strided, dilated", {f32({2, 2, 6, 5}), f32({3, 2, 2, 2})},
       conv(nchw, window({2, 1}, {2, 1}, {1, 2}, {0, 1}, {1, 0})), false},
      {"1-D f64", {f64({3, 7, 4}), f64({3, 4, 2})}, conv(nwc, window({2}, {1}, {1}, {1}, {1})), false},
      {"feature groups (declined)", {f32({1, 4, 4, 2}), f32({2, 2, 1, 4})},
       conv(nhwc, window({1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}), 2), true, false},
      {"integers (declined)", {i32({1, 4, 4, 2}), i32({2, 2, 2, 4})},
       conv(nhwc, window({1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0})), true, false},
  };
  for (const Case& c : cases) check(c);
}

}  // namespace
}  // namespace tessera::exec
