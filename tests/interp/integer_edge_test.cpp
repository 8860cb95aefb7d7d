// Hand-checked integer cases the StableHLO spec leaves to the implementation, where NumPy differs
// or raises: division by zero and INT_MIN / -1 (XLA's answers), wrapping overflow (also of
// sub-byte types and of 16-bit unsigned products, which C++ would promote to int), shifts by the
// width or more, negative integer powers, and float -> integer conversion out of range.
#include <gtest/gtest.h>

#include <limits>

#include "test_util.h"

namespace tessera::interp::testing {
namespace {

using ir::OpKind;
using E = ElementType;

constexpr int64_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

Type t(E e, int64_t n) { return Type(e, {n}); }

// op(lhs, rhs) on `e` must give `want`, all given as int64 (unsigned values by their bits).
void check(OpKind op, E e, std::vector<int64_t> lhs, std::vector<int64_t> rhs, std::vector<int64_t> want) {
  auto n = static_cast<int64_t>(lhs.size());
  Literal got = apply(op, {ints(t(e, n), lhs), ints(t(e, n), rhs)});
  EXPECT_TRUE(same(got, ints(t(e, n), want))) << ir::spelling(op) << " on " << ir::spelling(e);
}

TEST(IntegerEdge, DivisionByZeroAndIntMinByMinusOne) {
  check(OpKind::Divide, E::i32, {7, -7, 0, kI32Min, kI32Min, 9}, {0, 0, 0, -1, 1, -2},
        {-1, -1, -1, kI32Min, kI32Min, -4});
  check(OpKind::Divide, E::i64, {kI64Min, kI64Max, 5}, {-1, 0, -1}, {kI64Min, -1, -5});
  check(OpKind::Divide, E::ui32, {7, 0, 9}, {0, 0, 2}, {0xFFFFFFFF, 0xFFFFFFFF, 4});
  check(OpKind::Divide, E::ui64, {7}, {0}, {-1});  // all ones
  check(OpKind::Divide, E::i8, {-128, 127}, {-1, 0}, {-128, -1});
  check(OpKind::Divide, E::i4, {-8, 7, -7}, {-1, 0, 2}, {-8, -1, -3});
}

TEST(IntegerEdge, RemainderByZeroAndIntMinByMinusOne) {
  check(OpKind::Remainder, E::i32, {7, -7, kI32Min, -7, 7}, {0, 0, -1, 2, -2}, {7, -7, 0, -1, 1});
  check(OpKind::Remainder, E::i64, {kI64Min, 5}, {-1, 0}, {0, 5});
  check(OpKind::Remainder, E::ui64, {5, 7}, {0, 3}, {5, 1});
  check(OpKind::Remainder, E::i4, {-8, 5}, {-1, 0}, {0, 5});
}

TEST(IntegerEdge, SignedOverflowWraps) {
  check(OpKind::Add, E::i32, {kI32Max, kI32Min}, {1, -1}, {kI32Min, kI32Max});
  check(OpKind::Subtract, E::i32, {kI32Min, kI32Max}, {1, -1}, {kI32Max, kI32Min});
  check(OpKind::Multiply, E::i32, {kI32Max, kI32Min, 65536}, {2, -1, 65536}, {-2, kI32Min, 0});
  check(OpKind::Add, E::i64, {kI64Max}, {1}, {kI64Min});
  check(OpKind::Multiply, E::i64, {kI64Min, kI64Max}, {-1, kI64Max}, {kI64Min, 1});
  check(OpKind::Multiply, E::ui16, {65535, 300}, {65535, 300}, {1, 90000 % 65536});
  check(OpKind::Add, E::ui8, {200}, {100}, {44});
  check(OpKind::Add, E::i8, {127}, {1}, {-128});
  check(OpKind::Add, E::i4, {7, -8}, {1, -1}, {-8, 7});
  check(OpKind::Add, E::ui4, {15}, {1}, {0});
  check(OpKind::Add, E::i2, {1}, {1}, {-2});
  check(OpKind::Multiply, E::ui2, {3}, {3}, {1});
  EXPECT_TRUE(same(apply(OpKind::Negate, {ints(t(E::i32, 2), {kI32Min, 5})}), ints(t(E::i32, 2), {kI32Min, -5})));
  EXPECT_TRUE(same(apply(OpKind::Abs, {ints(t(E::i64, 2), {kI64Min, -5})}), ints(t(E::i64, 2), {kI64Min, 5})));
  EXPECT_TRUE(same(apply(OpKind::Negate, {ints(t(E::ui32, 2), {1, 0})}), ints(t(E::ui32, 2), {0xFFFFFFFF, 0})));
  EXPECT_TRUE(same(apply(OpKind::Abs, {ints(t(E::i4, 2), {-8, -3})}), ints(t(E::i4, 2), {-8, 3})));
}

TEST(IntegerEdge, ShiftsByTheWidthOrMoreShiftEverythingOut) {
  check(OpKind::ShiftLeft, E::i32, {1, 1, 1, 1, 3}, {31, 32, 33, -1, 2}, {kI32Min, 0, 0, 0, 12});
  check(OpKind::ShiftRightLogical, E::i32, {-8, -8, 8, -1}, {28, 32, 40, -1}, {15, 0, 0, 0});
  check(OpKind::ShiftRightArithmetic, E::i32, {-8, -8, 8, -8, kI32Min}, {1, 32, 40, -1, 31},
        {-4, -1, 0, -1, -1});
  check(OpKind::ShiftLeft, E::i64, {1, 1}, {63, 64}, {kI64Min, 0});
  check(OpKind::ShiftRightArithmetic, E::i64, {kI64Min, kI64Min}, {63, 64}, {-1, -1});
  check(OpKind::ShiftRightLogical, E::ui64, {-1, -1}, {63, 64}, {1, 0});
  // An unsigned value shifted arithmetically copies its top bit.
  check(OpKind::ShiftRightArithmetic, E::ui8, {128, 128, 64}, {1, 8, 1}, {192, 255, 32});
  // Sub-byte values shift within their own width.
  check(OpKind::ShiftRightLogical, E::i4, {-8, -1}, {1, 3}, {4, 1});
  check(OpKind::ShiftRightArithmetic, E::i4, {-8, -8}, {1, 4}, {-4, -1});
  check(OpKind::ShiftLeft, E::i4, {1, 1, 3}, {3, 4, 2}, {-8, 0, -4});
  check(OpKind::ShiftLeft, E::ui4, {15}, {1}, {14});
}

TEST(IntegerEdge, PowerWithNegativeAndLargeExponents) {
  // As the StableHLO reference interpreter: x^-n is 0 unless |x| = 1.
  check(OpKind::Power, E::i32, {2, 1, -1, -1, 0, 2, 3, -2, 0}, {-1, -5, -3, -2, 0, 31, 0, 3, 5},
        {0, 1, -1, 1, 1, kI32Min, 1, -8, 0});
  check(OpKind::Power, E::i64, {2, 2, 3}, {63, 64, 40}, {kI64Min, 0, static_cast<int64_t>(12157665459056928801ull)});
  check(OpKind::Power, E::ui32, {2, 3, 0}, {32, 2, 0}, {0, 9, 1});
  check(OpKind::Power, E::i8, {3, -2}, {5, 7}, {243 - 256, -128});
}

TEST(IntegerEdge, FloatToIntegerConversionTruncatesAndSaturates) {
  auto convert = [](Literal x, E to) {
    return run1({std::move(x)}, [&](const std::vector<Tensor>& p) { return ir::convert(p[0], to); });
  };
  Literal f = lit(t(E::f32, 7), {1e10, -1e10, NAN, 2.9, -2.9, INFINITY, -INFINITY});
  EXPECT_TRUE(same(convert(f, E::i32), ints(t(E::i32, 7), {kI32Max, kI32Min, 0, 2, -2, kI32Max, kI32Min})));
  EXPECT_TRUE(same(convert(lit(t(E::f32, 5), {-1.5, 300, 255.9, 0.5, NAN}), E::ui8),
                   ints(t(E::ui8, 5), {0, 255, 255, 0, 0})));
  EXPECT_TRUE(same(convert(lit(t(E::f64, 3), {9.3e18, -9.3e18, -0.5}), E::i64),
                   ints(t(E::i64, 3), {kI64Max, kI64Min, 0})));
  EXPECT_TRUE(same(convert(lit(t(E::f64, 2), {1.9e19, 1.8e19}), E::ui64),
                   ints(t(E::ui64, 2), {-1, static_cast<int64_t>(18000000000000000000ull)})));
  EXPECT_TRUE(same(convert(lit(t(E::f32, 4), {9, -9.5, 3.7, -8}), E::i4), ints(t(E::i4, 4), {7, -8, 3, -8})));
  EXPECT_TRUE(same(convert(lit(t(E::bf16, 2), {1e30, -3.5}), E::i16), ints(t(E::i16, 2), {32767, -3})));
}

TEST(IntegerEdge, IntegerConversionsWrapAndBoolsAreNonZero) {
  auto convert = [](Literal x, E to) {
    return run1({std::move(x)}, [&](const std::vector<Tensor>& p) { return ir::convert(p[0], to); });
  };
  EXPECT_TRUE(same(convert(ints(t(E::i64, 3), {(int64_t{1} << 32) + 5, -1, kI32Max + 1}), E::i32),
                   ints(t(E::i32, 3), {5, -1, kI32Min})));
  EXPECT_TRUE(same(convert(ints(t(E::i32, 2), {-1, 300}), E::ui32), ints(t(E::ui32, 2), {0xFFFFFFFF, 300})));
  EXPECT_TRUE(same(convert(ints(t(E::ui64, 1), {-1}), E::i64), ints(t(E::i64, 1), {-1})));
  EXPECT_TRUE(same(convert(ints(t(E::i32, 3), {9, -9, 16}), E::i4), ints(t(E::i4, 3), {-7, 7, 0})));
  EXPECT_TRUE(same(convert(ints(t(E::i32, 3), {-1, 0, 2}), E::i1), ints(t(E::i1, 3), {1, 0, 1})));
  EXPECT_TRUE(same(convert(lit(t(E::f32, 3), {-0.0, 0.25, NAN}), E::i1), ints(t(E::i1, 3), {0, 1, 1})));
  EXPECT_TRUE(same(convert(ints(t(E::i1, 2), {1, 0}), E::f32), lit(t(E::f32, 2), {1, 0})));
  EXPECT_TRUE(same(convert(ints(t(E::i1, 2), {1, 0}), E::ui64), ints(t(E::ui64, 2), {1, 0})));
  // Large integers round once to the nearest float (2^24 + 1 is a tie between 2^24 and 2^24 + 2).
  EXPECT_TRUE(same(convert(ints(t(E::i64, 2), {(1 << 24) + 1, (1 << 24) + 3}), E::f32),
                   lit(t(E::f32, 2), {1 << 24, (1 << 24) + 4})));
  EXPECT_TRUE(same(convert(ints(t(E::ui64, 1), {-1}), E::f64), lit(t(E::f64, 1), {18446744073709551616.0})));
}

}  // namespace
}  // namespace tessera::interp::testing
