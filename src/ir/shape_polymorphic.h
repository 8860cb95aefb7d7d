// Shape inference for operands with '?' dimensions (shape_polymorphic.cpp says how).
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "ir/shape_rules.h"

namespace tessera::ir {

// The result types of `q` by `infer` (an op's rule), where the operands may have '?' dimensions:
// the rule's own answer when it gives one the declared types agree with, else the rule probed with
// every '?' given two sizes (dimensions that differ are '?'). Where declared types are given and
// compatible, the result is the more refined of the two in each dimension. Rethrows the rule's own
// error when probing does not help.
std::vector<Type> infer_polymorphic(const ShapeQuery& q,
                                    const std::function<std::vector<Type>(const ShapeQuery&)>& infer);

// Same count, and each pair of the same element type and rank with every dimension equal or '?'.
bool compatible_types(std::span<const Type> inferred, std::span<const Type> declared);
bool has_dynamic_any(std::span<const Type> types);

}  // namespace tessera::ir
