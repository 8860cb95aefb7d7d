// Grad-sharding verification: checks that a gradient program made by reverse() lays out each
// gradient like its parameter and exchanges data with the adjoint collectives.
#pragma once

#include <vector>

#include "ir/module.h"

namespace tessera::autodiff {

// `grad` is reverse(f) with the gradients of parameters `wrt` as its last results. Checks:
//  * each gradient of a sharded parameter comes out of an sdy.sharding_constraint to exactly the
//    parameter's sharding;
//  * for every collective of f, grad holds its adjoint as well as its forward copy: of each kind K,
//    grad has at least (K in f) + (ops of f whose adjoint is K), with all_gather <-> reduce_scatter,
//    all_reduce, all_to_all and collective_permute their own adjoints.
// A failure is a UserError naming the function, the parameter or the collective kind.
void verify_gradient_shardings(const ir::Function& f, const ir::Function& grad,
                               const std::vector<size_t>& wrt);

}  // namespace tessera::autodiff
