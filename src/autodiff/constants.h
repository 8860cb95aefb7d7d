// Whether a value is made of constants only (a constant, or a broadcast, reshape or conversion of
// one): for the rules of ops with an operand that has no derivative (polygamma's and zeta's integer
// order, rng's bounds), which refuse only when a gradient could flow into that operand.
#pragma once

#include "ir/module.h"

namespace tessera::autodiff {

inline bool made_of_constants(const ir::Value* v) {
  for (const ir::Op* def = v->defining_op(); def != nullptr; def = def->operand(0)->defining_op()) {
    if (def->kind() == ir::OpKind::Constant) return true;
    if (def->kind() != ir::OpKind::BroadcastInDim && def->kind() != ir::OpKind::Reshape &&
        def->kind() != ir::OpKind::Convert)
      return false;
  }
  return false;
}

}  // namespace tessera::autodiff
