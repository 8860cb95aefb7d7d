// The fast kernels (src/exec) against the reference interpreter's, on the gradient step of an
// 8-layer residual MLP (x f32[128,64], tanh(x·w) + x per layer, sum of squares): one host device,
// Session with fast_kernels on and off, in one run. Also OpenBLAS's SGEMM on the same 128x64x64
// products, as the ceiling of the contraction part.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include "autodiff/reverse.h"
#include "ir/builder.h"
#include "runtime/session.h"

namespace {

using namespace tessera;
using namespace tessera::ir;

struct Step {
  Module m;
  runtime::CompiledProgram program;
  std::vector<Literal> inputs;
  explicit Step(bool fast) : m("mlp") {
    m.add_mesh(Mesh{"m", {{"data", 1}}, {}});
    Function& loss = build_function(m, "loss", [](FunctionBuilder& f) {
      Tensor x = f.param(f32({128, 64}));
      std::vector<Tensor> ws;
      for (int i = 0; i < 8; ++i) ws.push_back(f.param(f32({64, 64})));
      Tensor h = x;
      for (const Tensor& w : ws) h = tanh(matmul(h, w)) + h;
      return sum(h * h);
    });
    autodiff::ReverseOptions o;
    o.return_value = true;
    autodiff::reverse(m, loss, o);
    runtime::SessionOptions so;
    so.fast_kernels = fast;
    session = std::make_unique<runtime::Session>(runtime::Session::host(1, so));
    program = session->compile(m, "loss_grad");
    for (size_t i = 0; i < loss.num_parameters(); ++i) inputs.push_back(Literal::splat(loss.parameter(i)->type(), 0.01));
  }
  std::unique_ptr<runtime::Session> session;
};

void BM_GradientStep(benchmark::State& state) {
  Step step(state.range(0) != 0);
  runtime::ShardedProgram sp = step.session->sharded_program(step.program);
  std::vector<runtime::ShardedBuffer> bufs;
  for (size_t i = 0; i < step.inputs.size(); ++i) bufs.push_back(sp.stage(i, step.inputs[i]));
  for (auto _ : state) benchmark::DoNotOptimize(sp.execute(bufs));
  state.SetLabel(state.range(0) ? "fast kernels" : "reference kernels");
  // 8 layers x (forward + 2 backward) x 2*128*64*64 flops
  state.counters["GFLOP/s"] = benchmark::Counter(8.0 * 3 * 2 * 128 * 64 * 64 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_GradientStep)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Sgemm(benchmark::State& state) {
  std::vector<float> a(128 * 64, 0.01f), b(64 * 64, 0.01f), c(128 * 64);
  openblas_set_num_threads(1);
  for (auto _ : state)
    for (int i = 0; i < 24; ++i)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 128, 64, 64, 1.0f, a.data(), 64, b.data(), 64, 0.0f, c.data(), 64);
  state.SetLabel("the step's 24 products alone, OpenBLAS");
  state.counters["GFLOP/s"] = benchmark::Counter(24.0 * 2 * 128 * 64 * 64 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Sgemm)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
