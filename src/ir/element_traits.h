// Compile-time facts per element type, and the one place that turns a runtime ElementType into a
// compile-time one.
//
// Elem<E>::storage is how an element lives in memory; Elem<E>::compute is the type kernels compute
// in (minifloats compute in float, sub-byte integers in their byte). load/store convert between
// them; store also wraps sub-byte integers to their width and rounds minifloats.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ir/element_type.h"
#include "support/error.h"

namespace tessera::ir {

template <ElementType E, typename Storage, typename Compute>
struct ElemBase {
  static constexpr ElementType type = E;
  using storage = Storage;
  using compute = Compute;
};

template <ElementType E, typename = void>
struct Elem;

#define TESSERA_PLAIN_ELEM(E, T)                                \
  template <>                                                   \
  struct Elem<ElementType::E> : ElemBase<ElementType::E, T, T> { \
    static T load(T v) { return v; }                            \
    static T store(T v) { return v; }                           \
  };
TESSERA_PLAIN_ELEM(i8, int8_t)
TESSERA_PLAIN_ELEM(i16, int16_t)
TESSERA_PLAIN_ELEM(i32, int32_t)
TESSERA_PLAIN_ELEM(i64, int64_t)
TESSERA_PLAIN_ELEM(index, int64_t)
TESSERA_PLAIN_ELEM(ui8, uint8_t)
TESSERA_PLAIN_ELEM(ui16, uint16_t)
TESSERA_PLAIN_ELEM(ui32, uint32_t)
TESSERA_PLAIN_ELEM(ui64, uint64_t)
TESSERA_PLAIN_ELEM(f32, float)
TESSERA_PLAIN_ELEM(f64, double)
TESSERA_PLAIN_ELEM(c64, std::complex<float>)
TESSERA_PLAIN_ELEM(c128, std::complex<double>)
#undef TESSERA_PLAIN_ELEM

template <>
struct Elem<ElementType::i1> : ElemBase<ElementType::i1, uint8_t, bool> {
  static bool load(uint8_t v) { return v != 0; }
  static uint8_t store(bool v) { return v ? 1 : 0; }
};

// Sub-byte integers: kept sign- or zero-extended in one byte; store wraps to the width.
template <ElementType E, int Bits, bool Signed>
struct NarrowInt : ElemBase<E, std::conditional_t<Signed, int8_t, uint8_t>,
                            std::conditional_t<Signed, int8_t, uint8_t>> {
  using T = std::conditional_t<Signed, int8_t, uint8_t>;
  static T load(T v) { return v; }
  static T store(T v) {
    auto u = static_cast<uint8_t>(static_cast<uint8_t>(v) & ((1u << Bits) - 1));
    if (Signed && (u >> (Bits - 1)) != 0) u = static_cast<uint8_t>(u | ~((1u << Bits) - 1));
    return static_cast<T>(u);
  }
};
template <> struct Elem<ElementType::i2> : NarrowInt<ElementType::i2, 2, true> {};
template <> struct Elem<ElementType::i4> : NarrowInt<ElementType::i4, 4, true> {};
template <> struct Elem<ElementType::ui2> : NarrowInt<ElementType::ui2, 2, false> {};
template <> struct Elem<ElementType::ui4> : NarrowInt<ElementType::ui4, 4, false> {};

// A NaN moved between float and double bit by bit: the hardware conversions quiet a signalling
// NaN, and negate and abs must keep it as it is (IEEE makes them sign-bit operations).
inline float nan_to_float(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  uint32_t payload = static_cast<uint32_t>((u >> 29) & 0x7fffffu);
  uint32_t bits = (static_cast<uint32_t>(u >> 32) & 0x80000000u) | 0x7f800000u | (payload != 0 ? payload : 0x400000u);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline double nan_to_double(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  uint64_t bits = (uint64_t(u & 0x80000000u) << 32) | (uint64_t{0x7ff} << 52) | (uint64_t(u & 0x7fffffu) << 29);
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

// Floats narrower than f32: stored as their bit pattern, computed in float.
template <ElementType E, typename Bits>
struct MiniFloat : ElemBase<E, Bits, float> {
  static float load(Bits v) {
    double d = minifloat_to_double(E, v);
    return d != d ? nan_to_float(d) : static_cast<float>(d);
  }
  static Bits store(float v) { return static_cast<Bits>(double_to_minifloat(E, v != v ? nan_to_double(v) : v)); }
};
// bf16 is the top half of an f32: widening is a shift, and narrowing rounds the low half away
// (to nearest, ties to even; a NaN keeps its sign and the top of its payload, quieted only when
// nothing of the payload is left, as IEEE narrowing does): the bits of double_to_minifloat, without its
// general path (tests/exec/accelerate_test.cpp compares them on every bf16 boundary). Mixed-
// precision programs spend most element-wise time here.
inline float bf16_to_f32(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u)  // NaN: negate and abs keep its payload (IEEE: sign-bit ops)
    return uint16_t((u >> 16) | ((u & 0x007f0000u) == 0 ? 0x0040u : 0u));
  // Adding 0x7fff plus the lowest kept bit carries into the kept half exactly when the dropped
  // half is above one half, or is one half with an odd kept half; past the largest finite value
  // the carry reaches the exponent and gives infinity, as rounding must.
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
template <>
struct Elem<ElementType::bf16> : ElemBase<ElementType::bf16, uint16_t, float> {
  static float load(uint16_t v) { return bf16_to_f32(v); }
  static uint16_t store(float v) { return f32_to_bf16(v); }
};
template <> struct Elem<ElementType::f16> : MiniFloat<ElementType::f16, uint16_t> {};
template <> struct Elem<ElementType::f8E4M3> : MiniFloat<ElementType::f8E4M3, uint8_t> {};
template <> struct Elem<ElementType::f8E3M4> : MiniFloat<ElementType::f8E3M4, uint8_t> {};
template <> struct Elem<ElementType::f8E4M3FN> : MiniFloat<ElementType::f8E4M3FN, uint8_t> {};
template <> struct Elem<ElementType::f8E5M2> : MiniFloat<ElementType::f8E5M2, uint8_t> {};
template <> struct Elem<ElementType::f8E4M3FNUZ> : MiniFloat<ElementType::f8E4M3FNUZ, uint8_t> {};
template <> struct Elem<ElementType::f8E4M3B11FNUZ> : MiniFloat<ElementType::f8E4M3B11FNUZ, uint8_t> {};
template <> struct Elem<ElementType::f8E5M2FNUZ> : MiniFloat<ElementType::f8E5M2FNUZ, uint8_t> {};
template <> struct Elem<ElementType::f8E8M0FNU> : MiniFloat<ElementType::f8E8M0FNU, uint8_t> {};
template <> struct Elem<ElementType::f6E2M3FN> : MiniFloat<ElementType::f6E2M3FN, uint8_t> {};
template <> struct Elem<ElementType::f6E3M2FN> : MiniFloat<ElementType::f6E3M2FN, uint8_t> {};
template <> struct Elem<ElementType::f4E2M1FN> : MiniFloat<ElementType::f4E2M1FN, uint8_t> {};

template <typename T>
inline constexpr bool is_complex_v = false;
template <typename T>
inline constexpr bool is_complex_v<std::complex<T>> = true;

// Calls f.template operator()<Elem<E>>() for the runtime type t: the only switch over element types
// that kernels need.
template <typename F>
decltype(auto) visit_element(ElementType t, F&& f) {
  switch (t) {
#define ELEMENT(e, spelling, kind, bits, bytes, ebits, mbits) \
  case ElementType::e:                                        \
    return f.template operator()<Elem<ElementType::e>>();
#include "ir/element_types.def"
#undef ELEMENT
  }
  TESSERA_CHECK(false, "unknown element type {}", static_cast<int>(t));
  __builtin_unreachable();
}

// The bit width of an element type's values, usable at compile time (i4: 4).
constexpr int value_bits(ElementType t) {
  switch (t) {
#define ELEMENT(e, spelling, kind, bits, bytes, ebits, mbits) \
  case ElementType::e:                                        \
    return bits;
#include "ir/element_types.def"
#undef ELEMENT
  }
  return 0;
}

// A double truncated toward zero and saturated to the integer range of integer type E; NaN gives 0
// (stablehlo.convert leaves out-of-range values open; this is XLA's choice, and it keeps a C++ cast
// of an out-of-range double, which is undefined, out of every conversion).
template <typename E>
typename E::storage float_to_int(double d) {
  using T = typename E::compute;
  constexpr int w = value_bits(E::type);
  constexpr bool is_signed = std::is_signed_v<T>;
  // [lo, hi] is the destination's range; hi_excl = hi + 1 is a power of two and exact in double.
  double lo = is_signed ? -std::ldexp(1.0, w - 1) : 0.0;
  double hi_excl = std::ldexp(1.0, is_signed ? w - 1 : w);
  uint64_t bits;
  if (std::isnan(d)) {
    bits = 0;
  } else if (d <= lo) {
    bits = static_cast<uint64_t>(static_cast<int64_t>(lo));
  } else if (d >= hi_excl) {
    bits = is_signed ? (uint64_t{1} << (w - 1)) - 1 : (w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1);
  } else if (is_signed) {
    bits = static_cast<uint64_t>(static_cast<int64_t>(std::trunc(d)));
  } else {
    bits = static_cast<uint64_t>(std::trunc(d));
  }
  return E::store(static_cast<T>(bits));
}

}  // namespace tessera::ir
