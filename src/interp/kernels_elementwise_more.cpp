// Kernels of the elementwise ops added for what JAX exports (#17): StableHLO's tan, cbrt, popcnt,
// count_leading_zeros, reduce_precision, complex, real and imag, and CHLO's special functions,
// trigonometric and hyperbolic functions, square, conj, the infinity predicates and next_after.
//
// Functions of floats compute in double (complex<double>) and round once, like the other
// transcendental kernels (scalar_ops.h). The C++ library gives erf, erfc, lgamma and the
// (inverse) trigonometric and hyperbolic functions; erf_inv, digamma, bessel_i1e, zeta and
// polygamma are written here (see each); mulhi multiplies in 128 bits. reduce_precision and next_after work on the stored bit pattern of the element's
// own type, as XLA does, so an f16 steps to the next f16 and not to the next f32.
#include <bit>
#include <math.h>  // lgamma_r

#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "interp/scalar_ops.h"

namespace tessera::interp {

using ir::Literal;

namespace scalar {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

inline double cbrt_of(double x) { return std::cbrt(x); }
inline double square_of(double x) { return x * x; }
// (a + bi)^2 = (a - b)(a + b) + 2abi: a*a - b*b overflows to inf - inf (NaN) where the square is
// finite or one infinity, and |a| = |b| gives exactly 0 (as XLA's CHLO decomposition does).
inline std::complex<double> square_of(std::complex<double> z) {
  const double a = z.real(), b = z.imag();
  return {std::fabs(a) == std::fabs(b) ? 0.0 : (a - b) * (a + b), 2 * a * b};
}
// The principal cube root, exp(log(z) / 3).
inline std::complex<double> cbrt_of(std::complex<double> z) {
  return z == 0.0 ? z : std::exp(std::log(z) / 3.0);
}

// erf^-1(y): Giles' single-precision approximation ("Approximating the erfinv function", 2010)
// refined by Newton steps in double, on erf, and near |y| = 1 on log erfc, where 1 - |y| is exact.
// lgamma_r, not std::lgamma: std::lgamma also writes the global `signgam`, a data race when
// several devices (threads) run the kernel at once (found by ThreadSanitizer).
inline double lgamma_of(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}

double erf_inv_of(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return kNaN;
  if (y == 1) return kInf;
  if (y == -1) return -kInf;
  double w = -std::log((1 - y) * (1 + y)), p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941})
      p = c + p * w;
  } else {
    w = std::sqrt(w) - 3;
    p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682})
      p = c + p * w;
  }
  // Newton on the odd function's positive half. In the tail (|y| > 0.5) it solves
  // log erfc(x) = log(1 - |y|), nearly quadratic in x, where the single-precision start is far
  // off (w up to 36 in double, beyond the fit's range) and Newton on erfc itself crept up by about
  // 0.1 a step (erf_inv(1 - 2^-53) was 5.456 for 5.864).
  const double a = std::fabs(y), two_over_root_pi = 2 / std::sqrt(std::numbers::pi);
  double x = std::fabs(p * y);
  for (int i = 0; i < 12; ++i) {
    const double slope = two_over_root_pi * std::exp(-x * x);
    double step;
    if (a > 0.5) {
      const double c = std::erfc(x);
      if (c == 0 || slope == 0) break;
      step = (std::log(c) - std::log1p(-a)) / (-slope / c);
    } else {
      if (slope == 0) break;
      step = (std::erf(x) - a) / slope;
    }
    x -= step;
    if (!(std::fabs(step) > 1e-17 * std::fabs(x))) break;
  }
  return std::copysign(x, y);
}

// digamma(x) = d/dx log Gamma(x). NaN at the poles (0, -1, -2, ...), as XLA gives; reflection
// psi(x) = psi(1 - x) - pi / tan(pi x) below 0; the recurrence psi(x) = psi(x + 1) - 1/x up to
// x >= 10, then the asymptotic series ln x - 1/(2x) - sum B_2k / (2k x^2k) to k = 6.
double digamma_of(double x) {
  if (std::isnan(x) || x == kInf) return x;
  if (x <= 0 && x == std::floor(x)) return kNaN;
  if (x < 0) return digamma_of(1 - x) - std::numbers::pi / std::tan(std::numbers::pi * x);
  double result = 0;
  for (; x < 10; x += 1) result -= 1 / x;
  double f = 1 / (x * x);
  double series = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132 - f * 691.0 / 32760)))));
  return result + std::log(x) - 0.5 / x - series;
}

