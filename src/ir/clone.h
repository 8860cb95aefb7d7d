// Copying ops between blocks, for transforms that build a new program from an old one.
#pragma once

#include <unordered_map>

#include "ir/module.h"

namespace tessera::ir {

// Old values to their copies. Values not in the map are used as they are (values defined outside
// the copied ops, when copying into the same function).
using ValueMap = std::unordered_map<const Value*, Value*>;

// Appends a copy of `op` (regions included, deeply) to `into`, with operands mapped through `map`;
// records the copy's results in `map` and returns the copy.
Op* clone_op(Block& into, const Op& op, ValueMap& map);

}  // namespace tessera::ir
