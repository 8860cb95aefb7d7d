// Kernels that create or reinterpret elements: constant, iota, convert and bitcast_convert, and the
// element conversion they share with the rest of the interpreter (read_scalar / write_scalar).
//
// Conversion follows stablehlo.convert: bool <-> anything is 0/1 and "non-zero"; integers wrap to
// the destination width; floats round once to the destination (minifloats are encoded straight from
// double); float -> integer truncates, saturates at the destination's range and maps NaN to 0 (the
// spec leaves out-of-range values open; this is XLA's choice); complex -> real keeps the real part
// (the conformance tests do the same for complex -> bool).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "interp/kernels.h"

namespace tessera::interp {

using ir::ElementKind;
using ir::Literal;

namespace {

template <typename E>
constexpr bool is_minifloat =
    std::is_same_v<typename E::compute, float> && !std::is_same_v<typename E::storage, float>;

template <typename E>
typename E::storage from_double(double d) {
  if constexpr (is_minifloat<E>)
    return static_cast<typename E::storage>(ir::double_to_minifloat(E::type, d));
  else
    return static_cast<typename E::storage>(d);
}

template <typename E>
typename E::storage encode(const Scalar& v) {
  using T = typename E::compute;
  bool is_int_source = v.kind == ElementKind::Signed || v.kind == ElementKind::Unsigned ||
                       v.kind == ElementKind::Bool;
  uint64_t int_bits = v.kind == ElementKind::Unsigned ? v.u : static_cast<uint64_t>(v.i);
  if constexpr (std::is_same_v<T, bool>) {
    return E::store(is_int_source ? int_bits != 0 : v.c.real() != 0);
  } else if constexpr (std::is_integral_v<T>) {
    if (is_int_source) return E::store(static_cast<T>(int_bits));  // wraps to the width
    return ir::float_to_int<E>(v.c.real());
  } else if constexpr (ir::is_complex_v<T>) {
    using P = typename T::value_type;
    if (v.kind == ElementKind::Unsigned) return T(static_cast<P>(v.u), 0);
    if (v.kind != ElementKind::Float && v.kind != ElementKind::Complex) return T(static_cast<P>(v.i), 0);
    return T(static_cast<P>(v.c.real()), static_cast<P>(v.c.imag()));
  } else {
    // Integers convert straight to f32/f64 (one rounding), through double to minifloats.
    if (v.kind == ElementKind::Unsigned)
      return is_minifloat<E> ? from_double<E>(static_cast<double>(v.u)) : static_cast<typename E::storage>(v.u);
    if (is_int_source)
      return is_minifloat<E> ? from_double<E>(static_cast<double>(v.i)) : static_cast<typename E::storage>(v.i);
    return from_double<E>(v.c.real());
  }
}

}  // namespace

Scalar read_scalar(const Literal& x, int64_t i) {
  return ir::visit_element(x.element(), [&]<typename E>() {
    using T = typename E::compute;
    T v = E::load(x.data<E>()[static_cast<size_t>(i)]);
    Scalar s;
    s.kind = ir::info(E::type).kind;
    if constexpr (std::is_same_v<T, bool> || (std::is_integral_v<T> && std::is_signed_v<T>))
      s.i = static_cast<int64_t>(v);
    else if constexpr (std::is_integral_v<T>)
      s.u = static_cast<uint64_t>(v);
    else if constexpr (ir::is_complex_v<T>)
      s.c = std::complex<double>(v.real(), v.imag());
    else if constexpr (std::is_same_v<T, float> && !std::is_same_v<typename E::storage, float>)
      s.c = ir::minifloat_to_double(E::type, x.data<E>()[static_cast<size_t>(i)]);
    else
      s.c = static_cast<double>(v);
    return s;
  });
}

void write_scalar(Literal& x, int64_t i, const Scalar& v) {
  ir::visit_element(x.element(), [&]<typename E>() {
    x.data<E>()[static_cast<size_t>(i)] = encode<E>(v);
  });
}

void convert_element(const Literal& src, int64_t i, Literal& dst, int64_t j) {
  if (src.element() == dst.element())
    copy_element(src, i, dst, j);
  else
    write_scalar(dst, j, read_scalar(src, i));
}

Results eval_Constant(const EvalContext& ctx) {
  return one(ctx.op.attrs().get<Literal>("value"));
}

Results eval_Iota(const EvalContext& ctx) {
  Literal out(ctx.result_type());
  auto d = static_cast<size_t>(ctx.op.attrs().get<int64_t>("iota_dimension"));
  int64_t flat = 0;
  for_each_index(out.shape(), [&](const std::vector<int64_t>& index) {
    Scalar s;
    s.i = index[d];
    write_scalar(out, flat++, s);
  });
  return one(std::move(out));
}

Results eval_Convert(const EvalContext& ctx) {
  const Literal& x = ctx.operand(0);
  Literal out(ctx.result_type());
  for (int64_t i = 0; i < x.num_elements(); ++i) convert_element(x, i, out, i);
  return one(std::move(out));
}

// The operand's bits, element after element (each element's value bits, least significant first,
// as a little-endian machine lays them out), read back as elements of the result type. Types whose
// widths are whole bytes share their storage bytes, so those are copied.
Results eval_BitcastConvert(const EvalContext& ctx) {
  const Literal& x = ctx.operand(0);
  Literal out(ctx.result_type());
  const ir::ElementInfo& in = ir::info(x.element());
  const ir::ElementInfo& to = ir::info(out.element());
  if (in.bits % 8 == 0 && to.bits % 8 == 0) {
    TESSERA_CHECK(x.bytes().size() == out.bytes().size(), "bitcast of {} bytes to {}",
                  x.bytes().size(), out.bytes().size());
    std::copy(x.bytes().begin(), x.bytes().end(), out.bytes().begin());
    return one(std::move(out));
  }
  std::vector<uint8_t> bits;  // one entry per bit
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const std::byte* p = x.bytes().data() + static_cast<size_t>(i * in.bytes);
    for (int b = 0; b < in.bits; ++b)
      bits.push_back(static_cast<uint8_t>((static_cast<unsigned>(p[b / 8]) >> (b % 8)) & 1u));
  }
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    uint64_t raw = 0;  // narrower than a byte here, or a whole number of bytes below
    std::vector<std::byte> value(static_cast<size_t>(to.bytes), std::byte{0});
    for (int b = 0; b < to.bits; ++b) {
      uint8_t bit = bits[static_cast<size_t>(i * to.bits + b)];
      value[static_cast<size_t>(b / 8)] |= static_cast<std::byte>(bit << (b % 8));
      if (b < 64) raw |= uint64_t{bit} << b;
    }
    if (to.bits < 8)
      out.set_int(i, static_cast<int64_t>(raw));  // sign- or zero-extends into the byte
    else
      std::memcpy(out.bytes().data() + static_cast<size_t>(i * to.bytes), value.data(), value.size());
  }
  return one(std::move(out));
}

}  // namespace tessera::interp
