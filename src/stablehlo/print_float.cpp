// Float elements as MLIR writes them, so our text and stablehlo-opt's agree digit for digit.
//
// MLIR's AsmPrinter tries APFloat's scientific form with six digits after the point
// ("1.000000e+00", "3.141590e+00") and keeps it when it reads back to the same bits. Otherwise it
// uses APFloat's default form, which has enough digits to round-trip ("3.14159274",
// "1.00000001E-10", "16777216" -> not a float, see below), and when that has no '.', or the value
// is NaN or infinite, it prints the bit pattern in hex ("0x7FC00000"). This file repeats APFloat's
// decimal conversion step for step (exact arithmetic on the significand, a truncating first cut,
// then round-half-up on the digits), because its digits differ from a shortest round-trip
// conversion in the last place.
#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ir/element_type.h"
#include "stablehlo/printer.h"
#include "support/error.h"

namespace tessera::stablehlo {
namespace {

using ir::ElementType;

// Unsigned big integer in base 2^32, least significant limb first: just the operations decimal
// conversion needs.
class BigUint {
 public:
  explicit BigUint(uint64_t v) : limbs_{static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)} {
    trim();
  }

  bool is_zero() const { return limbs_.empty(); }

  unsigned bit_length() const {
    if (limbs_.empty()) return 0;
    return static_cast<unsigned>(32 * (limbs_.size() - 1) + std::bit_width(limbs_.back()));
  }

  void shift_left(unsigned bits) {
    limbs_.insert(limbs_.begin(), bits / 32, 0u);
    unsigned s = bits % 32;
    if (s == 0) return;
    uint32_t carry = 0;
    for (uint32_t& l : limbs_) {
      uint32_t next = l >> (32 - s);
      l = (l << s) | carry;
      carry = next;
    }
    if (carry != 0) limbs_.push_back(carry);
  }

  void multiply(uint32_t m) {
    uint64_t carry = 0;
    for (uint32_t& l : limbs_) {
      uint64_t p = uint64_t{l} * m + carry;
      l = static_cast<uint32_t>(p);
      carry = p >> 32;
    }
    if (carry != 0) limbs_.push_back(static_cast<uint32_t>(carry));
  }

  // Divides in place; returns the remainder.
  uint32_t divide(uint32_t d) {
    uint64_t rem = 0;
    for (size_t i = limbs_.size(); i-- > 0;) {
      uint64_t cur = (rem << 32) | limbs_[i];
      limbs_[i] = static_cast<uint32_t>(cur / d);
      rem = cur % d;
    }
    trim();
    return static_cast<uint32_t>(rem);
  }

