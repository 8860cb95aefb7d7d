// Element types (StableHLO's), their properties, and the conversion of minifloats to and from f32.
//
// Every element type is a row of element_types.def. Code that needs to act per type asks for its
// ElementInfo (kind, bit width, storage size) instead of listing types again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::ir {

enum class ElementType : uint8_t {
#define ELEMENT(e, spelling, kind, bits, bytes, ebits, mbits) e,
#include "ir/element_types.def"
#undef ELEMENT
};

enum class ElementKind : uint8_t { Bool, Signed, Unsigned, Float, Complex };

struct ElementInfo {
  std::string_view spelling;  // as in tensor<4xf32>
  ElementKind kind;
  int bits;             // value bits (i4: 4, complex<f32>: 64)
  int bytes;            // storage bytes per element
  int exponent_bits;    // floats and complex parts
  int mantissa_bits;
};

const ElementInfo& info(ElementType t);
std::string_view spelling(ElementType t);
std::optional<ElementType> parse_element_type(std::string_view s);

inline bool is_float(ElementType t) { return info(t).kind == ElementKind::Float; }
inline bool is_complex(ElementType t) { return info(t).kind == ElementKind::Complex; }
inline bool is_bool(ElementType t) { return info(t).kind == ElementKind::Bool; }
inline bool is_integer(ElementType t) {
  auto k = info(t).kind;
  return k == ElementKind::Signed || k == ElementKind::Unsigned;
}
inline bool is_signed_integer(ElementType t) { return info(t).kind == ElementKind::Signed; }
inline bool is_unsigned_integer(ElementType t) { return info(t).kind == ElementKind::Unsigned; }
// The real part type of a complex type; the type itself otherwise.
ElementType real_type(ElementType t);

// Bit patterns of floats narrower than f32 (bf16, f16, the f8 kinds), decoded exactly and encoded with
// one rounding to nearest-even, as StableHLO's convert does.
double minifloat_to_double(ElementType t, uint32_t bits);
uint32_t double_to_minifloat(ElementType t, double value);

}  // namespace tessera::ir
