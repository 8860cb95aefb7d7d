// The fused loops' kernel sets (exec/fused_kernels.h) against each other and against the reference:
// the AVX2 and AVX-512 sets give the baseline's bits on every instruction kind and type, and the f32
// sqrt (float's own sqrt, 16 or 8 or 4 wide) and rsqrt (double lanes) of every set give the
// reference interpreter's float(sqrt(double(x))) and float(1.0 / sqrt(double(x))), on every special
// value and a strided sweep of float bit patterns; the sweep over all 2^32 floats runs under the
// ctest label `exhaustive` (tests/exec/CMakeLists.txt). sqrt is also checked against libm's sqrtf,
// an oracle this project did not write: that is the double-rounding argument of fused_kernels.h.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "exec/fused_kernels.h"
#include "interp/scalar_ops.h"

namespace tessera::exec {
namespace {

using fused::Instr;
using fused::Kernel;
using fused::KernelSet;
using ir::ElementType;
using ir::OpKind;

// The sets this CPU runs, with their names.
std::vector<std::pair<std::string, const KernelSet*>> sets() {
  std::vector<std::pair<std::string, const KernelSet*>> all = {{"base", &fused::base::kernel_set()}};
  if (__builtin_cpu_supports("avx2")) all.emplace_back("avx2", &fused::avx2_kernels());
  if (fused::has_avx512()) all.emplace_back("avx512", &fused::avx512_kernels());
  return all;
}

// Every kernel of `set` gives the baseline's bits, on random values and the edges (zeros of both
// signs, infinities, NaNs of both signs meeting other NaNs and numbers, subnormals, huge and tiny
// magnitudes), at a block's length and at odd tails.
void expect_baseline_bits(const KernelSet& set) {
  const KernelSet& base = fused::base::kernel_set();
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-4, 4);
  std::vector<double> specials = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 5e-324, -5e-324, 1e-40, -1e-40,
                                  1e30, -1e30, 88.7, -103.9, 709.0, -745.0, 1.0, -1.0, 0.5};
  // Register `salt` takes the specials in another order, so that different ones meet.
  auto fill = [&](ElementType e, std::vector<std::byte>& buf, int64_t n, size_t salt) {
    buf.assign(static_cast<size_t>(n) * 8, std::byte{0});
    for (int64_t i = 0; i < n; ++i) {
      double v = i % 3 == 0 ? specials[(static_cast<size_t>(i / 3) + 5 * salt) % specials.size()] : u(rng);
      switch (e) {
        case ElementType::f32: reinterpret_cast<float*>(buf.data())[i] = static_cast<float>(v); break;
        case ElementType::f64: reinterpret_cast<double*>(buf.data())[i] = v; break;
        case ElementType::i32: reinterpret_cast<int32_t*>(buf.data())[i] = static_cast<int32_t>(std::floor(u(rng) * 3)); break;
        default: reinterpret_cast<uint8_t*>(buf.data())[i] = static_cast<uint8_t>(i % 5 == 0); break;  // i1
      }
    }
  };
  // Runs each set's kernel on registers 0-2 (inputs) into register 3; compares the outputs.
  auto same = [&](Kernel a, Kernel b, std::array<ElementType, 3> in, ElementType out, const std::string& what) {
    ASSERT_NE(a, nullptr) << what;
    ASSERT_NE(b, nullptr) << what;
    for (int64_t n : {fused::kBlock, int64_t{1}, int64_t{37}}) {
      std::vector<std::byte> r[3], z[2];
      for (size_t i = 0; i < 3; ++i) fill(in[i], r[i], n, i);
      Instr s;
      s.in = {0, 1, 2};
      s.out = 3;
      for (int k = 0; k < 2; ++k) {
        z[k].assign(static_cast<size_t>(n) * 8, std::byte{0x5a});
        std::byte* regs[4] = {r[0].data(), r[1].data(), r[2].data(), z[k].data()};
        (k == 0 ? a : b)(s, regs, 0, n);
      }
      size_t bytes = static_cast<size_t>(n * ir::info(out).bytes);
      EXPECT_EQ(std::memcmp(z[0].data(), z[1].data(), bytes), 0) << what << ", " << n << " elements";
    }
  };
  for (ElementType e : {ElementType::f32, ElementType::f64}) {
    for (OpKind k : {OpKind::Add, OpKind::Subtract, OpKind::Multiply, OpKind::Divide, OpKind::Maximum,
                     OpKind::Minimum, OpKind::Power, OpKind::Negate, OpKind::Exponential, OpKind::Log,
                     OpKind::Logistic, OpKind::Sqrt, OpKind::Rsqrt, OpKind::Tanh})
      same(base.arithmetic(k, e), set.arithmetic(k, e), {e, e, e}, e, std::string(ir::spelling(k)) + " " + std::string(ir::spelling(e)));
    same(base.select(e), set.select(e), {ElementType::i1, e, e}, e, "select");
    same(base.compare(e), set.compare(e), {e, e, e}, ElementType::i1, "compare");
    for (ElementType from : {ElementType::f32, ElementType::f64, ElementType::i32, ElementType::i1})
      same(base.converter(from, e), set.converter(from, e), {from, from, from}, e, "convert");
  }
}

