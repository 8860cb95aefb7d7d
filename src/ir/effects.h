// Accessors shared by the layers for the ops of tokens, tuples and calls by decomposition
// (stablehlo.composite, stablehlo.map, ...): how their attributes are kept in the IR.
//
// composite's `decomposition` is a symbol reference (`@name`), which the attribute reader keeps as
// its text (ir::Opaque "@name") so that it prints back as it was written; these helpers read the
// function name out of it and write one.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/module.h"

namespace tessera::ir {

// The function a composite calls: its `decomposition` without the '@' (quotes removed from
// @"odd name"); nullopt when the attribute is missing or is not a symbol reference.
std::optional<std::string> decomposition_of(const AttrMap& attrs);
// The attribute value naming function `name` (@name).
Opaque symbol_ref(const std::string& name);
// The function names of a list of symbol references, `[@f, @"g h"]` (interpreter.run_parallel's
// `infeed`, kept as its text); nullopt when `a` is not such a list.
std::optional<std::vector<std::string>> symbol_list_of(const Attribute& a);

// GSPMD's sharding annotation, custom_call @Sharding (JAX's with_sharding_constraint before
// Shardy): the identity on its one operand in every layer where the parser did not import it.
inline constexpr std::string_view kShardingTarget = "Sharding";
// Whether `op` is a custom_call to `target`.
inline bool is_call_to(const Op& op, std::string_view target) {
  return op.kind() == OpKind::CustomCall && op.attrs().get_or<std::string>("call_target_name", "") == target;
}
inline bool is_sharding_call(const Op& op) { return is_call_to(op, kShardingTarget); }

// Custom calls that annotate a value without changing it: @Sharding, and where the value is to be
// kept (JAX's memories API: annotate_device_placement, MoveToHost, MoveToDevice), which host
// devices have only one kind of. Every layer treats them as the identity on their one operand.
inline bool is_identity_target(std::string_view target) {
  return target == kShardingTarget || target == "annotate_device_placement" || target == "MoveToHost" ||
         target == "MoveToDevice";
}
inline bool is_identity_call(const Op& op) {
  return op.kind() == OpKind::CustomCall && op.operands().size() == 1 && op.num_results() == 1 &&
         is_identity_target(op.attrs().get_or<std::string>("call_target_name", ""));
}

}  // namespace tessera::ir
