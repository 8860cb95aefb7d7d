// Reductions the partitioner can combine across devices (all_reduce's combiners), and their
// identities: a reduce split along a reduced dimension reduces each piece from the identity, pads
// uneven pieces with it, and folds a non-identity init in once.
#pragma once

#include <optional>
#include <vector>

#include "ir/builder.h"

namespace tessera::spmd {

// The reduction a body applies, when all_reduce can combine it across devices.
std::optional<ir::OpKind> combiner_of(const ir::Op& op);
// Each result's combiner, for a reduce whose body combines each result alone (result k is
// c_k(acc_k, x_k), each c_k one all_reduce can apply: a variadic reduce of independent sums, maxima,
// ...), or the one of a single-result reduce; empty where any result has none.
std::vector<ir::OpKind> result_combiners(const ir::Op& op);
// Whether v is a constant scalar equal to the identity of `combiner` (0 for a sum, 1 for a
// product, -inf for a float max, ...).
bool identity_constant(ir::OpKind combiner, const ir::Value* v);
// The identity of a combinable reduction for x's element type, as a scalar constant.
ir::Tensor identity_of(ir::OpKind combiner, const ir::Tensor& x, ir::Builder& b);
// Whether a reduce of several results that no all_reduce combines may still run by pieces along a
// split reduced dimension (each device's piece reduced from the order's identity, the partial
// results stacked in device order and reduced again from the reduce's inits) with results equal to
// the sequential fold's bit for bit: JAX's argmax and argmin (select_reduce.cpp), whose better
// value is the larger or the smaller.
enum class PiecesOrder { kNone, kLargest, kSmallest };
PiecesOrder pieces_order(const ir::Op& op);

}  // namespace tessera::spmd