TEST(FusedKernels, Avx2GivesTheBaselineBits) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 on this CPU";
  expect_baseline_bits(fused::avx2_kernels());
}

TEST(FusedKernels, Avx512GivesTheBaselineBits) {
  if (!fused::has_avx512()) GTEST_SKIP() << "no AVX-512 (f, bw, vl) on this CPU";
  expect_baseline_bits(fused::avx512_kernels());
}

uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }

// Every set's f32 sqrt and rsqrt against the reference's scalar functors (and sqrt against sqrtf)
// on the floats with these bit patterns, in place and out of place, in runs of odd length (tails).
void expect_sqrt_bits(const std::vector<uint32_t>& patterns) {
  using F32 = ir::Elem<ElementType::f32>;
  std::vector<float> x(patterns.size()), z(patterns.size());
  std::memcpy(x.data(), patterns.data(), patterns.size() * 4);
  int64_t n = static_cast<int64_t>(x.size());
  for (const auto& [name, set] : sets()) {
    for (OpKind k : {OpKind::Sqrt, OpKind::Rsqrt}) {
      Kernel fn = set->arithmetic(k, ElementType::f32);
      Instr s;
      s.in = {0, -1, -1};
      s.out = 1;
      // In runs of 1031 elements (an odd tail for every width); the last run in place.
      for (int64_t at = 0; at < n; at += 1031) {
        int64_t count = std::min<int64_t>(1031, n - at);
        bool in_place = at + 1031 >= n;
        if (in_place) std::copy(x.begin() + at, x.begin() + at + count, z.begin() + at);
        std::byte* regs[2] = {reinterpret_cast<std::byte*>(in_place ? z.data() + at : x.data() + at),
                              reinterpret_cast<std::byte*>(z.data() + at)};
        fn(s, regs, 0, count);
      }
      int64_t wrong = 0;
      for (int64_t i = 0; i < n; ++i) {
        float want = k == OpKind::Sqrt ? interp::scalar::Sqrt::apply<F32>(x[static_cast<size_t>(i)])
                                       : interp::scalar::Rsqrt::apply<F32>(x[static_cast<size_t>(i)]);
        if (bits(z[static_cast<size_t>(i)]) != bits(want) && ++wrong <= 5)
          ADD_FAILURE() << name << " " << ir::spelling(k) << " of 0x" << std::hex << patterns[static_cast<size_t>(i)]
                        << ": 0x" << bits(z[static_cast<size_t>(i)]) << ", the reference 0x" << bits(want);
        if (k == OpKind::Sqrt && bits(want) != bits(std::sqrt(x[static_cast<size_t>(i)])) && ++wrong <= 5)
          ADD_FAILURE() << "float(sqrt(double(x))) != sqrtf(x) at 0x" << std::hex << patterns[static_cast<size_t>(i)];
      }
      EXPECT_EQ(wrong, 0) << name << " " << ir::spelling(k);
    }
  }
}

