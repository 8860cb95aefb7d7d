// `tessera generate` (see generate_cmd.h): the checkpoint read under the plan, @prefill and @decode
// compiled once, then the decode loop with the caches kept on the devices: nn::ContinuousBatcher's
// over a paged cache, or a plain loop over a contiguous one (every prompt in the one batch).
#include "tools/tessera/generate_cmd.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <map>
#include <optional>
#include <random>

#include "ir/element_type.h"
#include "nn/batching.h"
#include "nn/generate.h"
#include "nn/model.h"
#include "nn/plan.h"
#include "runtime/checkpoint.h"
#include "runtime/session.h"
#include "support/error.h"
#include "tools/tessera/train_options.h"

namespace tessera::tools {

namespace {

using ir::Literal;
using support::fail;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

nn::ShardingPlan plan_of(const std::string& name, int64_t devices, const nn::Config& cfg) {
  if (name == "tp") return nn::tensor_parallel(ir::Mesh{"mesh", {{"model", devices}}, {}}, "model");
  if (name == "dp") return nn::data_parallel(ir::Mesh{"mesh", {{"data", devices}}, {}}, "data");
  if (name == "ctx") return nn::context_parallel(ir::Mesh{"mesh", {{"ctx", devices}}, {}}, "ctx");
  if (name == "ep") {
    if (cfg.experts == 0) fail("--plan ep: expert parallelism needs an MoE checkpoint (`tessera train --moe E,k`)");
    if (cfg.experts % devices != 0)
      fail("--plan ep: the checkpoint's {} experts do not split evenly over {} devices", cfg.experts, devices);
    return nn::expert_parallel(ir::Mesh{"mesh", {{"expert", devices}}, {}}, "expert");
  }
  fail("--plan {}: expected tp (heads and caches split over the devices), dp (the prompts split), ctx (the cache "
       "split by position) or ep (an MoE model's experts and the prompts split)", name);
}

// A byte as text: printable ASCII and newlines as they are, anything else as \xNN.
std::string printable(const std::vector<int64_t>& tokens) {
  std::string s;
  for (int64_t t : tokens) {
    if ((t >= 32 && t < 127) || t == '\n') s.push_back(char(t));
    else s += fmt::format("\\x{:02x}", t);
  }
  return s;
}

// nn/batching.h's engine on the devices: the parameters staged once, the pools donated to every
// prefill and decode and kept as their results; only logits come back.
class DeviceEngine : public nn::GenerationEngine {
 public:
  DeviceEngine(const nn::GenerationPrograms& g, const runtime::ShardedProgram& prefill,
               const runtime::ShardedProgram& decode, std::vector<runtime::ShardedBuffer> params,
               std::vector<runtime::ShardedBuffer> pools)
      : g_(g), prefill_(prefill), decode_(decode), in_(std::move(params)) {
    in_.insert(in_.end(), std::make_move_iterator(pools.begin()), std::make_move_iterator(pools.end()));
  }
  Literal prefill(const Literal& tokens, const Literal& slots) override {
    return run(prefill_, g_.prefill_tokens_input(), {&tokens, &slots});
  }
  Literal decode(const Literal& tokens, const Literal& pos, const Literal& slot, const Literal& table) override {
    return run(decode_, g_.decode_tokens_input(), {&tokens, &pos, &slot, &table});
  }

