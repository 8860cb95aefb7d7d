// Shape refinement: a shape-polymorphic program (JAX's export with '?' dimensions) made static for
// concrete argument types, as StableHLO's stablehlo-refine-shapes does. Kernels, the partitioner
// and the executables only see the static program.
//
// The entry function is rebuilt for the given argument types, in program order:
//   - calls are inlined (JAX's @main calls @_wrapped_jax_export_main with its dimension
//     variables as leading tensor<i64> arguments), so each callee is refined for its call;
//   - get_dimension_size of a dimension now static becomes a constant; small integer computations
//     on constants (convert, reshape, concatenate, multiply, ... of at most kMaxShapeElements
//     elements) are folded by the reference interpreter;
//   - each dynamic op whose shape operands are now constants becomes its static op
//     (ir/dynamic_shapes.h);
//   - `custom_call @shape_assertion` is checked (a UserError with its error message when its
//     predicate is false) and erased;
//   - every other op's result types are inferred again by its shape rule, region arguments of
//     while loops from their operands, and the function's result types from its return.
// A value still dynamic afterwards is a UserError naming it and its op. Other functions of the
// module are left as they are.
#pragma once

#include <span>
#include <string>

#include "ir/literal.h"
#include "ir/module.h"

namespace tessera::transforms {

// Integer values of at most this many elements are folded while refining (shape computations).
inline constexpr int64_t kMaxShapeElements = 64;

// Whether `f` has a type with a '?' dimension (parameters, results or any value).
bool has_dynamic_types(const ir::Function& f);

// Replaces @entry of `module` by its refinement for arguments of `arg_types` (one per parameter;
// each must agree with the parameter's type where that is static, and fit its bounds).
//
// `arg_values`, when given (one per parameter, of those types), are the arguments the program will
// run with: the small integer ones (at most kMaxShapeElements elements) are folded into the shape
// computations like constants. JAX's older polymorphic exports (jax2tf's `jit_fun_flat_jax`) take
// each dimension variable as a leading tensor<i64> argument and build the shapes of their dynamic
// ops from it, so without its value they cannot be made static. The refined function keeps those
// parameters and must be run with the same values.
void refine_shapes(ir::Module& module, const std::string& entry, std::span<const ir::Type> arg_types,
                   std::span<const ir::Literal> arg_values = {});

}  // namespace tessera::transforms
