// simplify: the passes of simplify.h, run in turn until a whole round changes nothing.
//
// Every pass either removes ops or replaces an op by something no larger that is visited no more
// (an operand, a constant, one op in place of a chain of two), so rounds end; the bound below only
// turns a bug into a message instead of a hang.
#include "transforms/simplify.h"

#include "support/error.h"

namespace tessera::transforms {

void simplify(ir::Function& f) {
  constexpr int kMaxRounds = 1000;
  for (int round = 0;; ++round) {
    TESSERA_CHECK(round < kMaxRounds, "simplify of @{} did not settle in {} rounds", f.name(),
                  kMaxRounds);
    bool changed = eliminate_dead_code(f);
    changed |= fold_identities(f);
    changed |= fold_constants(f);
    changed |= eliminate_common_subexpressions(f);
    changed |= eliminate_dead_code(f);
    if (!changed) return;
  }
}

void simplify(ir::Module& m) {
  for (const auto& f : m.functions) simplify(*f);
}

}  // namespace tessera::transforms
