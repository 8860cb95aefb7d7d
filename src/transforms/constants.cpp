// Splats, identity elements and new constants. Splat comparison is bitwise on the stored elements,
// so it is exact for every element type (minifloats and sub-byte integers included).
#include "transforms/constants.h"

#include <cmath>
#include <cstring>

#include "transforms/rewrite.h"

namespace tessera::transforms {

using ir::Literal;
using ir::OpKind;

namespace {

size_t element_bytes(const Literal& l) {
  return static_cast<size_t>(ir::info(l.element()).bytes);
}

}  // namespace

std::optional<Literal> splat_value(const ir::Value* v) {
  const ir::Op* def = v->defining_op();
  if (def == nullptr) return std::nullopt;
  if (def->kind() == OpKind::BroadcastInDim) return splat_value(def->operand(0));
  if (def->kind() != OpKind::Constant) return std::nullopt;
  const Literal* value = def->attrs().find<Literal>("value");
  if (value == nullptr || value->num_elements() == 0) return std::nullopt;
  auto bytes = value->bytes();
  size_t n = element_bytes(*value);
  for (size_t i = n; i < bytes.size(); i += n)
    if (std::memcmp(bytes.data(), bytes.data() + i, n) != 0) return std::nullopt;
  Literal element(ir::Type(value->element(), {}));
  std::memcpy(element.bytes().data(), bytes.data(), n);
  return element;
}

bool is_splat_of(const ir::Value* v, double x) {
  ir::ElementType e = v->type().element;
  if (!ir::is_float(e) && !ir::is_integer(e)) return false;
  std::optional<Literal> s = splat_value(v);
  return s && *s == Literal::scalar(e, x);
}

bool is_identity_of(OpKind combiner, const ir::Value* v) {
  bool real = ir::is_float(v->type().element);
  switch (combiner) {
    case OpKind::Add:
      return is_splat_of(v, 0.0) || (real && is_splat_of(v, -0.0));
    case OpKind::Multiply:
      return is_splat_of(v, 1.0);
    case OpKind::Maximum:
      return real && is_splat_of(v, -INFINITY);
    case OpKind::Minimum:
      return real && is_splat_of(v, INFINITY);
    default:
      return false;
  }
}

Literal splat_literal(const Literal& element, const ir::Type& type) {
  TESSERA_CHECK(element.num_elements() == 1 && element.element() == type.element,
                "splat of {} to {}", ir::to_string(element.type()), ir::to_string(type));
  Literal out(type);
  size_t n = element_bytes(element);
  auto bytes = out.bytes();
  for (size_t i = 0; i < bytes.size(); i += n) std::memcpy(bytes.data() + i, element.bytes().data(), n);
  return out;
}

ir::Value* insert_constant(ir::Op& before, Literal value) {
  ir::Type type = value.type();
  ir::AttrMap attrs;
  attrs.set("value", std::move(value));
  return insert_op(before, OpKind::Constant, {}, std::move(type), std::move(attrs));
}

}  // namespace tessera::transforms
