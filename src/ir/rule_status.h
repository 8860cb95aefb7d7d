// Which ops of the table still lack a rule in a layer: each layer's *_pending.cpp marks the ops of
// its PENDING lines here as it defines their refusals, so `tessera ops` reads the same lines the
// refusals come from (no hand-kept table). A PendingRules object lives in each pending file.
#pragma once

#include <array>

#include "ir/op_kind.h"

namespace tessera::ir {

class PendingRules {
 public:
  bool mark(OpKind k) {
    pending_[static_cast<size_t>(k)] = true;
    return true;
  }
  bool has(OpKind k) const { return pending_[static_cast<size_t>(k)]; }

 private:
  std::array<bool, kNumOpKinds> pending_{};
};

// Whether op k's shape rule is still pending (src/ir/shape_pending.cpp).
bool shape_rule_pending(OpKind k);

}  // namespace tessera::ir
