#include "ir/literal.h"

#include <cstring>

namespace tessera::ir {

Literal::Literal(Type type) : type_(std::move(type)) {
  if (type_.kind != TypeKind::kTensor) {
    for (const Type& m : type_.elements) members_.emplace_back(m);
    return;
  }
  if (!type_.is_static())
    support::fail("{} has a dynamic ('?') dimension: run with concrete input shapes so that shapes are refined first",
                  to_string(type_));
  for (int64_t d : type_.shape)
    TESSERA_CHECK(d >= 0, "negative dimension in {}", to_string(type_));
  std::optional<int64_t> n = support::checked_bytes(type_.shape, info(type_.element).bytes);
  if (!n) support::fail("{} is too large: its size in bytes does not fit in 64 bits", to_string(type_));
  try {
    bytes_.assign(static_cast<size_t>(*n), std::byte{0});
  } catch (const support::MemoryLimitError& e) {
    throw support::MemoryLimitError(fmt::format("{}: {}", to_string(type_), e.what()));
  }
}

Literal Literal::tuple(std::vector<Literal> members) {
  std::vector<Type> types;
  for (const Literal& m : members) types.push_back(m.type());
  Literal l;
  l.type_ = Type::tuple(std::move(types));
  l.members_ = std::move(members);
  return l;
}

Literal Literal::future(std::vector<Literal> members) {
  Literal l = tuple(std::move(members));
  l.type_ = Type::future(std::move(l.type_.elements));
  return l;
}

Literal Literal::view(Type type, std::byte* storage) {
  std::optional<int64_t> n = support::checked_bytes(type.shape, info(type.element).bytes);
  if (!n) support::fail("{} is too large: its size in bytes does not fit in 64 bits", to_string(type));
  Literal l;
  l.type_ = std::move(type);
  l.view_ = storage;
  l.view_size_ = static_cast<size_t>(*n);
  return l;
}

Literal::Literal(const Literal& other) : type_(other.type_), members_(other.members_) {
  auto b = other.bytes();
  bytes_.assign(b.begin(), b.end());
}

Literal& Literal::operator=(const Literal& other) {
  if (this == &other) return *this;
  type_ = other.type_;
  auto b = other.bytes();
  bytes_.assign(b.begin(), b.end());
  view_ = nullptr;
  view_size_ = 0;
  members_ = other.members_;
  return *this;
}

Literal::Literal(Literal&& other) noexcept
    : type_(std::move(other.type_)),
      bytes_(std::move(other.bytes_)),
      view_(other.view_),
      view_size_(other.view_size_),
      members_(std::move(other.members_)) {
  other.view_ = nullptr;
  other.view_size_ = 0;
}

Literal& Literal::operator=(Literal&& other) noexcept {
  if (this == &other) return *this;
  type_ = std::move(other.type_);
  bytes_ = std::move(other.bytes_);
  view_ = other.view_;
  view_size_ = other.view_size_;
  members_ = std::move(other.members_);
  other.view_ = nullptr;
  other.view_size_ = 0;
  return *this;
}

std::vector<int64_t> row_major_strides(std::span<const int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

std::vector<int64_t> Literal::strides() const { return row_major_strides(type_.shape); }

std::complex<double> Literal::get_complex(int64_t i) const {
  return visit_element(type_.element, [&]<typename E>() -> std::complex<double> {
    auto v = E::load(data<E>()[static_cast<size_t>(i)]);
    if constexpr (is_complex_v<decltype(v)>)
      return {static_cast<double>(v.real()), static_cast<double>(v.imag())};
    else
      return {static_cast<double>(v), 0.0};
  });
}

double Literal::get_double(int64_t i) const { return get_complex(i).real(); }

int64_t Literal::get_int(int64_t i) const {
  return visit_element(type_.element, [&]<typename E>() -> int64_t {
    auto v = E::load(data<E>()[static_cast<size_t>(i)]);
    if constexpr (is_complex_v<decltype(v)>)
      return static_cast<int64_t>(v.real());
    else
      return static_cast<int64_t>(v);
  });
}

uint64_t Literal::get_uint(int64_t i) const {
  return visit_element(type_.element, [&]<typename E>() -> uint64_t {
    auto v = E::load(data<E>()[static_cast<size_t>(i)]);
    if constexpr (is_complex_v<decltype(v)>)
      return static_cast<uint64_t>(v.real());
    else if constexpr (std::is_integral_v<decltype(v)>)
      return static_cast<uint64_t>(v);
    else
      return static_cast<uint64_t>(static_cast<int64_t>(v));
  });
}

void Literal::set_complex(int64_t i, std::complex<double> v) {
  visit_element(type_.element, [&]<typename E>() {
    using C = typename E::compute;
    C c;
    if constexpr (is_complex_v<C>)
      c = C(static_cast<typename C::value_type>(v.real()),
            static_cast<typename C::value_type>(v.imag()));
    else if constexpr (std::is_same_v<C, bool>)
      c = v.real() != 0;
    else if constexpr (std::is_integral_v<C>)
      return void(data<E>()[static_cast<size_t>(i)] = float_to_int<E>(v.real()));  // saturates; NaN is 0
    else
      c = static_cast<C>(v.real());
    data<E>()[static_cast<size_t>(i)] = E::store(c);
  });
}

void Literal::set_double(int64_t i, double v) { set_complex(i, {v, 0.0}); }

void Literal::set_int(int64_t i, int64_t v) {
  visit_element(type_.element, [&]<typename E>() {
    using C = typename E::compute;
    C c;
    if constexpr (is_complex_v<C>)
      c = C(static_cast<typename C::value_type>(v), 0);
    else if constexpr (std::is_same_v<C, bool>)
      c = v != 0;
    else
      c = static_cast<C>(v);  // integers wrap (modular since C++20); store narrows sub-byte ones
    data<E>()[static_cast<size_t>(i)] = E::store(c);
  });
}

Literal Literal::scalar(ElementType e, double v) { return splat(Type(e, {}), v); }

Literal Literal::splat(Type type, double v) {
  Literal l(std::move(type));
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_double(i, v);
  return l;
}

namespace {
template <typename T, typename Set>
Literal from_values(Type type, std::span<const T> values, Set set) {
  Literal l(std::move(type));
  TESSERA_CHECK(static_cast<int64_t>(values.size()) == l.num_elements(), "{} values for {}",
                values.size(), to_string(l.type()));
  for (size_t i = 0; i < values.size(); ++i) (l.*set)(static_cast<int64_t>(i), values[i]);
  return l;
}
}  // namespace

Literal Literal::from_doubles(Type type, std::span<const double> values) {
  return from_values(std::move(type), values, &Literal::set_double);
}

Literal Literal::from_ints(Type type, std::span<const int64_t> values) {
  return from_values(std::move(type), values, &Literal::set_int);
}

bool Literal::is_splat() const {
  if (num_elements() == 0) return false;
  size_t width = static_cast<size_t>(info(type_.element).bytes);
  auto b = bytes();
  for (size_t off = width; off < b.size(); off += width)
    if (std::memcmp(b.data(), b.data() + off, width) != 0) return false;
  return true;
}

}  // namespace tessera::ir
