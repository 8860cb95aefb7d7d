// Sizes from outside are checked (support/memory.h): overflowing element counts and byte sizes,
// strict integers, and the process-wide limit on array bytes that every Literal counts against.
#include <gtest/gtest.h>

#include <limits>

#include "common/error_of.h"
#include "ir/literal.h"
#include "ir/sharding.h"
#include "support/memory.h"
#include "support/strings.h"

namespace tessera {
namespace {

// Restores the default limit however a test ends.
struct LimitGuard {
  ~LimitGuard() { support::set_memory_limit(0); }
};

TEST(CheckedSizes, ProductsThatOverflowAreNullopt) {
  std::vector<int64_t> ok = {4, 8, 16}, wraps = {4294967296, 4294967296}, big = {99999999999, 99999999999};
  EXPECT_EQ(support::checked_product(ok), 512);
  EXPECT_EQ(support::checked_product(wraps), std::nullopt);  // 2^64 would wrap to 0
  EXPECT_EQ(support::checked_product(big), std::nullopt);
  std::vector<int64_t> fits = {int64_t{1} << 31, int64_t{1} << 30};  // 2^61 elements
  EXPECT_EQ(support::checked_bytes(fits, 2), int64_t{1} << 62);
  EXPECT_EQ(support::checked_bytes(fits, 4), std::nullopt);  // 2^63 bytes is past int64
  std::vector<int64_t> empty = {0, 99999999999, 99999999999};
  EXPECT_EQ(support::checked_product(empty), 0);  // an empty array, however long its other dimensions
  std::vector<int64_t> negative = {4, -1};
  EXPECT_EQ(support::checked_product(negative), std::nullopt);
}

TEST(CheckedSizes, ParseIntTakesTheWholeText) {
  EXPECT_EQ(support::parse_int("4"), 4);
  EXPECT_EQ(support::parse_int("-1"), -1);
  EXPECT_EQ(support::parse_int("4x"), std::nullopt);
  EXPECT_EQ(support::parse_int(" 4"), std::nullopt);
  EXPECT_EQ(support::parse_int(""), std::nullopt);
  EXPECT_EQ(support::parse_int("0x10"), std::nullopt);
  EXPECT_EQ(support::parse_int("99999999999999999999"), std::nullopt);
}

TEST(MemoryLimit, ALiteralPastTheLimitIsAUserErrorNamingItsType) {
  LimitGuard guard;
  int64_t before = support::bytes_held();
  support::set_memory_limit(before + (1 << 20));
  {
    ir::Literal small(ir::f32({1024}));  // 4 KiB: within the limit
    EXPECT_EQ(support::bytes_held(), before + 4096);
    std::string e = testing::error_of([] { ir::Literal big(ir::f32({512, 1024})); });  // 2 MiB
    EXPECT_NE(e.find("tensor<512x1024xf32>: cannot allocate 2.00 MiB for an array"), std::string::npos) << e;
    EXPECT_NE(e.find("(--max-bytes)"), std::string::npos) << e;
    EXPECT_EQ(support::bytes_held(), before + 4096);  // the refused allocation is not counted
    ir::Literal copy = small;                         // copies count too
    EXPECT_EQ(support::bytes_held(), before + 8192);
  }
  EXPECT_EQ(support::bytes_held(), before);  // freed buffers are given back
}

TEST(MemoryLimit, AShapeWhoseBytesOverflowIsRefused) {
  std::string e = testing::error_of([] { ir::Literal x(ir::f32({4294967296, 4294967296})); });
  EXPECT_NE(e.find("tensor<4294967296x4294967296xf32> is too large"), std::string::npos) << e;
}

TEST(MeshLimit, MoreDevicesThanAnyMachineIsRefused) {
  ir::Mesh m{"m", {{"data", 99999999999}}, {}};
  std::string e = testing::error_of([&] { ir::validate(m); });
  EXPECT_NE(e.find("mesh @m: axis \"data\" of size 99999999999 makes more than 1048576 devices"), std::string::npos) << e;
  ir::Mesh two{"m", {{"a", 1 << 20}, {"b", 2}}, {}};
  e = testing::error_of([&] { ir::validate(two); });
  EXPECT_NE(e.find("axis \"b\" of size 2 makes more than 1048576 devices"), std::string::npos) << e;
}

}  // namespace
}  // namespace tessera
