// Builder: elementwise ops, with NumPy broadcasting and plain numbers as scalars.
#include <algorithm>

#include "ir/builder.h"
#include "support/strings.h"

namespace tessera::ir {
namespace {

std::vector<int64_t> broadcast_shapes(const Tensor& a, const Tensor& b) {
  const auto& x = a.shape();
  const auto& y = b.shape();
  size_t n = std::max(x.size(), y.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t dx = i < n - x.size() ? 1 : x[i - (n - x.size())];
    int64_t dy = i < n - y.size() ? 1 : y[i - (n - y.size())];
    if (dx != dy && dx != 1 && dy != 1)
      support::fail("cannot broadcast {} with {}", to_string(a.type()), to_string(b.type()));
    out[i] = dx == 1 ? dy : dx;
  }
  return out;
}

Tensor unary(OpKind k, const Tensor& x) { return x.builder().emit1(k, {x}); }

Tensor binary(OpKind k, const Tensor& a, const Tensor& b, AttrMap attrs = {}) {
  std::vector<int64_t> shape = broadcast_shapes(a, b);
  return a.builder().emit1(k, {broadcast_to(a, shape), broadcast_to(b, shape)}, std::move(attrs));
}

Tensor like(const Tensor& t, double v) { return t.builder().scalar(t.element(), v); }

}  // namespace

Tensor broadcast_to(const Tensor& a, const std::vector<int64_t>& shape) {
  if (a.shape() == shape) return a;
  if (a.rank() > static_cast<int64_t>(shape.size()))
    support::fail("cannot broadcast {} to shape [{}]", to_string(a.type()), support::join(shape, ", "));
  std::vector<int64_t> dims;
  int64_t offset = static_cast<int64_t>(shape.size()) - a.rank();
  for (int64_t i = 0; i < a.rank(); ++i) dims.push_back(offset + i);
  return broadcast_in_dim(a, shape, dims);
}

Tensor operator+(const Tensor& a, const Tensor& b) { return binary(OpKind::Add, a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return binary(OpKind::Subtract, a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return binary(OpKind::Multiply, a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return binary(OpKind::Divide, a, b); }
Tensor operator+(const Tensor& a, double b) { return a + like(a, b); }
Tensor operator-(const Tensor& a, double b) { return a - like(a, b); }
Tensor operator*(const Tensor& a, double b) { return a * like(a, b); }
Tensor operator/(const Tensor& a, double b) { return a / like(a, b); }
Tensor operator+(double a, const Tensor& b) { return like(b, a) + b; }
Tensor operator-(double a, const Tensor& b) { return like(b, a) - b; }
Tensor operator*(double a, const Tensor& b) { return like(b, a) * b; }
Tensor operator/(double a, const Tensor& b) { return like(b, a) / b; }
Tensor operator-(const Tensor& a) { return negate(a); }
Tensor operator&(const Tensor& a, const Tensor& b) { return binary(OpKind::And, a, b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return binary(OpKind::Or, a, b); }
Tensor operator^(const Tensor& a, const Tensor& b) { return binary(OpKind::Xor, a, b); }
Tensor operator!(const Tensor& a) { return unary(OpKind::Not, a); }

Tensor negate(const Tensor& x) { return unary(OpKind::Negate, x); }
Tensor abs(const Tensor& x) { return unary(OpKind::Abs, x); }
Tensor sign(const Tensor& x) { return unary(OpKind::Sign, x); }
Tensor exp(const Tensor& x) { return unary(OpKind::Exponential, x); }
Tensor expm1(const Tensor& x) { return unary(OpKind::ExponentialMinusOne, x); }
Tensor log(const Tensor& x) { return unary(OpKind::Log, x); }
Tensor log1p(const Tensor& x) { return unary(OpKind::LogPlusOne, x); }
Tensor tanh(const Tensor& x) { return unary(OpKind::Tanh, x); }
Tensor logistic(const Tensor& x) { return unary(OpKind::Logistic, x); }
Tensor sqrt(const Tensor& x) { return unary(OpKind::Sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary(OpKind::Rsqrt, x); }
Tensor sin(const Tensor& x) { return unary(OpKind::Sine, x); }
Tensor cos(const Tensor& x) { return unary(OpKind::Cosine, x); }
Tensor floor(const Tensor& x) { return unary(OpKind::Floor, x); }
Tensor ceil(const Tensor& x) { return unary(OpKind::Ceil, x); }
Tensor round_nearest_even(const Tensor& x) { return unary(OpKind::RoundNearestEven, x); }
Tensor round_nearest_afz(const Tensor& x) { return unary(OpKind::RoundNearestAfz, x); }
Tensor is_finite(const Tensor& x) { return unary(OpKind::IsFinite, x); }
Tensor convert(const Tensor& x, ElementType to) {
  return x.builder().emit1(OpKind::Convert, {x}, {}, {x.type().with_element(to)});
}
Tensor bitcast_convert(const Tensor& x, Type to) {
  return x.builder().emit1(OpKind::BitcastConvert, {x}, {}, {std::move(to)});
}

Tensor remainder(const Tensor& a, const Tensor& b) { return binary(OpKind::Remainder, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(OpKind::Power, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(OpKind::Maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(OpKind::Minimum, a, b); }
Tensor atan2(const Tensor& a, const Tensor& b) { return binary(OpKind::Atan2, a, b); }
Tensor shift_left(const Tensor& a, const Tensor& b) { return binary(OpKind::ShiftLeft, a, b); }
Tensor shift_right_logical(const Tensor& a, const Tensor& b) {
  return binary(OpKind::ShiftRightLogical, a, b);
}
Tensor shift_right_arithmetic(const Tensor& a, const Tensor& b) {
  return binary(OpKind::ShiftRightArithmetic, a, b);
}

Tensor compare(const Tensor& a, const Tensor& b, ComparisonDirection direction) {
  AttrMap attrs;
  attrs.set("comparison_direction", direction);
  ElementType e = a.element();
  CompareType t = is_float(e) || is_complex(e) ? CompareType::FLOAT
                  : is_unsigned_integer(e) || is_bool(e) ? CompareType::UNSIGNED
                                                         : CompareType::SIGNED;
  attrs.set("compare_type", t);
  return binary(OpKind::Compare, a, b, std::move(attrs));
}

Tensor select(const Tensor& pred, const Tensor& on_true, const Tensor& on_false) {
  return pred.builder().emit1(OpKind::Select, {pred, on_true, on_false});
}

Tensor clamp(const Tensor& lo, const Tensor& x, const Tensor& hi) {
  return x.builder().emit1(OpKind::Clamp, {lo, x, hi});
}

}  // namespace tessera::ir
