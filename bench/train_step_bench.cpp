// Tessera's side of bench/train_vs_torch.sh: tokens/s of one AdamW training step of the CausalLM
// (nn::capture, data parallel when on 2 devices), with parameters and moments kept on the devices
// (sharded_program) and only the batch staged each step: the median over `steps` timed steps after
// three warm-up steps. Prints one line per run: tessera <config> <devices> <tokens/s> <threads>,
// each device count with the whole thread budget (support/threads.h: TESSERA_THREADS, or the
// cores), and, when the budget is more than one thread, first one device on one thread (the
// baseline of the multi-core rows).
//
// Usage: train_step_bench CONFIG_NAME VOCAB D_MODEL LAYERS HEADS KV_HEADS FFN BATCH SEQ STEPS
// With PROFILE=1 in the environment, also prints the time per op kind of the timed steps (stderr;
// PROFILE=2: per op kind and result type);
// DEVICES=1 (or 2) runs only that device count; DUMP=FILE writes the captured module (the step's
// StableHLO, before partitioning) to FILE. Each run also prints (stderr) the median CPU time
// and minor page faults of the process per step, which a busy machine disturbs less than wall time,
// and the step's contraction GFLOP/s (FLOPs counted from its dot_generals) against the best
// single-core SGEMM rate of the libraries this build links, measured first in the same process.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <random>

#include <sys/resource.h>

#include "exec/flops.h"
#include "exec/gemm.h"
#include "nn/capture.h"
#include "nn/plan.h"
#include "runtime/session.h"
#include "stablehlo/printer.h"
#include "support/threads.h"

using namespace tessera;

