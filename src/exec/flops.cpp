// Contraction FLOPs of a program and the measured SGEMM rate (flops.h).
#include "exec/flops.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "exec/gemm.h"
#include "support/error.h"

namespace tessera::exec {

namespace {

double block_flops(const ir::Module& module, const ir::Block& block, int depth) {
  if (depth >= 64) support::fail("dot_flops: func.call nested more than 64 deep (a recursive call?)");
  double total = 0;
  for (const auto& op : block.ops()) {
    for (const auto& region : op->regions()) total += block_flops(module, *region, depth);
    if (op->kind() == ir::OpKind::Call)
      if (const auto* callee = op->attrs().find<std::string>("callee"))
        if (const ir::Function* f = module.find_function(*callee)) total += block_flops(module, f->body(), depth + 1);
    if (op->kind() != ir::OpKind::DotGeneral) continue;
    const auto& dims = op->attrs().get<ir::DotDims>("dot_dimension_numbers");
    const auto& lhs = op->operand(0)->type().shape;
    double contracted = 1;
    for (int64_t d : dims.lhs_contracting) contracted *= double(lhs[static_cast<size_t>(d)]);
    double out = 1;
    for (int64_t s : op->result(0)->type().shape) out *= double(s);
    total += 2 * out * contracted;
  }
  return total;
}

}  // namespace

double dot_flops(const ir::Module& module, const ir::Function& fn) { return block_flops(module, fn.body(), 0); }

double measure_sgemm_gflops(int64_t n, int reps, double min_seconds, GemmLibrary library) {
  const auto size = static_cast<size_t>(n * n);
  std::vector<float> a(size), b(size), c(size);
  for (size_t i = 0; i < size; ++i) {  // small values of both signs: no overflow, no denormals
    a[i] = float(int(i % 7) - 3) * 0.25f;
    b[i] = float(int(i % 5) - 2) * 0.5f;
  }
  auto gemm = [&] { sgemm_on(library, false, false, n, n, n, a.data(), n, b.data(), n, 0.0f, c.data(), n); };
  gemm();  // warm: first touch of the buffers and of the library's own
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    int64_t calls = 0;
    double seconds = 0;
    do {
      gemm();
      ++calls;
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (seconds < min_seconds);
    rates.push_back(2.0 * double(n) * double(n) * double(n) * double(calls) / seconds * 1e-9);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace tessera::exec
