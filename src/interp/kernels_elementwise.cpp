// Kernels of the elementwise ops: the arithmetic and bitwise ops (through the scalar functors of
// scalar_ops.h), abs, is_finite, compare, select and clamp.
//
// The element type is dispatched once per kernel with ir::visit_element; the loop then runs on
// typed storage with Elem<E>::load/store, so minifloats round and sub-byte integers wrap on every
// store, as if each op were computed in its own type.
#include <cmath>
#include <cstring>

#include "interp/scalar_ops.h"

namespace tessera::interp {

using ir::Literal;

namespace scalar {

unsigned category(ir::ElementType e) {
  switch (ir::info(e).kind) {
    case ir::ElementKind::Bool: return kBool;
    case ir::ElementKind::Signed:
    case ir::ElementKind::Unsigned: return kInt;
    case ir::ElementKind::Float: return kFloat;
    case ir::ElementKind::Complex: return kComplex;
  }
  return 0;
}

void unsupported_type() {
  TESSERA_CHECK(false, "an elementwise kernel was reached with an element type it does not define");
  __builtin_unreachable();
}

}  // namespace scalar

namespace {

using namespace scalar;

template <typename Fn, typename E>
void apply_stored(const std::byte* lhs, const std::byte* rhs, std::byte* out) {
  typename E::storage x, y;
  std::memcpy(&x, lhs, sizeof x);
  std::memcpy(&y, rhs, sizeof y);
  typename E::storage r = E::store(Fn::template apply<E>(E::load(x), E::load(y)));
  std::memcpy(out, &r, sizeof r);
}

// The ops of one result type and one operand type, with the element categories each admits (the
// shape rules admit some the spec leaves undefined, e.g. remainder of complex numbers).
#define TESSERA_BINARY_OPS(X)              \
  X(Add, kAny)                             \
  X(Subtract, kNumeric)                    \
  X(Multiply, kAny)                        \
  X(Divide, kNumeric)                      \
  X(Remainder, kInt | kFloat)              \
  X(Power, kNumeric)                       \
  X(Maximum, kAny)                         \
  X(Minimum, kAny)                         \
  X(Atan2, kFloating)                      \
  X(And, kBool | kInt)                     \
  X(Or, kBool | kInt)                      \
  X(Xor, kBool | kInt)                     \
  X(ShiftLeft, kInt)                       \
  X(ShiftRightLogical, kInt)               \
  X(ShiftRightArithmetic, kInt)

#define TESSERA_UNARY_OPS(X)               \
  X(Negate, kNumeric)                      \
  X(Sign, kNumeric)                        \
  X(Exponential, kFloating)                \
  X(ExponentialMinusOne, kFloating)        \
  X(Log, kFloating)                        \
  X(LogPlusOne, kFloating)                 \
  X(Tanh, kFloating)                       \
  X(Logistic, kFloating)                   \
  X(Sqrt, kFloating)                       \
  X(Rsqrt, kFloating)                      \
  X(Sine, kFloating)                       \
  X(Cosine, kFloating)                     \
  X(Floor, kFloat)                         \
  X(Ceil, kFloat)                          \
  X(RoundNearestEven, kFloat)              \
  X(RoundNearestAfz, kFloat)               \
  X(Not, kBool | kInt)

// For a scalar, or an array of the shape of `like`: element i.
size_t at(const Literal& x, size_t i) { return x.type().rank() == 0 ? 0 : i; }


// TOTALORDER: -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN, read from the stored bit pattern
// (so minifloat NaNs keep their sign).
template <typename E>
int64_t total_order_key(typename E::storage s) {
  constexpr int w = value_bits(E::type);
  uint64_t u = 0;
  std::memcpy(&u, &s, sizeof s);
  uint64_t sign = uint64_t{1} << (w - 1);
  auto magnitude = static_cast<int64_t>(u & (sign - 1));
  return (u & sign) != 0 ? -magnitude - 1 : magnitude;
}

}  // namespace

#define X(kind, allowed) \
  Results eval_##kind(const EvalContext& ctx) { return binary<scalar::kind>(ctx, allowed); }
TESSERA_BINARY_OPS(X)
#undef X
#define X(kind, allowed) \
  Results eval_##kind(const EvalContext& ctx) { return unary<scalar::kind>(ctx, allowed); }
TESSERA_UNARY_OPS(X)
#undef X

ScalarFn scalar_binary(ir::OpKind kind, ir::ElementType e) {
  switch (kind) {
#define X(k, allowed)                                                                    \
  case ir::OpKind::k:                                                                    \
    if ((category(e) & (allowed)) == 0) return nullptr;                                  \
    return ir::visit_element(e, []<typename E>() -> ScalarFn { return &apply_stored<scalar::k, E>; });
    TESSERA_BINARY_OPS(X)
#undef X
    default:
      return nullptr;
  }
}

// abs of a complex number is real; abs of INT_MIN wraps to INT_MIN (one of the spec's choices).
Results eval_Abs(const EvalContext& ctx) {
  check_category(ctx, kNumeric);
  const Literal& a = ctx.operand(0);
  Literal out(ctx.result_type());
  ir::visit_element(a.element(), [&]<typename E>() {
    using T = typename E::compute;
    if constexpr (is_cplx<T>) {
      using R = ir::Elem<sizeof(T) == 8 ? ir::ElementType::f32 : ir::ElementType::f64>;
      auto x = a.data<E>();
      auto r = out.data<R>();
      for (size_t i = 0; i < r.size(); ++i)
        r[i] = static_cast<typename R::storage>(std::abs(std::complex<double>(x[i])));
    } else {
      auto x = a.data<E>();
      auto r = out.data<E>();
      for (size_t i = 0; i < r.size(); ++i) {
        T v = E::load(x[i]);
        if constexpr (is_int<T>) {
          r[i] = E::store(v < 0 ? Negate::apply<E>(v) : v);
        } else if constexpr (is_real<T>) {
          r[i] = E::store(std::fabs(v));
        } else {
          unsupported_type();
        }
      }
    }
  });
  return one(std::move(out));
}

Results eval_IsFinite(const EvalContext& ctx) {
  check_category(ctx, kFloat);
  const Literal& a = ctx.operand(0);
  Literal out(ctx.result_type());
  auto r = out.data<ir::Elem<ir::ElementType::i1>>();
  ir::visit_element(a.element(), [&]<typename E>() {
    auto x = a.data<E>();
    for (size_t i = 0; i < r.size(); ++i) {
      if constexpr (is_real<typename E::compute>) r[i] = std::isfinite(E::load(x[i])) ? 1 : 0;
    }
  });
  return one(std::move(out));
}

Results eval_Compare(const EvalContext& ctx) {
  const Literal& a = ctx.operand(0);
  const Literal& b = ctx.operand(1);
  auto direction = ctx.op.attrs().get<ir::ComparisonDirection>("comparison_direction");
  auto type = ctx.op.attrs().get_or<ir::CompareType>("compare_type", ir::CompareType::NOTYPE);
  Literal out(ctx.result_type());
  auto r = out.data<ir::Elem<ir::ElementType::i1>>();
  ir::visit_element(a.element(), [&]<typename E>() {
    auto x = a.data<E>();
    auto y = b.data<E>();
    for (size_t i = 0; i < r.size(); ++i) {
      bool v;
      if constexpr (is_real<typename E::compute>) {
        v = type == ir::CompareType::TOTALORDER
                ? compare_values(direction, total_order_key<E>(x[i]), total_order_key<E>(y[i]))
                : compare_values(direction, E::load(x[i]), E::load(y[i]));
      } else if constexpr (is_cplx<typename E::compute>) {
        // Lexicographic on (real, imag): the real parts decide unless they are equal.
        auto p = E::load(x[i]), q = E::load(y[i]);
        if (type == ir::CompareType::TOTALORDER) {
          auto key = [](double part) { return total_order_key<ir::Elem<ir::ElementType::f64>>(part); };
          v = key(p.real()) != key(q.real()) ? compare_values(direction, key(p.real()), key(q.real()))
                                             : compare_values(direction, key(p.imag()), key(q.imag()));
        } else {
          v = p.real() != q.real() ? compare_values(direction, p.real(), q.real())
                                   : compare_values(direction, p.imag(), q.imag());
        }
      } else {
        v = compare_values(direction, E::load(x[i]), E::load(y[i]));
      }
      r[i] = v ? 1 : 0;
    }
  });
  return one(std::move(out));
}

// The predicate may be a scalar choosing a whole operand.
Results eval_Select(const EvalContext& ctx) {
  const Literal& pred = ctx.operand(0);
  const Literal& on_true = ctx.operand(1);
  const Literal& on_false = ctx.operand(2);
  Literal out(ctx.result_type());
  auto p = pred.data<ir::Elem<ir::ElementType::i1>>();
  for (int64_t i = 0; i < out.num_elements(); ++i)
    copy_element(p[at(pred, static_cast<size_t>(i))] != 0 ? on_true : on_false, i, out, i);
  return one(std::move(out));
}

// clamp(lo, x, hi) = minimum(maximum(x, lo), hi): a NaN anywhere gives NaN. Bounds may be scalars.
Results eval_Clamp(const EvalContext& ctx) {
  check_category(ctx, kBool | kInt | kFloat);
  const Literal& lo = ctx.operand(0);
  const Literal& x = ctx.operand(1);
  const Literal& hi = ctx.operand(2);
  Literal out(ctx.result_type());
  ir::visit_element(x.element(), [&]<typename E>() {
    auto l = lo.data<E>();
    auto v = x.data<E>();
    auto h = hi.data<E>();
    auto r = out.data<E>();
    for (size_t i = 0; i < r.size(); ++i) {
      auto lower = Maximum::apply<E>(E::load(v[i]), E::load(l[at(lo, i)]));
      r[i] = E::store(Minimum::apply<E>(lower, E::load(h[at(hi, i)])));
    }
  });
  return one(std::move(out));
}

}  // namespace tessera::interp
