// `tessera generate` (see generate_cmd.h): the checkpoint read under the plan, @prefill and @decode
// compiled once, then the decode loop with the caches kept on the devices.
#include "tools/tessera/generate_cmd.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <map>
#include <optional>
#include <random>

#include "ir/element_type.h"
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

  const int64_t B = int64_t(c.prompts.size());
  int64_t longest = 0;
  for (const std::string& p : c.prompts) longest = std::max<int64_t>(longest, int64_t(p.size()));
  const bool ctx = c.plan == "ctx";
  nn::GenerationShape shape{B, longest, longest + c.tokens};
  // ctx splits the cache's positions evenly over the devices: rounded up to a multiple of them.
  if (ctx) shape.max_len = (shape.max_len + c.devices - 1) / c.devices * c.devices;
  if (c.block_size < -1) fail("--block-size {}: expected 0 (a contiguous cache) or a positive number", c.block_size);
  if (c.blocks < 0) fail("--blocks {}: expected a positive number (0: as many as the sequences need)", c.blocks);
  shape.block_size = c.block_size >= 0 ? c.block_size : c.plan == "dp" || c.plan == "ep" || ctx ? 0 : 16;
  if (shape.block_size > 0) {
    // Sequence b writes positions 0 .. len_b + tokens - 2 (the last token is never fed back).
    int64_t needed = 1;
    for (const std::string& p : c.prompts)
      needed += (int64_t(p.size()) + c.tokens - 1 + shape.block_size - 1) / shape.block_size;
    shape.num_blocks = c.blocks > 0 ? c.blocks : needed;
  } else if (c.blocks > 0) {
    fail("--blocks {}: a contiguous cache (--block-size 0) has no blocks", c.blocks);
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
  runtime::ShardedProgram prefill = session.sharded_program(session.compile(m, g.prefill));
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

  std::mt19937_64 rng(c.seed);
  const nn::Sampling sampling{c.temperature, c.top_k};
  run.tokens.resize(size_t(B));
  std::vector<int64_t> padded(static_cast<size_t>(B * longest), 0), next(static_cast<size_t>(B)), pos(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b)
    for (size_t i = 0; i < c.prompts[size_t(b)].size(); ++i) {
      int64_t byte = static_cast<unsigned char>(c.prompts[size_t(b)][i]);
      padded[size_t(b * longest) + i] = byte;
      run.tokens[size_t(b)].push_back(byte);
    }
  // Each sequence's next token from its row of logits (`stride` apart, at `offset` in the row).
  std::vector<double> row(size_t(cfg.vocab));
  auto pick = [&](const Literal& logits, int64_t b, int64_t offset) {
    for (int64_t v = 0; v < cfg.vocab; ++v) row[size_t(v)] = logits.get_double(offset + v);
    next[size_t(b)] = nn::sample_token(row, sampling, rng);
    run.tokens[size_t(b)].push_back(next[size_t(b)]);
    pos[size_t(b)] = int64_t(run.tokens[size_t(b)].size()) - 1;
  };

  // Paged: blocks for the prompts' positions (the padding writes to the null block), then one
  // more position per sequence per step.
  std::optional<nn::BlockTable> blocks;
  if (g.paged()) blocks.emplace(g);
  auto reserve = [&](int64_t b, int64_t p) {
    try {
      blocks->reserve(b, p);
    } catch (const support::UserError& e) {
      fail("--blocks {}: {}", shape.num_blocks, e.what());
    }
  };

  t0 = Clock::now();
  inputs.push_back(prefill.stage(np, Literal::from_ints(ir::i32({B, longest}), padded)));
  if (blocks) {
    std::vector<int64_t> slots;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < longest; ++t) {
        if (t < int64_t(c.prompts[size_t(b)].size())) reserve(b, t);
        slots.push_back(blocks->slot(b, t));
      }
    inputs.push_back(prefill.stage(g.prefill_slots_input(), Literal::from_ints(ir::i32({B, longest}), slots)));
  }
  std::vector<runtime::ShardedBuffer> outputs = prefill.execute(inputs);
  Literal logits = prefill.fetch(outputs[0]);
  for (int64_t b = 0; b < B; ++b) pick(logits, b, (b * longest + int64_t(c.prompts[size_t(b)].size()) - 1) * cfg.vocab);
  run.prefill_s = seconds_since(t0);

  // @decode's inputs: the parameters, the caches (moved from the prefill's results, so that each
  // step's donated caches are refilled in place), this step's tokens and positions (and paged,
  // slots and block table).
  inputs.resize(np);
  inputs.insert(inputs.end(), std::make_move_iterator(outputs.begin() + 1), std::make_move_iterator(outputs.end()));
  inputs.resize(g.decode_pos_input() + (blocks ? 3 : 1));
  std::vector<int64_t> slot(static_cast<size_t>(B));
  const size_t ti = g.decode_tokens_input(), pi = g.decode_pos_input();
  outputs.clear();
  t0 = Clock::now();
  for (int64_t step = 1; step < c.tokens; ++step) {
    inputs[ti] = decode.stage(ti, Literal::from_ints(ir::i32({B}), next));
    inputs[pi] = decode.stage(pi, Literal::from_ints(ir::i32({B}), pos));
    if (blocks) {
      for (int64_t b = 0; b < B; ++b) {
        reserve(b, pos[size_t(b)]);
        slot[size_t(b)] = blocks->slot(b, pos[size_t(b)]);
      }
      inputs[g.decode_slot_input()] = decode.stage(g.decode_slot_input(), Literal::from_ints(ir::i32({B}), slot));
      inputs[g.decode_table_input()] = decode.stage(g.decode_table_input(), blocks->table());
    }
    decode.execute(inputs, outputs);
    for (size_t i = 0; i < g.num_caches(); ++i) inputs[np + i] = std::move(outputs[1 + i]);
    logits = decode.fetch(outputs[0]);
    for (int64_t b = 0; b < B; ++b) pick(logits, b, b * cfg.vocab);
    ++run.decode_steps;
  }
  run.decode_s = seconds_since(t0);

  std::string cache = blocks ? fmt::format("paged KV cache: {} of {} blocks of {} positions used", blocks->blocks_used(),
                                           shape.num_blocks - 1, shape.block_size)
                             : fmt::format("contiguous KV cache of {} positions per sequence", shape.max_len);
  out << fmt::format("tessera generate: {} parameters from {}, plan {} on {} host device{}, {} prompt{} x {} new tokens "
                     "({})\n",
                     nn::parameter_count(cfg), runtime::checkpoint_directory(c.resume), plan.name, c.devices,
                     c.devices == 1 ? "" : "s", B, B == 1 ? "" : "s", c.tokens, cache);
  for (int64_t b = 0; b < B; ++b) {
    out << fmt::format("\n[{}] {}\n", b, printable(run.tokens[size_t(b)]));
    if (c.print_tokens) {
      out << "tokens:";
      for (int64_t t : run.tokens[size_t(b)]) out << ' ' << t;
      out << "\n";
    }
  }
  int64_t decoded = run.decode_steps * B;
  // Each device compiles its executable on its first run: the prefill's time and the first step's.
  out << fmt::format("\npartition {:.3f} s (prefill and decode, once); prefill {:.3f} s for {} x {} tokens; decode {} "
                     "step{} in {:.3f} s: {:.1f} tokens/s ({} sequence{} per step)\n",
                     run.compile_s, run.prefill_s, B, longest, run.decode_steps, run.decode_steps == 1 ? "" : "s",
                     run.decode_s, run.decode_s > 0 ? double(decoded) / run.decode_s : 0.0, B, B == 1 ? "" : "s");
  return 0;
}

}  // namespace tessera::tools
