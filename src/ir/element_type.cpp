// The element-type table and minifloat conversion.
//
// Minifloats are decoded to double exactly and encoded by scaling to the format's quantum and
// rounding once to nearest-even, so f32 -> bf16 and f64 -> f16 each round once. Formats whose name
// ends in FN have no infinities: the all-ones pattern is NaN and overflow gives NaN, as in XLA;
// FNUZ formats have one NaN (0x80) and one zero; the MX f4/f6 formats have neither infinities nor
// NaN, so overflow saturates and NaN converts to +0; E8M0 is an unsigned power of two (Special).
#include "ir/element_type.h"

#include <array>
#include <cmath>
#include <cstring>

#include "support/error.h"

namespace tessera::ir {
namespace {

constexpr std::array<ElementInfo, 0
#define ELEMENT(e, spelling, kind, bits, bytes, ebits, mbits) +1
#include "ir/element_types.def"
#undef ELEMENT
                     > kInfos = {{
#define ELEMENT(e, spelling, kind, bits, bytes, ebits, mbits) \
  {spelling, ElementKind::kind, bits, bytes, ebits, mbits},
#include "ir/element_types.def"
#undef ELEMENT
}};

// How a minifloat spends its special patterns.
enum class Special {
  kIeee,        // top exponent: infinity (mantissa 0) and NaN
  kFn,          // no infinities; NaN is the all-ones pattern (S.1111.111)
  kFnuz,        // no infinities, no negative zero; NaN is 0x80
  kFiniteOnly,  // no infinities, no NaN (the MX f4/f6 kinds): overflow saturates
  kE8M0,        // unsigned powers of two 2^(e-127), no zero, 0xff NaN
};

struct Format {
  int ebits, mbits, bias;
  Special special;
  double max_finite;
};

Format format_of(ElementType t) {
  const ElementInfo& i = info(t);
  TESSERA_CHECK(i.kind == ElementKind::Float && i.bits < 32, "{} is not a minifloat", i.spelling);
  Format f{i.exponent_bits, i.mantissa_bits, (1 << (i.exponent_bits - 1)) - 1, Special::kIeee, 0};
  switch (t) {
    case ElementType::f8E4M3FN: f.special = Special::kFn; break;
    case ElementType::f8E4M3FNUZ: f.special = Special::kFnuz, f.bias = 8; break;
    case ElementType::f8E5M2FNUZ: f.special = Special::kFnuz, f.bias = 16; break;
    case ElementType::f8E4M3B11FNUZ: f.special = Special::kFnuz, f.bias = 11; break;
    case ElementType::f6E2M3FN:
    case ElementType::f6E3M2FN:
    case ElementType::f4E2M1FN: f.special = Special::kFiniteOnly; break;
    case ElementType::f8E8M0FNU: f.special = Special::kE8M0, f.bias = 127; break;
    default: break;
  }
  int top = (1 << f.ebits) - 1;
  double one_ulp = std::ldexp(1.0, -f.mbits);
  switch (f.special) {
    case Special::kIeee: f.max_finite = std::ldexp(2.0 - one_ulp, top - 1 - f.bias); break;
    // The top exponent is ordinary; only its all-ones mantissa is NaN.
    case Special::kFn: f.max_finite = std::ldexp(2.0 - 2.0 * one_ulp, top - f.bias); break;
    case Special::kFnuz:
    case Special::kFiniteOnly: f.max_finite = std::ldexp(2.0 - one_ulp, top - f.bias); break;
    case Special::kE8M0: f.max_finite = std::ldexp(1.0, 127); break;
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

namespace {
// A double NaN with `negative`'s sign and the minifloat's mantissa bits at the top of its payload
// (so a narrowing back gives the same bits: negate and abs are sign-bit operations on NaNs too).
double nan_with_payload(bool negative, uint64_t mant, int mbits) {
  uint64_t payload = mant << (52 - mbits);
  if (payload == 0) payload = uint64_t{1} << 51;
  uint64_t u = (negative ? uint64_t{1} << 63 : 0) | (uint64_t{0x7ff} << 52) | payload;
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
}
}  // namespace

double minifloat_to_double(ElementType t, uint32_t bits) {
  Format f = format_of(t);
  if (f.special == Special::kE8M0) return bits == 0xffu ? std::nan("") : std::ldexp(1.0, int(bits) - 127);
  if (f.special == Special::kFnuz && bits == 0x80u) return std::nan("");
  uint32_t mant = bits & ((1u << f.mbits) - 1);
  uint32_t exp = (bits >> f.mbits) & ((1u << f.ebits) - 1);
  bool negative = (bits >> (f.ebits + f.mbits)) & 1u;
  double sign = negative ? -1.0 : 1.0;
  uint32_t top = (1u << f.ebits) - 1;
  if (exp == top) {
    if (f.special == Special::kIeee) return mant == 0 ? sign * INFINITY : nan_with_payload(negative, mant, f.mbits);
    if (f.special == Special::kFn && mant == (1u << f.mbits) - 1) return nan_with_payload(negative, mant, f.mbits);
  }
  if (exp == 0) return sign * std::ldexp(static_cast<double>(mant), 1 - f.bias - f.mbits);
  return sign * std::ldexp(static_cast<double>(mant | (1u << f.mbits)),
                           static_cast<int>(exp) - f.bias - f.mbits);
}

namespace {

// E8M0: the nearest power of two (a tie, 1.5 * 2^e, goes up, as rounding a one-bit significand to
// even does); zero and values below 2^-127 give 2^-127 (there is no zero), negative values and
// values past 2^127 give the NaN.
uint32_t double_to_e8m0(double value) {
  if (std::isnan(value) || value < 0 || std::isinf(value)) return 0xffu;
  if (value == 0) return 0;
  int e = std::ilogb(value);
  if (std::nearbyint(value / std::ldexp(1.0, e)) == 2.0) ++e;
  if (e > 127) return 0xffu;
  return e < -127 ? 0u : static_cast<uint32_t>(e + 127);
}

}  // namespace

uint32_t double_to_minifloat(ElementType t, double value) {
  Format f = format_of(t);
  if (f.special == Special::kE8M0) return double_to_e8m0(value);
  uint32_t sign_bit = std::signbit(value) ? 1u << (f.ebits + f.mbits) : 0u;
  uint32_t top = (1u << f.ebits) - 1;
  uint32_t all_ones = (top << f.mbits) | ((1u << f.mbits) - 1);
  // What NaN and a value past the largest finite one become, per kind.
  uint32_t nan = 0, overflow = 0;
  switch (f.special) {
    case Special::kIeee: nan = sign_bit | (top << f.mbits) | (1u << (f.mbits - 1)), overflow = sign_bit | (top << f.mbits); break;
    case Special::kFn: nan = overflow = sign_bit | all_ones; break;
    case Special::kFnuz: nan = overflow = 0x80u; break;
    // No NaN to give: NaN becomes +0 and overflow saturates (the MX formats' conversion).
    case Special::kFiniteOnly: nan = 0, overflow = sign_bit | all_ones; break;
    case Special::kE8M0: break;
  }
  if (std::isnan(value)) {
    if (f.special != Special::kIeee) return nan;
    // IEEE narrowing keeps the sign and the top of the payload (quiet bit set if nothing is left).
    uint64_t u;
    std::memcpy(&u, &value, sizeof u);
    auto mant = static_cast<uint32_t>((u >> (52 - f.mbits)) & ((1u << f.mbits) - 1));
    return sign_bit | (top << f.mbits) | (mant != 0 ? mant : 1u << (f.mbits - 1));
  }
  double a = std::fabs(value);
  if (std::isinf(a)) return overflow;
  // FNUZ has one zero, unsigned.
  uint32_t zero = f.special == Special::kFnuz ? 0u : sign_bit;
  int min_exp = 1 - f.bias;  // exponent of the smallest normal
  int e = a == 0 ? min_exp : std::ilogb(a);
  if (e < min_exp) e = min_exp;
  double quantum = std::ldexp(1.0, e - f.mbits);
  double q = std::nearbyint(a / quantum);  // default rounding mode: nearest, ties to even
  double rounded = q * quantum;
  if (rounded > f.max_finite) return overflow;
  if (rounded == 0) return zero;
  if (rounded < std::ldexp(1.0, min_exp))
    return sign_bit | static_cast<uint32_t>(rounded / std::ldexp(1.0, min_exp - f.mbits));
  int re = std::ilogb(rounded);
  uint32_t mant = static_cast<uint32_t>(rounded / std::ldexp(1.0, re - f.mbits)) - (1u << f.mbits);
  return sign_bit | (static_cast<uint32_t>(re + f.bias) << f.mbits) | mant;
}

}  // namespace tessera::ir
