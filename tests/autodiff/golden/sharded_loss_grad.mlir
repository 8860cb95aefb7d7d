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
    %2 = stablehlo.multiply %1, %1 : tensor<8x3xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%2 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x3xf32>, tensor<f32>) -> tensor<f32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8x3xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.reduce(%cst_0 init: %cst_1) applies stablehlo.add across dimensions = [] : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %6 = stablehlo.multiply %4, %1 : tensor<8x3xf32>
    %7 = stablehlo.multiply %4, %1 : tensor<8x3xf32>
    %8 = stablehlo.add %6, %7 : tensor<8x3xf32>
    %9 = stablehlo.multiply %1, %1 : tensor<8x3xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<8x3xf32>
    %11 = stablehlo.subtract %10, %9 : tensor<8x3xf32>
    %12 = stablehlo.multiply %8, %11 : tensor<8x3xf32>
    %13 = stablehlo.dot_general %12, %arg1, contracting_dims = [1] x [1] : (tensor<8x3xf32>, tensor<4x3xf32>) -> tensor<8x4xf32>
    %14 = stablehlo.transpose %13, dims = [0, 1] : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %15 = stablehlo.dot_general %12, %arg0, contracting_dims = [0] x [0] : (tensor<8x3xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
    %16 = stablehlo.transpose %15, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %17 = sdy.sharding_constraint %14 <@m, [{"data"}, {}]> : tensor<8x4xf32>
    return %17, %16 : tensor<8x4xf32>, tensor<4x3xf32>
  }
}