// exp(-|x|) I1(x). Up to |x| = 50 the power series sum (x/2)^(2k+1) / (k! (k+1)!) (positive terms,
// no cancellation); beyond, Hankel's asymptotic series
// e^-x I1(x) ~ 1/sqrt(2 pi x) sum_k (-1)^k prod_j (4 - (2j-1)^2) / (k! (8x)^k), summed while its terms
// fall. I1 is odd.
double bessel_i1e_of(double x) {
  if (std::isnan(x)) return x;
  double ax = std::fabs(x), r;
  if (ax == kInf) return std::copysign(0.0, x);  // (0 * inf would be NaN)
  if (ax <= 50) {
    double half = ax / 2, term = half, sum = term;
    for (int k = 1; term > sum * 1e-18; ++k) {
      term *= half * half / (k * (k + 1.0));
      sum += term;
    }
    r = sum * std::exp(-ax);
  } else {
    double term = 1, sum = 1;
    for (int k = 1; k < 30; ++k) {
      double next = -term * (4.0 - (2.0 * k - 1) * (2.0 * k - 1)) / (k * 8.0 * ax);
      if (std::fabs(next) >= std::fabs(term)) break;
      term = next;
      sum += term;
    }
    r = sum / std::sqrt(2 * std::numbers::pi * ax);
  }
  return std::copysign(r, x);
}

// The Hurwitz zeta function ζ(s, q) = Σ_k (q + k)^-s as Cephes' zeta computes it: the terms summed
// until q + k passes max(9, s) (and at least 9 of them), then the Euler-Maclaurin tail with the
// Bernoulli numbers' (2j)! / B_2j (kZetaA); the threshold grows with s so that the tail's terms
// (s)_2j / (2π a)^2j keep falling for large orders. The domain follows XLA's CHLO legalization:
// s = 1 gives +inf, s < 1 NaN, q <= 0 NaN unless s is an integer, and a non-positive integer q
// (a pole) +inf. A q below -1e7 (which would need that many terms) gives NaN.
constexpr double kZetaA[] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
                             7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
                             -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18};

double zeta_of(double s, double q) {
  constexpr double kEps = std::numeric_limits<double>::epsilon() / 2;
  if (std::isnan(s) || std::isnan(q)) return kNaN;
  if (s == 1) return kInf;
  if (s < 1) return kNaN;
  if (q <= 0) {
    if (s != std::floor(s)) return kNaN;
    if (q == std::floor(q)) return kInf;
    if (q < -1e7) return kNaN;
  }
  if (s == kInf) return q < 1 ? kInf : q == 1 ? 1.0 : 0.0;
  // Far out, the Euler-Maclaurin tail alone, with q^(1-s) taken out: q^-s underflows long before
  // the value does (ζ(2, 1e200) = 1e-200 came out 0), and q + 1 == q ends the sum's steps.
  if (q >= 1e8 && q > s) {
    const double x = 1 / q;
    return std::pow(q, 1 - s) * (1 / (s - 1) + 0.5 * x + s * x * x / 12 - s * (s + 1) * (s + 2) * x * x * x * x / 720);
  }
  double a = q, b = std::pow(q, -s), sum = b;
  double limit = std::max(9.0, s);
  for (int i = 0; i < 9 || a <= limit;) {
    ++i;
    a += 1;
    b = std::pow(a, -s);
    sum += b;
    // A term that underflows ends the sum (every later one does too): this also stops the loop
    // where a + 1 no longer changes a.
    if (b == 0 || std::fabs(b / sum) < kEps) return sum;
  }
  sum += b * a / (s - 1) - 0.5 * b;
  double rising = 1, k = 0;
  for (double A : kZetaA) {
    rising *= s + k;
    b /= a;
    double t = rising * b / A;
    sum += t;
    if (std::fabs(t / sum) < kEps) break;
    k += 1;
    rising *= s + k;
    b /= a;
    k += 1;
  }
  return sum;
}

