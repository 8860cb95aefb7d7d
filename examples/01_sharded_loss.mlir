// Lesson 1's program as StableHLO text (what 01_sharded_loss prints): the input of
// `tessera partition examples/01_sharded_loss.mlir --show`, which draws x's rows over "data".
module @sharded_loss {
  sdy.mesh @m = <["data"=4]>
  func.func public @sharded_loss(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@m, [{"data"}, {}]>}, %arg1: tensor<4x3xf32>) -> tensor<f32> {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %1 = stablehlo.tanh %0 : tensor<8x3xf32>
    %2 = stablehlo.multiply %1, %1 : tensor<8x3xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%2 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x3xf32>, tensor<f32>) -> tensor<f32>
    return %3 : tensor<f32>
  }
}

