// Types: a tensor (an element type and a shape, printed as tensor<8x4xf32>), and the few other
// kinds StableHLO programs carry: tokens (!stablehlo.token, which order effects and hold no data),
// tuples (tuple<...>) and futures (!stablehlo.future<...>, async_start's result).
//
// A tensor's dimension may be dynamic (kDynamic, printed '?') with an optional bound; such types
// exist only between parsing and shape refinement: kernels, the partitioner and the executables
// see static shapes. A quantized tensor keeps its storage integer type in `element` (so kernels
// that only move elements work on it unchanged) and the quantization parameters in `quant`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/element_type.h"
#include "ir/quant.h"

namespace tessera::ir {

enum class TypeKind : uint8_t { kTensor, kToken, kTuple, kFuture };

inline constexpr int64_t kDynamic = -1;  // a '?' dimension

struct Type {
  ElementType element = ElementType::f32;
  std::vector<int64_t> shape;
  TypeKind kind = TypeKind::kTensor;
  std::vector<Type> elements;   // a tuple's or a future's members
  std::vector<int64_t> bounds;  // #stablehlo.bounds: empty, or one per dimension (kDynamic: none)
  std::shared_ptr<const Quantization> quant;  // null: not quantized

  Type() = default;
  Type(ElementType e, std::vector<int64_t> s) : element(e), shape(std::move(s)) {}
  static Type token();
  static Type tuple(std::vector<Type> members);
  static Type future(std::vector<Type> members);

  bool is_tensor() const { return kind == TypeKind::kTensor; }
  bool is_token() const { return kind == TypeKind::kToken; }
  bool is_tuple() const { return kind == TypeKind::kTuple; }
  bool is_quantized() const { return quant != nullptr; }
  // A tensor with no dynamic dimension, or a token, tuple or future of static members.
  bool is_static() const;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  // Tokens hold no elements; a dynamic shape has no count yet (a UserError naming the type).
  int64_t num_elements() const;
  int64_t dim(int64_t i) const { return shape.at(static_cast<size_t>(i)); }
  // Another shape, same element type and quantization.
  Type with_shape(std::vector<int64_t> s) const {
    Type t(element, std::move(s));
    t.quant = quant;
    return t;
  }
  // Another element type: the plain tensor (a quantized type's storage or expressed view).
  Type with_element(ElementType e) const { return Type(e, shape); }
  bool operator==(const Type& o) const;
};

std::string to_string(const Type& t);  // "tensor<8x4xf32>", "!stablehlo.token", "tuple<...>"

// Shorthands for the builder and tests: f32({8, 4}).
inline Type f32(std::vector<int64_t> s = {}) { return Type(ElementType::f32, std::move(s)); }
inline Type f64(std::vector<int64_t> s = {}) { return Type(ElementType::f64, std::move(s)); }
inline Type i32(std::vector<int64_t> s = {}) { return Type(ElementType::i32, std::move(s)); }
inline Type i64(std::vector<int64_t> s = {}) { return Type(ElementType::i64, std::move(s)); }
inline Type i1(std::vector<int64_t> s = {}) { return Type(ElementType::i1, std::move(s)); }

}  // namespace tessera::ir
