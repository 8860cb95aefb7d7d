// Shape rules: the result types of an op from its operand types and attributes.
//
// One rule per row of ops.def (infer_<Op>, declared through the table, so a missing rule fails to
// link). A rule rejects bad operands with a UserError that starts with the op's name and says what
// does not match. Ops whose result type cannot be derived (convert, reshape, broadcast_in_dim,
// iota, bitcast_convert, manual_computation) read it from `declared` and check it instead.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "ir/attribute.h"
#include "ir/op_kind.h"
#include "ir/type.h"

namespace tessera::ir {

struct ShapeQuery {
  OpKind kind;
  std::span<const Type> operands;
  const AttrMap& attrs;
  std::span<const Type> declared;  // the author's result types; may be empty
};

std::vector<Type> infer_result_types(const ShapeQuery& q);

// triangular_solve's transpose_a, which the text gives as #stablehlo<transpose NO_TRANSPOSE|
// TRANSPOSE|ADJOINT> (kept as that text); nullopt when absent or another value (shape_linalg.cpp).
enum class Transpose { kNone, kTranspose, kAdjoint };
std::optional<Transpose> transpose_of(const AttrMap& attrs);
Opaque transpose_attr(Transpose t);

namespace shape_rules {
#define OP(e, spelling, arity, traits) std::vector<Type> infer_##e(const ShapeQuery& q);
#include "ir/ops.def"
#undef OP

// Shared by the rule files.
template <typename... Args>
[[noreturn]] void reject(const ShapeQuery& q, fmt::format_string<Args...> format, Args&&... args) {
  support::fail("{}: {}", spelling(q.kind), fmt::format(format, std::forward<Args>(args)...));
}
const Type& declared_result(const ShapeQuery& q, size_t i = 0);
// Element categories an elementwise rule admits.
enum Allowed : unsigned {
  kBool = 1, kInt = 2, kFloat = 4, kComplex = 8,
  kNumeric = kInt | kFloat | kComplex,
  kFloating = kFloat | kComplex,
  kIntegral = kBool | kInt,
  kAny = kBool | kInt | kFloat | kComplex,
};
unsigned category(ElementType e);
// Operand i's element type must be of an allowed category.
void check_allowed(const ShapeQuery& q, size_t i, unsigned allowed);
// n operands of one type, of an allowed category; the result has that type.
std::vector<Type> same_types(const ShapeQuery& q, size_t n, unsigned allowed);
std::vector<Type> unary(const ShapeQuery& q, unsigned allowed);
std::vector<Type> binary(const ShapeQuery& q, unsigned allowed);
void check_dimension(const ShapeQuery& q, std::string_view attr, int64_t dim, int64_t rank);
// dot_general's and convolution's precision_config: at most one entry per operand, each DEFAULT,
// HIGH or HIGHEST (the spec writes exactly 2; StableHLO's verifier also takes fewer).
void check_precision_config(const ShapeQuery& q);
std::string types_string(std::span<const Type> types);
}  // namespace shape_rules

}  // namespace tessera::ir
