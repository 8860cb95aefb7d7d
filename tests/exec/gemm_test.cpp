// The GEMM libraries the fast kernels may run on (exec/gemm.h), on this machine: each library's
// products against f64 sums at the CausalLM's shapes and at odd ones, the same bits for the same
// call, and calls that start no thread of their own (DESIGN.md §6). contraction_test.cpp's random
// dot_generals run through the library the build chose (exec::sgemm_library). The rule that moves
// some products to OpenBLAS on CPUs where oneDNN has only AVX2, on both kinds of CPU, and
// contractions that run on the library it chooses.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "exec/contraction.h"
#include "exec/gemm.h"
#include "exec_tolerance.h"

namespace tessera::exec {
namespace {

struct Shape {
  int64_t m, n, k;
  bool ta, tb;
};

// The CausalLM's GEMM classes (docs/PERFORMANCE.md, "Contractions"), small ones and odd sizes.
const std::vector<Shape> kShapes = {
    {256, 32, 128, false, false}, {128, 32, 256, true, false},    {32, 128, 256, true, false},
    {256, 128, 32, false, true},  {256, 684, 1024, true, false},  {1024, 684, 256, false, true},
    {1024, 256, 684, false, false}, {1024, 256, 4096, false, true}, {4096, 256, 1024, true, false},
    {8, 16, 32, true, false},     {32, 8, 16, false, false},      {1, 1, 1, false, false},
    {1, 300, 7, false, true},     {301, 1, 65, true, true},       {37, 91, 53, false, false},
    {166, 109, 47, false, true},  {95, 404, 15, false, true},     {333, 129, 77, true, true}};

struct Operands {
  std::vector<float> a, b;
  int64_t lda, ldb, ldc;
};

// A and B with random values of both signs, stored with leading dimensions 3 more than needed.
Operands operands(const Shape& s, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Operands o;
  o.lda = (s.ta ? s.m : s.k) + 3;
  o.ldb = (s.tb ? s.k : s.n) + 3;
  o.ldc = s.n + 3;
  o.a.resize(static_cast<size_t>((s.ta ? s.k : s.m) * o.lda));
  o.b.resize(static_cast<size_t>((s.tb ? s.n : s.k) * o.ldb));
  for (float& x : o.a) x = u(rng);
  for (float& x : o.b) x = u(rng);
  return o;
}

float at(const std::vector<float>& x, bool trans, int64_t ld, int64_t row, int64_t col) {
  return x[static_cast<size_t>(trans ? col * ld + row : row * ld + col)];
}

std::vector<float> run(GemmLibrary lib, const Shape& s, const Operands& o, float beta, float fill) {
  std::vector<float> c(static_cast<size_t>(s.m * o.ldc), fill);
  sgemm_on(lib, s.ta, s.tb, s.m, s.n, s.k, o.a.data(), o.lda, o.b.data(), o.ldb, beta, c.data(), o.ldc);
  return c;
}

TEST(Gemm, EveryLibraryIsWithinTheErrorBoundOfF64Sums) {
  std::mt19937 rng(14);
  for (GemmLibrary lib : sgemm_libraries())
    for (const Shape& s : kShapes) {
      Operands o = operands(s, rng);
      std::vector<float> c = run(lib, s, o, 1.0f, 0.0f);
      int64_t bad = 0;
      // Every row of small products, about 2^22 multiply-adds' worth of rows of the large ones.
      int64_t step = std::max<int64_t>(1, s.m * s.n * s.k >> 22);
      for (int64_t i = 0; i < s.m; i += step)
        for (int64_t j = 0; j < s.n; ++j) {
          double want = 0, mag = 0;
          for (int64_t p = 0; p < s.k; ++p) {
            double prod = double(at(o.a, s.ta, o.lda, i, p)) * double(at(o.b, s.tb, o.ldb, p, j));
            want += prod;
            mag += std::abs(prod);
          }
          double got = c[static_cast<size_t>(i * o.ldc + j)];
          if (!(std::abs(got - want) <= testing::gemm_error_bound(s.k, mag))) ++bad;
        }
      EXPECT_EQ(bad, 0) << library_name(lib) << " " << s.m << "x" << s.n << "x" << s.k << (s.ta ? " T" : " N")
                        << (s.tb ? "T" : "N");
      // The padding between rows is never written.
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = s.n; j < o.ldc; ++j) ASSERT_EQ(c[static_cast<size_t>(i * o.ldc + j)], 0.0f);
    }
}

TEST(Gemm, TheSameCallGivesTheSameBits) {
  // Also: beta 1 on zeros gives the bits of beta 0 over any C (contraction.cpp adds into fresh
  // zeros).
  std::mt19937 rng(15);
  for (GemmLibrary lib : sgemm_libraries())
    for (const Shape& s : kShapes) {
      Operands o = operands(s, rng);
      std::vector<float> first = run(lib, s, o, 1.0f, 0.0f), again = run(lib, s, o, 1.0f, 0.0f);
      std::vector<float> beta0 = run(lib, s, o, 0.0f, 0.0f);
      std::vector<float> over = run(lib, s, o, 0.0f, 7.0f);
      for (int64_t i = 0; i < s.m; ++i)  // beta 0 over 7s: compare the product, not the padding
        for (int64_t j = s.n; j < o.ldc; ++j) over[static_cast<size_t>(i * o.ldc + j)] = 0.0f;
      size_t bytes = first.size() * sizeof(float);
      EXPECT_EQ(std::memcmp(first.data(), again.data(), bytes), 0) << library_name(lib) << " " << s.m << "x" << s.n;
      EXPECT_EQ(std::memcmp(first.data(), beta0.data(), bytes), 0) << library_name(lib) << " " << s.m << "x" << s.n;
      EXPECT_EQ(std::memcmp(first.data(), over.data(), bytes), 0) << library_name(lib) << " " << s.m << "x" << s.n;
    }
}

int64_t process_threads() {
  int64_t n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Waits (up to 2 s) until the process uses no CPU while this thread sleeps: OpenBLAS's pool
// threads, started when the library loads, poll for work for about 0.1-0.2 s before they sleep
// (measured here: 60-90 ms of CPU in the first 0.1 s of a process that only sleeps), which is not
// a call's doing.
void settle() {
  for (int i = 0; i < 40; ++i) {
    double c0 = cpu_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (cpu_seconds() - c0 < 0.002) return;
  }
}

TEST(Gemm, CallsRunOnTheCallingThreadAlone) {
  // A library team (OpenMP's, OpenBLAS's) would be threads outside the budget: no call may start
  // one, on the main thread or on a thread that never called before (OpenMP's setting is per
  // thread), and the process's CPU time may not run ahead of the wall time.
  Shape s{512, 512, 512, false, false};
  std::mt19937 rng(16);
  Operands o = operands(s, rng);
  for (GemmLibrary lib : sgemm_libraries()) {
    run(lib, s, o, 1.0f, 0.0f);  // the library's own start-up (OpenBLAS's pool exists from loading)
    settle();
    int64_t before = process_threads();
    double cpu0 = cpu_seconds();
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < 10; ++r) run(lib, s, o, 1.0f, 0.0f);
    int64_t during = 0;
    std::thread other([&] {
      for (int r = 0; r < 10; ++r) run(lib, s, o, 1.0f, 0.0f);
      during = process_threads();
    });
    other.join();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double cpu = cpu_seconds() - cpu0;
    EXPECT_EQ(process_threads(), before) << library_name(lib);
    EXPECT_EQ(during, before + 1) << library_name(lib);  // the test's own thread only
    EXPECT_LE(cpu, 1.2 * wall + 0.01) << library_name(lib) << ": more than one core busy";
  }
}

// The rule (gemm.h) on both kinds of CPU, whatever this one is: where oneDNN has AVX-512 kernels
// every f32 product stays on it; where it has not, large A^T·B products and A·B products reading
// B's rows a multiple of 512 floats apart, 1024 or more, go to OpenBLAS. Without oneDNN, all is on
// OpenBLAS.
TEST(GemmLibraryRule, EachBranchOnEitherCpu) {
  const GemmLibrary dnnl = GemmLibrary::OneDnn, blas = GemmLibrary::OpenBlas;
  auto rule = [&](bool avx512, bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t ldb) {
    return sgemm_library_rule(dnnl, avx512, ta, tb, m, n, k, ldb);
  };
  const int64_t big_k = kOpenBlasTransposedAWork / 256;  // 16 x 16 x big_k: the threshold exactly
  for (bool avx512 : {true, false}) {
    GemmLibrary moved = avx512 ? dnnl : blas;
    EXPECT_EQ(rule(avx512, true, false, 16, 16, big_k, 16), moved);
    EXPECT_EQ(rule(avx512, true, false, 16, 16, big_k - 1, 16), dnnl);  // below the threshold
    EXPECT_EQ(rule(avx512, false, false, 512, 512, 256, 4096), moved);  // the LM head's forward pieces
    for (int64_t ldb : {1024, 2048, 2560, 8192}) EXPECT_EQ(rule(avx512, false, false, 64, 128, 256, ldb), moved) << ldb;
    for (int64_t ldb : {128, 512, 768, 1023, 4112}) EXPECT_EQ(rule(avx512, false, false, 64, 128, 256, ldb), dnnl) << ldb;
    EXPECT_EQ(rule(avx512, false, true, 512, 256, 4096, 4096), dnnl);   // input gradients: B transposed
    EXPECT_EQ(rule(avx512, true, true, 16, 16, big_k, big_k), dnnl);
  }
  EXPECT_EQ(sgemm_library_rule(blas, false, false, false, 512, 512, 256, 4096), blas);
  EXPECT_EQ(sgemm_library_rule(blas, false, true, false, 16, 16, big_k, 16), blas);
  EXPECT_EQ(sgemm_library(false, false, 512, 512, 256, 4096),
            sgemm_library_rule(sgemm_library(), onednn_has_avx512(), false, false, 512, 512, 256, 4096));
}

using Ints = std::vector<int64_t>;
using ir::DotDims;

// run_contraction of a one-call plan (not cut into pieces) on random operands has the bits of one
// sgemm_on call on `library` with the plan's own flags and leading dimensions.
void expect_bits_of_one_call(const ContractionPlan& p, GemmLibrary library, uint32_t seed) {
  ASSERT_TRUE(p.ok && !p.swapped && p.calls == 1 && gemm_calls(p) == 1);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>((p.ta ? p.k : p.m) * p.lda)), b(static_cast<size_t>((p.tb ? p.n : p.k) * p.ldb));
  for (float& x : a) x = u(rng);
  for (float& x : b) x = u(rng);
  std::vector<float> got(static_cast<size_t>(p.m * p.n), std::numeric_limits<float>::quiet_NaN());
  run_contraction(p, a.data(), b.data(), got.data(), false);
  std::vector<float> want(got.size());
  sgemm_on(library, p.ta, p.tb, p.m, p.n, p.k, a.data(), p.lda, b.data(), p.ldb, 0.0f, want.data(), p.n);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(),
                         [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; }))
      << "not the bits of one " << library_name(library) << " call";
}