 private:
  Literal run(const runtime::ShardedProgram& p, size_t first, std::initializer_list<const Literal*> rest) {
    in_.resize(first);
    for (const Literal* x : rest) in_.push_back(p.stage(in_.size(), *x));
    p.execute(in_, out_);
    for (size_t i = 0; i < g_.num_caches(); ++i) in_[g_.num_parameters() + i] = std::move(out_[1 + i]);
    return p.fetch(out_[0]);
  }
  const nn::GenerationPrograms& g_;
  const runtime::ShardedProgram &prefill_, &decode_;
  std::vector<runtime::ShardedBuffer> in_, out_;
};

}  // namespace

int generate_command(const GenerateCommand& c, std::ostream& out) {
  if (c.resume.empty()) fail("--resume: name the checkpoint to generate from (a `tessera train --save` directory)");
  if (c.prompts.empty()) fail("--prompt: give at least one prompt");
  for (size_t i = 0; i < c.prompts.size(); ++i)
    if (c.prompts[i].empty()) fail("--prompt number {} is empty: a prompt needs at least one byte", i + 1);
  if (c.tokens < 1) fail("--tokens {}: expected a positive number", c.tokens);
  if (c.devices < 1) fail("--devices {}: expected a positive number", c.devices);
  if (!(c.temperature >= 0) || !std::isfinite(c.temperature))
    fail("--temperature {}: expected a non-negative number (0: greedy)", c.temperature);
  if (c.top_k < 0) fail("--top-k {}: expected 0 (every token) or a positive number", c.top_k);

  std::optional<runtime::CheckpointReader> reader;
  try {
    reader.emplace(c.resume);
  } catch (const support::UserError& e) {
    fail("--resume {}: {}", c.resume, e.what());
  }
  nn::Config cfg = config_of_metadata(c.resume, reader->metadata());
  if (cfg.vocab != 256) fail("--resume {}: the model's vocabulary is {}, not the 256 bytes of `tessera train`", c.resume, cfg.vocab);
  nn::CausalLM model(cfg);
  for (const nn::ParamSpec& p : model.parameters()) {
    if (!reader->has(p.name)) fail("--resume {}: the checkpoint has no parameter '{}'", c.resume, p.name);
    if (reader->type(p.name) != ir::Type(cfg.dtype, p.shape))
      fail("--resume {}: parameter '{}' is {} in the checkpoint, the model needs {}", c.resume, p.name,
           ir::to_string(reader->type(p.name)), ir::to_string(ir::Type(cfg.dtype, p.shape)));
  }

  const int64_t n = int64_t(c.prompts.size());
  int64_t longest = 0;
  for (const std::string& p : c.prompts) longest = std::max<int64_t>(longest, int64_t(p.size()));
  if (c.block_size < -1) fail("--block-size {}: expected 0 (a contiguous cache) or a positive number", c.block_size);
  if (c.blocks < 0) fail("--blocks {}: expected a positive number (0: as many as the sequences need)", c.blocks);
  if (c.max_batch < 0) fail("--max-batch {}: expected a positive number (0: one slot per prompt)", c.max_batch);
  if (c.prefill_rows < 0) fail("--prefill-rows {}: expected a positive number", c.prefill_rows);
  auto bytes_of = [](const std::string& s) {
    std::vector<int64_t> t;
    for (char ch : s) t.push_back(static_cast<unsigned char>(ch));
    return t;
  };
  nn::StopCondition stop;
  for (int64_t b : c.stop_bytes) {
    if (b < 0 || b > 255) fail("--stop-byte {}: expected a byte, 0 to 255", b);
    stop.tokens.push_back(b);
  }
  for (size_t i = 0; i < c.stops.size(); ++i) {
    if (c.stops[i].empty()) fail("--stop number {} is empty: a stop string needs at least one byte", i + 1);
    stop.sequences.push_back(bytes_of(c.stops[i]));
  }
  const bool ctx = c.plan == "ctx";
  const int64_t block_size = c.block_size >= 0 ? c.block_size : c.plan == "dp" || c.plan == "ep" || ctx ? 0 : 16;
  const bool paged = block_size > 0;
  const int64_t B = c.max_batch > 0 ? std::min(c.max_batch, n) : n;  // decode slots
  nn::GenerationShape shape{B, longest, longest + c.tokens};
  // ctx splits the cache's positions evenly over the devices: rounded up to a multiple of them.
  if (ctx) shape.max_len = (shape.max_len + c.devices - 1) / c.devices * c.devices;
  if (paged) {
    shape.block_size = block_size;
    shape.prefill_into_pools = true;
    shape.prefill_batch = c.prefill_rows > 0 ? c.prefill_rows : B == n ? B : 1;
    // Each slot's worst case: positions 0 .. longest + tokens - 2 (the last token is never fed back).
    shape.num_blocks = c.blocks > 0 ? c.blocks : 1 + B * ((longest + c.tokens - 1 + block_size - 1) / block_size);
  } else {
    if (c.blocks > 0) fail("--blocks {}: a contiguous cache (--block-size 0) has no blocks", c.blocks);
    if (B < n)
      fail("--max-batch {}: {} prompts in fewer slots need a paged cache (--block-size > 0, not under dp, ep or "
           "ctx), whose freed slots and blocks the waiting prompts take", c.max_batch, n);
    if (c.prefill_rows > 0) fail("--prefill-rows {}: a contiguous cache is prefilled in one batch", c.prefill_rows);
  }
  runtime::Session session = runtime::Session::host(c.devices);
  nn::ShardingPlan plan = plan_of(c.plan, c.devices, cfg);
  ir::Module m("generate");
  nn::GenerationPrograms g;
  try {
    g = nn::capture_generation(m, model, shape, plan);
  } catch (const support::UserError& e) {
    fail("--plan {} on {} devices: {}", c.plan, c.devices, e.what());
  }
  Clock::time_point t0 = Clock::now();
  runtime::ShardedProgram prefill = session.sharded_program(session.compile(m, g.prefill), g.prefill_aliases);
  runtime::ShardedProgram decode = session.sharded_program(session.compile(m, g.decode), g.decode_aliases);
  GenerationRun run;
  run.compile_s = seconds_since(t0);

  // The parameters, each device's pieces read from the checkpoint; both programs lay them out alike.
  const size_t np = g.num_parameters();
  std::vector<runtime::ShardedBuffer> inputs;
  for (size_t i = 0; i < np; ++i) {
    const std::string& name = g.parameters[i].name;
    inputs.push_back(prefill.stage_pieces(i, [&](const std::vector<int64_t>& start, const std::vector<int64_t>& extent) {
      try {
        return reader->read(name, start, extent);
      } catch (const support::UserError& e) {
        fail("--resume {}: {}", c.resume, e.what());
      }
    }));
  }
  reader.reset();

  const nn::Sampling sampling{c.temperature, c.top_k};
  std::vector<nn::Completion> done;
  int64_t peak_blocks = 0;
  if (paged) {
    // Empty pools on the devices, then the scheduler (nn/batching.h) runs every prompt through the slots.
    Literal empty(ir::Type(cfg.compute_type(), {shape.num_blocks, shape.block_size, cfg.kv_heads, cfg.head_dim()}));
    std::vector<runtime::ShardedBuffer> pools;
    for (size_t i = 0; i < g.num_caches(); ++i) pools.push_back(prefill.stage(np + i, empty));
    DeviceEngine engine(g, prefill, decode, std::move(inputs), std::move(pools));
    nn::ContinuousBatcher batcher(g, engine, sampling, c.seed, stop);
    std::vector<nn::Request> requests;
    for (const std::string& p : c.prompts) requests.push_back({bytes_of(p), c.tokens});
    try {
      done = batcher.run(requests);
    } catch (const support::UserError& e) {
      fail("--blocks {}: {}", shape.num_blocks, e.what());
    }
    const nn::BatchingStats& st = batcher.stats();
    run.prefill_s = st.prefill_s, run.decode_s = st.decode_s, run.decode_steps = st.decode_steps;
    run.decoded = st.decoded_tokens, run.prefills = st.prefills, peak_blocks = st.peak_blocks;
  } else {
    // Contiguous: every prompt in the one batch, prefilled together; a finished sequence's row
    // runs on until all are finished, its tokens ignored. Each sequence samples with its own
    // generator seeded as the scheduler's, so both caches give the same samples.
    done.resize(size_t(B));
    std::vector<std::mt19937_64> rngs;
    for (int64_t b = 0; b < B; ++b) {
      std::seed_seq seq{c.seed, uint64_t(b)};
      rngs.emplace_back(seq);
    }
    std::vector<bool> finished(size_t(B), false);
    std::vector<int64_t> padded(static_cast<size_t>(B * longest), 0), next(static_cast<size_t>(B)), pos(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b)
      for (size_t i = 0; i < c.prompts[size_t(b)].size(); ++i)
        padded[size_t(b * longest) + i] = static_cast<unsigned char>(c.prompts[size_t(b)][i]);
    std::vector<double> row(size_t(cfg.vocab));
    auto pick = [&](const Literal& logits, int64_t b, int64_t offset) {
      if (finished[size_t(b)]) return;
      for (int64_t v = 0; v < cfg.vocab; ++v) row[size_t(v)] = logits.get_double(offset + v);
      nn::Completion& d = done[size_t(b)];
      d.tokens.push_back(nn::sample_token(row, sampling, rngs[size_t(b)]));
      next[size_t(b)] = d.tokens.back();
      pos[size_t(b)] = int64_t(c.prompts[size_t(b)].size() + d.tokens.size()) - 1;
      bool stopped = stop.stops(d.tokens);
      if (stopped) d.finish = nn::FinishReason::Stop;
      finished[size_t(b)] = stopped || int64_t(d.tokens.size()) == c.tokens;
    };
    auto busy = [&] { return int64_t(std::count(finished.begin(), finished.end(), false)); };
    t0 = Clock::now();
    inputs.push_back(prefill.stage(np, Literal::from_ints(ir::i32({B, longest}), padded)));
    std::vector<runtime::ShardedBuffer> outputs = prefill.execute(inputs);
    Literal logits = prefill.fetch(outputs[0]);
    for (int64_t b = 0; b < B; ++b) pick(logits, b, (b * longest + int64_t(c.prompts[size_t(b)].size()) - 1) * cfg.vocab);
    run.prefill_s = seconds_since(t0);
    // @decode's inputs: the parameters, the caches (moved from the prefill's results, so that each
    // step's donated caches are refilled in place), this step's tokens and positions.
    inputs.resize(np);
    inputs.insert(inputs.end(), std::make_move_iterator(outputs.begin() + 1), std::make_move_iterator(outputs.end()));
    inputs.resize(g.decode_pos_input() + 1);
    const size_t ti = g.decode_tokens_input(), pi = g.decode_pos_input();
    outputs.clear();
    t0 = Clock::now();
    while (busy() > 0) {
      run.decoded += busy();
      inputs[ti] = decode.stage(ti, Literal::from_ints(ir::i32({B}), next));
      inputs[pi] = decode.stage(pi, Literal::from_ints(ir::i32({B}), pos));
      decode.execute(inputs, outputs);
      for (size_t i = 0; i < g.num_caches(); ++i) inputs[np + i] = std::move(outputs[1 + i]);
      logits = decode.fetch(outputs[0]);
      for (int64_t b = 0; b < B; ++b) pick(logits, b, b * cfg.vocab);
      ++run.decode_steps;
    }
    run.decode_s = seconds_since(t0);
  }
  for (int64_t b = 0; b < n; ++b) {
    run.tokens.push_back(bytes_of(c.prompts[size_t(b)]));
    run.tokens.back().insert(run.tokens.back().end(), done[size_t(b)].tokens.begin(), done[size_t(b)].tokens.end());
    run.stopped.push_back(done[size_t(b)].finish == nn::FinishReason::Stop);
  }

  std::string cache = paged ? fmt::format("paged KV cache: at most {} of {} blocks of {} positions in use, {} slot{}",
                                          peak_blocks, shape.num_blocks - 1, shape.block_size, B, B == 1 ? "" : "s")
                            : fmt::format("contiguous KV cache of {} positions per sequence", shape.max_len);
  out << fmt::format("tessera generate: {} parameters from {}, plan {} on {} host device{}, {} prompt{} x {} new tokens "
                     "at most ({})\n",
                     nn::parameter_count(cfg), runtime::checkpoint_directory(c.resume), plan.name, c.devices,
                     c.devices == 1 ? "" : "s", n, n == 1 ? "" : "s", c.tokens, cache);
  for (int64_t b = 0; b < n; ++b) {
    int64_t made = int64_t(run.tokens[size_t(b)].size() - c.prompts[size_t(b)].size());
    out << fmt::format("\n[{}] {}\n", b, printable(run.tokens[size_t(b)]));
    if (run.stopped[size_t(b)]) out << fmt::format("(stopped after {} new token{})\n", made, made == 1 ? "" : "s");
    if (c.print_tokens) {
      out << "tokens:";
      for (int64_t t : run.tokens[size_t(b)]) out << ' ' << t;
      out << "\n";
    }
  }
  // Each device compiles its executable on its first run: the prefill's time and the first step's.
  out << fmt::format("\npartition {:.3f} s (prefill and decode, once); prefill {:.3f} s ({} run{} of {} x {} tokens); "
                     "decode {} step{} in {:.3f} s: {:.1f} tokens/s ({} slot{}, {:.2f} busy per step)\n",
                     run.compile_s, run.prefill_s, run.prefills, run.prefills == 1 ? "" : "s", g.prefill_rows(),
                     longest, run.decode_steps, run.decode_steps == 1 ? "" : "s", run.decode_s,
                     run.decode_s > 0 ? double(run.decoded) / run.decode_s : 0.0, B, B == 1 ? "" : "s",
                     run.decode_steps > 0 ? double(run.decoded) / double(run.decode_steps) : 0.0);
  return 0;
}

}  // namespace tessera::tools
