// simplify: small, sound clean-ups of a program, iterated to a fixed point, so that generated
// programs (gradients above all) print small and readable.
//
// Each pass is one file and one function that returns whether it changed anything:
//   fold_identities         x*1, x+0, x-0, x/1, -(-x), identity transpose/reshape/broadcast/convert,
//                           transpose∘transpose, reshape∘reshape, reduce over no dimensions with
//                           the body's identity as init, broadcast of a splat constant (identities.cpp)
//   fold_constants          pure ops on constants with small results, by the interpreter (fold.cpp)
//   eliminate_common_subexpressions   equal pure ops on the same operands (cse.cpp)
//   eliminate_dead_code     unused pure ops (dce.cpp)
// Layout statements are left alone: parameters, results and their attributes, Shardy ops
// (sdy.sharding_constraint, sdy.reshard, ...) and ops carrying an sdy.sharding are never removed,
// merged or replaced, and values returned stay returned (by an equal value). Collectives, checks,
// calls, custom calls and while loops are never removed, since only kPure ops are.
#pragma once

#include "ir/module.h"

namespace tessera::transforms {

// Runs the passes below until none changes anything, on every block of `f` (regions included).
void simplify(ir::Function& f);
// simplify of every function of the module.
void simplify(ir::Module& m);

bool fold_identities(ir::Function& f);
bool fold_constants(ir::Function& f);
bool eliminate_common_subexpressions(ir::Function& f);
bool eliminate_dead_code(ir::Function& f);

// Results of at most this many elements (all results of the op together) are folded to constants.
inline constexpr int64_t kMaxFoldedElements = 1024;

}  // namespace tessera::transforms
