// exec::exp_f32 and logistic_f32 give the reference's float on every instruction set: on a sweep
// of more than 50 million floats across [-104, 89] (every 41st bit pattern: all exponents, varied
// mantissas) and on every 4099th bit pattern of all, on the special values and the edges of the range, and at every tail length. The
// check of all 2^32 floats is exp_exhaustive_test.cpp (label `exhaustive`, not in the default run).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "exec/exp.h"
#include "exec/exp_internal.h"
#include "exp_check.h"

namespace tessera::exec {
namespace {

using testing::expect_reference_bits;

float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

// Every `stride`-th bit pattern from `first` to `last` (same sign), checked a million at a time.
void sweep(uint32_t first, uint32_t last, uint32_t stride, int64_t* checked) {
  std::vector<float> x;
  x.reserve(1 << 20);
  for (uint64_t u = first; u <= last; u += stride) {
    x.push_back(from_bits(static_cast<uint32_t>(u)));
    if (x.size() == (1u << 20) || u + stride > last) {
      expect_reference_bits(x, checked);
      x.clear();
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(FastExp, MatchesTheReferenceOnFiftyMillionFloatsOfTheRange) {
  int64_t checked = 0;
  constexpr uint32_t kStride = 41;
  sweep(0, std::bit_cast<uint32_t>(89.0f), kStride, &checked);                 // +0 .. 89
  sweep(0x80000000u, std::bit_cast<uint32_t>(-104.0f), kStride, &checked);     // -0 .. -104
  EXPECT_GE(checked, 50'000'000);
}

// Every 4099th bit pattern of all 2^32: out of the range too (huge, NaN payloads, denormals).
TEST(FastExp, MatchesTheReferenceOnASweepOfAllBitPatterns) {
  int64_t checked = 0;
  sweep(0, 0x7fffffffu, 4099, &checked);
  sweep(0x80000000u, 0xffffffffu, 4099, &checked);
  EXPECT_GE(checked, 1'000'000);
}

TEST(FastExp, MatchesTheReferenceOnSpecialValuesAndTheEdges) {
  std::vector<float> x = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-30f, -1e-30f, 3.4028235e38f, -3.4028235e38f};
  // NaNs with payloads, quiet and signalling, of both signs; denormals.
  for (uint32_t u : {0x7fc00001u, 0x7fffffffu, 0x7f800001u, 0x7fa00000u, 0xffc12345u, 0xff800001u, 0xffffffffu,
                     0x00000001u, 0x00000002u, 0x00400000u, 0x007fffffu, 0x80000001u, 0x80400000u, 0x807fffffu,
                     0x00800000u, 0x80800000u})
    x.push_back(from_bits(u));
  // The range's edges: where the polynomial stops (±87), float's overflow (88.72), the smallest
  // normal result (-87.34), the last nonzero result (-103.97), the outside rule's -104, and beyond.
  for (float edge : {87.0f, -87.0f, 88.0f, -88.0f, 88.72283f, -87.33654f, -103.97208f, -104.0f, 104.0f, 89.0f,
                     -89.0f, 88.72f, -103.9f, -103.972f, 1e9f, -1e9f, 0.5f, -0.5f, 1.0f, -1.0f, 0.0216f, -0.0216f, 0.0433f}) {
    float below = edge, above = edge;
    x.push_back(edge);
    for (int k = 0; k < 8; ++k) {
      x.push_back(below = std::nextafter(below, -INFINITY));
      x.push_back(above = std::nextafter(above, INFINITY));
    }
  }
  // Dense around 0, where the reduction gives n = 0 and r = x, in an odd-length array (a tail).
  for (int i = -20000; i <= 20001; ++i) x.push_back(static_cast<float>(i) * 1e-3f);
  expect_reference_bits(x);
}

// Every length from 0 to 40 at an unaligned start, so every tail of every loop runs, with the
// special values landing in the tails; elements past the end are left as they were.
TEST(FastExp, EveryTailLengthGivesTheReferenceAndWritesNoFurther) {
  std::vector<float> pool = {-104.5f, NAN, 88.9f, -0.0f, 3.0f, -87.2f, 1e-40f, 0.25f, -12.5f, INFINITY, 86.9f, -1.0f};
  for (int64_t n = 0; n <= 40; ++n) {
    std::vector<float> x;
    for (int64_t i = 0; i < n; ++i) x.push_back(pool[static_cast<size_t>((i * 7 + n) % 12)]);
    expect_reference_bits(x);
    for (ExpIsa isa : testing::available_isas()) {
      std::vector<float> buf(static_cast<size_t>(n) + 21, 7.0f);
      exp_f32(isa, x.data(), buf.data() + 3, n);
      logistic_f32(isa, buf.data() + 3, buf.data() + 3, n);
      for (size_t i = 0; i < buf.size(); ++i) {
        if (i < 3 || i >= static_cast<size_t>(n) + 3) {
          ASSERT_EQ(buf[i], 7.0f) << testing::isa_name(isa) << ", n " << n;
        }
      }
    }
  }
}

// The table of 2^(j/16) (computed at compile time in long double) agrees with glibc's exp2 to an
// ulp, and the inputs where the fallback runs are as rare as the margin says (one in millions):
// a wrong table or margin that the sweeps could miss.
TEST(FastExp, TableAndFallbackRate) {
  for (int j = 0; j < exp_detail::kTableSize; ++j) {
    double want = std::exp2(j / 16.0);
    double got = exp_detail::kTable.v[j];
    EXPECT_LE(std::abs(got - want), std::nextafter(want, INFINITY) - want) << "2^(" << j << "/16)";
  }
  int64_t near = 0, total = 0;
  for (uint32_t u = std::bit_cast<uint32_t>(-80.0f); u > 0x80000000u; u -= 97, ++total)
    near += exp_detail::near_float_boundary(exp_detail::exp_near(static_cast<double>(from_bits(u))));
  EXPECT_GT(total, 10'000'000);
  EXPECT_LT(near, total / 100'000);
}

}  // namespace
}  // namespace tessera::exec
