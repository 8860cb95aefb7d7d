// Helpers shared by the gradient, JVP and vmap rules of the window ops and sort
// (rules_window.cpp, jvp_rules_window.cpp, vmap_rules_window.cpp).
#pragma once

#include "autodiff/rules.h"
#include "ir/builder_window.h"

namespace tessera::autodiff {

// JAX's _reshape_axis_out_of: dimension src of x split into [size1, rest] (size1 major).
Tensor reshape_axis_out_of(int64_t src, int64_t size1, const Tensor& x);
// JAX's _reshape_axis_into: dimension src of x merged into dimension dst (dst counted with src
// removed), src the major part.
Tensor reshape_axis_into(int64_t src, int64_t dst, const Tensor& x);

// The window of an op (convolution: sizes from its kernel).
ir::Window window_of(const ir::Op& op);
// The comparison direction of a select region `compare(arg0, arg1, dir)`; refuses others.
ir::ComparisonDirection select_direction(const ir::Op& op);
// The element of `values` at the position each window of `keys` chooses: folding the window in
// order, the chosen position is kept while compare(chosen key, key, keep) holds (select_and_scatter's
// select), padding holding the identity `pad_key` and the value 0. One variadic reduce_window.
Tensor window_pick(const Tensor& keys, const Tensor& values, const ir::Window& w,
                   ir::ComparisonDirection keep);
// The sort op `op` again on its operands `xs` plus `extra` operands that follow them (the
// comparator gets unused arguments for them); returns every result.
std::vector<Tensor> sort_with(const ir::Op& op, const std::vector<Tensor>& xs,
                              const std::vector<Tensor>& extra);

}  // namespace tessera::autodiff