// All floats u = first, first + stride, ... below 2^32, in pieces of 2^20.
void sweep_sqrt(uint64_t first, uint64_t stride) {
  std::vector<uint32_t> piece;
  for (uint64_t u = first; u < (uint64_t{1} << 32); u += stride) {
    piece.push_back(static_cast<uint32_t>(u));
    if (piece.size() == (size_t{1} << 20)) {
      expect_sqrt_bits(piece);
      if (::testing::Test::HasFailure()) return;
      piece.clear();
    }
  }
  expect_sqrt_bits(piece);
}

// select(compare(x, y), a, b) in one instruction (select_compare) against the compare's and the
// select's own kernels one after the other, in every set: every direction, compared f32, f64 and
// i32 (NaNs of both signs, ±0, infinities, equal pairs), chosen values f32, f64 and i64 carrying NaN
// payloads and -0, at a block's length and odd tails. The chosen bits must be equal.
TEST(FusedKernels, SelectOfCompareGivesTheTwoKernelsBits) {
  using D = ir::ComparisonDirection;
  std::mt19937 rng(9);
  const double specials[] = {0.0, -0.0, NAN, -NAN, INFINITY, -INFINITY, 1.0, -1.0, 2.0};
  for (const auto& [name, set] : sets()) {
    for (ElementType ct : {ElementType::f32, ElementType::f64, ElementType::i32}) {
      for (ElementType vt : {ElementType::f32, ElementType::f64, ElementType::i64}) {
        for (D dir : {D::EQ, D::NE, D::GE, D::GT, D::LE, D::LT}) {
          for (int64_t n : {fused::kBlock, int64_t{1}, int64_t{37}}) {
            const size_t bytes = static_cast<size_t>(n) * 8;
            std::vector<std::byte> x(bytes), y(bytes), a(bytes), b(bytes), pred(bytes), two(bytes), one(bytes);
            for (int64_t i = 0; i < n; ++i) {
              double p = specials[rng() % std::size(specials)], q = rng() % 4 ? specials[rng() % std::size(specials)] : p;
              if (ct == ElementType::f32) {
                reinterpret_cast<float*>(x.data())[i] = static_cast<float>(p);
                reinterpret_cast<float*>(y.data())[i] = static_cast<float>(q);
              } else if (ct == ElementType::f64) {
                reinterpret_cast<double*>(x.data())[i] = p;
                reinterpret_cast<double*>(y.data())[i] = q;
              } else {
                reinterpret_cast<int32_t*>(x.data())[i] = static_cast<int32_t>(rng() % 5) - 2;
                reinterpret_cast<int32_t*>(y.data())[i] = static_cast<int32_t>(rng() % 5) - 2;
              }
              uint64_t va = (uint64_t{rng()} << 32) | rng(), vb = rng() % 3 ? 0x7ff8000000001234u : 0x8000000000000000u;
              std::memcpy(a.data() + i * 8, &va, 8);
              std::memcpy(b.data() + i * 8, &vb, 8);
            }
            Instr s;
            s.direction = dir;
            // Registers: 0 x, 1 y, 2 a, 3 b, 4 the compare's i1, 5 the two kernels' result, 6 the one's.
            std::byte* regs[7] = {x.data(), y.data(), a.data(), b.data(), pred.data(), two.data(), one.data()};
            s.in = {0, 1, -1, -1};
            s.out = 4;
            set->compare(ct)(s, regs, 0, n);
            s.in = {4, 2, 3, -1};
            s.out = 5;
            set->select(vt)(s, regs, 0, n);
            fused::Kernel fn = set->select_compare(ct, vt);
            ASSERT_NE(fn, nullptr) << name;
            s.in = {0, 1, 2, 3};
            s.out = 6;
            fn(s, regs, 0, n);
            EXPECT_EQ(std::memcmp(two.data(), one.data(), static_cast<size_t>(n * ir::info(vt).bytes)), 0)
                << name << ", compared " << ir::spelling(ct) << ", values " << ir::spelling(vt) << ", direction "
                << static_cast<int>(dir) << ", " << n << " elements";
          }
        }
      }
    }
  }
}