namespace {

int run(int argc, char** argv) {
  if (argc != 11) {
    fmt::print(stderr, "usage: {} NAME VOCAB D_MODEL LAYERS HEADS KV_HEADS FFN BATCH SEQ STEPS\n", argv[0]);
    return 2;
  }
  std::string name = argv[1];
  nn::Config c;
  c.vocab = std::atol(argv[2]);
  c.d_model = std::atol(argv[3]);
  c.layers = std::atol(argv[4]);
  c.heads = std::atol(argv[5]);
  c.kv_heads = std::atol(argv[6]);
  c.ffn = std::atol(argv[7]);
  c.batch = std::atol(argv[8]);
  c.seq = std::atol(argv[9]);
  int steps = std::atoi(argv[10]);
  nn::CausalLM model(c);
  std::string profile_env = std::getenv("PROFILE") ? std::getenv("PROFILE") : "";
  bool profile = profile_env == "1" || profile_env == "2";
  int64_t only = std::getenv("DEVICES") ? std::atol(std::getenv("DEVICES")) : 0;
  int64_t budget = support::thread_limit();
  double best_sgemm = 0;
  for (exec::GemmLibrary lib : exec::sgemm_libraries()) {
    double rate = exec::measure_sgemm_gflops(1024, 5, 0.1, lib);
    fmt::print(stderr, "# {} single-core SGEMM 1024x1024x1024: {:.1f} GFLOP/s{}\n", exec::library_name(lib), rate,
               lib == exec::sgemm_library() ? " (the kernels' library)" : "");
    best_sgemm = std::max(best_sgemm, rate);
  }
  // (devices, thread limit): 0 is the whole budget.
  std::vector<std::pair<int64_t, int64_t>> runs;
  if (budget > 1 && only <= 1) runs.emplace_back(1, 1);
  for (int64_t devices : {1, 2})
    if (only == 0 || devices == only) runs.emplace_back(devices, 0);
  for (auto [devices, limit] : runs) {
    support::set_thread_limit(limit);
    interp::Profile prof;
    prof.by_type = profile_env == "2";
    runtime::SessionOptions so;
    if (profile) so.profile = &prof;
    ir::Module m("bench");
    nn::TrainingStep ts = nn::TrainingStep{model}.with(nn::AdamW{});
    if (devices > 1) {
      // PLAN=fsdp: parameters, gradients and AdamW's moments split over the devices; PLAN=zero1:
      // parameters whole, gradients and moments split (default: data parallel, every device
      // updating whole replicas).
      ir::Mesh mesh{"mesh", {{"data", devices}}, {}};
      std::string plan = std::getenv("PLAN") ? std::getenv("PLAN") : "dp";
      if (plan != "dp" && plan != "fsdp" && plan != "zero1")
        throw std::runtime_error(fmt::format("PLAN={}: expected dp, fsdp or zero1", plan));
      ts = ts.sharded(plan == "fsdp"    ? nn::fsdp(mesh, "data")
                      : plan == "zero1" ? nn::zero1(mesh, "data")
                                        : nn::data_parallel(mesh, "data"));
    }
    nn::Programs p = nn::capture(m, ts);
    if (const char* path = std::getenv("DUMP")) {  // the captured module, to read what the step runs
      std::ofstream out(path);
      out << stablehlo::print(m);
      if (!out) throw std::runtime_error(fmt::format("DUMP: cannot write {}", path));
    }
    runtime::Session session = runtime::Session::host(devices, so);
    runtime::ShardedProgram sp = session.sharded_program(session.compile(m, p.train_step), p.output_aliases);
    std::mt19937 rng(1);
    std::vector<int64_t> tok(static_cast<size_t>(c.batch * c.seq));
    for (auto& t : tok) t = static_cast<int64_t>(rng() % static_cast<uint32_t>(c.vocab));
    ir::Literal tokens = ir::Literal::from_ints(ir::i32({c.batch, c.seq}), tok);
    std::vector<ir::Literal> in = nn::train_step_inputs(p, nn::init_parameters(c, 1), 1, tokens, tokens);
    std::vector<runtime::ShardedBuffer> state;
    for (size_t i = 0; i < in.size(); ++i) state.push_back(sp.stage(i, in[i]));
    std::vector<double> times, cpu, faults;
    auto usage = [] {
      rusage u{};
      getrusage(RUSAGE_SELF, &u);
      auto sec = [](timeval t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
      return std::pair<double, double>{sec(u.ru_utime) + sec(u.ru_stime), double(u.ru_minflt)};
    };
    std::vector<runtime::ShardedBuffer> out;  // kept: refilled by each step (the state comes back in it)
    for (int s = 0; s < steps + 3; ++s) {
      auto t0 = std::chrono::steady_clock::now();
      auto u0 = usage();
      state[p.tokens_input()] = sp.stage(p.tokens_input(), tokens);
      sp.execute(state, out);
      for (size_t i = 0; i + 1 < out.size(); ++i) state[i] = std::move(out[i + 1]);
      double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      auto u1 = usage();
      if (s >= 3) {
        times.push_back(t);
        cpu.push_back(u1.first - u0.first);
        faults.push_back(u1.second - u0.second);
      }
      if (s == 2 && profile) prof.by_op.clear();  // only the timed steps
    }
    if (profile) fmt::print(stderr, "{} devices, {} steps:\n{}", devices, steps, prof.to_string());
    std::sort(times.begin(), times.end());
    std::sort(cpu.begin(), cpu.end());
    std::sort(faults.begin(), faults.end());
    int64_t threads = support::thread_limit();
    double step = times[times.size() / 2];
    double gflops = exec::dot_flops(m, *m.find_function(p.train_step)) / step * 1e-9;
    fmt::print(stderr, "# {} {} device(s), {} thread(s): median step {:.3f} s wall, {:.3f} s cpu, {:.0f} page faults\n",
               name, devices, threads, step, cpu[cpu.size() / 2], faults[faults.size() / 2]);
    fmt::print(stderr, "# {} {} device(s), {} thread(s): {:.1f} contraction GFLOP/s, {:.0f} % of the best single-core SGEMM "
               "({:.1f}) per thread\n", name, devices, threads, gflops, 100 * gflops / double(threads) / best_sgemm, best_sgemm);
    fmt::print("tessera {} {} {:.0f} {}\n", name, devices, double(c.batch * c.seq) / times[times.size() / 2], threads);
    // The step's contraction FLOPs and the best single-core SGEMM rate, for the script's ceiling
    // line (what any runner's tokens/s would be with its contractions at that rate and nothing else).
    if (devices == 1 && threads == 1)
      fmt::print("flops {} {:.0f} {:.1f}\n", name, exec::dot_flops(m, *m.find_function(p.train_step)), best_sgemm);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

// A bad configuration or environment setting (TESSERA_THREADS, TESSERA_SPIN_US, ...) is a message
// and exit 1, as in the tessera command, not an abort.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
