// Dims: a short per-dimension array of int64 (strides, an index, a shape) that kernels use as
// scratch, kept inline up to kInline dimensions so that a kernel's steady state allocates nothing
// (tests/exec/allocation_test.cpp); larger ranks, rare, take a heap block. Not copyable: it may
// point into itself.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace tessera::exec {

class Dims {
 public:
  static constexpr size_t kInline = 12;

  explicit Dims(size_t n, int64_t fill = 0)
      : n_(n), p_(n <= kInline ? inline_ : (heap_ = std::make_unique<int64_t[]>(n)).get()) {
    std::fill_n(p_, n, fill);
  }
  explicit Dims(std::span<const int64_t> v) : Dims(v.size()) { std::copy(v.begin(), v.end(), p_); }
  Dims(const Dims&) = delete;
  Dims& operator=(const Dims&) = delete;

  // The row-major strides of `shape` (in elements).
  static void row_major(std::span<const int64_t> shape, int64_t* out) {
    int64_t s = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      out[d] = s;
      s *= shape[d];
    }
  }

  int64_t& operator[](size_t i) { return p_[i]; }
  int64_t operator[](size_t i) const { return p_[i]; }
  int64_t* data() { return p_; }
  const int64_t* data() const { return p_; }
  size_t size() const { return n_; }
  int64_t* begin() { return p_; }
  int64_t* end() { return p_ + n_; }
  const int64_t* begin() const { return p_; }
  const int64_t* end() const { return p_ + n_; }
  operator std::span<const int64_t>() const { return {p_, n_}; }

 private:
  int64_t inline_[kInline];
  std::unique_ptr<int64_t[]> heap_;
  size_t n_;
  int64_t* p_;
};

// The row-major strides of `shape`, as Dims.
struct RowMajor : Dims {
  explicit RowMajor(std::span<const int64_t> shape) : Dims(shape.size()) { row_major(shape, data()); }
};

}  // namespace tessera::exec
