// Tensor types: an element type and a static shape, printed as tensor<8x4xf32>.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/element_type.h"

namespace tessera::ir {

struct Type {
  ElementType element = ElementType::f32;
  std::vector<int64_t> shape;

  Type() = default;
  Type(ElementType e, std::vector<int64_t> s) : element(e), shape(std::move(s)) {}

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t num_elements() const;
  int64_t dim(int64_t i) const { return shape.at(static_cast<size_t>(i)); }
  Type with_shape(std::vector<int64_t> s) const { return Type(element, std::move(s)); }
  Type with_element(ElementType e) const { return Type(e, shape); }
  bool operator==(const Type&) const = default;
};

std::string to_string(const Type& t);  // "tensor<8x4xf32>"

// Shorthands for the builder and tests: f32({8, 4}).
inline Type f32(std::vector<int64_t> s = {}) { return Type(ElementType::f32, std::move(s)); }
inline Type f64(std::vector<int64_t> s = {}) { return Type(ElementType::f64, std::move(s)); }
inline Type i32(std::vector<int64_t> s = {}) { return Type(ElementType::i32, std::move(s)); }
inline Type i64(std::vector<int64_t> s = {}) { return Type(ElementType::i64, std::move(s)); }
inline Type i1(std::vector<int64_t> s = {}) { return Type(ElementType::i1, std::move(s)); }

}  // namespace tessera::ir
