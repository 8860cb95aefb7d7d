// A shape-polymorphic program written the way JAX exports one (jax.export with
// polymorphic_shapes="(b, 4)"): @main reads the batch size with get_dimension_size and calls
// @_wrapped_jax_export_main with it as a leading tensor<i64> dimension variable, which checks it
// with @shape_assertion and computes shapes on i64 scalars (reshape, concatenate, multiply, convert)
// for dynamic_broadcast_in_dim, dynamic_iota and dynamic_reshape. For x of shape (b, 4) it returns
// (2 * x, iota(b)); b = 0 fails the assertion "b >= 1".
#pragma once

namespace tessera::testing {

inline constexpr const char* kPolymorphicProgram = R"(module @jit_f {
  func.func public @main(%arg0: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?xi32>) {
    %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
    %1 = stablehlo.convert %0 : (tensor<i32>) -> tensor<i64>
    %2:2 = call @_wrapped_jax_export_main(%1, %arg0) : (tensor<i64>, tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?xi32>)
    return %2#0, %2#1 : tensor<?x4xf32>, tensor<?xi32>
  }
  func.func private @_wrapped_jax_export_main(%arg0: tensor<i64> {jax.global_constant = "b"}, %arg1: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?xi32>) {
    %c = stablehlo.constant dense<1> : tensor<i64>
    %0 = stablehlo.compare  GE, %arg0, %c,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.custom_call @shape_assertion(%0, %arg0) {api_version = 2 : i32, error_message = "Input shapes do not match the polymorphic shapes specification. Expected value >= 1 for dimension variable 'b'. Obtained dimension variables: 'b' = {0} from specification 'b' for dimension args[0].shape[0] (= {0}), .", has_side_effect = true} : (tensor<i1>, tensor<i64>) -> ()
    %1 = stablehlo.reshape %arg0 : (tensor<i64>) -> tensor<1xi64>
    %c_0 = stablehlo.constant dense<4> : tensor<1xi64>
    %2 = stablehlo.concatenate %1, %c_0, dim = 0 : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %3 = stablehlo.dynamic_broadcast_in_dim %cst, %2, dims = [] : (tensor<f32>, tensor<2xi64>) -> tensor<?x4xf32>
    %4 = stablehlo.multiply %arg1, %3 : tensor<?x4xf32>
    %5 = stablehlo.convert %arg0 : (tensor<i64>) -> tensor<i32>
    %6 = stablehlo.reshape %5 : (tensor<i32>) -> tensor<1xi32>
    %7 = stablehlo.dynamic_iota %6, dim = 0 : (tensor<1xi32>) -> tensor<?xi32>
    %c_1 = stablehlo.constant dense<2> : tensor<i64>
    %8 = stablehlo.multiply %arg0, %c_1 : tensor<i64>
    %9 = stablehlo.reshape %8 : (tensor<i64>) -> tensor<1xi64>
    %c_2 = stablehlo.constant dense<2> : tensor<1xi64>
    %10 = stablehlo.concatenate %9, %c_2, dim = 0 : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
    %11 = stablehlo.dynamic_reshape %4, %10 : (tensor<?x4xf32>, tensor<2xi64>) -> tensor<?x2xf32>
    %12 = stablehlo.dynamic_reshape %11, %2 : (tensor<?x2xf32>, tensor<2xi64>) -> tensor<?x4xf32>
    return %12, %7 : tensor<?x4xf32>, tensor<?xi32>
  }
}
)";

}  // namespace tessera::testing
