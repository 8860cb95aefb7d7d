// The element-type table and minifloat conversion.
//
// Minifloats are decoded to double exactly and encoded by scaling to the format's quantum and
// rounding once to nearest-even, so f32 -> bf16 and f64 -> f16 each round once. Formats whose name
// ends in FN have no infinities: the all-ones pattern is NaN and overflow gives NaN, as in XLA.
#include "ir/element_type.h"

#include <array>
#include <cmath>

#include "support/error.h"

namespace tessera::ir {
namespace {

constexpr std::array<ElementInfo, 23> kInfos = {{
#define ELEMENT(e, spelling, kind, bits, bytes, ebits, mbits) \
  {spelling, ElementKind::kind, bits, bytes, ebits, mbits},
#include "ir/element_types.def"
#undef ELEMENT
}};

bool finite_only(ElementType t) { return t == ElementType::f8E4M3FN; }

struct Format {
  int ebits, mbits, bias;
  double max_finite;
};

Format format_of(ElementType t) {
  const ElementInfo& i = info(t);
  TESSERA_CHECK(i.kind == ElementKind::Float && i.bits < 32, "{} is not a minifloat", i.spelling);
  Format f{i.exponent_bits, i.mantissa_bits, (1 << (i.exponent_bits - 1)) - 1, 0};
  if (finite_only(t)) {  // top exponent is ordinary; only mantissa all-ones there is NaN
    f.max_finite = std::ldexp(2.0 - 2.0 * std::ldexp(1.0, -f.mbits), f.bias + 1);
  } else {
    f.max_finite = std::ldexp(2.0 - std::ldexp(1.0, -f.mbits), f.bias);
  }
  return f;
}

}  // namespace

const ElementInfo& info(ElementType t) { return kInfos[static_cast<size_t>(t)]; }

std::string_view spelling(ElementType t) { return info(t).spelling; }

std::optional<ElementType> parse_element_type(std::string_view s) {
  for (size_t i = 0; i < kInfos.size(); ++i)
    if (kInfos[i].spelling == s) return static_cast<ElementType>(i);
  return std::nullopt;
}

ElementType real_type(ElementType t) {
  if (t == ElementType::c64) return ElementType::f32;
  if (t == ElementType::c128) return ElementType::f64;
  return t;
}

double minifloat_to_double(ElementType t, uint32_t bits) {
  Format f = format_of(t);
  uint32_t mant = bits & ((1u << f.mbits) - 1);
  uint32_t exp = (bits >> f.mbits) & ((1u << f.ebits) - 1);
  bool negative = (bits >> (f.ebits + f.mbits)) & 1u;
  double sign = negative ? -1.0 : 1.0;
  uint32_t top = (1u << f.ebits) - 1;
  if (exp == top) {
    if (finite_only(t)) {
      if (mant == (1u << f.mbits) - 1) return std::nan("");
    } else {
      return mant == 0 ? sign * INFINITY : std::nan("");
    }
  }
  if (exp == 0) return sign * std::ldexp(static_cast<double>(mant), 1 - f.bias - f.mbits);
  return sign * std::ldexp(static_cast<double>(mant | (1u << f.mbits)),
                           static_cast<int>(exp) - f.bias - f.mbits);
}

uint32_t double_to_minifloat(ElementType t, double value) {
  Format f = format_of(t);
  uint32_t sign_bit = std::signbit(value) ? 1u << (f.ebits + f.mbits) : 0u;
  uint32_t top = (1u << f.ebits) - 1;
  uint32_t nan = finite_only(t) ? (top << f.mbits) | ((1u << f.mbits) - 1)
                                : (top << f.mbits) | (1u << (f.mbits - 1));
  uint32_t inf = finite_only(t) ? nan : top << f.mbits;
  if (std::isnan(value)) return sign_bit | nan;
  double a = std::fabs(value);
  if (std::isinf(a)) return sign_bit | inf;
  int min_exp = 1 - f.bias;  // exponent of the smallest normal
  int e = a == 0 ? min_exp : std::ilogb(a);
  if (e < min_exp) e = min_exp;
  double quantum = std::ldexp(1.0, e - f.mbits);
  double q = std::nearbyint(a / quantum);  // default rounding mode: nearest, ties to even
  double rounded = q * quantum;
  if (rounded > f.max_finite) return sign_bit | inf;
  if (rounded == 0) return sign_bit;
  if (rounded < std::ldexp(1.0, min_exp))
    return sign_bit | static_cast<uint32_t>(rounded / std::ldexp(1.0, min_exp - f.mbits));
  int re = std::ilogb(rounded);
  uint32_t mant = static_cast<uint32_t>(rounded / std::ldexp(1.0, re - f.mbits)) - (1u << f.mbits);
  return sign_bit | (static_cast<uint32_t>(re + f.bias) << f.mbits) | mant;
}

}  // namespace tessera::ir
