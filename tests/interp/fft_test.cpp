// stablehlo.fft through text and the reference interpreter: the spec's example; FFT, IFFT, RFFT and
// IRFFT over one to three trailing dimensions against values NumPy gave (numpy.fft.fft, ifft,
// rfftn, irfftn, irfft, fftn on the inputs stated below, printed with repr); IRFFT of odd length;
// the pretty and generic forms read, printed and read back; and the shape rule's constraint
// messages.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "common/parse_error.h"
#include "interp/interpreter.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "support/error.h"

namespace tessera::interp {
namespace {

using ir::Literal;
using C = std::complex<double>;

constexpr double kTol = 1e-12;  // f64 results against NumPy's, values of magnitude <= 100

std::vector<Literal> run_main(const std::string& text) {
  auto m = stablehlo::parse(text, "t.mlir");
  return evaluate(*m, "main", {});
}

void expect_complex(const Literal& got, const std::vector<C>& want, double tol = kTol) {
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    C g = got.get_complex(static_cast<int64_t>(i));
    EXPECT_TRUE(std::abs(g - want[i]) <= tol) << "element " << i << ": " << g << " vs " << want[i];
  }
}

void expect_real(const Literal& got, const std::vector<double>& want, double tol = kTol) {
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(std::abs(got.get_double(static_cast<int64_t>(i)) - want[i]) <= tol) << "element " << i;
}

using testing::parse_error;

std::string round_trip(const std::string& text) {
  std::string once = stablehlo::print(*stablehlo::parse(text, "t.mlir"));
  EXPECT_EQ(stablehlo::print(*stablehlo::parse(once, "printed.mlir")), once);
  return once;
}

TEST(Fft, SpecExample) {
  auto r = run_main(R"(
func.func @main() -> tensor<4xcomplex<f32>> {
  %operand = stablehlo.constant dense<[(1.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)]> : tensor<4xcomplex<f32>>
  %result = "stablehlo.fft"(%operand) {
    fft_type = #stablehlo<fft_type FFT>,
    fft_length = array<i64: 4>
  } : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  return %result : tensor<4xcomplex<f32>>
}
)");
  expect_complex(r[0], {1, 1, 1, 1}, 0);
}

// x = [[1, 2+i, 3, 4-i], [5+2i, 7, 11+0.5i, 13]]; numpy.fft.fft(x) and numpy.fft.ifft(x) per row.
const std::string kFft1 = R"(func.func @main() -> (tensor<2x4xcomplex<f64>>, tensor<2x4xcomplex<f64>>) {
  %cst = stablehlo.constant dense<[[(1.0, 0.0), (2.0, 1.0), (3.0, 0.0), (4.0, -1.0)], [(5.0, 2.0), (7.0, 0.0), (11.0, 0.5), (13.0, 0.0)]]> : tensor<2x4xcomplex<f64>>
  %0 = stablehlo.fft %cst, type = FFT, length = [4] : (tensor<2x4xcomplex<f64>>) -> tensor<2x4xcomplex<f64>>
  %1 = stablehlo.fft %cst, type = IFFT, length = [4] : (tensor<2x4xcomplex<f64>>) -> tensor<2x4xcomplex<f64>>
  return %0, %1 : tensor<2x4xcomplex<f64>>, tensor<2x4xcomplex<f64>>
}
)";

TEST(Fft, ForwardAndInverseMatchNumpy) {
  auto r = run_main(kFft1);
  expect_complex(r[0], {{10, 0}, {0, 2}, {-2, 0}, {-4, -2}, {36, 2.5}, {-6, 7.5}, {-4, 2.5}, {-6, -4.5}});
  expect_complex(r[1], {{2.5, 0}, {-1, -0.5}, {-0.5, 0}, {0, 0.5}, {9, 0.625}, {-1.5, -1.125}, {-1, 0.625},
                        {-1.5, 1.875}});
  std::string printed = round_trip(kFft1);
  EXPECT_NE(printed.find("stablehlo.fft %cst, type = IFFT, length = [4] : (tensor<2x4xcomplex<f64>>) -> "
                         "tensor<2x4xcomplex<f64>>"),
            std::string::npos)
      << printed;
}

