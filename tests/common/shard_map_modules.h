// shard_map programs as JAX exported them: two with the GSPMD partitioner (@Sharding, then
// SPMDFullToShardShape {manual}, the per-device body, SPMDShardToFullShape) and one in Shardy's
// round-trip form (frontend attributes, GlobalToLocalShape / the body's call / LocalToGlobalShape),
// for the parser's tests (gspmd_shard_map_test, sdy_round_trip_test) and the runs on host devices
// (gspmd_cmd_test).
#pragma once

namespace tessera::testing {

// Rows of x split over 2 devices, w whole: each device computes its rows of x @ w and the column
// sums of its rows, which a psum (all_reduce over both devices) adds.
inline constexpr const char* kCalled = R"(module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x4xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"}, %arg1: tensor<4x6xf32> {mhlo.sharding = "{replicated}"}) -> (tensor<8x6xf32> {jax.result_info = "[0]", mhlo.sharding = "{devices=[2,1]<=[2]}"}, tensor<6xf32> {jax.result_info = "[1]", mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {backend_config = "", mhlo.sharding = "{devices=[2,1]<=[2]}"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<8x4xf32>) -> tensor<4x4xf32>
    %2 = stablehlo.custom_call @Sharding(%arg1) {backend_config = "", mhlo.sharding = "{replicated}"} : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %3 = stablehlo.custom_call @SPMDFullToShardShape(%2) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %4:2 = call @shmap_body(%1, %3) : (tensor<4x4xf32>, tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6xf32>)
    %5 = stablehlo.custom_call @Sharding(%4#0) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %6 = stablehlo.custom_call @SPMDShardToFullShape(%5) {backend_config = "", mhlo.sharding = "{devices=[2,1]<=[2]}"} : (tensor<4x6xf32>) -> tensor<8x6xf32>
    %7 = stablehlo.custom_call @Sharding(%4#1) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<6xf32>) -> tensor<6xf32>
    %8 = stablehlo.custom_call @SPMDShardToFullShape(%7) {backend_config = "", mhlo.sharding = "{replicated}"} : (tensor<6xf32>) -> tensor<6xf32>
    return %6, %8 : tensor<8x6xf32>, tensor<6xf32>
  }
  func.func private @shmap_body(%arg0: tensor<4x4xf32> {mhlo.sharding = "{manual}"}, %arg1: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<6xf32>) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<4x6xf32>, tensor<f32>) -> tensor<6xf32>
    %2 = "stablehlo.all_reduce"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<6xf32>) -> tensor<6xf32>
    return %0, %2 : tensor<4x6xf32>, tensor<6xf32>
  }
}
)";

// The body written in place between the fences, reading a constant defined before them (which the
// code outside reads too), on 4 devices: y = x * 2 + c per piece, the pieces' rows moved down one
// device by a collective_permute.
inline constexpr const char* kInline = R"(module @jit_g attributes {mhlo.num_partitions = 4 : i32} {
  func.func public @main(%arg0: tensor<8x2xf32> {mhlo.sharding = "{devices=[4,1]<=[4]}"}) -> (tensor<8x2xf32> {mhlo.sharding = "{devices=[4,1]<=[4]}"}, tensor<f32>) {
    %c = stablehlo.constant dense<1.500000e+00> : tensor<f32>
    %0 = stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = "{devices=[4,1]<=[4]}"} : (tensor<8x2xf32>) -> tensor<8x2xf32>
    %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {mhlo.sharding = "{manual}"} : (tensor<8x2xf32>) -> tensor<2x2xf32>
    %2 = stablehlo.add %1, %1 : tensor<2x2xf32>
    %3 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %4 = stablehlo.add %2, %3 : tensor<2x2xf32>
    %5 = "stablehlo.collective_permute"(%4) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>}> : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %6 = stablehlo.custom_call @Sharding(%5) {mhlo.sharding = "{manual}"} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %7 = stablehlo.custom_call @SPMDShardToFullShape(%6) {mhlo.sharding = "{devices=[4,1]<=[4]}"} : (tensor<2x2xf32>) -> tensor<8x2xf32>
    %8 = stablehlo.multiply %c, %c : tensor<f32>
    return %7, %8 : tensor<8x2xf32>, tensor<f32>
  }
}
)";

// Rows of x split over "x" (2 devices), w whole; each device multiplies its rows by w and the two
// pieces trade places (a collective_permute): the result is x @ w with its row halves swapped.
inline constexpr const char* kRoundTripShardMap = R"(module @jit_g attributes {jax.uses_shape_polymorphism = false, mhlo.frontend_attributes = {xla.sdy.meshes = "{mesh = #sdy.mesh<[\22x\22=2]>}"}, mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x4xf32> {mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding<@mesh, [{\22x\22}, {}]>"}, mhlo.sharding = "{devices=[2,1]<=[2]}"}, %arg1: tensor<4x6xf32> {mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding<@mesh, [{}, {}]>"}, mhlo.sharding = "{replicated}"}) -> (tensor<8x6xf32> {jax.result_info = "result", mhlo.sharding = "{devices=[2,1]<=[2]}"}) {
    %0:2 = stablehlo.custom_call @xla.sdy.GlobalToLocalShape(%arg0, %arg1) {mhlo.frontend_attributes = {xla.sdy.in_shardings = "#sdy.sharding_per_value<[<@mesh, [{\22x\22}, {}]>, <@mesh, [{}, {}]>]>", xla.sdy.manual_axes = "#sdy<manual_axes{\22x\22}>"}} : (tensor<8x4xf32>, tensor<4x6xf32>) -> (tensor<4x4xf32>, tensor<4x6xf32>)
    %1 = call @xla.sdy.manual_computation_body(%0#0, %0#1) : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
    %2 = stablehlo.custom_call @xla.sdy.LocalToGlobalShape(%1) {mhlo.frontend_attributes = {xla.sdy.manual_axes = "#sdy<manual_axes{\22x\22}>", xla.sdy.out_shardings = "#sdy.sharding_per_value<[<@mesh, [{\22x\22}, {}]>]>"}} : (tensor<4x6xf32>) -> tensor<8x6xf32>
    %3 = stablehlo.custom_call @xla.sdy.FuncResultSharding(%2) {has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, [{\22x\22}, {}]>]>"}} : (tensor<8x6xf32>) -> tensor<8x6xf32>
    return %3 : tensor<8x6xf32>
  }
  func.func @xla.sdy.manual_computation_body(%arg0: tensor<4x4xf32>, %arg1: tensor<4x6xf32>) -> tensor<4x6xf32> {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
    %1 = "stablehlo.collective_permute"(%0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>}> : (tensor<4x6xf32>) -> tensor<4x6xf32>
    return %1 : tensor<4x6xf32>
  }
}
)";

}  // namespace tessera::testing
