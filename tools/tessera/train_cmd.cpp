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
#include "mpmd/mpi_transfer.h"
#endif
#include "mpmd/bubble.h"
#include "mpmd/generate.h"
#include "mpmd/stages.h"
#include "mpmd/svg.h"
#include "mpmd/trainer.h"
#include "nn/capture.h"
#include "nn/model.h"
#include "nn/plan.h"
#include "runtime/checkpoint.h"
#include "runtime/layout.h"
#include "runtime/session.h"
#include "spmd/mesh_math.h"
#include "spmd/report.h"
#include "support/error.h"
#include "support/memory.h"
#include "support/strings.h"
#include "tools/tessera/train_data.h"
#include "tools/tessera/train_log.h"
#include "tools/tessera/train_options.h"

namespace tessera::tools {

namespace {

namespace fs = std::filesystem;
using ir::Literal;
using support::fail;

nn::ShardingPlan make_plan(const std::string& name, int64_t devices) {
  auto mesh = [](std::vector<ir::MeshAxis> axes) { return ir::Mesh{"mesh", std::move(axes), {}}; };
  if (name == "dp") return nn::data_parallel(mesh({{"data", devices}}), "data");
  if (name == "fsdp") return nn::fsdp(mesh({{"data", devices}}), "data");
  if (name == "tp") return nn::tensor_parallel(mesh({{"model", devices}}), "model");
  if (name == "dp,tp" || name == "tp,dp") {
    if (devices % 2 != 0) fail("--plan dp,tp needs an even number of devices, not {}", devices);
    return nn::tensor_parallel(mesh({{"data", devices / 2}, {"model", 2}}), "model", "data");
  }
  fail("--plan {}: expected dp, fsdp, tp, dp,tp or a pipeline plan pp=P[,dp=D][,tp=T]", name);
}

// Greedy-ish sampling (temperature 0.8) of `count` bytes after `prompt`, one forward per byte on
// the whole parameters.
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
    std::vector<double> p(static_cast<size_t>(cfg.vocab));
    int64_t last = (cfg.seq - 1) * cfg.vocab;
    double top = -1e300;
    for (int64_t v = 0; v < cfg.vocab; ++v) top = std::max(top, logits.get_double(last + v));
    for (int64_t v = 0; v < cfg.vocab; ++v) p[static_cast<size_t>(v)] = std::exp((logits.get_double(last + v) - top) / 0.8);
    std::discrete_distribution<int> pick(p.begin(), p.end());
    text.push_back(static_cast<char>(pick(rng)));
  }
  return text;
}


// This process's peak resident set (getrusage's ru_maxrss, in KiB on Linux), in bytes.
int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

// --save's directory, checked before training rather than after it: every part of the path
// that exists must be a directory. Nothing is created yet, so every MPI rank checks alike.
void check_save_target(const std::string& dir) {
  for (fs::path p = dir; !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    fs::file_status st = fs::status(p, ec);
    if (fs::exists(st)) {
      if (!fs::is_directory(st)) fail("--save {}: {} is not a directory", dir, p.string());
      return;
    }
    if (p == p.parent_path()) return;
  }
}

// --plan pp=P[,dp=D][,tp=T]: P stages, each a group of D x T host devices.
struct PipelinePlan {
  int64_t pp = 0, dp = 1, tp = 1;
};