// y = arange(24).reshape(2, 3, 4) * 0.5 - 3 with y[0, 1, 2] = 7.25; numpy.fft.rfftn(y, axes=(-2, -1)).
TEST(Fft, RealForwardOverTwoDimensionsMatchesNumpy) {
  auto r = run_main(R"(
func.func @main() -> tensor<2x3x3xcomplex<f64>> {
  %y = stablehlo.constant dense<[[[-3.0, -2.5, -2.0, -1.5], [-1.0, -0.5, 7.25, 0.5], [1.0, 1.5, 2.0, 2.5]],
                                 [[3.0, 3.5, 4.0, 4.5], [5.0, 5.5, 6.0, 6.5], [7.0, 7.5, 8.0, 8.5]]]> : tensor<2x3x4xf64>
  %0 = stablehlo.fft %y, type = RFFT, length = [3, 4] : (tensor<2x3x4xf64>) -> tensor<2x3x3xcomplex<f64>>
  return %0 : tensor<2x3x3xcomplex<f64>>
}
)");
  expect_complex(r[0], {{4.25, 0.0}, {-10.25, 3.0}, {4.25, 0.0}, {-15.625, 0.649519052838329},
                        {3.625, 6.27868417743718}, {-3.625, -6.27868417743718}, {-15.625, -0.649519052838329},
                        {3.625, -6.27868417743718}, {-3.625, 6.27868417743718}, {69.0, 0.0}, {-3.0, 3.0},
                        {-3.0, 0.0}, {-12.0, 6.928203230275509}, {0.0, 0.0}, {0.0, 0.0},
                        {-12.0, -6.928203230275509}, {0.0, 0.0}, {0.0, 0.0}});
}

