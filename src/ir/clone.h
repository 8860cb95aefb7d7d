// Copying ops between blocks, and replacing values in place, for transforms that build a new
// program from an old one.
#pragma once

#include <functional>
#include <unordered_map>

#include "ir/module.h"

namespace tessera::ir {

// Old values to their copies. Values not in the map are used as they are (values defined outside
// the copied ops, when copying into the same function).
using ValueMap = std::unordered_map<const Value*, Value*>;

// Appends a copy of `op` (regions included, deeply) to `into`, with operands mapped through `map`;
// records the copy's results in `map` and returns the copy.
Op* clone_op(Block& into, const Op& op, ValueMap& map);

// Makes each operand of `op` (its regions included) that `map` replaces read its replacement,
// followed to the end where a replacement is itself replaced (the IR keeps no use lists).
void replace_uses(Op& op, const ValueMap& map);
void replace_uses(Block& block, const ValueMap& map);
// Removes the ops for which `dead` holds from `block` and from every region below it (their uses
// replaced first).
void erase_ops(Block& block, const std::function<bool(const Op&)>& dead);

}  // namespace tessera::ir