 private:
  void trim() {
    while (!limbs_.empty() && limbs_.back() == 0) limbs_.pop_back();
  }
  std::vector<uint32_t> limbs_;
};

// base^k, for powers that fit in 32 bits (5^13, 10^9).
uint32_t small_power(uint32_t base, int k) {
  uint32_t p = 1;
  for (int i = 0; i < k; ++i) p *= base;
  return p;
}

// APFloat's AdjustToPrecision on the digit buffer (least significant digit first): keep
// `precision` digits, rounding half up on the first dropped digit, and drop trailing zeros.
void round_digits(std::string& digits, int& exp, unsigned precision) {
  size_t n = digits.size();
  if (n <= precision) return;
  size_t first = n - precision;
  if (digits[first - 1] < '5') {
    while (first < n && digits[first] == '0') ++first;
  } else {
    for (size_t i = first; i != n; ++i) {
      if (digits[i] != '9') {
        ++digits[i];
        break;
      }
      ++first;
    }
    if (first == n) {
      exp += static_cast<int>(first);
      digits = "1";
      return;
    }
  }
  exp += static_cast<int>(first);
  digits.erase(0, first);
}

// The value (-1)^negative * significand * 2^exp2 (significand > 0) in APFloat's toString format.
// `format_precision` 0 means "enough digits for `semantic_bits` to round-trip"; `max_padding` 0
// forces scientific notation; `truncate_zero` selects the "1.0E+10" style over "1.000000e+10".
std::string apfloat_text(bool negative, uint64_t significand, int exp2, unsigned semantic_bits,
                         unsigned format_precision, unsigned max_padding, bool truncate_zero) {
  if (format_precision == 0) format_precision = 2 + semantic_bits * 59 / 196;
  int zeros = std::countr_zero(significand);
  significand >>= zeros;
  exp2 += zeros;

  // significand * 2^exp2 == n * 10^exp.
  BigUint n(significand);
  int exp = 0;
  if (exp2 > 0) {
    n.shift_left(static_cast<unsigned>(exp2));
  } else if (exp2 < 0) {
    for (int k = -exp2; k > 0; k -= 13) n.multiply(small_power(5, std::min(k, 13)));
    exp = exp2;
  }

  // First cut, by truncation: drop the decimal digits the precision cannot use.
  unsigned bits = n.bit_length();
  unsigned bits_required = (format_precision * 196 + 58) / 59;
  if (bits > bits_required) {
    unsigned tens = (bits - bits_required) * 59 / 196;
    exp += static_cast<int>(tens);
    for (; tens >= 9; tens -= 9) n.divide(1000000000u);
    if (tens > 0) n.divide(small_power(10, static_cast<int>(tens)));
  }

  std::string digits;  // least significant first, trailing zeros folded into exp
  while (!n.is_zero()) {
    uint32_t d = n.divide(10);
    if (digits.empty() && d == 0)
      ++exp;
    else
      digits.push_back(static_cast<char>('0' + d));
  }
  round_digits(digits, exp, format_precision);
  const int count = static_cast<int>(digits.size());

  bool scientific = max_padding == 0;
  if (!scientific) {
    if (exp >= 0) {
      scientific =
          exp > static_cast<int>(max_padding) || count + exp > static_cast<int>(format_precision);
    } else {
      int msd = exp + count - 1;  // power of ten of the leading digit
      scientific = msd < 0 && -msd > static_cast<int>(max_padding);
    }
  }

  std::string out = negative ? "-" : "";
  auto digit = [&](int i) { return digits[static_cast<size_t>(count - 1 - i)]; };  // from the top
  if (scientific) {
    exp += count - 1;
    out += digit(0);
    out += '.';
    if (count == 1 && truncate_zero) out += '0';
    for (int i = 1; i < count; ++i) out += digit(i);
    if (!truncate_zero && static_cast<int>(format_precision) > count - 1)
      out.append(format_precision - static_cast<unsigned>(count) + 1, '0');
    out += truncate_zero ? 'E' : 'e';
    out += exp >= 0 ? '+' : '-';
    std::string e = std::to_string(std::abs(exp));
    if (!truncate_zero && e.size() < 2) e.insert(0, "0");
    return out + e;
  }
  if (exp >= 0) {
    for (int i = 0; i < count; ++i) out += digit(i);
    return out.append(static_cast<size_t>(exp), '0');
  }
  int whole = exp + count;  // digits left of the point
  int i = 0;
  if (whole > 0) {
    for (; i < whole; ++i) out += digit(i);
    out += '.';
  } else {
    out += "0.";
    out.append(static_cast<size_t>(-whole), '0');
  }
  for (; i < count; ++i) out += digit(i);
  return out;
}

// The element's value as a double (exact for every float type up to f64).
double decode(ElementType t, uint64_t bits) {
  switch (t) {
    case ElementType::f64:
      return std::bit_cast<double>(bits);
    case ElementType::f32:
      return std::bit_cast<float>(static_cast<uint32_t>(bits));
    default:
      return ir::minifloat_to_double(t, static_cast<uint32_t>(bits));
  }
}

// Whether `text` reads back (rounded to nearest-even in type t) to exactly `bits`.
bool reads_back(ElementType t, const std::string& text, uint64_t bits) {
  const char* end = text.data() + text.size();
  if (t == ElementType::f32) {
    float f = 0;
    auto r = std::from_chars(text.data(), end, f);
    return r.ec == std::errc() && std::bit_cast<uint32_t>(f) == bits;
  }
  double d = 0;
  auto r = std::from_chars(text.data(), end, d);
  if (r.ec != std::errc()) return false;
  if (t == ElementType::f64) return std::bit_cast<uint64_t>(d) == bits;
  return ir::double_to_minifloat(t, d) == bits;
}

}  // namespace

std::string print_float(ElementType t, uint64_t bits) {
  const ir::ElementInfo& info = ir::info(t);
  TESSERA_CHECK(info.kind == ir::ElementKind::Float, "print_float of {}", info.spelling);
  if (info.bits < 64) bits &= (uint64_t{1} << info.bits) - 1;
  double value = decode(t, bits);
  if (std::isfinite(value)) {
    bool negative = std::signbit(value);
    if (value == 0) return negative ? "-0.000000e+00" : "0.000000e+00";
    int exp2 = 0;
    double frac = std::frexp(std::fabs(value), &exp2);  // value = frac * 2^exp2, frac in [0.5, 1)
    auto significand = static_cast<uint64_t>(std::ldexp(frac, 53));
    exp2 -= 53;
    unsigned precision = static_cast<unsigned>(info.mantissa_bits) + 1;
    std::string text = apfloat_text(negative, significand, exp2, precision, 6, 0, false);
    if (reads_back(t, text, bits)) return text;
    text = apfloat_text(negative, significand, exp2, precision, 0, 3, true);
    if (text.find('.') != std::string::npos) return text;
  }
  return fmt::format("0x{:X}", bits);
}

}  // namespace tessera::stablehlo
