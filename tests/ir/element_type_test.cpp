// Element types: the table, spelling round trips, minifloat rounding and Literal element access.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/literal.h"

namespace tessera::ir {
namespace {

TEST(ElementType, SpellingRoundTrips) {
  for (int i = 0; i <= static_cast<int>(ElementType::index); ++i) {
    auto t = static_cast<ElementType>(i);
    EXPECT_EQ(parse_element_type(spelling(t)), t) << spelling(t);
  }
  EXPECT_EQ(parse_element_type("f33"), std::nullopt);
  EXPECT_EQ(info(ElementType::i4).bits, 4);
  EXPECT_EQ(info(ElementType::c64).bytes, 8);
  EXPECT_EQ(real_type(ElementType::c128), ElementType::f64);
}

// Known bit patterns: from the IEEE 754 / OCP FP8 tables.
TEST(ElementType, MinifloatEncodings) {
  EXPECT_EQ(double_to_minifloat(ElementType::f16, 1.0), 0x3C00u);
  EXPECT_EQ(double_to_minifloat(ElementType::f16, 65504.0), 0x7BFFu);  // largest f16
  EXPECT_EQ(double_to_minifloat(ElementType::f16, 65520.0), 0x7C00u);  // rounds to inf
  EXPECT_EQ(double_to_minifloat(ElementType::f16, std::ldexp(1.0, -24)), 0x0001u);  // subnormal
  EXPECT_EQ(double_to_minifloat(ElementType::f16, -0.0), 0x8000u);
  EXPECT_EQ(double_to_minifloat(ElementType::bf16, 1.0), 0x3F80u);
  // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties go to the even mantissa (1.0).
  EXPECT_EQ(double_to_minifloat(ElementType::bf16, 1.0 + std::ldexp(1.0, -8)), 0x3F80u);
  EXPECT_EQ(double_to_minifloat(ElementType::bf16, 1.0 + 3 * std::ldexp(1.0, -8)), 0x3F82u);
  EXPECT_EQ(double_to_minifloat(ElementType::f8E4M3FN, 448.0), 0x7Eu);
  EXPECT_EQ(double_to_minifloat(ElementType::f8E4M3FN, 1000.0), 0x7Fu);  // no inf: NaN
  EXPECT_EQ(double_to_minifloat(ElementType::f8E5M2, 57344.0), 0x7Bu);
  EXPECT_EQ(double_to_minifloat(ElementType::f8E4M3, 240.0), 0x77u);  // IEEE-style E4M3 max
  EXPECT_EQ(double_to_minifloat(ElementType::f8E4M3, INFINITY), 0x78u);
  EXPECT_EQ(minifloat_to_double(ElementType::f8E3M4, 0x7Fu) != minifloat_to_double(ElementType::f8E3M4, 0x7Fu), true);
  EXPECT_EQ(minifloat_to_double(ElementType::f8E3M4, 0x3Cu), 1.75);
  EXPECT_EQ(minifloat_to_double(ElementType::f16, 0x0001u), std::ldexp(1.0, -24));
  EXPECT_TRUE(std::isnan(minifloat_to_double(ElementType::bf16, 0x7FC0u)));
}

// The FNUZ, MX and E8M0 kinds, from their definitions (ml_dtypes' README and the OCP MX spec):
// largest finite values, the one NaN of FNUZ (0x80) and its single zero, saturation of the kinds
// without NaN, and E8M0's powers of two.
TEST(ElementType, FnuzMxAndE8M0Encodings) {
  EXPECT_EQ(minifloat_to_double(ElementType::f8E4M3FNUZ, 0x7Fu), 240.0);
  EXPECT_EQ(minifloat_to_double(ElementType::f8E5M2FNUZ, 0x7Fu), 57344.0);
  EXPECT_EQ(minifloat_to_double(ElementType::f8E4M3B11FNUZ, 0x7Fu), 30.0);
  EXPECT_EQ(minifloat_to_double(ElementType::f8E4M3FNUZ, 0x40u), 1.0);  // bias 8
  EXPECT_TRUE(std::isnan(minifloat_to_double(ElementType::f8E5M2FNUZ, 0x80u)));
  EXPECT_EQ(double_to_minifloat(ElementType::f8E4M3FNUZ, -0.0), 0x00u);       // one zero
  EXPECT_EQ(double_to_minifloat(ElementType::f8E4M3FNUZ, 1000.0), 0x80u);     // overflow: NaN
  EXPECT_EQ(double_to_minifloat(ElementType::f8E5M2FNUZ, -INFINITY), 0x80u);  // no infinity
  EXPECT_EQ(minifloat_to_double(ElementType::f6E2M3FN, 0x1Fu), 7.5);
  EXPECT_EQ(minifloat_to_double(ElementType::f6E3M2FN, 0x1Fu), 28.0);
  EXPECT_EQ(minifloat_to_double(ElementType::f4E2M1FN, 0x7u), 6.0);
  EXPECT_EQ(minifloat_to_double(ElementType::f4E2M1FN, 0x1u), 0.5);  // the subnormal
  EXPECT_EQ(minifloat_to_double(ElementType::f4E2M1FN, 0xFu), -6.0);
  EXPECT_EQ(double_to_minifloat(ElementType::f4E2M1FN, 100.0), 0x7u);   // saturates
  EXPECT_EQ(double_to_minifloat(ElementType::f4E2M1FN, -INFINITY), 0xFu);
  EXPECT_EQ(double_to_minifloat(ElementType::f4E2M1FN, 2.5), 0x4u);  // tie to even: 2
  EXPECT_EQ(double_to_minifloat(ElementType::f6E2M3FN, 7.0), 0x1Eu);
  EXPECT_EQ(minifloat_to_double(ElementType::f8E8M0FNU, 127u), 1.0);
  EXPECT_EQ(minifloat_to_double(ElementType::f8E8M0FNU, 0u), std::ldexp(1.0, -127));
  EXPECT_TRUE(std::isnan(minifloat_to_double(ElementType::f8E8M0FNU, 0xFFu)));
  EXPECT_EQ(double_to_minifloat(ElementType::f8E8M0FNU, 3.0), 129u);  // a tie goes up: 4
  EXPECT_EQ(double_to_minifloat(ElementType::f8E8M0FNU, 2.9), 128u);  // nearer 2 than 4
  EXPECT_EQ(double_to_minifloat(ElementType::f8E8M0FNU, -1.0), 0xFFu);  // unsigned: NaN
  // Every finite pattern of every new kind decodes and encodes back to itself.
  for (ElementType t : {ElementType::f8E4M3FNUZ, ElementType::f8E4M3B11FNUZ, ElementType::f8E5M2FNUZ,
                        ElementType::f8E8M0FNU, ElementType::f6E2M3FN, ElementType::f6E3M2FN,
                        ElementType::f4E2M1FN}) {
    for (uint32_t bits = 0; bits < (1u << info(t).bits); ++bits) {
      double v = minifloat_to_double(t, bits);
      if (std::isnan(v)) continue;
      ASSERT_EQ(double_to_minifloat(t, v), bits) << spelling(t) << " " << bits;
    }
  }
}

TEST(Type, TokensTuplesAndDynamicShapesPrintAndCount) {
  Type tok = Type::token();
  EXPECT_EQ(to_string(tok), "!stablehlo.token");
  EXPECT_EQ(tok.num_elements(), 0);
  Type tup = Type::tuple({f32({2}), Type::tuple({i64()}), tok});
  EXPECT_EQ(to_string(tup), "tuple<tensor<2xf32>, tuple<tensor<i64>>, !stablehlo.token>");
  EXPECT_TRUE(tup.is_static());
  Type dyn(ElementType::f32, {kDynamic, 4});
  dyn.bounds = {8, kDynamic};
  EXPECT_EQ(to_string(dyn), "tensor<?x4xf32, #stablehlo.bounds<8, ?>>");
  EXPECT_FALSE(dyn.is_static());
  EXPECT_THROW(dyn.num_elements(), support::UserError);
  EXPECT_THROW(Literal{dyn}, support::UserError);
  Literal t = Literal(tup);
  ASSERT_EQ(t.members().size(), 3u);
  EXPECT_EQ(t.members()[0].type(), f32({2}));
  EXPECT_EQ(Literal::tuple({Literal(f32({2})), Literal::token()}).type(), Type::tuple({f32({2}), tok}));
  // Quantization compares by value.
  Type q1 = Type(ElementType::i8, {2}), q2 = q1;
  q1.quant = std::make_shared<Quantization>(Quantization{ElementType::i8, ElementType::f32, -128, 127, {}, {0.5}, {0}});
  q2.quant = std::make_shared<Quantization>(*q1.quant);
  EXPECT_EQ(q1, q2);
  EXPECT_NE(q1, Type(ElementType::i8, {2}));
}

TEST(ElementType, EveryF16PatternRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    double v = minifloat_to_double(ElementType::f16, bits);
    if (std::isnan(v)) continue;
    ASSERT_EQ(double_to_minifloat(ElementType::f16, v), bits) << bits;
  }
}

TEST(Literal, ElementAccessWrapsAndRounds) {
  Literal i4 = Literal::from_ints(Type(ElementType::i4, {3}), std::vector<int64_t>{7, 8, -9});
  EXPECT_EQ(i4.get_int(0), 7);
  EXPECT_EQ(i4.get_int(1), -8);  // 8 wraps to -8 in 4 bits
  EXPECT_EQ(i4.get_int(2), 7);
  Literal u2 = Literal::from_ints(Type(ElementType::ui2, {2}), std::vector<int64_t>{3, 5});
  EXPECT_EQ(u2.get_int(1), 1);
  Literal b = Literal::from_doubles(Type(ElementType::bf16, {1}), std::vector<double>{3.14159});
  EXPECT_EQ(b.get_double(0), 3.140625);
  Literal c = Literal(Type(ElementType::c64, {1}));
  c.set_complex(0, {1.5, -2.0});
  EXPECT_EQ(c.get_complex(0), std::complex<double>(1.5, -2.0));
  Literal e(f32({0, 3}));
  EXPECT_EQ(e.num_elements(), 0);
  EXPECT_EQ(e.bytes().size(), 0u);
  EXPECT_EQ((Literal::splat(f32({2, 2}), 1.0).strides()), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Literal::scalar(ElementType::i1, 2.0).get_int(0), 1);
}

TEST(Literal, DoublesSaturateIntoIntegers) {
  // A double outside an integer type's range (a C++ cast of it is undefined) saturates, NaN is 0,
  // as stablehlo.convert does here: e.g. a reduce's -inf init value given to an integer array.
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(Literal::scalar(ElementType::i32, -inf).get_int(0), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(Literal::scalar(ElementType::i32, 1e10).get_int(0), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(Literal::scalar(ElementType::ui8, -3.0).get_int(0), 0);
  EXPECT_EQ(Literal::scalar(ElementType::ui8, 300.0).get_int(0), 255);
  EXPECT_EQ(Literal::scalar(ElementType::ui64, 1e30).get_int(0), -1);  // all ones
  EXPECT_EQ(Literal::scalar(ElementType::i4, 100.0).get_int(0), 7);
  EXPECT_EQ(Literal::scalar(ElementType::i64, std::nan("")).get_int(0), 0);
  EXPECT_EQ(Literal::scalar(ElementType::i16, -7.9).get_int(0), -7);  // truncates toward zero
}

}  // namespace
}  // namespace tessera::ir
