// `tessera ops`: the op table (ops.def) with each op's arity, traits and which rules it has. Each
// layer answers for itself whether its rule for an op is still pending (the *_pending.cpp files
// mark their PENDING lines), so the listing follows the code, not a hand-kept table.
#pragma once

#include <string>
#include <vector>

#include "ir/op_kind.h"

namespace tessera::tools {

// The rules (in the order shape, kernel, VJP, JVP, vmap, factor) that op k has, and those pending.
struct RuleStatus {
  std::vector<std::string> has, pending;
};
RuleStatus rule_status(ir::OpKind k);

// One line per op: spelling, arity, traits, `rules: ...` and, when some are missing, `pending: ...`;
// then a count of the ops with every rule.
std::string ops_listing();

}  // namespace tessera::tools