// polygamma(n, x) = (-1)^(n+1) n! ζ(n + 1, x) for a natural n, digamma(x) for n = 0, NaN for any
// other n (XLA's CHLO legalization). n! by tgamma, exact for the orders that do not overflow.
double polygamma_of(double n, double x) {
  if (std::isnan(n) || std::isnan(x) || n != std::floor(n) || n < 0) return kNaN;
  if (n == 0) return digamma_of(x);
  double sign = std::fmod(n, 2.0) == 1 ? 1.0 : -1.0;
  return sign * std::tgamma(n + 1) * zeta_of(n + 1, x);
}

}  // namespace

TESSERA_WIDE_UNARY(Tan, std::tan(x))
TESSERA_WIDE_UNARY(Cbrt, cbrt_of(x))
TESSERA_WIDE_UNARY(Sinh, std::sinh(x))
TESSERA_WIDE_UNARY(Cosh, std::cosh(x))
TESSERA_WIDE_UNARY(Asin, std::asin(x))
TESSERA_WIDE_UNARY(Acos, std::acos(x))
TESSERA_WIDE_UNARY(Atan, std::atan(x))
TESSERA_WIDE_UNARY(Asinh, std::asinh(x))
TESSERA_WIDE_UNARY(Acosh, std::acosh(x))
TESSERA_WIDE_UNARY(Atanh, std::atanh(x))
TESSERA_WIDE_UNARY(Square, square_of(x))

// Functions of real floats only (TESSERA_REAL_UNARY, scalar_ops.h).
TESSERA_REAL_UNARY(Erf, std::erf)
TESSERA_REAL_UNARY(Erfc, std::erfc)
TESSERA_REAL_UNARY(ErfInv, erf_inv_of)
TESSERA_REAL_UNARY(Lgamma, lgamma_of)
TESSERA_REAL_UNARY(Digamma, digamma_of)
TESSERA_REAL_UNARY(BesselI1e, bessel_i1e_of)

struct Conj {
  template <typename E, typename T>
  static T apply(T a) {
    if constexpr (is_cplx<T>) return std::conj(a);
    else return a;
  }
};

// Integers, on the value's own width (i4 has 4 bits to count).
struct Popcnt {
  template <typename E, typename T>
  static T apply(T a) {
    if constexpr (is_int<T>) return static_cast<T>(std::popcount(bits64(a) & width_mask<E>()));
    else return unsupported<T>();
  }
};
struct CountLeadingZeros {
  template <typename E, typename T>
  static T apply(T a) {
    if constexpr (is_int<T>) {
      constexpr int w = value_bits(E::type);
      return static_cast<T>(w - std::bit_width(bits64(a) & width_mask<E>()));
    } else {
      return unsupported<T>();
    }
  }
};

// The high half of the 2N-bit product of two N-bit integers (chlo.mulhi): signed types multiply
// and shift arithmetically, unsigned ones logically; 128 bits hold every product.
struct Mulhi {
  template <typename E, typename T>
  static T apply(T a, T b) {
    if constexpr (is_int<T>) {
      constexpr int w = value_bits(E::type);
      if constexpr (std::is_signed_v<T>) return static_cast<T>((static_cast<__int128>(a) * b) >> w);
      else return static_cast<T>((static_cast<unsigned __int128>(a) * b) >> w);
    } else {
      return unsupported<T>();
    }
  }
};
struct Zeta {
  template <typename E, typename T>
  static T apply(T s, T q) {
    if constexpr (is_real<T>) return wide(s, q, [](double a, double b) { return zeta_of(a, b); });
    else return unsupported<T>();
  }
};
struct Polygamma {
  template <typename E, typename T>
  static T apply(T n, T x) {
    if constexpr (is_real<T>) return wide(n, x, [](double a, double b) { return polygamma_of(a, b); });
    else return unsupported<T>();
  }
};

}  // namespace scalar

