// A sort whose comparator declares f16 arguments for an f32 input: the verifier did not check the
// comparator's signature (spec C5), and the interpreter met the mismatch as an internal error.
func.func @main(%arg0: tensor<6xi32>, %arg1: tensor<6xf32>) -> (tensor<6xi32>, tensor<6xf32>) {
  %0:2 = "stablehlo.sort"(%arg0, %arg1) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>, %c: tensor<f16>, %d: tensor<f32>):
    %p = stablehlo.compare LT, %a, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }) : (tensor<6xi32>, tensor<6xf32>) -> (tensor<6xi32>, tensor<6xf32>)
  return %0#0, %0#1 : tensor<6xi32>, tensor<6xf32>
}
