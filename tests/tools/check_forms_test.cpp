// `tessera check` on the forms other projects' test files use: the check dialect's keyword
// arguments, send and recv between interpreter.run_parallel's processes, and Shardy's executable
// tests (the @sequential_x its wrapper derives from part1, replica counts in every spelling of the
// RUN lines, partial values combined by max or min).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>

#include "check_test_util.h"

namespace tessera::tools {
namespace {

// send and recv between the processes of interpreter.run_parallel: a ring over four partitions
// (every process sends to the next, then receives from the previous, so sends must not wait for
// their receivers), and a send in one program received by another, matched by channel alone. A
// recv that no send answers times out naming its channel.
TEST(Check, SendAndRecvBetweenProcesses) {
  std::string text = R"(module @messages {
  func.func @ring(%x : tensor<2xi32>) -> tensor<2xi32> {
    %t = stablehlo.create_token : !stablehlo.token
    %0 = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>} : (tensor<2xi32>, !stablehlo.token) -> !stablehlo.token
    %1:2 = "stablehlo.recv"(%0) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>} : (!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)
    return %1#0 : tensor<2xi32>
  }
  func.func @sender(%x : tensor<2xi32>) -> tensor<2xi32> {
    %t = stablehlo.create_token : !stablehlo.token
    %0 = "stablehlo.send"(%x, %x, %t) {channel_handle = #stablehlo.channel_handle<handle = 7, type = 1>, is_host_transfer = false} : (tensor<2xi32>, tensor<2xi32>, !stablehlo.token) -> !stablehlo.token
    return %x : tensor<2xi32>
  }
  func.func @receiver(%x : tensor<2xi32>) -> tensor<2xi32> {
    %t = stablehlo.create_token : !stablehlo.token
    %0:3 = "stablehlo.recv"(%t) {channel_handle = #stablehlo.channel_handle<handle = 7, type = 1>, is_host_transfer = false} : (!stablehlo.token) -> (tensor<2xi32>, tensor<2xi32>, !stablehlo.token)
    %1 = stablehlo.add %0#0, %0#1 : tensor<2xi32>
    %2 = stablehlo.add %1, %x : tensor<2xi32>
    return %2 : tensor<2xi32>
  }
  func.func @main() {
    %a = stablehlo.constant dense<[0, 10]> : tensor<2xi32>
    %b = stablehlo.constant dense<[1, 11]> : tensor<2xi32>
    %c = stablehlo.constant dense<[2, 12]> : tensor<2xi32>
    %d = stablehlo.constant dense<[3, 13]> : tensor<2xi32>
    %r:4 = "interpreter.run_parallel"(%a, %b, %c, %d) {programs = [[@ring, @ring, @ring, @ring]]} :
        (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>)
    check.expect_eq_const %r#0, dense<[3, 13]> : tensor<2xi32>
    check.expect_eq_const %r#1, dense<[0, 10]> : tensor<2xi32>
    check.expect_eq_const %r#2, dense<[1, 11]> : tensor<2xi32>
    check.expect_eq_const %r#3, dense<[2, 12]> : tensor<2xi32>
    %s:2 = "interpreter.run_parallel"(%b, %c) {programs = [[@sender, @receiver]]} :
        (tensor<2xi32>, tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>)
    check.expect_eq_const %s#1, dense<[4, 34]> : tensor<2xi32>
    func.return
  }
}

// -----

module @unanswered {
  func.func @receiver(%x : tensor<2xi32>) -> tensor<2xi32> {
    %t = stablehlo.create_token : !stablehlo.token
    %0:2 = "stablehlo.recv"(%t) {channel_handle = #stablehlo.channel_handle<handle = 9, type = 1>, is_host_transfer = false} : (!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)
    return %0#0 : tensor<2xi32>
  }
  func.func @main() {
    %a = stablehlo.constant dense<[0, 10]> : tensor<2xi32>
    %r:2 = "interpreter.run_parallel"(%a, %a) {programs = [[@receiver, @receiver]]} :
        (tensor<2xi32>, tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>)
    check.expect_eq_const %r#0, dense<[0, 10]> : tensor<2xi32>
    func.return
  }
}
)";
  std::string path = write_temp("messages.mlir", text);
  CheckOptions options;
  options.timeout = std::chrono::milliseconds(300);
  CheckRun r = run(path, options);
  EXPECT_EQ(r.counts.passed, 1) << r.output;
  EXPECT_EQ(r.counts.failed, 1) << r.output;
  EXPECT_NE(r.output.find("@main (5 checks)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("stablehlo.recv on device 0 timed out after 300 ms waiting for a message on channel 9"),
            std::string::npos)
      << r.output;
}

// Shardy's test wrapper makes part2's @sequential_x from part1's @parallel_x (every `parallel_`
// renamed, shardings dropped) when part1 defines no @sequential_x: the check then compares
// Tessera's partitioned program with the unsharded one. A reverse along the split dimension: the
// partitioned program must move rows between the devices to agree.
TEST(Check, SequentialFunctionsComeFromPart1AsShardysWrapperMakesThem) {
  std::string path = write_temp("sequential.mlir", R"(//--- part1.mlir

sdy.mesh @mesh = <["x"=2]>

func.func @parallel_reverse(%arg0: tensor<4xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<4xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) {
  %0 = stablehlo.reverse %arg0, dims = [0] : tensor<4xi32>
  %1 = call @parallel_twice(%0) : (tensor<4xi32>) -> tensor<4xi32>
  return %1 : tensor<4xi32>
}

func.func @parallel_twice(%arg0: tensor<4xi32>) -> tensor<4xi32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<4xi32>
  return %0 : tensor<4xi32>
}

//--- part2.mlir

func.func @main() {
  %x = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %s0 = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %s1 = stablehlo.constant dense<[3, 4]> : tensor<2xi32>
  %seq = func.call @sequential_reverse(%x) : (tensor<4xi32>) -> tensor<4xi32>
  check.expect_eq_const %seq, dense<[8, 6, 4, 2]> : tensor<4xi32>
  %pars:2 = "interpreter.run_parallel"(%s0, %s1) {
    programs = [[@parallel_reverse, @parallel_reverse]]
  } : (tensor<2xi32>, tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>)
  %par = "stablehlo.concatenate"(%pars#0, %pars#1) {dimension = 0 : i64} : (tensor<2xi32>, tensor<2xi32>) -> tensor<4xi32>
  "check.expect_eq"(%seq, %par) : (tensor<4xi32>, tensor<4xi32>) -> ()
  return
}
)");
  CheckRun r = run(path);
  EXPECT_EQ(r.counts.passed, 1) << r.output;
  EXPECT_EQ(r.counts.failed, 0) << r.output;
  EXPECT_NE(r.output.find("(2 checks)"), std::string::npos) << r.output;
}

// A test run as replicas (N x 1 in run_parallel) says so on its RUN lines, in the wrapper's flags,
// its positional arguments or the conversion pass's options; each spelling makes the partitioned
// collectives talk across replicas. A permute to a mesh with the device ids reversed swaps the
// two replicas' elements.
TEST(Check, ReplicaCountsInEverySpellingOfTheRunLines) {
  const std::string body = R"(
//--- part1.mlir

sdy.mesh @mesh_a = <["x"=2]>
sdy.mesh @mesh_b = <["x"=2], device_ids=[1, 0]>

func.func @swap(%arg0: tensor<2xi32> {sdy.sharding = #sdy.sharding<@mesh_a, [{"x"}]>}) -> (tensor<2xi32> {sdy.sharding = #sdy.sharding<@mesh_b, [{"x"}]>}) {
  %0 = sdy.collective_permute %arg0 out_sharding=<@mesh_b, [{"x"}]> : tensor<2xi32>
  return %0 : tensor<2xi32>
}

//--- part2.mlir

func.func @main() {
  %s0 = stablehlo.constant dense<[7]> : tensor<1xi32>
  %s1 = stablehlo.constant dense<[9]> : tensor<1xi32>
  %res:2 = "interpreter.run_parallel"(%s0, %s1) {
    programs = [[@swap], [@swap]]
  } : (tensor<1xi32>, tensor<1xi32>) -> (tensor<1xi32>, tensor<1xi32>)
  check.expect_eq_const %res#0, dense<[9]> : tensor<1xi32>
  check.expect_eq_const %res#1, dense<[7]> : tensor<1xi32>
  return
}
)";
  for (const char* run_line :
       {"// RUN: sdy_opt %t/part1.mlir --sdy-convert-global-to-local=\"replica-count=2 partition-count=1\" \\\n"
        "// RUN:     --sdy-drop-sharding-and-mesh > %t/part1_processed.mlir",
        "// RUN: %S/run_sdy_interpreter_test.sh %s %t --replica_count=2 --partition_count=1",
        "// RUN: %S/run_sdy_interpreter_test.sh %s %t \"true\" 2 1"}) {
    std::string path = write_temp("replicas.mlir", std::string(run_line) + "\n" + body);
    CheckRun r = run(path);
    EXPECT_EQ(r.counts.passed, 1) << run_line << "\n" << r.output;
    EXPECT_EQ(r.counts.failed, 0) << run_line << "\n" << r.output;
  }
}

// Partial values combined by a max or min (`unreduced=max{"x"}`, `sdy.all_reduce max`): a
// reduce-max split along its reduced dimension, and a gather from rows split over the devices
// (each device finds the rows it holds), each laid out partial and then all-reduced by its kind.
// Negative values for the max and positive ones for the min: pieces made as partial sums (zeros
// off the owner) would give 0 in both.
TEST(Check, PartialValuesCombinedByMaxOrMin) {
  std::string path = write_temp("kinds.mlir", R"(// RUN: %S/run_sdy_interpreter_test.sh %s %t
//--- part1.mlir

sdy.mesh @mesh = <["x"=2]>

func.func @parallel_max(%arg0: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<f32> {
  %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %0 = "stablehlo.reduce"(%arg0, %init) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) {dimensions = array<i64: 0>, sdy.sharding = #sdy.sharding_per_value<[<@mesh, [], unreduced=max{"x"}>]>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  %1 = sdy.all_reduce max {"x"} %0 out_sharding=<@mesh, []> : tensor<f32>
  return %1 : tensor<f32>
}

func.func @parallel_min(%arg0: tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<3xi32>) -> tensor<3x2xf32> {
  %0 = "stablehlo.gather"(%arg0, %arg1) {
    dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>,
    slice_sizes = array<i64: 1, 2>,
    sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}], unreduced=min{"x"}>]>
  } : (tensor<4x2xf32>, tensor<3xi32>) -> tensor<3x2xf32>
  %1 = sdy.all_reduce min {"x"} %0 out_sharding=<@mesh, [{}, {}]> : tensor<3x2xf32>
  return %1 : tensor<3x2xf32>
}

//--- part2.mlir

func.func @main() {
  %a0 = stablehlo.constant dense<[-5.0, -7.0]> : tensor<2xf32>
  %a1 = stablehlo.constant dense<[-1.0, -3.0]> : tensor<2xf32>
  %max:2 = "interpreter.run_parallel"(%a0, %a1) {
    programs = [[@parallel_max, @parallel_max]]
  } : (tensor<2xf32>, tensor<2xf32>) -> (tensor<f32>, tensor<f32>)
  check.expect_eq_const %max#0, dense<-1.0> : tensor<f32>
  check.expect_eq_const %max#1, dense<-1.0> : tensor<f32>
  %r0 = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %r1 = stablehlo.constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %i = stablehlo.constant dense<[3, 0, 2]> : tensor<3xi32>
  %min:2 = "interpreter.run_parallel"(%r0, %i, %r1, %i) {
    programs = [[@parallel_min, @parallel_min]]
  } : (tensor<2x2xf32>, tensor<3xi32>, tensor<2x2xf32>, tensor<3xi32>) -> (tensor<3x2xf32>, tensor<3x2xf32>)
  check.expect_eq_const %min#0, dense<[[7.0, 8.0], [1.0, 2.0], [5.0, 6.0]]> : tensor<3x2xf32>
  check.expect_eq_const %min#1, dense<[[7.0, 8.0], [1.0, 2.0], [5.0, 6.0]]> : tensor<3x2xf32>
  return
}
)");
  CheckRun r = run(path);
  EXPECT_EQ(r.counts.passed, 1) << r.output;
  EXPECT_EQ(r.counts.failed, 0) << r.output;
  EXPECT_NE(r.output.find("(4 checks)"), std::string::npos) << r.output;
}

