// Faster kernels for the ops that dominate training steps, behind the reference interpreter.
//
// The reference kernels (src/interp) are plain and per-element; these run the same math on typed
// buffers: contractions through OpenBLAS as strided GEMM calls (contraction.h; single-threaded:
// one host device per core, DESIGN.md §6), reductions, transposes, broadcasts, slices,
// concatenations and pads as strided loops, and the embedding-style gather and scatter-add as row
// copies, and element-wise math (accelerate_elementwise.cpp) on floats and on the 32- and 64-bit
// integers of index arithmetic. Each kernel takes the op only in the cases it handles (the common
// element types and layouts) and leaves every other case to the reference kernel, so the
// semantics stay the interpreter's; tests/exec checks each against it. Reductions and
// element-wise math give the reference's bits exactly (same order, same rounding);
// contractions differ by BLAS's summation order (within 1e-6 relative in f32). With these kernels
// come the element-wise fusion of fusion.h (registered with the interpreter at start-up) and a
// malloc that keeps freed buffers for the next step instead of faulting in fresh pages.
#pragma once

#include <span>
#include <vector>

#include "ir/literal.h"
#include "ir/module.h"

namespace tessera::exec {

// Computes `op` on `operands` into `results` and returns true, or returns false (results
// untouched) when the op or case is not one of the fast ones. `results` comes empty (the kernel
// appends fresh results) or holding one destination per result, of the result's type, that the
// kernel writes into (an Executable's arena: not zero-filled; it overlaps no operand, except that
// the result of an element-wise binary op may be exactly an operand of its type).
bool accelerate(const ir::Op& op, std::span<const ir::Literal* const> operands, std::vector<ir::Literal>& results);
// stablehlo.convolution as im2col + GEMM (accelerate_window.cpp), on the same contract.
bool accelerate_convolution(const ir::Op& op, std::span<const ir::Literal* const> operands,
                            std::vector<ir::Literal>& results);

}  // namespace tessera::exec
