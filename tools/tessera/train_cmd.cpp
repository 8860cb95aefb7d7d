// `tessera train` (see train_cmd.h).
#include "tools/tessera/train_cmd.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <optional>
#include <set>
#include <thread>

#include "exec/accelerate.h"
#include "exec/flops.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#ifdef TESSERA_HAVE_MPI
#include "comm/mpi_communicator.h"
#endif
#include "nn/capture.h"
#include "nn/generate.h"
#include "nn/model.h"
#include "nn/plan.h"
#include "runtime/checkpoint.h"
#include "runtime/layout.h"
#include "runtime/session.h"
#include "spmd/mesh_math.h"
#include "spmd/report.h"
#include "stablehlo/printer.h"
#include "support/durable_file.h"
#include "support/error.h"
#include "support/memory.h"
#include "support/strings.h"
#include "tools/tessera/trace_out.h"
#include "tools/tessera/train_data.h"
#include "tools/tessera/train_log.h"
#include "tools/tessera/train_memory.h"
#include "tools/tessera/train_options.h"
#include "tools/tessera/train_pipeline.h"

namespace tessera::tools {

namespace {

namespace fs = std::filesystem;
using ir::Literal;
using support::fail;

nn::ShardingPlan make_plan(const std::string& name, int64_t devices, const nn::Config& cfg) {
  auto mesh = [](std::vector<ir::MeshAxis> axes) { return ir::Mesh{"mesh", std::move(axes), {}}; };
  if (std::optional<int64_t> experts_over = expert_axis_size(name, devices)) {
    if (cfg.experts == 0) fail("--plan {}: expert parallelism needs an MoE model (--moe E,k)", name);
    if (cfg.experts % *experts_over != 0)
      fail("--plan {} --moe {}: the {} experts do not split evenly over the expert axis of {} devices", name,
           cfg.experts, cfg.experts, *experts_over);
    if (*experts_over == devices) return nn::expert_parallel(mesh({{"expert", devices}}), "expert");
    return nn::expert_parallel(mesh({{"data", devices / *experts_over}, {"expert", *experts_over}}), "expert", "data");
  }
  if (name == "dp") return nn::data_parallel(mesh({{"data", devices}}), "data");
  if (name == "fsdp") return nn::fsdp(mesh({{"data", devices}}), "data");
  if (name == "zero1") return nn::zero1(mesh({{"data", devices}}), "data");
  if (name == "tp") return nn::tensor_parallel(mesh({{"model", devices}}), "model");
  // Context parallelism: the sequence split over every device (ring attention); ctx=N names the count.
  if (name == "ctx" || name == "ctx=" + std::to_string(devices)) return nn::context_parallel(mesh({{"ctx", devices}}), "ctx");
  if (name.rfind("ctx=", 0) == 0) fail("--plan {}: the ctx axis spans every device, {} here", name, devices);
  if (name == "dp,tp" || name == "tp,dp") {
    if (devices % 2 != 0) fail("--plan dp,tp needs an even number of devices, not {}", devices);
    return nn::tensor_parallel(mesh({{"data", devices / 2}, {"model", 2}}), "model", "data");
  }
  fail("--plan {}: expected dp, fsdp, zero1, tp, dp,tp, ctx[=N], ep[=N], dp,ep or a pipeline plan pp=P[,dp=D][,tp=T]",
       name);
}



// This process's peak resident set (getrusage's ru_maxrss, in KiB on Linux), in bytes.
int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

}  // namespace

// Sampling at temperature 0.8 (nn::sample_token) of `count` bytes after `prompt`, one forward of
// the last seq bytes per byte on the whole parameters (`tessera generate` keeps a KV cache instead).
std::string generate(const nn::CausalLM& model, const std::vector<Literal>& params, const std::string& prompt,
                     int64_t count, uint64_t seed) {
  const nn::Config& cfg = model.config();
  ir::Module m("sample");
  nn::Config one = cfg;
  one.batch = 1;
  nn::CausalLM small(one);
  ir::build_function(m, "logits", [&](ir::FunctionBuilder& f) {
    std::vector<ir::Tensor> ps;
    for (const auto& spec : small.parameters()) ps.push_back(f.param(ir::Type(cfg.dtype, spec.shape)));
    ir::Tensor tokens = f.param(ir::i32({1, cfg.seq}));
    return small.logits(nn::Weights(small.parameters(), ps), tokens);
  });
  interp::Options o;
  o.accelerate = exec::accelerate;
  std::mt19937_64 rng(seed);
  std::string text = prompt;
  for (int64_t i = 0; i < count; ++i) {
    std::vector<int64_t> window(static_cast<size_t>(cfg.seq), ' ');
    size_t n = std::min(text.size(), static_cast<size_t>(cfg.seq));
    for (size_t k = 0; k < n; ++k) window[window.size() - n + k] = static_cast<unsigned char>(text[text.size() - n + k]);
    std::vector<Literal> args = params;
    args.push_back(Literal::from_ints(ir::i32({1, cfg.seq}), window));
    Literal logits = interp::evaluate(m, "logits", std::move(args), o)[0];
    std::vector<double> row(static_cast<size_t>(cfg.vocab));
    int64_t last = (cfg.seq - 1) * cfg.vocab;
    for (int64_t v = 0; v < cfg.vocab; ++v) row[static_cast<size_t>(v)] = logits.get_double(last + v);
    text.push_back(static_cast<char>(nn::sample_token(row, nn::Sampling{0.8, 0}, rng)));
  }
  return text;
}

int train_command(const TrainCommand& c, std::ostream& out_stream) {
  if (c.backend != "host" && c.backend != "mpi") fail("--backend {}: expected host or mpi", c.backend);
  if (c.devices < 0) fail("--devices {}: expected a positive number", c.devices);
  std::string corpus_path = c.corpus.empty() ? kDefaultCorpus : c.corpus;
  std::string text = load_corpus(corpus_path);
  if (c.corpus.empty() && text.size() < kMinDefaultCorpus)
    fail("the default corpus {} holds {} bytes, fewer than {}", corpus_path, text.size(), kMinDefaultCorpus);
  if (static_cast<int64_t>(text.size()) < c.seq + 2) fail("--corpus {}: {} bytes is shorter than a sequence", corpus_path, text.size());

  nn::Config cfg;
  cfg.vocab = 256;
  cfg.d_model = c.d_model;
  cfg.layers = c.layers;
  cfg.heads = c.heads;
  cfg.kv_heads = c.kv_heads;
  cfg.ffn = c.ffn;
  cfg.seq = c.seq;
  cfg.batch = c.batch;
  apply_moe(c, cfg);
  if (c.precision == "bf16") cfg.compute = ir::ElementType::bf16;
  else if (c.precision != "f32") fail("--precision {}: expected f32 or bf16", c.precision);
  cfg.validate();
  // Refused before anything is built: a model past the machine's memory would otherwise take
  // minutes to build and then be killed by the kernel.
  if (int64_t need = cfg.training_bytes_lower_bound(); need > support::memory_limit())
    fail("--d-model {} --layers {} --ffn {} --seq {} --batch {}: one training step holds at least {}, more than the "
         "limit of {} (this machine's memory, or --max-bytes)",
         c.d_model, c.layers, c.ffn, c.seq, c.batch, support::format_bytes(need),
         support::format_bytes(support::memory_limit()));
  if (c.plan.find("pp=") != std::string::npos && !c.emit_program.empty())
    fail("--emit-program {}: a pipeline plan is several programs; --emit-program takes dp, fsdp, zero1, tp, dp,tp, ctx, ep or dp,ep",
         c.emit_program);
  nn::CausalLM model(cfg);
  if (c.plan.find("pp=") != std::string::npos && cfg.experts > 0)
    fail("--plan {} --moe {}: pipeline plans do not carry the MoE load-balancing loss across stages; use dp, fsdp, "
         "ep or dp,ep", c.plan, c.moe);
  if (c.plan.find("pp=") != std::string::npos)
    return train_pipeline(c, out_stream, text, corpus_path, model);
  if (!c.schedule_svg.empty()) fail("--schedule-svg {}: needs a pipeline plan (--plan pp=P...)", c.schedule_svg);
  if (!c.schedule_csv.empty()) fail("--schedule-csv {}: needs a pipeline plan (--plan pp=P...)", c.schedule_csv);
  // The other pipeline options, given with another plan, would be ignored: refused the same way.
  const TrainCommand defaults;
  if (c.schedule != defaults.schedule) fail("--schedule {}: needs a pipeline plan (--plan pp=P...)", c.schedule);
  if (c.microbatches != defaults.microbatches)
    fail("--microbatches {}: needs a pipeline plan (--plan pp=P...); under --plan {}, --accumulate N splits each "
         "step's batch into N microbatches",
         c.microbatches, c.plan);
  if (c.virtual_stages != defaults.virtual_stages)
    fail("--virtual {}: needs a pipeline plan (--plan pp=P... --schedule interleaved)", c.virtual_stages);
  check_checkpoint_options(c);
  // With --eval-every the last 10 % of the corpus is held out: it is never trained on.
  std::optional<CorpusSplit> split;
  if (c.eval_every > 0) split = split_corpus(text, c.seq, corpus_path);
  const std::string& train_text = split ? split->train : text;

  // Over MPI every rank reads the same options and files, so a user error up to the first execute
  // (a bad --plan, corpus, shape or checkpoint) is raised alike on every rank, before any collective.
  interp::Profile profile;
  runtime::SessionOptions session_options;
  if (c.profile) session_options.profile = &profile;
  std::unique_ptr<interp::Trace> trace;  // --trace: every step's spans, on every device's track
  if (!c.trace.empty() || !c.trace_svg.empty()) {
    trace = std::make_unique<interp::Trace>();
    session_options.trace = trace.get();
  }
  bool over_mpi = c.backend == "mpi";
  int64_t local_devices = c.devices > 0 ? c.devices : over_mpi ? 1 : plan_devices(c.plan).value_or(4);
  runtime::Session session = over_mpi ? runtime::Session::mpi(local_devices, session_options)
                                      : runtime::Session::host(local_devices, session_options);
  int64_t devices = session.num_devices();
  bool rank0 = session.rank() == 0;  // the one that prints and writes files
  if (trace) trace->set_pid(session.rank());
  std::ostream silent(nullptr);      // the other ranks' output goes nowhere
  std::ostream& out = rank0 ? out_stream : silent;
  nn::ShardingPlan plan = make_plan(c.plan, devices, cfg);
  nn::AdamW adam = adamw_of(c);
  nn::TrainingStep training = nn::TrainingStep{model}
                                  .accumulate(c.accumulate)
                                  .with_remat(c.remat ? autodiff::Remat::kSaveDots : autodiff::Remat::kNone)
                                  .with(adam)
                                  .sharded(plan);
  if (c.clip_norm > 0) training = training.clipped(c.clip_norm);
  // A no-decay pattern that matches no parameter is named with the option; capture's other
  // refusals (a plan the model cannot take) name their own cause.
  try {
    std::vector<std::string> names;
    for (const nn::ParamSpec& p : nn::parameter_specs(cfg)) names.push_back(p.name);
    nn::check_no_decay(adam, names);
  } catch (const support::UserError& e) {
    fail("--no-decay {}: {}", c.no_decay, e.what());
  }
  ir::Module m("train");
  nn::Programs programs;
  try {
    programs = nn::capture(m, training);
  } catch (const support::UserError& e) {
    fail("--plan {}: {}", c.plan, e.what());
  }
  if (!c.emit_program.empty()) {
    support::write_file_atomically(c.emit_program, {stablehlo::print(m)});
    out << fmt::format("wrote @{} (plan {} on {} devices) to {}\n", programs.train_step, plan.name, devices,
                       c.emit_program);
    return 0;
  }
  runtime::CompiledProgram compiled = session.compile(m, programs.train_step);
  // What a device will hold, before anything is staged: printed with --dry-run, and a run that
  // cannot fit is refused here rather than killed by the kernel later.
  // With --eval-every the loss program is compiled here too: its arena and batches count.
  std::optional<runtime::CompiledProgram> eval_compiled;
  if (split) eval_compiled = session.compile(m, programs.loss);
  MemoryEstimate memory = estimate_training_memory(compiled, programs, local_devices);
  if (eval_compiled) add_evaluation(memory, *eval_compiled, programs, c.eval_batches);
  if (c.dry_run) {
    out << fmt::format("tessera train --dry-run: plan {} on {} device{} ({} in this process)\n", plan.name, devices,
                       devices == 1 ? "" : "s", local_devices)
        << memory.table();
    check_fits(memory, fmt::format("--plan {} on {} devices", plan.name, devices));
    out << fmt::format("fits: the limit is {}\n", support::format_bytes(support::memory_limit()));
    return 0;
  }
  check_fits(memory, fmt::format("--plan {} on {} devices", plan.name, devices));
  support::reset_peak_bytes_held();
  const int64_t held_before = support::bytes_held();
  runtime::ShardedProgram step = session.sharded_program(compiled, programs.output_aliases);

  // Parameters: initialised from the seed piece by piece, or read piece by piece from the
  // checkpoint (whatever plan and device count wrote it): each rank reads only its pieces' bytes.
  size_t np = programs.num_parameters();
  int64_t first_step = 1;
  std::optional<runtime::CheckpointReader> resumed;
  const std::vector<std::string> state_names = checkpoint_state_names(programs.parameters);
  TESSERA_CHECK(programs.state_per_parameter == 2, "AdamW keeps m and v, not {} moments", programs.state_per_parameter);
  if (!c.resume.empty()) {
    try {
      resumed.emplace(c.resume);
      resumed->prefer([&](int64_t source_device) { return session.owns(source_device); });
      first_step = resumed->read_whole("step").get_int(0) + 1;
    } catch (const support::UserError& e) {
      fail("--resume {}: {}", c.resume, e.what());
    }
  }
  int64_t last_step = first_step + c.steps - 1;
  nn::LrSchedule schedule = schedule_of(c, last_step);
  if (resumed) {
    std::string warning = check_resume(c.resume, resumed->metadata(), cfg, schedule, split ? kHeldOutPercent : 0);
    if (!warning.empty() && rank0) std::cerr << warning << "\n";
    check_checkpoint_arrays(c.resume, *resumed, state_names, programs.parameters, cfg.dtype);
  }
  // The step's inputs (nn::train_step_inputs' order: parameters, moments, step scalars, tokens,
  // targets), each rank making only its own devices' pieces: parameters by the counter-based
  // initializer, zero moments, its rows of the batch.
  Batches data{train_text, c.batch, c.seq, c.seed};
  size_t ti = programs.tokens_input(), si = programs.step_input();
  auto stage_batch = [&](runtime::ShardedProgram& program, size_t index, const Batches& from, int64_t t, bool targets) {
    return program.stage_pieces(index, [&](const std::vector<int64_t>& start, const std::vector<int64_t>& extent) {
      return from.box(t, targets, start, extent);
    });
  };
  std::vector<runtime::ShardedBuffer> state;
  const runtime::ReadStats before_state = resumed ? resumed->stats() : runtime::ReadStats{};
  for (size_t i = 0; i < np * (1 + programs.state_per_parameter); ++i) {
    if (resumed) {
      state.push_back(step.stage_pieces(i, [&](const std::vector<int64_t>& start, const std::vector<int64_t>& extent) {
        try {
          return resumed->read(state_names[i], start, extent);
        } catch (const support::UserError& e) {
          fail("--resume {}: {}", c.resume, e.what());
        }
      }));
    } else if (i < np) {
      const nn::ParamSpec& spec = programs.parameters[i];
      state.push_back(step.stage_pieces(i, [&](const std::vector<int64_t>& start, const std::vector<int64_t>& extent) {
        return nn::init_parameter_piece(spec, cfg, c.seed, start, extent);
      }));
    } else {
      state.push_back(step.stage_pieces(i, [&](const std::vector<int64_t>&, const std::vector<int64_t>& extent) {
        return Literal(ir::Type(cfg.dtype, extent));  // zeros
      }));
    }
  }
  TESSERA_CHECK(state.size() == si, "the step scalars are input {}, after {} parameters and moments", si, state.size());
  state.push_back(step.stage(si, programs.step_scalars(first_step)));
  TESSERA_CHECK(ti == si + 1, "the tokens are input {}, not right after the step scalars {}", ti, si);
  state.push_back(stage_batch(step, ti, data, first_step, false));
  state.push_back(stage_batch(step, ti + 1, data, first_step, true));

  int64_t ranks = devices / local_devices;
  std::string where = over_mpi ? fmt::format("{} devices ({} MPI rank{} of {})", devices, ranks, ranks == 1 ? "" : "s",
                                             local_devices)
                               : fmt::format("{} host devices", devices);
  out << fmt::format("tessera train: {} parameters, plan {} on {}, batch {}x{}, {} steps, corpus {} ({})\n",
                     nn::parameter_count(cfg), plan.name, where, c.batch, c.seq, c.steps, corpus_path,
                     support::format_bytes(static_cast<int64_t>(text.size())));
  if (cfg.compute)
    out << fmt::format("mixed precision: matmuls and activations in {}; parameters, optimizer state, norms, softmax and "
                       "loss in {}\n", ir::spelling(*cfg.compute), ir::spelling(cfg.dtype));
  if (resumed) {
    // What each rank read of the checkpoint for its parameters and moments, next to the bytes of
    // their pieces on its devices (each distinct box once, padding left out: layout's piece_box,
    // not the reader's count), and the headers it read.
    const runtime::ReadStats& now = resumed->stats();
    int64_t pieces = 0;
    for (size_t i = 0; i < state_names.size(); ++i) {
      std::set<std::vector<int64_t>> boxes;
      for (int64_t d = 0; d < devices; ++d) {
        if (!session.owns(d)) continue;
        runtime::PieceBox box = runtime::piece_box(state[i].type, state[i].sharding, m.mesh(state[i].sharding.mesh), d);
        if (boxes.insert(box.start).second) pieces += ir::Type(state[i].type.element, box.extent).num_elements() * ir::info(state[i].type.element).bytes;
      }
    }
    std::vector<std::vector<int64_t>> read = session.per_rank(
        {now.data_bytes - before_state.data_bytes, pieces, now.header_bytes, now.files, now.checked_pieces});
    out << fmt::format("resuming from {} at step {}\n", resumed->directory(), first_step);
    for (size_t r = 0; r < read.size(); ++r)
      out << fmt::format("  rank {} read {} B of array data for {} B of its pieces (+ {} B of headers of {} files; {} "
                         "pieces checked whole)\n", r, read[r][0], read[r][1], read[r][2], read[r][3], read[r][4]);
    resumed.reset();  // staged: its files need not stay open while training
  }

  // Evaluation: @loss on the parameters where they are, over the same --eval-batches windows of
  // the held-out tail each time (staged once), averaged.
  std::optional<runtime::ShardedProgram> eval;
  std::vector<std::vector<runtime::ShardedBuffer>> eval_batches;
  if (split) {
    eval.emplace(session.sharded_program(*eval_compiled));
    Batches held{split->held_out, c.batch, c.seq, c.seed + 0x5eed};
    for (int64_t k = 1; k <= c.eval_batches; ++k) {
      eval_batches.push_back({stage_batch(*eval, np, held, k, false), stage_batch(*eval, np + 1, held, k, true)});
    }
    out << fmt::format("evaluating every {} steps on {} batches of the held-out last {} % of the corpus ({})\n",
                       c.eval_every, c.eval_batches, kHeldOutPercent,
                       support::format_bytes(static_cast<int64_t>(split->held_out.size())));
  }
  auto evaluate = [&] {
    double sum = 0;
    for (auto& batch : eval_batches) {
      std::vector<runtime::ShardedBuffer> in(state.begin(), state.begin() + static_cast<long>(np));
      in.insert(in.end(), batch.begin(), batch.end());
      sum += eval->replicated(eval->execute(in)[0]).get_double(0);
    }
    return sum / double(eval_batches.size());
  };

  // Model FLOPs utilization: the step's contraction FLOPs (whole arrays) over one core's measured
  // SGEMM rate times the cores the devices can use.
  const double step_flops = exec::dot_flops(m, *m.find_function(programs.train_step));
  const int64_t cores = std::min<int64_t>(local_devices, std::max(1u, std::thread::hardware_concurrency()));
  const double peak = exec::measure_sgemm_gflops() * 1e9 * double(cores * (devices / local_devices));
  out << fmt::format("model FLOPs per step {:.3f} G (dot_generals); peak {:.1f} GFLOP/s ({} core{} x {:.1f}, this "
                     "BLAS's SGEMM measured now)\n",
                     step_flops * 1e-9, peak * 1e-9, cores * (devices / local_devices),
                     cores * (devices / local_devices) == 1 ? "" : "s", peak * 1e-9 / double(cores * (devices / local_devices)));
  LossLog log(c, rank0, first_step, step_flops, peak);
  int64_t sent_in_step = 0;  // over MPI: the bytes this rank sent in the latest step
  // A checkpoint of the state after step `at`: each rank writes the files of its own devices from
  // the pieces it holds (nothing gathered), rank 0 the index and the switch (runtime/checkpoint.h).
  const runtime::SaveGroup save_group = runtime::save_group(session);
  auto save = [&](int64_t at) {
    std::vector<std::string> names = state_names;
    std::vector<runtime::ShardedBuffer> bufs(state.begin(), state.begin() + static_cast<long>(state_names.size()));
    names.push_back("step");  // replicated: every device holds it
    bufs.push_back(runtime::ShardedBuffer{
        ir::i32(), ir::Sharding{plan.mesh.name, {}, {}, {}},
        std::make_shared<std::vector<Literal>>(static_cast<size_t>(devices),
                                               Literal::scalar(ir::ElementType::i32, static_cast<double>(at)))});
    std::string written;
    try {
      written = runtime::save_sharded(c.save, names, bufs, plan.mesh, at, run_metadata(cfg, schedule, split ? kHeldOutPercent : 0),
                                      int(c.keep), save_group);
    } catch (const support::UserError& e) {
      fail("--save {}: {}", c.save, e.what());
    }
    log.note(out, fmt::format("saved to {} (step {})", written, at));
  };
  const size_t carried = np * (1 + programs.state_per_parameter);  // params and moments
  for (int64_t t = first_step; t <= last_step; ++t) {
    if (t != first_step) {
      state[ti] = stage_batch(step, ti, data, t, false);
      state[ti + 1] = stage_batch(step, ti + 1, data, t, true);
    }
    // The schedule's lr and AdamW's bias corrections, in double on the host (nn/optimizer.h).
    double lr = nn::lr_at(schedule, t);
    state[si] = step.stage(si, programs.step_scalars(t, lr));
    if (trace) trace->set_step(t);
#ifdef TESSERA_HAVE_MPI
    const int64_t sent_before = over_mpi ? comm::mpi::bytes_sent() : 0;
#endif
    std::vector<runtime::ShardedBuffer> outs = step.execute(state);
#ifdef TESSERA_HAVE_MPI
    if (over_mpi) sent_in_step = comm::mpi::bytes_sent() - sent_before;
#endif
    double loss = step.replicated(outs[0]).get_double(0);  // the program's own reduction
    for (size_t i = 0; i < carried; ++i) state[i] = outs[i + 1];  // donated
    std::string extra = fmt::format("  lr {:.3e}", lr);
    if (programs.grad_norm) extra += fmt::format("  norm {:.4f}", step.replicated(outs[programs.grad_norm_output()]).get_double(0));
    log.step(out, t, loss, extra);
    if (eval && (t % c.eval_every == 0 || t == last_step)) log.eval(out, t, evaluate());
    if (c.save_every > 0 && t % c.save_every == 0 && t != last_step) save(t);
  }
  log.finish(out);

  // The per-device table.
  const spmd::Report& r = compiled.report();
  int64_t param_bytes = 0, state_bytes = 0;
  for (size_t i = 0; i < np; ++i) param_bytes += r.parameters[i].bytes_per_device;
  for (size_t i = np; i < np * (1 + programs.state_per_parameter); ++i) state_bytes += r.parameters[i].bytes_per_device;
  int64_t whole = 0;
  for (const auto& spec : programs.parameters) whole += spec.num_elements() * 4;
  out << fmt::format("\nper device ({} devices, plan {}):\n", devices, plan.name);
  out << fmt::format("  parameters        {:>12}  ({:.2f} % of {})\n", support::format_bytes(param_bytes), 100.0 * double(param_bytes) / double(whole), support::format_bytes(whole));
  out << fmt::format("  optimizer state   {:>12}\n", support::format_bytes(state_bytes));
  out << fmt::format("  peak live bytes   {:>12}  (the step program's values at once{})\n",
                     support::format_bytes(spmd::peak_live_bytes(compiled.local_function())), c.remat ? ", with remat" : "");
  // The arrays this process really held at most (support's count of every array and arena),
  // from the first staging to the last step, per device: the check on --dry-run's estimate.
  const int64_t measured = (support::peak_bytes_held() - held_before) / local_devices;
  out << fmt::format("  array memory peak {:>12}  measured per device; {}\n", support::format_bytes(measured),
                     estimate_against(memory.per_device(), measured));
  out << "  collectives per step:\n";
  std::map<std::string, int64_t> moved;
  for (const auto& col : r.collectives) moved[col.kind] += col.bytes_per_device;
  for (const auto& [kind, n] : r.counts()) out << fmt::format("    {:<20} {:>4} x  {:>12} per device\n", kind, n, support::format_bytes(moved[kind]));
  if (r.collectives.empty()) out << "    (none)\n";

  // Per rank: the live bytes of the parameters and optimizer state this rank holds (the runtime's
  // own count of its buffers' pieces), its peak RSS, and over MPI the bytes it sent in the last
  // step next to the ring model of the step program's collectives on its devices.
  int64_t live = 0;
  for (size_t i = 0; i < carried; ++i) live += state[i].local_bytes();
  int64_t ring = 0;
  for (int64_t d = 0; d < devices; ++d)
    if (session.owns(d)) ring += runtime::ring_model_bytes(compiled);
  std::vector<std::vector<int64_t>> ranks_figures = session.per_rank({live, peak_rss_bytes(), sent_in_step, ring});
  out << fmt::format("\nper rank ({} rank{}{}):\n", ranks_figures.size(), ranks_figures.size() == 1 ? "" : "s",
                     over_mpi ? "" : ", host devices in one process");
  for (size_t r = 0; r < ranks_figures.size(); ++r) {
    const std::vector<int64_t>& f = ranks_figures[r];
    out << fmt::format("  rank {}  live parameters+optimizer {} B ({})  peak RSS {} B ({})", r, f[0],
                       support::format_bytes(f[0]), f[1], support::format_bytes(f[1]));
    if (over_mpi) out << fmt::format("  sent in step {} {} B  ring model {} B", last_step, f[2], f[3]);
    out << "\n";
  }

  if (c.profile) out << fmt::format("\ntime per op kind, {}:\n", over_mpi ? "rank 0's devices" : "all devices") << profile.to_string();
  if (trace) {  // every rank's events, joined by rank 0
    std::vector<std::string> events = session.per_rank_bytes(trace->events_json(), "trace");
    if (rank0) write_trace(events, c.trace, c.trace_svg, out);
  }

  if (!c.save.empty()) save(last_step);
  if (c.sample > 0) {  // the parameters gathered to rank 0, which samples
    std::vector<Literal> trained;
    for (size_t i = 0; i < np; ++i)
      if (std::optional<Literal> whole = step.fetch_to(state[i], 0)) trained.push_back(std::move(*whole));
    std::string prompt = "The ";
    if (rank0) out << "\nsample:\n" << generate(model, trained, prompt, c.sample, c.seed) << "\n";
  }
  return 0;
}

}  // namespace tessera::tools
