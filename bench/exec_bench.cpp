// The fast kernels (src/exec) against the reference interpreter's, on the gradient step of an
// 8-layer residual MLP (x f32[128,64], tanh(x·w) + x per layer, sum of squares): one host device,
// Session with fast_kernels on and off, in one run. Also OpenBLAS's SGEMM on the same 128x64x64
// products, as the ceiling of the contraction part.
//
// Dispatch: a chain of 10,000 tiny element-wise ops (f32[4], multiply and add alternating), so
// nearly all the time is per-op overhead: the interpreter walking the program (interp::evaluate
// with the fast kernels) against the exec::Executable compiled once, called directly and through
// a one-device Session, with fusion off (every op a step) and on (the planner registered, at its
// default minimum: nothing this small is fused, but the plan is made). Reported as ns per op.
//
// Also two fused loops of the larger training step on their own: the norm weights' column sums
// (BM_NormWeightGradient) and AdamW's update (BM_AdamW, against memcpy of the same bytes).
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "autodiff/reverse.h"
#include "exec/executable.h"
#include "exec/fusion.h"
#include "ir/builder.h"
#include "nn/optimizer.h"
#include "runtime/session.h"
#include "support/threads.h"

namespace {

using namespace tessera;
using namespace tessera::ir;

struct Step {
  Module m;
  runtime::CompiledProgram program;
  std::vector<Literal> inputs;
  explicit Step(bool fast, bool executable = true) : m("mlp") {
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
    so.executable = executable;
    session = std::make_unique<runtime::Session>(runtime::Session::host(1, so));
    program = session->compile(m, "loss_grad");
    for (size_t i = 0; i < loss.num_parameters(); ++i) inputs.push_back(Literal::splat(loss.parameter(i)->type(), 0.01));
  }
  std::unique_ptr<runtime::Session> session;
};

// Arg: 1 fast kernels, 0 reference kernels, 2 fast kernels with the interpreter walking the program
// on every call (SessionOptions::executable off).
void BM_GradientStep(benchmark::State& state) {
  Step step(state.range(0) != 0, state.range(0) != 2);
  runtime::ShardedProgram sp = step.session->sharded_program(step.program);
  std::vector<runtime::ShardedBuffer> bufs;
  for (size_t i = 0; i < step.inputs.size(); ++i) bufs.push_back(sp.stage(i, step.inputs[i]));
  for (auto _ : state) benchmark::DoNotOptimize(sp.execute(bufs));
  state.SetLabel(state.range(0) == 2 ? "fast kernels, interpreter" : state.range(0) ? "fast kernels" : "reference kernels");
  // 8 layers x (forward + 2 backward) x 2*128*64*64 flops
  state.counters["GFLOP/s"] = benchmark::Counter(8.0 * 3 * 2 * 128 * 64 * 64 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_GradientStep)->Arg(1)->Arg(2)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();

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

constexpr int kChainOps = 10000;

struct Chain {
  Module m{"chain"};
  std::vector<Literal> inputs;
  Chain() {
    m.add_mesh(Mesh{"m", {{"data", 1}}, {}});
    build_function(m, "f", [](FunctionBuilder& f) {
      Tensor x = f.param(f32({4}));
      Tensor a = f.param(f32({4}));
      Tensor b = f.param(f32({4}));
      for (int i = 0; i < kChainOps / 2; ++i) x = x * a + b;
      return x;
    });
    inputs = {Literal::splat(f32({4}), 1.0), Literal::splat(f32({4}), 0.999), Literal::splat(f32({4}), 0.001)};
  }
};

// Times the loop of `state` over `body` and reports the wall-clock nanoseconds per op of the chain.
template <typename F>
void per_op(benchmark::State& state, const char* runner, bool fusion, F&& body) {
  auto start = std::chrono::steady_clock::now();
  for (auto _ : state) body();
  double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  state.SetLabel(std::string(runner) + (fusion ? ", fusion on" : ", fusion off"));
  state.counters["ns_per_op"] = ns / static_cast<double>(state.iterations()) / kChainOps;
}

// Arg 0: 0 the interpreter, 1 the executable; arg 1: fusion off / on.
void BM_Dispatch(benchmark::State& state) {
  bool executable = state.range(0) != 0, fusion = state.range(1) != 0;
  interp::set_fusion_planner(fusion ? &exec::plan_fusion : nullptr);
  Chain c;
  const Function& fn = *c.m.find_function("f");
  if (executable) {
    std::shared_ptr<const exec::Executable> e = exec::Executable::compile(fn, exec::CompileOptions{&c.m});
    per_op(state, "executable", fusion, [&] { benchmark::DoNotOptimize(e->run(c.inputs)); });
  } else {
    interp::Options o;
    o.accelerate = exec::accelerate;
    per_op(state, "interpreter", fusion, [&] { benchmark::DoNotOptimize(interp::evaluate(fn, c.inputs, o)); });
  }
  interp::set_fusion_planner(&exec::plan_fusion);
}
BENCHMARK(BM_Dispatch)->Args({0, 0})->Args({1, 0})->Args({0, 1})->Args({1, 1})->Unit(benchmark::kMillisecond)->UseRealTime();

// The same chain through a one-device Session (a device thread per call, inputs staged once, the
// outputs refilled), with SessionOptions::executable off (the interpreter per call) and on (the
// cached executable and the program's execution plan).
void BM_DispatchSession(benchmark::State& state) {
  bool executable = state.range(0) != 0, fusion = state.range(1) != 0;
  interp::set_fusion_planner(fusion ? &exec::plan_fusion : nullptr);
  Chain c;
  runtime::SessionOptions so;
  so.executable = executable;
  runtime::Session session = runtime::Session::host(1, so);
  runtime::ShardedProgram sp = session.sharded_program(session.compile(c.m, "f"));
  std::vector<runtime::ShardedBuffer> bufs;
  for (size_t i = 0; i < c.inputs.size(); ++i) bufs.push_back(sp.stage(i, c.inputs[i]));
  std::vector<runtime::ShardedBuffer> out;  // refilled by each run (the steady state of a loop)
  per_op(state, executable ? "Session, executable" : "Session, interpreter", fusion, [&] {
    sp.execute(bufs, out);
    benchmark::DoNotOptimize(out.data());
  });
  interp::set_fusion_planner(&exec::plan_fusion);
}
BENCHMARK(BM_DispatchSession)->Args({0, 0})->Args({1, 0})->Args({0, 1})->Args({1, 1})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

// The larger training step's norm-weight gradient: a column sum over 1,024 rows of 256 of a
// product computed in its loop (dy * x * a row's scale), on a thread budget of 1 and 2 (arg), in
// a run context (the executable's planned run, as the training step's). Microseconds per call.
void BM_NormWeightGradient(benchmark::State& state) {
  interp::set_fusion_planner(&exec::plan_fusion);
  Module m("norm");
  const Function& fn = build_function(m, "f", [](FunctionBuilder& f) {
    Tensor dy = f.param(f32({1024, 256})), x = f.param(f32({1024, 256})), s = f.param(f32({1024}));
    Tensor g = reduce_sum(dy * x * broadcast_in_dim(s, {1024, 256}, {0}), {0});
    for (int i = 0; i < 8; ++i) g = g * 0.5 + g;  // a block long enough to be planned (kMinPlannedBlockOps)
    return g;
  });
  std::vector<Literal> in = {Literal::splat(f32({1024, 256}), 0.5), Literal::splat(f32({1024, 256}), 1.5),
                             Literal::splat(f32({1024}), 0.25)};
  std::shared_ptr<const exec::Executable> e = exec::Executable::compile(fn, exec::CompileOptions{&m});
  std::unique_ptr<exec::RunContext> context = e->make_context();
  support::set_thread_limit(state.range(0));
  for (auto _ : state) {
    std::vector<Literal> lent;  // views: the arguments are read in place, not copied
    for (Literal& x : in) lent.push_back(Literal::view(x.type(), x.bytes().data()));
    benchmark::DoNotOptimize(e->run(std::move(lent), interp::Options{}, *context));
  }
  support::set_thread_limit(0);
  state.SetLabel(fmt::format("{} thread(s)", state.range(0)));
}
BENCHMARK(BM_NormWeightGradient)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

// AdamW's update of one [1024, 1024] parameter (nn::adamw_update: p, m, v updated from g), as the
// training step runs it: results computed in their donors' buffers (the arguments' own), so a
// run moves each byte once. Arg: the thread budget. GB/s counts 4 reads and 3 writes per element;
// memcpy_GB/s is one thread's memcpy of the same bytes, measured after the runs.
void BM_AdamW(benchmark::State& state) {
  interp::set_fusion_planner(&exec::plan_fusion);
  const std::vector<int64_t> shape{1024, 1024};
  Module m("adamw");
  const nn::AdamW o;
  const Function& fn = build_function(m, "f", [&](FunctionBuilder& f) -> std::vector<Tensor> {
    Tensor p = f.param(f32(shape)), mo = f.param(f32(shape)), v = f.param(f32(shape)), g = f.param(f32(shape));
    nn::AdamWState next = nn::adamw_update(o, {p, mo, v}, g, f.param(f32({3})), true);
    return {next.p, next.m, next.v};
  });
  std::vector<Literal> args = {Literal::splat(f32(shape), 0.5), Literal::splat(f32(shape), 0.01),
                               Literal::splat(f32(shape), 0.001), Literal::splat(f32(shape), 0.02),
                               nn::adamw_scalars_literal(o, 1, o.lr, ElementType::f32)};
  std::shared_ptr<const exec::Executable> e = exec::Executable::compile(fn, exec::CompileOptions{&m});
  std::unique_ptr<exec::RunContext> context = e->make_context();
  support::set_thread_limit(state.range(0));
  std::vector<uint8_t> lent = {0, 0, 0, 1, 1};
  std::vector<Literal> results;
  for (auto _ : state) {
    e->run_into(args, lent, results, interp::Options{}, *context);
    for (size_t k = 0; k < 3; ++k) args[k] = std::move(results[k]);
  }
  support::set_thread_limit(0);
  // One thread's memcpy moving the same 28 MiB (14 read, 14 written), for the ceiling.
  std::vector<float> src(7 * 512 * 1024, 1.0f), dst(src.size());
  std::vector<double> copies;
  for (int r = 0; r < 9; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), src.data(), src.size() * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
    copies.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(copies.begin(), copies.end());
  state.counters["GB/s"] = benchmark::Counter(7.0 * 4 * 1024 * 1024, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["memcpy_GB/s"] = 2.0 * 4 * static_cast<double>(src.size()) / copies[4] * 1e-9;
  state.SetLabel(fmt::format("{} thread(s)", state.range(0)));
}
BENCHMARK(BM_AdamW)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

BENCHMARK_MAIN();
