// The dynamic ops (dynamic_broadcast_in_dim, dynamic_iota, dynamic_reshape, real_dynamic_slice,
// dynamic_pad, dynamic_gather, dynamic_conv) are, as the spec says, "functionally identical" to a
// static op whose attribute is given as an operand value. static_form() makes that static op once
// the shape operands' values are known: the reference kernels use it (in the interpreter every
// value is known) and so does shape refinement (transforms/refine_shapes.h), with constants.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "ir/attribute.h"
#include "ir/literal.h"
#include "ir/op_kind.h"
#include "ir/type.h"

namespace tessera::ir {

struct StaticForm {
  OpKind kind;                  // broadcast_in_dim, iota, reshape, slice, pad, gather, convolution
  std::vector<size_t> operands;  // the dynamic op's operands that the static op takes, in order
  AttrMap attrs;
  Type result;  // static, checked against the dynamic op's declared result
};

// Whether `kind` is one of the dynamic ops above.
bool is_dynamic_shape_op(OpKind kind);
// Which operands of a dynamic op are shape operands (their values become attributes).
std::vector<size_t> shape_operands(OpKind kind);

// The static form of a dynamic op, given its operand types and the values of its shape operands
// (`values[i]` for operand i; null where unknown). Nothing when a shape operand's value is unknown or
// a data operand's type is not static. A UserError (starting with the dynamic op's name) when the
// values contradict the declared result type or the static op's constraints.
std::optional<StaticForm> static_form(OpKind kind, const AttrMap& attrs, std::span<const Type> operand_types,
                                      const Type& declared, std::span<const Literal* const> values);

}  // namespace tessera::ir

namespace tessera::ir {

// JAX's `stablehlo.custom_call @shape_assertion(%pred, %v0, %v1, ...)
// {error_message = "... {0} ... {1}"}`: nothing when pred holds, else a UserError with the message,
// each {k} replaced by the value of %vk (an integer scalar). `values` are all the operands.
void check_shape_assertion(const AttrMap& attrs, std::span<const Literal* const> values);

}  // namespace tessera::ir
