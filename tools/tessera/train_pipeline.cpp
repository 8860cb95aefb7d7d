// `tessera train --plan pp=...` (train_pipeline.h): the pipeline plan's parsing, its stages'
// layout, and the pipeline trainer's run, progress and per-stage report.
#include "tools/tessera/train_pipeline.h"

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
#include "interp/interpreter.h"
#include "ir/builder.h"
#ifdef TESSERA_HAVE_MPI
#include "comm/mpi_communicator.h"
#include "mpmd/mpi_ranks.h"
#endif
#include "mpmd/bubble.h"
#include "mpmd/fragment_trainer.h"
#include "mpmd/generate.h"
#include "mpmd/simulate.h"
#include "mpmd/svg.h"
#include "nn/model.h"
#include "nn/plan.h"
#include "support/error.h"
#include "support/memory.h"
#include "support/strings.h"
#include "tools/tessera/trace_out.h"
#include "tools/tessera/train_data.h"
#include "tools/tessera/train_log.h"
#include "tools/tessera/train_options.h"

namespace tessera::tools {

namespace {

namespace fs = std::filesystem;
using ir::Literal;
using support::fail;

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

// "embed, 0-1" / "2-3, head": what a stage's virtual stages hold (the model's L layers cut into N
// pieces of L/N, model_step.h).
std::string stage_layers(int64_t layers, int64_t pieces, const std::vector<int64_t>& virtual_stages) {
  const int64_t per = layers / pieces;
  std::string out;
  for (int64_t vs : virtual_stages) {
    std::string piece = vs == 0 ? "embed " : "";
    piece += per == 1 ? fmt::format("{}", vs * per) : fmt::format("{}-{}", vs * per, (vs + 1) * per - 1);
    if (vs == pieces - 1) piece += " head";
    out += (out.empty() ? "" : ", ") + piece;
  }
  return out;
}

// A run's measurements as bubble.h takes them: the microbatches in flight are the schedule's own
// (simulate's peak, which the order alone decides), the bytes are measured.
mpmd::PipelineResult as_pipeline_result(const mpmd::Schedule& schedule, const mpmd::FragmentPipelineRun& run) {
  mpmd::PipelineResult r;
  const mpmd::Simulation order = mpmd::simulate(schedule, mpmd::Costs{});
  for (size_t s = 0; s < run.times.size(); ++s) {
    mpmd::StageMeasurements m;
    m.times = run.times[s];
    m.cpu_ms = run.cpu_ms[s];
    m.peak_saved = order.peak_in_flight[s];
    m.peak_saved_bytes = run.peak_saved_bytes[s];
    r.stages.push_back(std::move(m));
  }
  return r;
}

}  // namespace

// `tessera train --plan pp=...`: the pipeline trainer (fragment_trainer.h) on host devices, or with
// its stages spread over MPI ranks (see train_cmd.h). Over MPI every rank reads the same options
// and files and makes the same trainer calls; each runs its own stages (stage s of P on rank
// s·R/P when R divides P; on ranks s·R/P .. (s+1)·R/P−1, its device group split over them, when P
// divides R), every rank gets every loss and measurement, and only rank 0 prints and writes files.
int train_pipeline(const TrainCommand& c, std::ostream& out_stream, const std::string& text,
                   const std::string& corpus_path, const nn::CausalLM& model) {
  const PipelinePlan pp = parse_pipeline_plan(c.plan);
  const int64_t group = pp.dp * pp.tp, devices = pp.pp * group;
  mpmd::Ranks* over = nullptr;  // the MPI ranks, or none
#ifdef TESSERA_HAVE_MPI
  std::unique_ptr<comm::MpiWorld> world;
  std::unique_ptr<mpmd::MpiRanks> mpi_ranks;
  if (c.backend == "mpi") {
    // Its timeout bounds the exchange that ends each step, which waits for the slowest rank's last
    // backward: as long as a transfer may take.
    world = std::make_unique<comm::MpiWorld>(1, mpmd::FragmentPipelineOptions{}.transfer_timeout);
    mpi_ranks = std::make_unique<mpmd::MpiRanks>(*world);
    over = mpi_ranks.get();
  }
#else
  if (c.backend == "mpi")
    fail("--backend mpi: this Tessera was built without its MPI backend (install libopenmpi-dev and configure again)");
#endif
  const int ranks = over ? over->size() : 1;
  const bool rank0 = !over || over->rank() == 0;  // the one that prints and writes
  std::ostream silent(nullptr);
  std::ostream& out = rank0 ? out_stream : silent;
  // Whole stages per rank (ranks divide the stages), or each stage's group over ranks/P ranks.
  if (pp.pp % ranks != 0 && ranks % pp.pp != 0)
    fail("--plan {}: {} stages do not split evenly over {} MPI ranks (run a number of ranks that divides {}, or a "
         "multiple of {} whose share of a stage divides its {} device{})",
         c.plan, pp.pp, ranks, pp.pp, pp.pp, group, group == 1 ? "" : "s");
  const int64_t ranks_per_stage = ranks > pp.pp ? ranks / pp.pp : 1;
  if (group % ranks_per_stage != 0)
    fail("--plan {}: a stage's {} device{} cannot split over {} MPI ranks ({} ranks for {} stages; run a number of "
         "ranks that divides {}, or a multiple of {} whose share of a stage divides {})",
         c.plan, group, group == 1 ? "" : "s", ranks_per_stage, ranks, pp.pp, pp.pp, pp.pp, group);
  const int64_t per_rank = devices / ranks;  // host devices each rank runs
  if (c.devices != 0 && c.devices != per_rank) {
    if (!over)
      fail("--devices {}: --plan {} runs on {} host devices ({} stages x {})", c.devices, c.plan, devices, pp.pp, group);
    fail("--devices {}: --plan {} on {} MPI ranks runs {} host devices on each ({} stages x {})", c.devices, c.plan,
         ranks, per_rank, pp.pp, group);
  }
  if (c.accumulate != 1)
    fail("--accumulate {}: a pipeline plan splits the batch into --microbatches instead", c.accumulate);
  if (!c.save.empty() || !c.resume.empty()) fail("--save and --resume are not available with pipeline plans yet");
  if (c.eval_every > 0 || c.save_every > 0) fail("--eval-every and --save-every are not available with pipeline plans yet");
  if (c.profile) fail("--profile is not available with pipeline plans yet");
  mpmd::Schedule schedule;
  try {
    schedule = mpmd::generate(mpmd::parse_schedule_kind(c.schedule), pp.pp, c.microbatches, c.virtual_stages);
  } catch (const support::UserError& e) {
    fail("--schedule {} --microbatches {} --virtual {}: {}", c.schedule, c.microbatches, c.virtual_stages, e.what());
  }
  if (c.remat)
    fail("--remat: a pipeline plan keeps each stage's forward activations for its backward; rematerialization is not "
         "available with pipeline plans yet");
  const bool tracing = !c.trace.empty() || !c.trace_svg.empty();
  if (tracing && (group != 1 || over))
    fail("--trace: pipeline plans with device groups (dp, tp) per stage or MPI ranks record no trace yet; "
         "one-device stages on host devices (--plan pp=P) do");
  // The stages' optimizer programs take a constant lr and see only their own gradients: no
  // schedule and no global-norm clipping under pipeline plans yet.
  if (c.precision != "f32") fail("--precision {}: pipeline plans train in f32 for now", c.precision);
  if (c.clip_norm > 0) fail("--clip-norm: not supported under pipeline plans yet (each stage sees only its own gradients)");
  if (c.lr_schedule != "constant" || c.warmup > 0)
    fail("--lr-schedule {} --warmup {}: pipeline plans train with a constant learning rate for now", c.lr_schedule, c.warmup);
  nn::AdamW adam = adamw_of(c);  // weight decay and no-decay groups as the other plans
  std::unique_ptr<mpmd::FragmentTrainer> trainer;
  try {
    trainer = std::make_unique<mpmd::FragmentTrainer>(model, schedule, nn::init_parameters(model.config(), c.seed),
                                                      adam, stage_plan(pp), over);
  } catch (const support::UserError& e) {
    fail("--plan {} --microbatches {}: {}", c.plan, c.microbatches, e.what());
  }

  const std::string where =
      !over ? fmt::format("{} host devices ({} stages x {})", devices, pp.pp, group)
      : ranks_per_stage > 1
          ? fmt::format("{} MPI ranks ({} stages x {} devices, {} ranks per stage, {} device{} per rank)", ranks, pp.pp,
                        group, ranks_per_stage, per_rank, per_rank == 1 ? "" : "s")
          : fmt::format("{} MPI rank{} ({} stages x {} host device{}, {} stage{} per rank)", ranks,
                        ranks == 1 ? "" : "s", pp.pp, group, group == 1 ? "" : "s", pp.pp / ranks,
                        pp.pp / ranks == 1 ? "" : "s");
  out << fmt::format("tessera train: {} parameters, plan {} on {}, schedule {}, {} microbatches, batch {}x{}, {} steps, "
                     "corpus {} ({})\n",
                     nn::parameter_count(model.config()), c.plan, where, schedule.name, c.microbatches, c.batch, c.seq,
                     c.steps, corpus_path, support::format_bytes(static_cast<int64_t>(text.size())));
  Batches data{text, c.batch, c.seq, c.seed};
  LossLog log(c, rank0, 1);
  interp::Trace trace;  // --trace: stage s's actions, fragments' ops and update on the track of device s
  if (tracing) trainer->trace_into(&trace);
  std::vector<mpmd::PipelineResult> measured;  // the stages' measurements of steps 2.. (step 1 warms up)
  int64_t transferred = 0;                     // bytes moved between stages in the last step
  for (int64_t t = 1; t <= c.steps; ++t) {
    auto [x, y] = data.at(t);
    trace.set_step(t);
    const mpmd::FragmentPipelineRun& r = trainer->step(x, y);
    mpmd::PipelineResult m = as_pipeline_result(schedule, r);
    transferred = r.transferred_bytes;
    log.step(out, t, r.results[0].get_double(0));
    if (t > 1 || c.steps == 1) measured.push_back(std::move(m));
  }
  log.finish(out);

  // What each stage holds, in stage order.
  struct StageSummary {
    int64_t stage = 0;
    mpmd::StageRanks ranks;
    std::vector<int64_t> virtual_stages;
    int64_t parameter_bytes_per_device = 0, optimizer_bytes_per_device = 0;
  };
  std::vector<StageSummary> summaries;
  for (int64_t s = 0; s < pp.pp; ++s) {
    StageSummary st;
    st.stage = s;
    if (over) st.ranks = mpmd::stage_ranks(s, pp.pp, ranks);
    for (int64_t v = s; v < schedule.virtual_stages(); v += pp.pp) st.virtual_stages.push_back(v);
    st.parameter_bytes_per_device = trainer->parameter_bytes(s);
    st.optimizer_bytes_per_device = 2 * st.parameter_bytes_per_device;  // AdamW's m and v
    summaries.push_back(st);
  }

  // The per-stage table: what each device of a stage's group holds, and what the stage did.
  out << fmt::format("\nper stage ({} stages x {} host device{}{}, plan {}, schedule {}, {} microbatches, {}):\n", pp.pp,
                     group, group == 1 ? "" : "s", over ? fmt::format(" on {} MPI ranks", ranks) : "",
                     c.plan, schedule.name, c.microbatches, "activations saved");
  out << fmt::format("  {:>5}  {:<8}  {:<16}  {:>12}  {:>15}  {:>22}  {:>6}\n", "stage", "devices", "layers",
                     "params/dev", "optimizer/dev", "peak saved activations", "busy");
  for (const StageSummary& st : summaries) {
    const auto s = static_cast<size_t>(st.stage);
    int64_t peak = 0, peak_bytes = 0;
    double busy = 0;
    for (const mpmd::PipelineResult& m : measured) {
      peak = std::max(peak, m.stages[s].peak_saved);
      peak_bytes = std::max(peak_bytes, m.stages[s].peak_saved_bytes);
      mpmd::Simulation sim = mpmd::measured_simulation(schedule, m);
      busy += sim.busy[s] / sim.makespan / double(measured.size());
    }
    // Over MPI a rank numbers its host devices from 0: the stage's rank(s), then its devices there.
    const int64_t on_rank = group / st.ranks.count;  // the stage's devices on each of its ranks
    int64_t first = ranks_per_stage > 1 ? 0 : (st.stage % (pp.pp / ranks)) * group, last = first + on_rank - 1;
    std::string where_stage = on_rank == 1 ? fmt::format("{}", first) : fmt::format("{}-{}", first, last);
    if (over)
      where_stage = st.ranks.count == 1
                        ? fmt::format("r{}:{}", st.ranks.first, where_stage)
                        : fmt::format("r{}-{}:{}", st.ranks.first, st.ranks.first + st.ranks.count - 1, where_stage);
    out << fmt::format("  {:>5}  {:<8}  {:<16}  {:>12}  {:>15}  {:>22}  {:>5.1f}%\n", st.stage, where_stage,
                       stage_layers(model.config().layers, schedule.virtual_stages(), st.virtual_stages),
                       support::format_bytes(st.parameter_bytes_per_device),
                       support::format_bytes(st.optimizer_bytes_per_device),
                       fmt::format("{} ({} {})", support::format_bytes(peak_bytes), peak,
                                   schedule.virtual_per_stage > 1 ? "chunks" : "microbatches"),
                       100 * busy);
  }
  out << fmt::format("  transfers per step: {} between stages (each destination device receives its own piece)\n",
                     support::format_bytes(transferred));

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
  if (tracing) write_trace({trace.events_json()}, c.trace, c.trace_svg, out);
  if (c.sample > 0) {
    std::vector<Literal> trained = trainer->parameters();  // over MPI, gathered
    if (rank0) out << "\nsample:\n" << generate(model, trained, "The ", c.sample, c.seed) << "\n";
  }
  return 0;
}

}  // namespace tessera::tools
