// Regression (parser_fuzz): print throws std::out_of_range for check.expect_eq, which has no result
// (print_ops.cpp prints ExpectEq with the elementwise rule, which reads op.result()).
func.func @main(%a: tensor<f32>) {
  "check.expect_eq"(%a, %a) : (tensor<f32>, tensor<f32>) -> ()
  return
}
