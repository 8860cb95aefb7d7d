// Which changes to a GEMM call change its bits, per SGEMM library this build links (exec/gemm.h),
// on this machine: the same call again, beta 0 against beta 1 on zeros, a row or column piece
// (cut as contraction.cpp's split cuts: 2..8 pieces of a multiple of 16) against the same rows or
// columns of the whole call, and A's or B's storage transposed (the other flag, the same values).
// The figures are counts of elements with other bits; docs/PERFORMANCE.md records what they mean.
//
// Usage: gemm_bits [RANDOM_SHAPES (default 40)]   (prints only the shapes where something differs)
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "exec/gemm.h"

using namespace tessera;
using V = std::vector<float>;

namespace {

struct Shape {
  int64_t m, n, k;
  bool ta, tb;
};

int64_t differ(const V& x, const V& y) {
  int64_t d = 0;
  for (size_t i = 0; i < x.size(); ++i) d += std::memcmp(&x[i], &y[i], sizeof(float)) != 0;
  return d;
}

// The same values stored the other way: rows x cols row-major (trans: stored cols x rows) flipped.
V flip(const V& x, bool trans, int64_t rows, int64_t cols) {
  V y(x.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      size_t stored = static_cast<size_t>(trans ? j * rows + i : i * cols + j);
      size_t other = static_cast<size_t>(trans ? i * cols + j : j * rows + i);
      y[other] = x[stored];
    }
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  int random = argc > 1 ? std::atoi(argv[1]) : 40;
  // The larger CausalLM's GEMM classes (docs/PERFORMANCE.md, "Contractions"), then random shapes.
  std::vector<Shape> shapes = {{256, 32, 128, 0, 0},    {128, 32, 256, 1, 0},    {32, 128, 256, 1, 0},
                               {256, 128, 32, 0, 1},    {256, 684, 1024, 1, 0},  {1024, 684, 256, 0, 1},
                               {1024, 256, 684, 0, 0},  {684, 256, 1024, 1, 0},  {1024, 256, 684, 0, 1},
                               {1024, 684, 256, 0, 0},  {4096, 256, 1024, 1, 0}, {1024, 256, 4096, 0, 1},
                               {1024, 4096, 256, 0, 0}, {128, 256, 1024, 1, 0},  {1024, 128, 256, 0, 0},
                               {256, 256, 1024, 1, 0},  {1024, 256, 256, 0, 1},  {1024, 256, 256, 0, 0}};
  std::mt19937 rng(1);
  for (int i = 0; i < random; ++i)
    shapes.push_back({int64_t(16 + rng() % 700), int64_t(16 + rng() % 700), int64_t(1 + rng() % 700), bool(rng() % 2),
                      bool(rng() % 2)});
  std::normal_distribution<float> normal;
  for (exec::GemmLibrary lib : exec::sgemm_libraries()) {
    int64_t shapes_with_pieces = 0, shapes_with_flips = 0, other = 0;
    for (const Shape& s : shapes) {
      V a(static_cast<size_t>(s.m * s.k)), b(static_cast<size_t>(s.k * s.n));
      for (float& x : a) x = normal(rng);
      for (float& x : b) x = normal(rng);
      int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n, ldc = s.n;
      auto call = [&](bool ta, bool tb, int64_t m, int64_t n, const float* pa, int64_t la, const float* pb, int64_t lb,
                      float beta, float* c) { exec::sgemm_on(lib, ta, tb, m, n, s.k, pa, la, pb, lb, beta, c, ldc); };
      V whole(static_cast<size_t>(s.m * s.n), 0.0f), again = whole, beta0(whole.size(), 7.0f);
      call(s.ta, s.tb, s.m, s.n, a.data(), lda, b.data(), ldb, 1.0f, whole.data());
      call(s.ta, s.tb, s.m, s.n, a.data(), lda, b.data(), ldb, 1.0f, again.data());
      call(s.ta, s.tb, s.m, s.n, a.data(), lda, b.data(), ldb, 0.0f, beta0.data());
      V fa = flip(a, s.ta, s.m, s.k), fb = flip(b, s.tb, s.k, s.n), ca(whole.size(), 0.0f), cb = ca;
      call(!s.ta, s.tb, s.m, s.n, fa.data(), s.ta ? s.k : s.m, b.data(), ldb, 1.0f, ca.data());
      call(s.ta, !s.tb, s.m, s.n, a.data(), lda, fb.data(), s.tb ? s.n : s.k, 1.0f, cb.data());
      std::string pieces;
      for (int along_m = 1; along_m >= 0; --along_m)
        for (int64_t parts = 2; parts <= 8; ++parts) {
          int64_t dim = along_m ? s.m : s.n;
          int64_t size = ((dim + parts - 1) / parts + 15) / 16 * 16;
          if (size >= dim) continue;
          V cut(whole.size(), 0.0f);
          for (int64_t begin = 0; begin < dim; begin += size) {
            int64_t len = std::min(size, dim - begin);
            if (along_m)
              call(s.ta, s.tb, len, s.n, a.data() + (s.ta ? begin : begin * lda), lda, b.data(), ldb, 1.0f,
                   cut.data() + begin * ldc);
            else
              call(s.ta, s.tb, s.m, len, a.data(), lda, b.data() + (s.tb ? begin * ldb : begin), ldb, 1.0f,
                   cut.data() + begin);
          }
          if (int64_t d = differ(whole, cut))
            pieces += fmt::format(" {}x{} {}: {};", parts, along_m ? "rows" : "cols", size, d);
        }
      int64_t same = differ(whole, again) + differ(whole, beta0), flip_a = differ(whole, ca), flip_b = differ(whole, cb);
      other += same;
      shapes_with_pieces += !pieces.empty();
      shapes_with_flips += flip_a || flip_b;
      if (same || flip_a || flip_b || !pieces.empty())
        fmt::print("{} {}x{}x{} {}{}: again/beta0 {}, A flipped {}, B flipped {}, pieces{}\n", exec::library_name(lib),
                   s.m, s.n, s.k, s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', same, flip_a, flip_b,
                   pieces.empty() ? " same" : pieces);
    }
    fmt::print("{}: {} shapes; other bits for the same call or beta 0: {} elements; pieces differ in {} shapes, "
               "flipped storage in {}\n",
               exec::library_name(lib), shapes.size(), other, shapes_with_pieces, shapes_with_flips);
  }
  return 0;
}