// z (3x3, not Hermitian) through numpy.fft.irfftn(z, s=(3, 4)); w through numpy.fft.irfft(w, n=5).
TEST(Fft, RealInverseEvenAndOddLengthsMatchNumpy) {
  auto r = run_main(R"(
func.func @main() -> (tensor<3x4xf64>, tensor<5xf64>) {
  %z = stablehlo.constant dense<[[(1.0, 2.0), (3.0, -1.0), (0.5, 0.0)], [(2.0, 0.0), (0.0, 1.0), (-1.0, 1.0)],
                                 [(4.0, -2.0), (0.0, 0.0), (1.0, 1.0)]]> : tensor<3x3xcomplex<f64>>
  %w = stablehlo.constant dense<[(2.0, 1.0), (1.0, -3.0), (0.5, 2.0)]> : tensor<3xcomplex<f64>>
  %0 = stablehlo.fft %z, type = IRFFT, length = [3, 4] : (tensor<3x3xcomplex<f64>>) -> tensor<3x4xf64>
  %1 = "stablehlo.fft"(%w) {fft_type = #stablehlo<fft_type IRFFT>, fft_length = array<i64: 5>} : (tensor<3xcomplex<f64>>) -> tensor<5xf64>
  return %0, %1 : tensor<3x4xf64>, tensor<5xf64>
}
)");
  expect_real(r[0], {1.125, 0.5416666666666666, 0.12499999999999989, 0.5416666666666666, 0.08632486540518719,
                     -0.10267090063073975, -0.625, -0.6026709006307398, 0.6636751345948128, 0.18600423396407312,
                     -0.6249999999999999, -0.3139957660359269});
  expect_real(r[1], {1.0, 1.0328430165951952, 1.604384116912101, -1.32799091466208, -0.30923621884521624});
}

// v = arange(12).reshape(2, 2, 3) + i * arange(12)[::-1].reshape(2, 2, 3); numpy.fft.fftn(v), and
// IFFT of it gives v back.
TEST(Fft, ThreeDimensionsMatchNumpyAndInvert) {
  auto r = run_main(R"(
func.func @main() -> (tensor<2x2x3xcomplex<f64>>, tensor<2x2x3xcomplex<f64>>) {
  %v = stablehlo.constant dense<[[[(0.0, 11.0), (1.0, 10.0), (2.0, 9.0)], [(3.0, 8.0), (4.0, 7.0), (5.0, 6.0)]],
                                 [[(6.0, 5.0), (7.0, 4.0), (8.0, 3.0)], [(9.0, 2.0), (10.0, 1.0), (11.0, 0.0)]]]> : tensor<2x2x3xcomplex<f64>>
  %0 = stablehlo.fft %v, type = FFT, length = [2, 2, 3] : (tensor<2x2x3xcomplex<f64>>) -> tensor<2x2x3xcomplex<f64>>
  %1 = stablehlo.fft %0, type = IFFT, length = [2, 2, 3] : (tensor<2x2x3xcomplex<f64>>) -> tensor<2x2x3xcomplex<f64>>
  return %0, %1 : tensor<2x2x3xcomplex<f64>>, tensor<2x2x3xcomplex<f64>>
}
)");
  expect_complex(r[0], {{66.0, 66.0}, {-2.5358983848622456, 9.464101615137753}, {-9.464101615137753, 2.5358983848622456},
                        {-18.0, 18.0}, {0, 0}, {0, 0}, {-36.0, 36.0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}});
  std::vector<C> v;
  for (int i = 0; i < 12; ++i) v.emplace_back(i, 11 - i);
  expect_complex(r[1], v);
}

std::string fft_error(const std::string& type, const std::string& length, const std::string& in, const std::string& out) {
  return parse_error(fmt::format(R"(
func.func @main(%x: {0}) -> {1} {{
  %0 = stablehlo.fft %x, type = {2}, length = {3} : ({0}) -> {1}
  return %0 : {1}
}}
)", in, out, type, length));
}

TEST(Fft, ShapeRuleMessagesNameTheConstraint) {
  EXPECT_NE(fft_error("FFT", "[2, 2, 2, 2]", "tensor<2x2x2x2xcomplex<f32>>", "tensor<2x2x2x2xcomplex<f32>>").find(
                "stablehlo.fft: fft_length has 4 entries, must have 1 to 3 (C3)"),
            std::string::npos);
  EXPECT_NE(fft_error("FFT", "[2, 2]", "tensor<2xcomplex<f32>>", "tensor<2xcomplex<f32>>")
                .find("fft_length has 2 entries, more than the operand's rank 1 (C1)"),
            std::string::npos);
  EXPECT_NE(fft_error("FFT", "[4]", "tensor<4xf32>", "tensor<4xf32>").find("FFT needs a complex operand, not f32 (C2)"),
            std::string::npos);
  EXPECT_NE(fft_error("RFFT", "[4]", "tensor<4xcomplex<f32>>", "tensor<3xcomplex<f32>>")
                .find("RFFT needs an f32 or f64 operand, not complex<f32> (C2)"),
            std::string::npos);
  EXPECT_NE(fft_error("RFFT", "[8]", "tensor<4xf32>", "tensor<5xcomplex<f32>>")
                .find("operand dimension 0 is 4, must be 8 for fft_length [8] (C4)"),
            std::string::npos);
  EXPECT_NE(fft_error("IRFFT", "[8]", "tensor<4xcomplex<f32>>", "tensor<8xf32>")
                .find("operand dimension 0 is 4, must be 5 for fft_length [8] (C5)"),
            std::string::npos);
  // The declared result must be the inferred one (C5's last dimension n / 2 + 1).
  EXPECT_NE(fft_error("RFFT", "[8]", "tensor<8xf32>", "tensor<8xcomplex<f32>>"), "<no error>");
  EXPECT_NE(parse_error(R"(
func.func @main(%x: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  %0 = stablehlo.fft %x, type = DCT, length = [4] : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  return %0 : tensor<4xcomplex<f32>>
}
)").find("unknown fft type 'DCT'"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::interp
