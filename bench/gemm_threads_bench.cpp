// Two threads for one GEMM: Tessera's own split (exec::run_contraction cutting rows or columns of C
// over the thread budget, each piece a single-threaded OpenBLAS call) against OpenBLAS's threads
// (openblas_set_num_threads(2), one call), and one thread as the baseline, on the larger
// configuration's main shape classes (bench/train_vs_torch.sh: 8 x 128 tokens, d_model 256, ffn
// 684, vocab 4096). The three are interleaved repetition by repetition, so that a change of load
// on this shared machine hits them alike; each figure is the median GFLOP/s over repetitions.
//
// Usage: gemm_threads_bench [REPS]
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <vector>

#include "exec/contraction.h"
#include "support/threads.h"

using namespace tessera;

namespace {

struct Shape {
  const char* what;
  int64_t m, k, n;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 15;
  std::vector<Shape> shapes = {{"attention projection [1024x256]x[256x256]", 1024, 256, 256},
                               {"MLP up/gate [1024x256]x[256x684]", 1024, 256, 684},
                               {"MLP down [1024x684]x[684x256]", 1024, 684, 256},
                               {"head [1024x256]x[256x4096]", 1024, 256, 4096},
                               {"head dW [256x1024]x[1024x4096]", 256, 1024, 4096}};
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  fmt::print("{:<44} {:>12} {:>14} {:>16}\n", "shape (GFLOP/s, median)", "1 thread", "Tessera split", "OpenBLAS threads");
  for (const Shape& s : shapes) {
    std::vector<float> a(static_cast<size_t>(s.m * s.k)), b(static_cast<size_t>(s.k * s.n)),
        c(static_cast<size_t>(s.m * s.n));
    for (float& x : a) x = u(rng);
    for (float& x : b) x = u(rng);
    std::vector<int64_t> ls{s.m, s.k}, rs{s.k, s.n};
    exec::ContractionPlan plan = exec::plan_contraction(ls, rs, ir::DotDims{{}, {}, {1}, {0}});
    auto time = [&](int64_t limit, int blas_threads) {
      support::set_thread_limit(limit);
      openblas_set_num_threads(blas_threads);
      auto t0 = std::chrono::steady_clock::now();
      exec::run_contraction(plan, a.data(), b.data(), c.data(), false);
      double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return 2.0 * double(s.m) * double(s.n) * double(s.k) / sec * 1e-9;
    };
    for (int w = 0; w < 3; ++w) time(2, 1), time(1, 2);  // warm both paths (OpenBLAS starts its threads)
    std::vector<double> one, split, blas;
    for (int r = 0; r < reps; ++r) {
      one.push_back(time(1, 1));
      split.push_back(time(2, 1));
      blas.push_back(time(1, 2));
    }
    fmt::print("{:<44} {:>12.1f} {:>14.1f} {:>16.1f}\n", s.what, median(one), median(split), median(blas));
  }
  openblas_set_num_threads(1);
  support::set_thread_limit(0);
  return 0;
}