// A binary op reading one operand as a row broadcast (binary_row) against the row load (a gather
// with row_len) then binary<>, in every set: each kind it takes (not add and multiply), f32 and f64, the broadcast first
// and second, rows shorter and longer than a block, blocks starting inside a row, odd tails; NaNs
// of both signs and payloads on both sides (so that two NaNs meet), ±0, infinities.
TEST(FusedKernels, BinaryOpsOfRowBroadcastsGiveTheGatheredBits) {
  std::mt19937 rng(21);
  const double specials[] = {0.0, -0.0, NAN, -NAN, INFINITY, -INFINITY, 1.0, -2.5, 1e-310, 3e38};
  auto value = [&](int64_t i, uint32_t salt) {
    return i % 3 == 0 ? specials[(static_cast<size_t>(i) + salt) % std::size(specials)]
                      : std::uniform_real_distribution<double>(-4, 4)(rng);
  };
  for (const auto& [name, set] : sets()) {
    for (ElementType e : {ElementType::f32, ElementType::f64}) {
      const size_t w = static_cast<size_t>(ir::info(e).bytes);
      for (OpKind k : {OpKind::Add, OpKind::Multiply})
        EXPECT_EQ(set->binary_row(k, e, false), nullptr) << "the compiler may swap a commutative op's NaNs";
      for (OpKind k : {OpKind::Subtract, OpKind::Divide, OpKind::Maximum, OpKind::Minimum}) {
        for (int64_t len : {1, 5, 128, 700}) {
          const int64_t rows = 4096 / len + 2, total = rows * len;
          std::vector<std::byte> src(static_cast<size_t>(rows) * 8), x(static_cast<size_t>(total) * 8);
          auto put = [&](std::vector<std::byte>& buf, int64_t i, double v) {
            if (e == ElementType::f32) reinterpret_cast<float*>(buf.data())[i] = static_cast<float>(v);
            else reinterpret_cast<double*>(buf.data())[i] = v;
          };
          for (int64_t r = 0; r < rows; ++r) put(src, r, value(r, 3));
          put(src, 1, e == ElementType::f32 ? static_cast<double>(std::bit_cast<float>(0x7fc01234u)) : -NAN);
          for (int64_t i = 0; i < total; ++i) put(x, i, value(i, 0));
          for (int64_t start : {int64_t{0}, int64_t{512}, len + 3, total - 37}) {
            for (bool first : {true, false}) {
              const int64_t n = std::min(fused::kBlock, total - start);
              std::vector<std::byte> row(static_cast<size_t>(n) * 8), two(row.size()), one(row.size());
              // Registers: 0 x at start, 1 the row values gathered, 2 the two kernels' result, 3 the one's.
              std::byte* regs[4] = {x.data() + static_cast<size_t>(start) * w, row.data(), two.data(), one.data()};
              Instr g;
              g.src = src.data();
              g.row_len = len;
              g.out = 1;
              set->gather(e)(g, regs, start, n);
              Instr b;
              b.in = first ? std::array<int, 4>{1, 0, -1, -1} : std::array<int, 4>{0, 1, -1, -1};
              b.out = 2;
              set->arithmetic(k, e)(b, regs, start, n);
              Instr r = g;
              r.in = {0, -1, -1, -1};
              r.out = 3;
              r.fn = set->binary_row(k, e, first);
              ASSERT_NE(r.fn, nullptr) << name;
              r.fn(r, regs, start, n);
              EXPECT_EQ(std::memcmp(two.data(), one.data(), static_cast<size_t>(n) * w), 0)
                  << name << ", " << ir::spelling(k) << " " << ir::spelling(e) << ", rows of " << len << ", from "
                  << start << (first ? ", broadcast first" : ", broadcast second");
            }
          }
        }
      }
    }
  }
}

