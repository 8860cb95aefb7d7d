// `tessera run` of a program in the shape JAX exports for jnp.linalg.eigh and jnp.linalg.qr on the
// CPU (lapack_ssyevd_ffi, lapack_sgeqrf_ffi and lapack_sorgqr_ffi with their layouts, and the
// info check that replaces a failed matrix by NaNs), with the batch of matrices split over two host
// devices. The custom calls' factor rule passes the batch through and keeps the matrices whole, so
// the run needs no collective and gives the single-device values. Values: the eigenvalues of
// [[2, 1], [1, 2]] are 1 and 3, of diag(4, -1) -1 and 4; Q R = A with R upper triangular.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "common/temp_dir.h"
#include "interp/npy.h"
#include "tools/tessera/partition_cmd.h"

namespace tessera::tools {
namespace {

using testing::TempDir;

const char* kModule = R"(module @jit_f attributes {mhlo.num_partitions = 2 : i32} {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<4x2x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {}]>}) -> (tensor<4x2xf32>, tensor<4x2x2xf32>, tensor<4x2x2xf32>) {
    %0:3 = stablehlo.custom_call @lapack_ssyevd_ffi(%arg0) {mhlo.backend_config = {mode = 86 : ui8, uplo = 76 : ui8}, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<[1, 0]> : tensor<2xindex>, dense<0> : tensor<1xindex>]} : (tensor<4x2x2xf32>) -> (tensor<4x2x2xf32>, tensor<4x2xf32>, tensor<4xi32>)
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %2 = stablehlo.compare  EQ, %0#2, %1,  SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<4xi1>) -> tensor<4x2xi1>
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x2xf32>
    %5 = stablehlo.select %3, %0#1, %4 : tensor<4x2xi1>, tensor<4x2xf32>
    %6:2 = stablehlo.custom_call @lapack_sgeqrf_ffi(%arg0) {mhlo.backend_config = {}, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<[1, 0]> : tensor<2xindex>]} : (tensor<4x2x2xf32>) -> (tensor<4x2x2xf32>, tensor<4x2xf32>)
    %7 = stablehlo.custom_call @lapack_sorgqr_ffi(%6#0, %6#1) {mhlo.backend_config = {}, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<[1, 0]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>]} : (tensor<4x2x2xf32>, tensor<4x2xf32>) -> tensor<4x2x2xf32>
    return %5, %7, %6#0 : tensor<4x2xf32>, tensor<4x2x2xf32>, tensor<4x2x2xf32>
  }
}
)";

std::vector<ir::Literal> run(int devices, std::string& report) {
  TempDir dir;
  // One device: the same program without the mesh and the sharding.
  std::string text = kModule;
  if (devices == 1) {
    for (std::string cut : {std::string("  sdy.mesh @mesh = <[\"x\"=2]>\n"),
                            std::string(" {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {}, {}]>}")})
      text.erase(text.find(cut), cut.size());
  }
  std::string file = dir.file("eigh_qr.mlir", text);
  std::vector<double> a = {2, 1, 1, 2, 4, 0, 0, -1, 1, 2, 3, 4, 0, 1, 1, 0};
  interp::save_npy(ir::Literal::from_doubles(ir::f32({4, 2, 2}), a), (dir.path / "a.npy").string());
  RunCommand c;
  c.file = file;
  c.devices = devices;
  c.inputs = {"arg0=" + (dir.path / "a.npy").string()};
  c.output_dir = (dir.path / "out").string();
  std::ostringstream out;
  EXPECT_EQ(run_command(c, out), 0) << out.str();
  report = out.str();
  std::vector<ir::Literal> r;
  for (int i = 0; i < 3; ++i) r.push_back(interp::load_npy((dir.path / "out" / fmt::format("result{}.npy", i)).string()));
  return r;
}

TEST(RunLapack, EighAndQrWithTheBatchSplitOverTwoDevicesNeedNoCollective) {
  std::string one_report, two_report;
  std::vector<ir::Literal> one = run(1, one_report), two = run(2, two_report);
  EXPECT_NE(two_report.find("ran @main on 2 host devices; 0 collectives"), std::string::npos) << two_report;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(one[i], two[i]) << "result " << i;
  const ir::Literal& w = two[0];
  EXPECT_NEAR(w.get_double(0), 1, 1e-6);
  EXPECT_NEAR(w.get_double(1), 3, 1e-6);
  EXPECT_NEAR(w.get_double(2), -1, 1e-6);
  EXPECT_NEAR(w.get_double(3), 4, 1e-6);
  // Q R = A for each matrix, R the upper triangle of geqrf's result.
  std::vector<double> a = {2, 1, 1, 2, 4, 0, 0, -1, 1, 2, 3, 4, 0, 1, 1, 0};
  const ir::Literal &q = two[1], &r = two[2];
  for (int b = 0; b < 4; ++b)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        double s = 0;
        for (int k = 0; k <= j; ++k) s += q.get_double(b * 4 + i * 2 + k) * r.get_double(b * 4 + k * 2 + j);
        EXPECT_NEAR(s, a[static_cast<size_t>(b * 4 + i * 2 + j)], 1e-5) << b << i << j;
      }
}

}  // namespace
}  // namespace tessera::tools
