// Reference kernels of issue #17's numeric ops (package B): stablehlo.fft.
//
// fft works in complex<double> on a buffer of the complex shape (for RFFT the operand's, for IRFFT
// the result's leading dimensions with the last one n / 2 + 1) and rounds once into the result.
// Each transformed dimension is a direct DFT of every line along it: O(n²) per line, exact
// twiddles (the angle of j·k is taken mod n before the cosine, so large n loses no accuracy to
// the angle). IRFFT restores the last dimension's upper half by Hermitian symmetry
// (X[n-k] = conj(X[k])) and keeps the real part, as numpy.fft.irfft does (the imaginary parts of
// X[0] and, for even n, X[n/2] are dropped).
#include <cmath>
#include <complex>
#include <numbers>

#include "interp/kernels.h"
#include "ir/fft.h"

namespace tessera::interp {

namespace {

using Complex = std::complex<double>;

// out[k] = sum_j in[j] * exp(∓2πi·jk/n), divided by n for the inverse.
void dft(std::vector<Complex>& line, bool inverse) {
  auto n = static_cast<int64_t>(line.size());
  if (n <= 1) return;
  std::vector<Complex> twiddle(static_cast<size_t>(n));
  double sign = inverse ? 1.0 : -1.0;
  for (int64_t m = 0; m < n; ++m) {
    double angle = 2.0 * std::numbers::pi * static_cast<double>(m) / static_cast<double>(n);
    twiddle[static_cast<size_t>(m)] = Complex(std::cos(angle), sign * std::sin(angle));
  }
  std::vector<Complex> out(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    Complex acc = 0;
    for (int64_t j = 0; j < n; ++j) acc += line[static_cast<size_t>(j)] * twiddle[static_cast<size_t>((j * k) % n)];
    out[static_cast<size_t>(k)] = inverse ? acc / static_cast<double>(n) : acc;
  }
  line = std::move(out);
}

// A row-major complex array and the transform of each line along one dimension.
struct Buffer {
  std::vector<int64_t> shape;
  std::vector<Complex> data;

  int64_t stride(size_t axis) const {
    int64_t s = 1;
    for (size_t d = axis + 1; d < shape.size(); ++d) s *= shape[d];
    return s;
  }
  // fn(line) for every line along `axis`, written back.
  template <typename F>
  void for_each_line(size_t axis, F&& fn) {
    int64_t n = shape[axis], inner = stride(axis);
    if (n == 0 || data.empty()) return;
    int64_t outer = static_cast<int64_t>(data.size()) / (n * inner);
    std::vector<Complex> line(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t base = o * n * inner + i;
        for (int64_t j = 0; j < n; ++j) line[static_cast<size_t>(j)] = data[static_cast<size_t>(base + j * inner)];
        fn(line);
        for (int64_t j = 0; j < n; ++j) data[static_cast<size_t>(base + j * inner)] = line[static_cast<size_t>(j)];
      }
  }
  void transform(size_t axis, bool inverse) {
    for_each_line(axis, [&](std::vector<Complex>& line) { dft(line, inverse); });
  }
};

}  // namespace

Results eval_Fft(const EvalContext& ctx) {
  const ir::Literal& x = ctx.operand(0);
  auto type = ir::fft_type_of(ctx.op.attrs());
  if (!type) ctx.fail("fft_type must be #stablehlo<fft_type FFT|IFFT|RFFT|IRFFT>");
  const auto& length = ctx.op.attrs().get<std::vector<int64_t>>("fft_length");
  ir::Literal result(ctx.result_type());
  Buffer b{x.shape(), std::vector<Complex>(static_cast<size_t>(x.num_elements()))};
  for (int64_t i = 0; i < x.num_elements(); ++i) b.data[static_cast<size_t>(i)] = x.get_complex(i);
  size_t rank = b.shape.size(), first = rank - length.size();
  bool inverse = *type == ir::FftType::kIfft || *type == ir::FftType::kIrfft;
  if (*type != ir::FftType::kIrfft) {
    for (size_t d = first; d < rank; ++d) b.transform(d, inverse);
    if (*type == ir::FftType::kRfft) {  // keep the first n / 2 + 1 entries of the last dimension
      int64_t n = b.shape.back(), m = result.shape().back();
      for (int64_t i = 0; i < result.num_elements(); ++i)
        result.set_complex(i, b.data[static_cast<size_t>(i / m * n + i % m)]);
      return one(std::move(result));
    }
    for (int64_t i = 0; i < result.num_elements(); ++i) result.set_complex(i, b.data[static_cast<size_t>(i)]);
    return one(std::move(result));
  }
  // IRFFT: the complex inverse over the leading transformed dimensions, then the real inverse of
  // the last one from its n / 2 + 1 entries.
  for (size_t d = first; d + 1 < rank; ++d) b.transform(d, true);
  int64_t n = length.back(), m = b.shape.back();
  if (n == 0 || m == 0) return one(std::move(result));
  int64_t lines = static_cast<int64_t>(b.data.size()) / m;
  std::vector<Complex> full(static_cast<size_t>(n));
  for (int64_t r = 0; r < lines; ++r) {
    for (int64_t k = 0; k < n; ++k) {
      bool stored = k < m;
      Complex v = stored ? b.data[static_cast<size_t>(r * m + k)] : std::conj(b.data[static_cast<size_t>(r * m + n - k)]);
      full[static_cast<size_t>(k)] = v;
    }
    dft(full, true);
    for (int64_t k = 0; k < n; ++k) result.set_double(r * n + k, full[static_cast<size_t>(k)].real());
  }
  return one(std::move(result));
}

}  // namespace tessera::interp
