// Facts about constant values, for the passes of simplify: which values are splats (every element
// the same bits) and of what, the identity elements of binary ops, and making new constant ops.
#pragma once

#include <optional>

#include "ir/literal.h"
#include "ir/module.h"

namespace tessera::transforms {

// The one-element literal every element of `v` equals, when v is a constant whose elements all
// have the same bits, or a broadcast_in_dim of such a value (looked through, any depth).
std::optional<ir::Literal> splat_value(const ir::Value* v);

// Whether `v` is a splat of exactly x (bitwise: 0.0 and -0.0 differ) in v's element type. Only
// float and integer types count; complex and boolean values are never matched.
bool is_splat_of(const ir::Value* v, double x);

// Whether `v` is a splat of the identity element of binary op `combiner` on v's element type, so
// that combiner(v, y) == y for every y: Add 0 (floats: 0.0 or -0.0, see identities.cpp),
// Multiply 1, and for floats Maximum -inf and Minimum +inf.
bool is_identity_of(ir::OpKind combiner, const ir::Value* v);

// `element` (a one-element literal) repeated to fill `type`.
ir::Literal splat_literal(const ir::Literal& element, const ir::Type& type);

// Inserts `stablehlo.constant value` just before `before` and returns its result.
ir::Value* insert_constant(ir::Op& before, ir::Literal value);

}  // namespace tessera::transforms
