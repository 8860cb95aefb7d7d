// Tessera's side of bench/train_vs_torch.sh: tokens/s of one AdamW training step of the CausalLM
// (nn::capture, data parallel when on 2 devices), with parameters and moments kept on the devices
// (sharded_program) and only the batch staged each step: the median over `steps` timed steps after
// three warm-up steps. Prints one line per run: tessera <config> <devices> <tokens/s>.
//
// Usage: train_step_bench CONFIG_NAME VOCAB D_MODEL LAYERS HEADS KV_HEADS FFN BATCH SEQ STEPS
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>

#include "nn/capture.h"
#include "nn/plan.h"
#include "runtime/session.h"

using namespace tessera;

int main(int argc, char** argv) {
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
  for (int64_t devices : {1, 2}) {
    ir::Module m("bench");
    nn::TrainingStep ts = nn::TrainingStep{model}.with(nn::AdamW{});
    if (devices > 1) ts = ts.sharded(nn::data_parallel(ir::Mesh{"mesh", {{"data", devices}}, {}}, "data"));
    nn::Programs p = nn::capture(m, ts);
    runtime::Session session = runtime::Session::host(devices);
    runtime::ShardedProgram sp = session.sharded_program(session.compile(m, p.train_step), p.output_aliases);
    std::mt19937 rng(1);
    std::vector<int64_t> tok(static_cast<size_t>(c.batch * c.seq));
    for (auto& t : tok) t = static_cast<int64_t>(rng() % static_cast<uint32_t>(c.vocab));
    ir::Literal tokens = ir::Literal::from_ints(ir::i32({c.batch, c.seq}), tok);
    std::vector<ir::Literal> in = nn::train_step_inputs(p, nn::init_parameters(c, 1), 1, tokens, tokens);
    std::vector<runtime::ShardedBuffer> state;
    for (size_t i = 0; i < in.size(); ++i) state.push_back(sp.stage(i, in[i]));
    std::vector<double> times;
    for (int s = 0; s < steps + 3; ++s) {
      auto t0 = std::chrono::steady_clock::now();
      state[p.tokens_input()] = sp.stage(p.tokens_input(), tokens);
      std::vector<runtime::ShardedBuffer> out = sp.execute(state);
      for (size_t i = 0; i + 1 < out.size(); ++i) state[i] = out[i + 1];
      double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s >= 3) times.push_back(t);
    }
    std::sort(times.begin(), times.end());
    fmt::print("tessera {} {} {:.0f}\n", name, devices, double(c.batch * c.seq) / times[times.size() / 2]);
    std::fflush(stdout);
  }
  return 0;
}
