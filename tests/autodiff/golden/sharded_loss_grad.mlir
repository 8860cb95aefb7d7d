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
  func.func public @sharded_loss_grad(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@m, [{"data"}, {}]>}, %arg1: tensor<4x3xf32>) -> (tensor<8x4xf32>, tensor<4x3xf32>) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %1 = stablehlo.tanh %0 : tensor<8x3xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<8x3xf32>
    %2 = stablehlo.add %1, %1 : tensor<8x3xf32>
    %3 = stablehlo.multiply %1, %1 : tensor<8x3xf32>
    %4 = stablehlo.subtract %cst, %3 : tensor<8x3xf32>
    %5 = stablehlo.multiply %2, %4 : tensor<8x3xf32>
    %6 = stablehlo.dot_general %5, %arg1, contracting_dims = [1] x [1] : (tensor<8x3xf32>, tensor<4x3xf32>) -> tensor<8x4xf32>
    %7 = stablehlo.dot_general %5, %arg0, contracting_dims = [0] x [0] : (tensor<8x3xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
    %8 = stablehlo.transpose %7, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %9 = sdy.sharding_constraint %6 <@m, [{"data"}, {}]> : tensor<8x4xf32>
    return %9, %8 : tensor<8x4xf32>, tensor<4x3xf32>
  }
}