// A weight-gradient-shaped product (A^T·B, K the tokens) runs on the library the rule chooses for
// it: 16x16x32768 is exactly kOpenBlasTransposedAWork multiply-adds, too narrow to be cut into
// pieces, so the result has the bits of one call on that library. Where the two libraries differ
// on it (they do on Zen 3), the other library's bits would fail the comparison.
TEST(Contraction, WeightGradientsRunOnTheChosenLibrary) {
  const int64_t m = 16, n = 16, k = 32768;
  ASSERT_EQ(m * n * k, kOpenBlasTransposedAWork);
  // oneDNN only where it has AVX-512 kernels (false without oneDNN, where all is on OpenBLAS).
  GemmLibrary big_tn = onednn_has_avx512() ? GemmLibrary::OneDnn : GemmLibrary::OpenBlas;
  EXPECT_EQ(sgemm_library(true, false, m, n, k, n), big_tn);

  ContractionPlan p = plan_contraction(Ints{k, m}, Ints{k, n}, DotDims{{}, {}, {0}, {0}});
  ASSERT_TRUE(p.ta && !p.tb && p.m == m && p.n == n && p.k == k);
  expect_bits_of_one_call(p, big_tn, 11);
}

// A product of A and B as stored whose B rows lie kOpenBlasWideB floats apart (the LM head's
// forward, cut into column pieces of its [d_model, vocab] weight) runs on the library the rule
// chooses for it: OpenBLAS where oneDNN has no AVX-512 kernels. 8x256x512 is too small to be cut,
// so the result has the bits of one call; 1,778 of its 2,048 elements differ between the two
// libraries on Zen 3.
TEST(Contraction, WideRowsOfBRunOnTheChosenLibrary) {
  const int64_t m = 8, n = 256, k = 512, width = kOpenBlasWideB;
  GemmLibrary wide = onednn_has_avx512() ? GemmLibrary::OneDnn : GemmLibrary::OpenBlas;
  EXPECT_EQ(sgemm_library(false, false, m, n, k, width), wide);

  // x[8, 512] · (the first 256 columns of w[512, 1024]), w read in place through its strides.
  Ints rhs_strides{width, 1};
  ContractionPlan p = plan_contraction(Ints{m, k}, Ints{k, n}, DotDims{{}, {}, {1}, {0}},
                                       ContractionStrides{{}, rhs_strides, {}});
  ASSERT_TRUE(!p.ta && !p.tb && p.m == m && p.n == n && p.k == k && p.ldb == width);
  expect_bits_of_one_call(p, wide, 12);
}

TEST(Gemm, FloatRunsOnOneDnnWhenTheBuildHasIt) {
  std::vector<GemmLibrary> libs = sgemm_libraries();
  bool has_onednn = std::find(libs.begin(), libs.end(), GemmLibrary::OneDnn) != libs.end();
  EXPECT_EQ(sgemm_library(), has_onednn ? GemmLibrary::OneDnn : GemmLibrary::OpenBlas);
}

}  // namespace
}  // namespace tessera::exec
