// dot_general's `algorithm =` followed by a stray character instead of `<`: the parser took any
// character as the opening bracket, kept it, and printed text it could not read back.
func.func @main(%lhs: tensor<2x2xf32>, %rhs: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %result = stablehlo.dot_general %lhs, %rhs,
    contracting_dims = [1] x [0],
    algorithm = (
      lhs_precision_type = tf32,
      rhs_precision_type = tf32,
      accumulation_type = f32,
      lhs_component_count = 1,
      rhs_component_count = 1,
      num_primitive_operations = 1,
      allow_imprecise_accumulation = false
    > : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %result : tensor<2x2xf32>
}
