// Scalar semantics of the elementwise ops, one functor per op: apply<E>(x[, y]) on values of
// E::compute (bool, a C++ integer, float/double, or std::complex). Shared by the elementwise kernels
// and the fast path of reduce/scatter/collective bodies.
//
// Integer arithmetic goes through uint64_t and back, so signed overflow wraps instead of being
// undefined behaviour; sub-byte integers compute in their byte and Elem<E>::store wraps them to
// their width. Float transcendental functions compute in double (complex<double>) and round once,
// as the StableHLO reference interpreter does. Cases the spec leaves open follow XLA: x / 0 is -1
// (all ones unsigned), INT_MIN / -1 is INT_MIN, x % 0 is x, INT_MIN % -1 is 0.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <type_traits>

#include "interp/kernels.h"

namespace tessera::interp::scalar {

template <typename T> inline constexpr bool is_bool = std::is_same_v<T, bool>;
template <typename T> inline constexpr bool is_int = std::is_integral_v<T> && !is_bool<T>;
template <typename T> inline constexpr bool is_real = std::is_floating_point_v<T>;
template <typename T> inline constexpr bool is_cplx = ir::is_complex_v<T>;

// Categories of element types an op admits (checked at the kernel's entry).
enum Category : unsigned { kBool = 1, kInt = 2, kFloat = 4, kComplex = 8 };
inline constexpr unsigned kNumeric = kInt | kFloat | kComplex;
inline constexpr unsigned kFloating = kFloat | kComplex;
inline constexpr unsigned kAny = kBool | kNumeric;

unsigned category(ir::ElementType e);

// The shape rules and the kernel's entry check exclude the types that reach this.
[[noreturn]] void unsupported_type();
template <typename T>
T unsupported() {
  unsupported_type();
}

template <typename T>
uint64_t bits64(T v) {  // sign-extends signed values
  return static_cast<uint64_t>(v);
}
template <typename T>
T wrap(uint64_t v) {  // modular since C++20
  return static_cast<T>(v);
}
template <typename E>
constexpr uint64_t width_mask() {
  constexpr int w = value_bits(E::type);
  return w >= 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
}

// f applied in double precision: float -> double, complex<float> -> complex<double>.
template <typename T, typename F>
T wide(T x, F f) {
  if constexpr (is_real<T>) {
    return static_cast<T>(f(static_cast<double>(x)));
  } else if constexpr (is_cplx<T>) {
    std::complex<double> r = f(std::complex<double>(x.real(), x.imag()));
    return T(static_cast<typename T::value_type>(r.real()), static_cast<typename T::value_type>(r.imag()));
  } else {
    return unsupported<T>();
  }
}
template <typename T, typename F>
T wide(T x, T y, F f) {
  if constexpr (is_real<T>) {
    return static_cast<T>(f(static_cast<double>(x), static_cast<double>(y)));
  } else if constexpr (is_cplx<T>) {
    std::complex<double> r = f(std::complex<double>(x.real(), x.imag()),
                               std::complex<double>(y.real(), y.imag()));
    return T(static_cast<typename T::value_type>(r.real()), static_cast<typename T::value_type>(r.imag()));
  } else {
    return unsupported<T>();
  }
}

// compare's `direction` on two values of one type (C++'s operators: IEEE for floats, any order with
// NaN false and NE true). Shared by the reference kernel and the fast one of src/exec.
bool compare_values(ir::ComparisonDirection d, auto a, auto b) {
  using D = ir::ComparisonDirection;
  switch (d) {
    case D::EQ: return a == b;
    case D::NE: return a != b;
    case D::GE: return a >= b;
    case D::GT: return a > b;
    case D::LE: return a <= b;
    case D::LT: return a < b;
  }
  return false;
}

// ---- Binary ----

struct Add {
  template <typename E, typename T>
  static T apply(T a, T b) {
    if constexpr (is_bool<T>) return a || b;
    else if constexpr (is_int<T>) return wrap<T>(bits64(a) + bits64(b));
    else return a + b;
  }
};
struct Subtract {
  template <typename E, typename T>
  static T apply(T a, T b) {
    if constexpr (is_bool<T>) return unsupported<T>();
    else if constexpr (is_int<T>) return wrap<T>(bits64(a) - bits64(b));
    else return a - b;
  }
};
struct Multiply {
  template <typename E, typename T>
  static T apply(T a, T b) {
    if constexpr (is_bool<T>) return a && b;
    else if constexpr (is_int<T>) return wrap<T>(bits64(a) * bits64(b));
    else return a * b;
  }
};
struct Divide {
  template <typename E, typename T>
  static T apply(T a, T b) {
    if constexpr (is_bool<T>) {
      return unsupported<T>();
    } else if constexpr (is_int<T>) {
      if (b == 0) return static_cast<T>(-1);  // unsigned: all ones
      if constexpr (std::is_signed_v<T>)
        if (b == -1) return wrap<T>(uint64_t{0} - bits64(a));  // INT_MIN / -1 wraps to INT_MIN
      return static_cast<T>(a / b);
    } else if constexpr (is_cplx<T>) {
      return wide(a, b, [](auto x, auto y) { return x / y; });
    } else {
      return a / b;
    }
  }
};
struct Remainder {
  template <typename E, typename T>
  static T apply(T a, T b) {
    if constexpr (is_int<T>) {
      if (b == 0) return a;
      if constexpr (std::is_signed_v<T>)
        if (b == -1) return 0;  // INT_MIN % -1 would trap
      return static_cast<T>(a % b);
    } else if constexpr (is_real<T>) {
      return std::fmod(a, b);  // the sign of the dividend, as the spec asks
    } else {
      return unsupported<T>();
    }
  }
};
// x^y. A complex base with an integral real exponent (|n| <= 2^16) multiplies by repeated
// squaring, as NumPy does, so i² is exactly -1 (exp(2·log i) leaves 1e-16 in the imaginary part)
// and 0⁰ = 1 (libstdc++'s complex pow gives 0 for a zero base).
inline double pow_of(double x, double y) { return std::pow(x, y); }
inline std::complex<double> pow_of(std::complex<double> x, std::complex<double> y) {
  double n = y.real();
  if (y.imag() == 0 && std::nearbyint(n) == n && std::abs(n) <= 65536) {
    std::complex<double> r = 1.0, base = x;
    for (auto e = static_cast<uint64_t>(std::abs(n)); e != 0; e >>= 1, base *= base)
      if (e & 1) r *= base;
    return n < 0 ? 1.0 / r : r;
  }
  return std::pow(x, y);
}
struct Power {
  template <typename E, typename T>
  static T apply(T a, T b) {
    if constexpr (is_int<T>) {
      // As the StableHLO reference interpreter: a negative exponent gives 0 unless |a| = 1.
      uint64_t e = bits64(b);
      if constexpr (std::is_signed_v<T>) {
        if (b < 0) {
          if (a != 1 && a != -1) return 0;
          e = uint64_t{0} - e;
        }
      }
      uint64_t base = bits64(a), r = 1;
      for (; e != 0; e >>= 1, base *= base)
        if (e & 1) r *= base;
      return wrap<T>(r);
    } else if constexpr (is_bool<T>) {
      return unsupported<T>();
    } else {
      return wide(a, b, [](auto x, auto y) { return pow_of(x, y); });
    }
  }
};

// Complex numbers order lexicographically (real part, then imaginary part) in maximum/minimum.
template <typename T>
bool complex_less(T a, T b) {
  return a.real() != b.real() ? a.real() < b.real() : a.imag() < b.imag();
}

// Floats: NaN propagates, and +0 is greater than -0 (IEEE-754 maximum/minimum).
template <bool Max>
struct Extremum {
  template <typename E, typename T>
  static T apply(T a, T b) {
    if constexpr (is_bool<T>) {
      return Max ? (a || b) : (a && b);
    } else if constexpr (is_cplx<T>) {
      return complex_less(a, b) == Max ? b : a;
    } else {
      if constexpr (is_real<T>) {
        if (std::isnan(a)) return a;
        if (std::isnan(b)) return b;
        if (a == b) return std::signbit(a) == Max ? b : a;  // only ±0 differ
      }
      return (a < b) == Max ? b : a;
    }
  }
};
using Maximum = Extremum<true>;
using Minimum = Extremum<false>;

struct Atan2 {
  template <typename E, typename T>
  static T apply(T y, T x) {
    if constexpr (is_real<T>) {
      return wide(y, x, [](double a, double b) { return std::atan2(a, b); });
    } else if constexpr (is_cplx<T>) {
      // atan2(y, x) = -i log((x + iy) / sqrt(x^2 + y^2)), which is the real atan2 for real x, y.
      return wide(y, x, [](std::complex<double> a, std::complex<double> b) {
        const std::complex<double> i(0, 1);
        return -i * std::log((b + i * a) / std::sqrt(b * b + a * a));
      });
    } else {
      return unsupported<T>();
    }
  }
};

template <int Which>  // 0 and, 1 or, 2 xor
struct Bitwise {
  template <typename E, typename T>
  static T apply(T a, T b) {
    if constexpr (is_bool<T>) {
      return Which == 0 ? (a && b) : Which == 1 ? (a || b) : (a != b);
    } else if constexpr (is_int<T>) {
      uint64_t x = bits64(a), y = bits64(b);
      return wrap<T>(Which == 0 ? (x & y) : Which == 1 ? (x | y) : (x ^ y));
    } else {
      return unsupported<T>();
    }
  }
};
using And = Bitwise<0>;
using Or = Bitwise<1>;
using Xor = Bitwise<2>;

// Shifts read the amount as an unsigned number of the operand's width; an amount of the width or
// more shifts every bit out (0, or the sign for an arithmetic right shift), as XLA does.
template <int Kind>  // 0 left, 1 right logical, 2 right arithmetic
struct Shift {
  template <typename E, typename T>
  static T apply(T a, T b) {
    if constexpr (is_int<T>) {
      constexpr int w = value_bits(E::type);
      constexpr uint64_t mask = width_mask<E>();
      uint64_t amount = bits64(b) & mask;
      uint64_t value = bits64(a) & mask;
      uint64_t sign = (value >> (w - 1)) & 1;
      if (amount >= static_cast<uint64_t>(w)) return Kind == 2 && sign ? wrap<T>(~uint64_t{0}) : T{0};
      if constexpr (Kind == 0) return wrap<T>(value << amount);
      if constexpr (Kind == 1) return wrap<T>(value >> amount);
      // Arithmetic: shift in copies of the sign bit of the w-bit value.
      uint64_t shifted = value >> amount;
      if (sign) shifted |= ~(mask >> amount);
      return wrap<T>(shifted);
    } else {
      return unsupported<T>();
    }
  }
};
using ShiftLeft = Shift<0>;
using ShiftRightLogical = Shift<1>;
using ShiftRightArithmetic = Shift<2>;

// ---- Unary (same type in and out) ----

struct Negate {
  template <typename E, typename T>
  static T apply(T a) {
    if constexpr (is_int<T>) return wrap<T>(uint64_t{0} - bits64(a));
    else if constexpr (is_bool<T>) return unsupported<T>();
    else return -a;
  }
};
struct Sign {
  template <typename E, typename T>
  static T apply(T a) {
    if constexpr (is_int<T>) {
      return static_cast<T>((a > 0) - (a < 0));
    } else if constexpr (is_real<T>) {
      if (std::isnan(a) || a == 0) return a;  // NaN stays NaN; -0 stays -0
      return a > 0 ? T(1) : T(-1);
    } else if constexpr (is_cplx<T>) {
      if (a == T(0)) return a;
      return wide(a, [](std::complex<double> z) { return z / std::abs(z); });
    } else {
      return unsupported<T>();
    }
  }
};
struct Not {
  template <typename E, typename T>
  static T apply(T a) {
    if constexpr (is_bool<T>) return !a;
    else if constexpr (is_int<T>) return wrap<T>(~bits64(a));
    else return unsupported<T>();
  }
};

inline double expm1_of(double x) { return std::expm1(x); }
// exp(z) - 1 without the cancellation of subtracting 1 where e^x·cos y is near 1 (small z, or
// y near 2πk): Re = expm1(x)·cos y − 2·sin²(y/2), Im = e^x·sin y.
inline std::complex<double> expm1_of(std::complex<double> z) {
  double x = z.real(), y = z.imag();
  if (y == 0) return {std::expm1(x), y};  // also keeps Im 0 (not inf·0) for x = +inf
  double s = std::sin(y / 2);
  return {std::expm1(x) * std::cos(y) - 2 * s * s, std::exp(x) * std::sin(y)};
}
inline double log1p_of(double x) { return std::log1p(x); }
// log(1 + z); near 0, Re = log1p(x(2 + x) + y²) / 2 keeps the digits 1 + z would round away.
inline std::complex<double> log1p_of(std::complex<double> z) {
  double x = z.real(), y = z.imag();
  if (std::abs(x) < 0.5 && std::abs(y) < 0.5) return {std::log1p(x * (2 + x) + y * y) / 2, std::atan2(y, 1 + x)};
  return std::log(1.0 + z);
}

// Ops of floats and complex numbers computed by one function in double precision.
#define TESSERA_WIDE_UNARY(Name, expr)                            \
  struct Name {                                                   \
    template <typename E, typename T>                             \
    static T apply(T a) {                                         \
      return wide(a, [](auto x) -> decltype(x) { return expr; }); \
    }                                                             \
  };
TESSERA_WIDE_UNARY(Exponential, std::exp(x))
TESSERA_WIDE_UNARY(ExponentialMinusOne, expm1_of(x))
TESSERA_WIDE_UNARY(Log, std::log(x))
TESSERA_WIDE_UNARY(LogPlusOne, log1p_of(x))
TESSERA_WIDE_UNARY(Tanh, std::tanh(x))
TESSERA_WIDE_UNARY(Logistic, decltype(x)(1) / (decltype(x)(1) + std::exp(-x)))
TESSERA_WIDE_UNARY(Sqrt, std::sqrt(x))
TESSERA_WIDE_UNARY(Rsqrt, decltype(x)(1) / std::sqrt(x))
TESSERA_WIDE_UNARY(Sine, std::sin(x))
TESSERA_WIDE_UNARY(Cosine, std::cos(x))
// (TESSERA_WIDE_UNARY stays defined: kernels_elementwise_more.cpp defines more ops with it.)

// Ties to even without depending on the floating-point environment's rounding mode.
inline double round_half_even(double x) {
  if (std::fabs(x - std::trunc(x)) == 0.5) return 2.0 * std::round(x / 2.0);
  return std::round(x);
}

// Functions of real floats only, computed in double and rounded once: the rounding ops here (exact
// in any precision), and the special functions of kernels_elementwise_more.cpp.
#define TESSERA_REAL_UNARY(Name, fn)                                   \
  struct Name {                                                        \
    template <typename E, typename T>                                  \
    static T apply(T a) {                                              \
      if constexpr (is_real<T>) return wide(a, [](double x) { return fn(x); }); \
      else return unsupported<T>();                                    \
    }                                                                  \
  };
TESSERA_REAL_UNARY(Floor, std::floor)
TESSERA_REAL_UNARY(Ceil, std::ceil)
TESSERA_REAL_UNARY(RoundNearestEven, round_half_even)
TESSERA_REAL_UNARY(RoundNearestAfz, std::round)       // ties away from zero

// ---- Kernels of one-type elementwise ops, through a functor (shared by the kernel files) ----

inline void check_category(const EvalContext& ctx, unsigned allowed) {
  ir::ElementType e = ctx.operand(0).element();
  if ((category(e) & allowed) == 0)
    ctx.fail("is not defined for operands of type {}", to_string(ctx.operand(0).type()));
}

template <typename Fn>
Results unary(const EvalContext& ctx, unsigned allowed) {
  check_category(ctx, allowed);
  const ir::Literal& a = ctx.operand(0);
  ir::Literal out(ctx.result_type());
  ir::visit_element(a.element(), [&]<typename E>() {
    auto x = a.data<E>();
    auto r = out.data<E>();
    for (size_t i = 0; i < r.size(); ++i) r[i] = E::store(Fn::template apply<E>(E::load(x[i])));
  });
  return one(std::move(out));
}

template <typename Fn>
Results binary(const EvalContext& ctx, unsigned allowed) {
  check_category(ctx, allowed);
  const ir::Literal& a = ctx.operand(0);
  const ir::Literal& b = ctx.operand(1);
  ir::Literal out(ctx.result_type());
  ir::visit_element(a.element(), [&]<typename E>() {
    auto x = a.data<E>();
    auto y = b.data<E>();
    auto r = out.data<E>();
    for (size_t i = 0; i < r.size(); ++i)
      r[i] = E::store(Fn::template apply<E>(E::load(x[i]), E::load(y[i])));
  });
  return one(std::move(out));
}

}  // namespace tessera::interp::scalar