// A load of one value per row (Instr::row_len: one division, a fill per row) against the same load
// walked over the dimensions (for_rows), in every set: rows shorter than a block, as long, longer,
// not dividing it; blocks starting inside a row, at a row's start, and odd tails. Each row's value
// is distinct (a NaN payload among them), so a row's fill off by one element shows.
TEST(FusedKernels, RowBroadcastLoadsReadTheStridedElements) {
  for (const auto& [name, set] : sets()) {
    for (int64_t len : {1, 3, 128, 512, 700, 4096}) {
      const std::vector<int64_t> shape = {2, 5, len}, strides = {5, 1, 0};
      std::vector<float> src(10);
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) + 0.5f;
      src[7] = std::bit_cast<float>(0x7fc01234u);
      const int64_t total = 10 * len;
      for (int64_t start : {int64_t{0}, int64_t{1}, len - 1, int64_t{512}, int64_t{1536}, total - 37}) {
        if (start < 0 || start >= total) continue;
        for (int64_t n : {fused::kBlock, int64_t{37}, int64_t{1}}) {
          n = std::min(n, total - start);
          Instr walk;
          walk.src = reinterpret_cast<const std::byte*>(src.data());
          walk.shape = shape;
          walk.strides = strides;
          walk.out = 0;
          Instr rows = walk;
          rows.row_len = len;
          std::vector<float> a(static_cast<size_t>(n), -1.0f), b(static_cast<size_t>(n), -2.0f);
          std::byte* ra[1] = {reinterpret_cast<std::byte*>(a.data())};
          std::byte* rb[1] = {reinterpret_cast<std::byte*>(b.data())};
          set->gather(ElementType::f32)(walk, ra, start, n);
          set->gather(ElementType::f32)(rows, rb, start, n);
          EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
              << name << ", rows of " << len << ", " << n << " elements from " << start;
          EXPECT_EQ(std::bit_cast<uint32_t>(b[0]), std::bit_cast<uint32_t>(src[static_cast<size_t>(start / len)]))
              << name << ", rows of " << len << ", from " << start;
        }
      }
    }
  }
}

TEST(FusedSqrt, MatchesTheReferenceOnSpecialValues) {
  std::vector<uint32_t> p = {
      0x00000000, 0x80000000, 0x7f800000, 0xff800000,                          // ±0, ±inf
      0x7fc00000, 0xffc00000, 0x7fc12345, 0xffd54321, 0x7f800001, 0xff800001,  // quiet and signalling NaNs
      0x7fa00000, 0x7fffffff, 0xffffffff,
      0x00000001, 0x80000001, 0x00000002, 0x00000003, 0x007fffff, 0x807fffff,  // subnormals
      0x00400000, 0x00800000, 0x80800000, 0x00800001,                          // around the smallest normal
      0x7f7fffff, 0xff7fffff, 0x7f7ffffe,                                      // ±FLT_MAX
      0x3f800000, 0xbf800000, 0x40000000, 0x40800000, 0x3f800001, 0x3f7fffff, 0x40800001, 0x407fffff};
  // Squares and their neighbours, where a sqrt is exact or just off.
  for (float r : {3.0f, 7.0f, 1234.5f, 1.0e-20f, 4095.0f}) {
    float sq = r * r;
    for (float v = std::nextafter(std::nextafter(sq, 0.0f), 0.0f), k = 0; k < 5; ++k, v = std::nextafter(v, INFINITY))
      p.push_back(bits(v));
  }
  expect_sqrt_bits(p);
}

// About 54 million floats, every 79th bit pattern (odd: every exponent and sign, all low bits).
TEST(FusedSqrt, MatchesTheReferenceOnASweepOfFloats) { sweep_sqrt(12345, 79); }

// All 2^32 floats: registered with ctest under the label `exhaustive` (--gtest_also_run_disabled_tests).
TEST(FusedSqrt, DISABLED_MatchesTheReferenceOnEveryFloat) { sweep_sqrt(0, 1); }

}  // namespace
}  // namespace tessera::exec