Results eval_Mulhi(const EvalContext& ctx) { return scalar::binary<scalar::Mulhi>(ctx, scalar::kInt); }
Results eval_Polygamma(const EvalContext& ctx) { return scalar::binary<scalar::Polygamma>(ctx, scalar::kFloat); }
Results eval_Zeta(const EvalContext& ctx) { return scalar::binary<scalar::Zeta>(ctx, scalar::kFloat); }

namespace {

using namespace scalar;

template <typename E>
uint64_t stored_bits(typename E::storage s) {
  uint64_t u = 0;
  std::memcpy(&u, &s, sizeof s);
  return u & width_mask<E>();
}
template <typename E>
typename E::storage from_bits(uint64_t u) {
  typename E::storage s;
  std::memcpy(&s, &u, sizeof s);
  return s;
}

// The bit-pattern ops need IEEE's layout with infinities, which f8E4M3FN lacks.
void check_ieee(const EvalContext& ctx) {
  check_category(ctx, kFloat);
  if (ctx.operand(0).element() == ir::ElementType::f8E4M3FN)
    ctx.fail("is not defined for operands of type {} (it has no infinity)", to_string(ctx.operand(0).type()));
}

// Element i of the result: pred(x_i) for a float predicate.
template <typename Pred>
Results float_predicate(const EvalContext& ctx, Pred pred) {
  check_category(ctx, kFloat);
  const Literal& a = ctx.operand(0);
  Literal out(ctx.result_type());
  auto r = out.data<ir::Elem<ir::ElementType::i1>>();
  ir::visit_element(a.element(), [&]<typename E>() {
    if constexpr (is_real<typename E::compute>) {
      auto x = a.data<E>();
      for (size_t i = 0; i < r.size(); ++i) r[i] = pred(static_cast<double>(E::load(x[i]))) ? 1 : 0;
    }
  });
  return one(std::move(out));
}

// real and imag: a part of each complex element; a float operand is its own real part, with
// imaginary part 0.
Results complex_part(const EvalContext& ctx, bool imaginary) {
  check_category(ctx, kFloating);
  const Literal& a = ctx.operand(0);
  Literal out(ctx.result_type());
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    Scalar s = read_scalar(a, i);
    Scalar part;
    part.kind = ir::ElementKind::Float;
    part.c = imaginary ? s.c.imag() : s.c.real();
    write_scalar(out, i, part);
  }
  return one(std::move(out));
}

}  // namespace

#define X(kind, allowed) \
  Results eval_##kind(const EvalContext& ctx) { return unary<scalar::kind>(ctx, allowed); }
X(Tan, kFloating)
X(Cbrt, kFloating)
X(Popcnt, kInt)
X(CountLeadingZeros, kInt)
X(Erf, kFloat)
X(Erfc, kFloat)
X(ErfInv, kFloat)
X(Lgamma, kFloat)
X(Digamma, kFloat)
X(BesselI1e, kFloat)
X(Sinh, kFloating)
X(Cosh, kFloating)
X(Asin, kFloating)
X(Acos, kFloating)
X(Atan, kFloating)
X(Asinh, kFloating)
X(Acosh, kFloating)
X(Atanh, kFloating)
X(Square, kFloating)
X(Conj, kFloating)
#undef X

Results eval_IsInf(const EvalContext& ctx) {
  return float_predicate(ctx, [](double x) { return std::isinf(x); });
}
Results eval_IsPosInf(const EvalContext& ctx) {
  return float_predicate(ctx, [](double x) { return x == kInf; });
}
Results eval_IsNegInf(const EvalContext& ctx) {
  return float_predicate(ctx, [](double x) { return x == -kInf; });
}

Results eval_Real(const EvalContext& ctx) { return complex_part(ctx, false); }
Results eval_Imag(const EvalContext& ctx) { return complex_part(ctx, true); }

