// A scatter whose index vectors run along dimension 0 of [4, 1] indices (4 long, for one mapped
// input dimension), which is also a batching dimension: the shape rule checked only ranks, and the
// interpreter's scatter indexed outside its vectors (UndefinedBehaviorSanitizer). Now refused by
// the shape rule (spec C16, C19).
func.func @main(%arg0: tensor<4x1000xi32>, %arg1: tensor<4x1xi32>, %arg2: tensor<4xi32>) -> tensor<4x1000xi32> {
  %0 = "stablehlo.scatter"(%arg0, %arg1, %arg2) <{
      indices_are_sorted = true,
      scatter_dimension_numbers = #stablehlo.scatter<
        inserted_window_dims = [1],
        input_batching_dims = [0],
        scatter_indices_batching_dims = [0],
        scatter_dims_to_operand_dims = [1],
        index_vector_dim = 0>,
      unique_indices = true}> ({
  ^bb0(%arg3: tensor<i32>, %arg4: tensor<i32>):
    %1 = stablehlo.add %arg3, %arg4 : tensor<i32>
    stablehlo.return %1 : tensor<i32>
  }) : (tensor<4x1000xi32>, tensor<4x1xi32>, tensor<4xi32>) -> tensor<4x1000xi32>
  return %0 : tensor<4x1000xi32>
}
