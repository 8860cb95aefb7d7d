// exec::exp_f32 and logistic_f32 against the reference on all 2^32 floats, on every instruction
// set this CPU has (exp_check.h). About five minutes of one core, so not in the default run: its
// ctest entry has the label `exhaustive` and the configuration Exhaustive,
//   ctest --test-dir build -C Exhaustive -L exhaustive
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "exp_check.h"

namespace tessera::exec {
namespace {

TEST(FastExpExhaustive, EveryFloatGivesTheReferenceBits) {
  int64_t checked = 0;
  std::vector<float> x(1 << 22);
  for (uint64_t base = 0; base < (uint64_t{1} << 32); base += x.size()) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::bit_cast<float>(static_cast<uint32_t>(base + i));
    testing::expect_reference_bits(x, &checked);
    if (HasFailure()) return;
  }
  EXPECT_EQ(checked, int64_t{1} << 32);
}

}  // namespace
}  // namespace tessera::exec