// The check dialect's keyword arguments, as its assembly formats write them: a tolerance after
// expect_almost_eq's operands or after expect_almost_eq_const's typed constant, and ULP bounds
// after expect_close's operands. Each bound is used: the tighter twin of each check fails.
TEST(Check, KeywordArgumentsOfTheCheckOps) {
  std::string path = write_temp("keywords.mlir", R"(func.func @loose() {
  %0 = stablehlo.constant dense<5.0000> : tensor<f64>
  %1 = stablehlo.constant dense<5.0001> : tensor<f64>
  check.expect_almost_eq %0, %1, tolerance = 0.1 : tensor<f64>
  check.expect_almost_eq_const %0, dense<5.1> : tensor<f64>, tolerance = 2.0e-01
  %2 = stablehlo.constant dense<5.0000> : tensor<f16>
  %3 = stablehlo.constant dense<5.010> : tensor<f16>
  check.expect_close %2, %3, max_ulp_difference = 3 : tensor<f16>, tensor<f16>
  check.expect_close %2, %3, min_ulp_difference = 1, max_ulp_difference = 4 : tensor<f16>, tensor<f16>
  func.return
}

// -----

func.func @tight_almost_eq() {
  %0 = stablehlo.constant dense<5.0000> : tensor<f64>
  %1 = stablehlo.constant dense<5.0001> : tensor<f64>
  check.expect_almost_eq %0, %1, tolerance = 1.0e-05 : tensor<f64>
  func.return
}

// -----

func.func @tight_almost_eq_const() {
  %0 = stablehlo.constant dense<5.0000> : tensor<f64>
  check.expect_almost_eq_const %0, dense<5.1> : tensor<f64>, tolerance = 0.05
  func.return
}

// -----

func.func @tight_close() {
  %2 = stablehlo.constant dense<5.0000> : tensor<f16>
  %3 = stablehlo.constant dense<5.010> : tensor<f16>
  check.expect_close %2, %3, max_ulp_difference = 2 : tensor<f16>, tensor<f16>
  func.return
}
)");
  CheckRun r = run(path);
  EXPECT_EQ(r.counts.passed, 1) << r.output;
  EXPECT_EQ(r.counts.failed, 3) << r.output;
  EXPECT_NE(r.output.find("PASS " + path + ":1 @loose (4 checks)"), std::string::npos) << r.output;
  for (int line : {18, 26, 35})
    EXPECT_NE(r.output.find(fmt::format("at {}:{}:", path, line)), std::string::npos) << line << "\n" << r.output;
}

}  // namespace
}  // namespace tessera::tools
