// Literal: a dense host array of one Type. It is the value of a constant op and the value the
// reference interpreter computes with.
//
// A Literal owns its bytes, or is a view of storage someone else owns (an executable's values in
// its per-device arena, exec/buffer_plan.h): a view never frees, and a copy of a view owns a copy
// of the bytes, so only the code that made a view can leave one pointing at reused storage.
//
// Elements are stored row-major in their Elem<E>::storage form. Typed access goes through
// data<Elem>(); generic code (printing, tests, NumPy comparison) reads and writes elements as
// double / int64 / complex through get_*/set_*.
#pragma once

#include <algorithm>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/element_traits.h"
#include "ir/type.h"
#include "support/memory.h"

namespace tessera::ir {

class Literal {
 public:
  Literal() = default;
  // Zero-filled. A shape whose byte size overflows, or that the memory limit refuses, is a
  // UserError naming the type, as is a dynamic shape. A token holds nothing; a tuple or future
  // holds one zero-filled member per element type.
  explicit Literal(Type type);
  static Literal token() { return Literal(Type::token()); }
  static Literal tuple(std::vector<Literal> members);
  static Literal future(std::vector<Literal> members);  // async_start's value, awaited by async_done
  // A tuple's or future's members (empty for tensors and tokens).
  const std::vector<Literal>& members() const { return members_; }

  const Type& type() const { return type_; }
  ElementType element() const { return type_.element; }
  const std::vector<int64_t>& shape() const { return type_.shape; }
  int64_t num_elements() const { return type_.num_elements(); }

  // A view of `storage` (at least the type's size in bytes, its contents kept), which the caller
  // keeps alive as long as the view is read.
  static Literal view(Type type, std::byte* storage);
  bool is_view() const { return view_ != nullptr; }

  Literal(const Literal& other);
  Literal& operator=(const Literal& other);
  Literal(Literal&& other) noexcept;
  Literal& operator=(Literal&& other) noexcept;
  ~Literal() = default;

  std::span<std::byte> bytes() { return view_ ? std::span<std::byte>(view_, view_size_) : std::span<std::byte>(bytes_); }
  std::span<const std::byte> bytes() const {
    return view_ ? std::span<const std::byte>(view_, view_size_) : std::span<const std::byte>(bytes_);
  }

  template <typename E>
  std::span<typename E::storage> data() {
    TESSERA_CHECK(E::type == type_.element, "literal of {} read as {}", spelling(type_.element),
                  spelling(E::type));
    return {reinterpret_cast<typename E::storage*>(bytes().data()),
            static_cast<size_t>(num_elements())};
  }
  template <typename E>
  std::span<const typename E::storage> data() const {
    return const_cast<Literal*>(this)->data<E>();
  }

  // Element i (row-major) converted to double / int64 / complex; set_* converts back with the
  // element type's rounding or wrapping. Bools read as 0/1.
  double get_double(int64_t i) const;
  int64_t get_int(int64_t i) const;  // integers and bools; floats truncate
  uint64_t get_uint(int64_t i) const;
  std::complex<double> get_complex(int64_t i) const;
  void set_double(int64_t i, double v);
  void set_int(int64_t i, int64_t v);
  void set_complex(int64_t i, std::complex<double> v);

  static Literal scalar(ElementType e, double v);
  static Literal splat(Type type, double v);
  static Literal from_doubles(Type type, std::span<const double> values);
  static Literal from_ints(Type type, std::span<const int64_t> values);
  template <typename T>
  static Literal from(Type type, std::initializer_list<T> values) {
    std::vector<T> v(values);
    if constexpr (std::is_floating_point_v<T>) {
      std::vector<double> d(v.begin(), v.end());
      return from_doubles(std::move(type), d);
    } else {
      std::vector<int64_t> d(v.begin(), v.end());
      return from_ints(std::move(type), d);
    }
  }

  // Whether every element has the same bits (false without elements).
  bool is_splat() const;

  // Bitwise equality of type and storage (NaNs with the same bits are equal).
  bool operator==(const Literal& other) const {
    auto a = bytes(), b = other.bytes();
    return type_ == other.type_ && std::equal(a.begin(), a.end(), b.begin(), b.end()) &&
           members_ == other.members_;
  }

  // Row-major strides in elements.
  std::vector<int64_t> strides() const;

 private:
  Type type_;
  // Counted against the process's memory limit (support/memory.h).
  // Owned bytes (empty for a view).
  std::vector<std::byte, support::CountedAllocator<std::byte>> bytes_;
  std::byte* view_ = nullptr;  // a view's storage
  size_t view_size_ = 0;
  std::vector<Literal> members_;  // a tuple's or future's values
};

// Row-major strides of a shape, in elements.
std::vector<int64_t> row_major_strides(std::span<const int64_t> shape);

}  // namespace tessera::ir