PipelinePlan parse_pipeline_plan(const std::string& name) {
  PipelinePlan p;
  std::set<std::string> seen;
  size_t start = 0;
  while (true) {
    size_t comma = name.find(',', start);
    std::string item = name.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    std::optional<int64_t> parsed = support::parse_int(value);  // the whole value: "2x" or 2^64 is no size
    int64_t n = parsed.value_or(0);
    if (n < 1)
      fail("--plan {}: '{}' is not axis=N with N >= 1 (expected pp=P[,dp=D][,tp=T])", name, item);
    if (!seen.insert(key).second) fail("--plan {}: {} is given twice", name, key);
    if (key == "pp") p.pp = n;
    else if (key == "dp") p.dp = n;
    else if (key == "tp") p.tp = n;
    else fail("--plan {}: unknown axis '{}' (expected pp, dp or tp)", name, key);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (p.pp == 0) fail("--plan {}: a pipeline plan needs pp=P", name);
  return p;
}

// How each stage's group lays out its programs: none for one device per stage.
std::optional<nn::ShardingPlan> stage_plan(const PipelinePlan& p) {
  if (p.dp > 1 && p.tp > 1)
    return nn::tensor_parallel(ir::Mesh{"stage", {{"data", p.dp}, {"model", p.tp}}, {}}, "model", "data");
  if (p.dp > 1) return nn::data_parallel(ir::Mesh{"stage", {{"data", p.dp}}, {}}, "data");
  if (p.tp > 1) return nn::tensor_parallel(ir::Mesh{"stage", {{"model", p.tp}}, {}}, "model");
  return std::nullopt;
}

// "embed, 0-1" / "2-3, head": what a stage's virtual stages hold.
std::string stage_layers(const mpmd::StagedModel& staged, const std::vector<int64_t>& virtual_stages) {
  std::string out;
  for (int64_t vs : virtual_stages) {
    const mpmd::StageProgram& sp = staged.stage(vs);
    std::string piece = sp.embeds ? "embed " : "";
    piece += sp.end_layer - sp.first_layer == 1 ? fmt::format("{}", sp.first_layer)
                                                : fmt::format("{}-{}", sp.first_layer, sp.end_layer - 1);
    if (sp.has_loss) piece += " head";
    out += (out.empty() ? "" : ", ") + piece;
  }
  return out;
}

// `tessera train --plan pp=...`: the pipeline trainer on host devices, or with its stages spread
// over MPI ranks (see train_cmd.h). Over MPI every rank reads the same options and files and makes
// the same trainer calls; each runs its own stages (stage s of P on rank s·R/P), every rank gets
// every loss and measurement, and only rank 0 prints and writes files.
int train_pipeline(const TrainCommand& c, std::ostream& out_stream, const std::string& text,
                   const std::string& corpus_path, const nn::CausalLM& model) {
  const PipelinePlan pp = parse_pipeline_plan(c.plan);
  const int64_t group = pp.dp * pp.tp, devices = pp.pp * group;
  mpmd::RunOptions run_options;
#ifdef TESSERA_HAVE_MPI
  std::unique_ptr<comm::MpiWorld> world;
  std::unique_ptr<mpmd::MpiRanks> mpi_ranks;
  if (c.backend == "mpi") {
    // Its timeout bounds the exchange that ends each step, which waits for the slowest rank's last
    // backward: as long as a transfer may take.
    world = std::make_unique<comm::MpiWorld>(1, run_options.transfer_timeout);
    mpi_ranks = std::make_unique<mpmd::MpiRanks>(*world);
    run_options.ranks = mpi_ranks.get();
  }
#else
  if (c.backend == "mpi")
    fail("--backend mpi: this Tessera was built without its MPI backend (install libopenmpi-dev and configure again)");
#endif
  const int ranks = run_options.ranks ? run_options.ranks->size() : 1;
  const bool rank0 = !run_options.ranks || run_options.ranks->rank() == 0;  // the one that prints and writes
  std::ostream silent(nullptr);
  std::ostream& out = rank0 ? out_stream : silent;
  if (pp.pp % ranks != 0)
    fail("--plan {}: {} stages do not split evenly over {} MPI ranks (run a number of ranks that divides {})", c.plan,
         pp.pp, ranks, pp.pp);
  const int64_t per_rank = devices / ranks;  // host devices each rank runs
  if (c.devices != 0 && c.devices != per_rank) {
    if (!run_options.ranks)
      fail("--devices {}: --plan {} runs on {} host devices ({} stages x {})", c.devices, c.plan, devices, pp.pp, group);
    fail("--devices {}: --plan {} on {} MPI ranks runs {} host devices on each ({} stages x {})", c.devices, c.plan,
         ranks, per_rank, pp.pp, group);
  }
  if (c.accumulate != 1)
    fail("--accumulate {}: a pipeline plan splits the batch into --microbatches instead", c.accumulate);
  if (c.remat) fail("--remat: a pipeline stage's backward already recomputes its forward from the saved input");
  if (!c.save.empty() || !c.resume.empty()) fail("--save and --resume are not available with pipeline plans yet");
  if (c.eval_every > 0 || c.save_every > 0) fail("--eval-every and --save-every are not available with pipeline plans yet");
  if (c.profile) fail("--profile is not available with pipeline plans yet");
  mpmd::Schedule schedule;
  try {
    schedule = mpmd::generate(mpmd::parse_schedule_kind(c.schedule), pp.pp, c.microbatches, c.virtual_stages);
  } catch (const support::UserError& e) {
    fail("--schedule {} --microbatches {} --virtual {}: {}", c.schedule, c.microbatches, c.virtual_stages, e.what());
  }
  std::optional<mpmd::StagedModel> staged;
  try {
    staged.emplace(model, schedule.virtual_stages(), c.microbatches, stage_plan(pp));
  } catch (const support::UserError& e) {
    fail("--plan {} --microbatches {}: {}", c.plan, c.microbatches, e.what());
  }
  // The stages' optimizer programs take a constant lr and see only their own gradients: no
  // schedule and no global-norm clipping under pipeline plans yet.
  if (c.precision != "f32") fail("--precision {}: pipeline plans train in f32 for now", c.precision);
  if (c.clip_norm > 0) fail("--clip-norm: not supported under pipeline plans yet (each stage sees only its own gradients)");
  if (c.lr_schedule != "constant" || c.warmup > 0)
    fail("--lr-schedule {} --warmup {}: pipeline plans train with a constant learning rate for now", c.lr_schedule, c.warmup);
  nn::AdamW adam = adamw_of(c);  // weight decay and no-decay groups as the other plans
  mpmd::PipelineTrainer trainer(*staged, schedule, nn::init_parameters(model.config(), c.seed), adam, run_options);

  const std::string where =
      run_options.ranks ? fmt::format("{} MPI rank{} ({} stages x {} host device{}, {} stage{} per rank)", ranks,
                                      ranks == 1 ? "" : "s", pp.pp, group, group == 1 ? "" : "s", pp.pp / ranks,
                                      pp.pp / ranks == 1 ? "" : "s")
                        : fmt::format("{} host devices ({} stages x {})", devices, pp.pp, group);
  out << fmt::format("tessera train: {} parameters, plan {} on {}, schedule {}, {} microbatches, batch {}x{}, {} steps, "
                     "corpus {} ({})\n",
                     nn::parameter_count(model.config()), c.plan, where, schedule.name, c.microbatches, c.batch, c.seq,
                     c.steps, corpus_path, support::format_bytes(static_cast<int64_t>(text.size())));
  Batches data{text, c.batch, c.seq, c.seed};
  LossLog log(c, rank0, 1);
  std::vector<mpmd::PipelineResult> measured;  // the stages' measurements of steps 2.. (step 1 compiles)
  for (int64_t t = 1; t <= c.steps; ++t) {
    auto [x, y] = data.at(t);
    const mpmd::PipelineResult& r = trainer.step(x, y);
    if (t > 1 || c.steps == 1) {
      mpmd::PipelineResult m;
      m.stages = r.stages;
      measured.push_back(std::move(m));
    }
    log.step(out, t, r.loss.get_double(0));
  }
  log.finish(out);

  // The per-stage table: what each device of a stage's group holds, and what the stage did.
  out << fmt::format("\nper stage ({} stages x {} host device{}{}, plan {}, schedule {}, {} microbatches):\n", pp.pp,
                     group, group == 1 ? "" : "s", run_options.ranks ? fmt::format(" on {} MPI ranks", ranks) : "",
                     c.plan, schedule.name, c.microbatches);
  out << fmt::format("  {:>5}  {:<8}  {:<16}  {:>12}  {:>15}  {:>22}  {:>6}\n", "stage", "devices", "layers",
                     "params/dev", "optimizer/dev", "peak saved activations", "busy");
  for (const mpmd::StageSummary& st : trainer.stage_summaries()) {  // over MPI, from every rank
    const auto s = static_cast<size_t>(st.stage);
    int64_t peak = 0, peak_bytes = 0;
    double busy = 0;
    for (const mpmd::PipelineResult& m : measured) {
      peak = std::max(peak, m.stages[s].peak_saved);
      peak_bytes = std::max(peak_bytes, m.stages[s].peak_saved_bytes);
      mpmd::Simulation sim = mpmd::measured_simulation(schedule, m);
      busy += sim.busy[s] / sim.makespan / double(measured.size());
    }
    // Over MPI a rank numbers its host devices from 0: the stage's rank, then its devices there.
    int64_t first = (st.stage % (pp.pp / ranks)) * group, last = first + group - 1;
    std::string where_stage = group == 1 ? fmt::format("{}", first) : fmt::format("{}-{}", first, last);
    if (run_options.ranks) where_stage = fmt::format("r{}:{}", st.rank, where_stage);
    out << fmt::format("  {:>5}  {:<8}  {:<16}  {:>12}  {:>15}  {:>22}  {:>5.1f}%\n", st.stage, where_stage,
                       stage_layers(*staged, st.virtual_stages), support::format_bytes(st.parameter_bytes_per_device),
                       support::format_bytes(st.optimizer_bytes_per_device),
                       fmt::format("{} ({} {})", support::format_bytes(peak_bytes), peak,
                                   schedule.virtual_per_stage > 1 ? "chunks" : "microbatches"),
                       100 * busy);
  }
  const nn::Config& mc = staged->micro_config();
  const int64_t hops = c.microbatches * (schedule.virtual_stages() - 1);
  out << fmt::format("  transfers per step: {} activations and {} gradients of {} each (whole arrays, stage to stage)\n",
                     hops, hops, support::format_bytes(mc.batch * mc.seq * mc.d_model * 4));

  // The bubble: measured, and the simulator replaying the schedule with the measured medians.
  std::vector<mpmd::FragmentTimes> medians = mpmd::median_fragment_times(schedule, measured);
  double measured_bubble = mpmd::mean_measured_bubble(schedule, measured);
  double simulated = mpmd::simulate_with_stage_times(schedule, medians).bubble;
  out << fmt::format("pipeline bubble over {}: measured {:.4f}, simulator with the measured median fragment times "
                     "{:.4f} (measured / simulated {:.3f})\n",
                     measured.size() == 1 && c.steps == 1 ? "step 1" : fmt::format("steps 2-{}", c.steps),
                     measured_bubble, simulated, simulated > 0 ? measured_bubble / simulated : 0.0);
  double replayed = mpmd::mean_replayed_bubble(schedule, measured);
  out << fmt::format("  simulator fed fragment by fragment (each action its own measured time): {:.4f} (measured / "
                     "simulated {:.3f})\n",
                     replayed, replayed > 0 ? measured_bubble / replayed : 0.0);
  std::string fragments;
  for (size_t s = 0; s < medians.size(); ++s)
    fragments += fmt::format("{}stage {}: {:.2f} {:.2f} {:.2f}", s == 0 ? "" : "; ", s, medians[s].forward,
                             medians[s].backward, medians[s].weight);
  out << "  median ms of F, B (or BI), W: " << fragments << "\n";
  if (group == 1) {  // the stage threads compute themselves: their CPU time says whether they had a core
    std::string shares;
    for (double x : mpmd::compute_cpu_share(schedule, measured)) shares += fmt::format(" {:.2f}", x);
    double dedicated = mpmd::simulate_with_stage_times(schedule, mpmd::median_fragment_times(schedule, measured, true)).bubble;
    out << fmt::format("  stage threads' CPU / wall time in F and B:{} (below 1: a stage waited for a core); the "
                       "simulator with median CPU times, a core per stage: {:.4f}\n",
                       shares, dedicated);
  }
  if (rank0 && !c.schedule_svg.empty()) {
    const mpmd::PipelineResult& last = measured.back();
    std::ofstream svg(c.schedule_svg);
    svg << mpmd::timeline_svg(schedule, mpmd::measured_simulation(schedule, last),
                              fmt::format("{} P={} M={}: measured, step {} (ms)", schedule.name, pp.pp,
                                          c.microbatches, c.steps));
    if (!svg) fail("--schedule-svg {}: cannot write the file", c.schedule_svg);
    out << fmt::format("measured timeline of step {} written to {}\n", c.steps, c.schedule_svg);
  }
  if (c.sample > 0) {
    std::vector<Literal> trained = trainer.parameters();  // over MPI, gathered from every rank
    if (rank0) out << "\nsample:\n" << generate(model, trained, "The ", c.sample, c.seed) << "\n";
  }
  return 0;
}

}  // namespace

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
  nn::CausalLM model(cfg);
  if (c.plan.find("pp=") != std::string::npos)
    return train_pipeline(c, out_stream, text, corpus_path, model);
  if (!c.schedule_svg.empty()) fail("--schedule-svg {}: needs a pipeline plan (--plan pp=P...)", c.schedule_svg);
  if (!c.save.empty()) check_save_target(c.save);
  if (c.save_every > 0 && c.save.empty()) fail("--save-every {}: needs --save DIR to save into", c.save_every);
  if (c.keep < 1) fail("--keep {}: at least the newest checkpoint is kept", c.keep);
  if (c.eval_batches < 1) fail("--eval-batches {}: expected a positive number", c.eval_batches);
  // With --eval-every the last 10 % of the corpus is held out: it is never trained on.
  std::optional<CorpusSplit> split;
  if (c.eval_every > 0) split = split_corpus(text, c.seq, corpus_path);
  const std::string& train_text = split ? split->train : text;

  // Over MPI every rank reads the same options and files, so a user error up to the first execute
  // (a bad --plan, corpus, shape or checkpoint) is raised alike on every rank, before any collective.
  interp::Profile profile;
  runtime::SessionOptions session_options;
  if (c.profile) session_options.profile = &profile;
  bool over_mpi = c.backend == "mpi";
  int64_t local_devices = c.devices > 0 ? c.devices : over_mpi ? 1 : 4;
  runtime::Session session = over_mpi ? runtime::Session::mpi(local_devices, session_options)
                                      : runtime::Session::host(local_devices, session_options);
  int64_t devices = session.num_devices();
  bool rank0 = session.rank() == 0;  // the one that prints and writes files
  std::ostream silent(nullptr);      // the other ranks' output goes nowhere
  std::ostream& out = rank0 ? out_stream : silent;
  nn::ShardingPlan plan = make_plan(c.plan, devices);
  nn::AdamW adam = adamw_of(c);
  nn::TrainingStep training = nn::TrainingStep{model}
                                  .accumulate(c.accumulate)
                                  .with_remat(c.remat ? autodiff::Remat::kSaveDots : autodiff::Remat::kNone)
                                  .with(adam)
                                  .sharded(plan);
  if (c.clip_norm > 0) training = training.clipped(c.clip_norm);
  ir::Module m("train");
  nn::Programs programs;
  try {
    programs = nn::capture(m, training);
  } catch (const support::UserError& e) {
    fail("--no-decay {}: {}", c.no_decay, e.what());
  }
  runtime::CompiledProgram compiled = session.compile(m, programs.train_step);
  runtime::ShardedProgram step = session.sharded_program(compiled, programs.output_aliases);

  // Parameters: initialised from the seed piece by piece, or the checkpoint (whatever plan wrote it).
  size_t np = programs.num_parameters();
  std::vector<Literal> params, moments;  // whole, from the checkpoint only
  int64_t first_step = 1;
  std::string resumed_from;
  std::map<std::string, std::string> saved_metadata;
  runtime::NamedArrays saved;
  std::function<const Literal&(const std::string&)> find;
  if (!c.resume.empty()) {
    try {
      resumed_from = runtime::checkpoint_directory(c.resume);
      saved = runtime::load_sharded(resumed_from, &saved_metadata);
    } catch (const support::UserError& e) {
      fail("--resume {}: {}", c.resume, e.what());
    }
    find = [&](const std::string& name) -> const Literal& {
      for (const auto& [n, l] : saved)
        if (n == name) return l;
      fail("--resume {}: the checkpoint has no \"{}\"", c.resume, name);
    };
    first_step = find("step").get_int(0) + 1;
  }
  int64_t last_step = first_step + c.steps - 1;
  nn::LrSchedule schedule = schedule_of(c, last_step);
  if (!c.resume.empty()) {
    std::string warning = check_resume(c.resume, saved_metadata, cfg, schedule, split ? kHeldOutPercent : 0);
    if (!warning.empty() && rank0) std::cerr << warning << "\n";
    // Every array the shape this model gives it: a checkpoint without recorded configuration
    // (check_resume) is still refused when it cannot be this model's.
    auto expect = [&](const std::string& name, const Literal& l, const Literal& want) -> const Literal& {
      if (l.type() != want.type())
        fail("--resume {}: \"{}\" is {} in the checkpoint, this model's is {}", c.resume, name, ir::to_string(l.type()),
             ir::to_string(want.type()));
      return l;
    };
    for (size_t i = 0; i < np; ++i) {
      Literal want(ir::Type(cfg.dtype, programs.parameters[i].shape));
      params.push_back(expect(programs.parameters[i].name, find(programs.parameters[i].name), want));
    }
    for (const char* kind : {"m.", "v."})
      for (size_t i = 0; i < np; ++i)
        moments.push_back(expect(kind + programs.parameters[i].name, find(kind + programs.parameters[i].name), params[i]));
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
  for (size_t i = 0; i < np; ++i) {
    if (!params.empty()) {
      state.push_back(step.stage(i, params[i]));
      continue;
    }
    const nn::ParamSpec& spec = programs.parameters[i];
    state.push_back(step.stage_pieces(i, [&](const std::vector<int64_t>& start, const std::vector<int64_t>& extent) {
      return nn::init_parameter_piece(spec, cfg, c.seed, start, extent);
    }));
  }
  for (size_t i = 0; i < np * programs.state_per_parameter; ++i) {
    if (!moments.empty()) {
      state.push_back(step.stage(np + i, moments[i]));
      continue;
    }
    state.push_back(step.stage_pieces(np + i, [&](const std::vector<int64_t>&, const std::vector<int64_t>& extent) {
      return Literal(ir::Type(cfg.dtype, extent));  // zeros
    }));
  }
  params.clear();
  moments.clear();
  saved.clear();  // the checkpoint's whole arrays: staged, no longer needed
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
  if (!resumed_from.empty()) out << fmt::format("resuming from {} at step {}\n", resumed_from, first_step);

  // Evaluation: @loss on the parameters where they are, over the same --eval-batches windows of
  // the held-out tail each time (staged once), averaged.
  std::optional<runtime::ShardedProgram> eval;
  std::vector<std::vector<runtime::ShardedBuffer>> eval_batches;
  if (split) {
    eval.emplace(session.sharded_program(session.compile(m, programs.loss)));
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
  // A checkpoint of the state after step `at`: every array gathered to rank 0 (fetch_to), which
  // splits it again by its sharding and writes the pieces. (Each rank writing its own pieces is
  // the next step: issue 15, item 3.)
  auto save = [&](int64_t at) {
    std::vector<std::string> names;
    std::vector<runtime::ShardedBuffer> bufs;
    for (size_t i = 0; i < np; ++i) names.push_back(programs.parameters[i].name);
    for (const char* kind : {"m.", "v."})
      for (size_t i = 0; i < np; ++i) names.push_back(kind + programs.parameters[i].name);
    for (size_t i = 0; i < np * 3; ++i) {
      std::optional<Literal> whole = step.fetch_to(state[i], 0);
      if (!rank0) continue;
      const ir::Sharding& s = state[i].sharding;
      bufs.push_back({state[i].type, s,
                      std::make_shared<std::vector<Literal>>(runtime::split(*whole, s, m.mesh(s.mesh), devices))});
    }
    names.push_back("step");  // replicated: every device holds it
    bufs.push_back(runtime::ShardedBuffer{
        ir::i32(), ir::Sharding{plan.mesh.name, {}, {}, {}},
        std::make_shared<std::vector<Literal>>(static_cast<size_t>(devices),
                                               Literal::scalar(ir::ElementType::i32, static_cast<double>(at)))});
    if (rank0) {
      std::string written;
      try {
        written = runtime::save_sharded(c.save, names, bufs, plan.mesh, at, run_metadata(cfg, schedule, split ? kHeldOutPercent : 0), c.keep);
      } catch (const support::UserError& e) {
        fail("--save {}: {}", c.save, e.what());
      }
      log.note(out, fmt::format("saved to {} (step {})", written, at));
    }
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