// complex(re, im), elementwise.
Results eval_Complex(const EvalContext& ctx) {
  check_category(ctx, kFloat);
  const Literal& re = ctx.operand(0);
  const Literal& im = ctx.operand(1);
  Literal out(ctx.result_type());
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    Scalar s;
    s.kind = ir::ElementKind::Complex;
    s.c = {read_scalar(re, i).c.real(), read_scalar(im, i).c.real()};
    write_scalar(out, i, s);
  }
  return one(std::move(out));
}

// XLA's reduce_precision on the element's bits: round the mantissa to mantissa_bits (to nearest,
// ties to even), then send exponents beyond exponent_bits' range to ±inf (too large) or ±0 (too
// small, subnormals included). A NaN stays NaN, or becomes ±inf when no mantissa bit is left to
// tell it apart.
Results eval_ReducePrecision(const EvalContext& ctx) {
  check_ieee(ctx);
  const Literal& a = ctx.operand(0);
  int64_t ebits = ctx.op.attrs().get<int64_t>("exponent_bits");
  int64_t mbits = ctx.op.attrs().get<int64_t>("mantissa_bits");
  Literal out(ctx.result_type());
  ir::visit_element(a.element(), [&]<typename E>() {
    if constexpr (is_real<typename E::compute>) {
      const ir::ElementInfo& in = ir::info(E::type);
      const int w = in.bits, src_e = in.exponent_bits, src_m = in.mantissa_bits;
      const uint64_t sign = uint64_t{1} << (w - 1);
      const uint64_t exp_mask = ((uint64_t{1} << src_e) - 1) << src_m;
      auto x = a.data<E>();
      auto r = out.data<E>();
      for (size_t i = 0; i < r.size(); ++i) {
        uint64_t bits = stored_bits<E>(x[i]);
        if (std::isnan(E::load(x[i]))) {
          r[i] = mbits > 0 ? x[i] : from_bits<E>((bits & sign) | exp_mask);
          continue;
        }
        if (mbits < src_m) {
          uint64_t last = uint64_t{1} << (src_m - mbits);
          uint64_t bias = (last >> 1) - 1 + ((bits & last) >> (src_m - mbits));
          bits = ((bits + bias) & ~(last - 1)) & width_mask<E>();
        }
        if (ebits < src_e) {
          uint64_t exponent_bias = (uint64_t{1} << (src_e - 1)) - 1;
          uint64_t reduced_bias = (uint64_t{1} << (ebits - 1)) - 1;
          uint64_t exponent = bits & exp_mask;
          if (exponent > (exponent_bias + reduced_bias) << src_m)
            bits = (bits & sign) | exp_mask;
          else if (exponent <= (exponent_bias - reduced_bias) << src_m)
            bits &= sign;
        }
        r[i] = from_bits<E>(bits);
      }
    }
  });
  return one(std::move(out));
}

// std::nextafter in the element's own type: one step of the bit pattern's magnitude toward y; from
// ±0 the smallest subnormal of y's sign; NaN if either is NaN; y when x = y.
Results eval_NextAfter(const EvalContext& ctx) {
  check_ieee(ctx);
  const Literal& a = ctx.operand(0);
  const Literal& b = ctx.operand(1);
  Literal out(ctx.result_type());
  ir::visit_element(a.element(), [&]<typename E>() {
    if constexpr (is_real<typename E::compute>) {
      const uint64_t sign = uint64_t{1} << (ir::info(E::type).bits - 1);
      auto x = a.data<E>();
      auto y = b.data<E>();
      auto r = out.data<E>();
      for (size_t i = 0; i < r.size(); ++i) {
        double xv = E::load(x[i]), yv = E::load(y[i]);
        if (std::isnan(xv)) {
          r[i] = x[i];
        } else if (std::isnan(yv) || xv == yv) {
          r[i] = y[i];
        } else if (xv == 0) {
          r[i] = from_bits<E>(yv < 0 ? sign | 1 : 1);
        } else {
          uint64_t bits = stored_bits<E>(x[i]);
          bool away_from_zero = (xv < yv) == (xv > 0);
          r[i] = from_bits<E>(away_from_zero ? bits + 1 : bits - 1);
        }
      }
    }
  });
  return one(std::move(out));
}

}  // namespace tessera::interp
