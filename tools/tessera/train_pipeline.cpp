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
#include <span>
#include <thread>

#include "comm/mpi_wire.h"
#include "exec/accelerate.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#ifdef TESSERA_HAVE_MPI
#include "comm/mpi_communicator.h"
#endif
#include "exec/executable.h"
#include "mpmd/fragment_trainer.h"
#include "nn/capture.h"
#include "nn/model.h"
#include "nn/plan.h"
#include "runtime/checkpoint.h"
#include "schedule/schedule.h"
#include "schedule/simulate.h"
#include "support/error.h"
#include "support/memory.h"
#include "support/strings.h"
#include "tools/tessera/trace_out.h"
#include "tools/tessera/train_data.h"
#include "tools/tessera/train_log.h"
#include "tools/tessera/train_memory.h"
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
  mpmd::LocalRanks one_process;
  mpmd::Ranks* over = &one_process;  // the MPI ranks, or this process alone
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
  const bool mpi = over != &one_process;
  const int ranks = over->size();
  const bool rank0 = over->rank() == 0;  // the one that prints and writes
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
    if (!mpi)
      fail("--devices {}: --plan {} runs on {} host devices ({} stages x {})", c.devices, c.plan, devices, pp.pp, group);
    fail("--devices {}: --plan {} on {} MPI ranks runs {} host devices on each ({} stages x {})", c.devices, c.plan,
         ranks, per_rank, pp.pp, group);
  }
  // --accumulate N: the batch split into N x --microbatches microbatches, all through one schedule
  // and one optimizer step, as Megatron-LM accumulates under a pipeline (its microbatches are the
  // accumulation steps): the same step as --microbatches N*M, and as --accumulate N*M under the
  // other plans. N separate pipeline passes would only add N-1 fills and drains.
  if (c.accumulate < 1) fail("--accumulate {}: expected a positive number", c.accumulate);
  int64_t microbatches = 0;
  if (__builtin_mul_overflow(c.microbatches, c.accumulate, &microbatches))
    fail("--microbatches {} --accumulate {}: {} x {} microbatches overflow a 64-bit count", c.microbatches,
         c.accumulate, c.microbatches, c.accumulate);
  const std::string microbatch_options =
      c.accumulate == 1 ? fmt::format("--microbatches {}", c.microbatches)
                        : fmt::format("--microbatches {} --accumulate {}", c.microbatches, c.accumulate);
  check_checkpoint_options(c);
  schedule::Schedule schedule;
  if (!c.schedule_csv.empty()) {  // a user's own, in PyTorch's form: its rows, virtual stages and microbatches
    try {
      schedule = schedule::load_csv(c.schedule_csv);
    } catch (const support::UserError& e) {
      fail("--schedule-csv: {}", e.what());
    }
    if (schedule.stages != pp.pp)
      fail("--schedule-csv {}: {} rows (one per stage), --plan {} has {} stages", c.schedule_csv, schedule.stages,
           c.plan, pp.pp);
    if (c.accumulate != 1)
      fail("--accumulate {}: --schedule-csv {} fixes the microbatches of a step ({}); write a schedule over {} times "
           "as many instead",
           c.accumulate, c.schedule_csv, schedule.microbatches, c.accumulate);
  } else {
    try {
      schedule = schedule::generate(schedule::parse_schedule_kind(c.schedule), pp.pp, microbatches, c.virtual_stages);
    } catch (const support::UserError& e) {
      fail("--schedule {} {} --virtual {}: {}", c.schedule, microbatch_options, c.virtual_stages, e.what());
    }
  }
  const bool tracing = !c.trace.empty() || !c.trace_svg.empty();
  if (tracing && (group != 1 || mpi))
    fail("--trace: pipeline plans with device groups (dp, tp) per stage or MPI ranks record no trace yet; "
         "one-device stages on host devices (--plan pp=P) do");
  nn::AdamW adam = adamw_of(c);  // weight decay and no-decay groups as the other plans
  interp::Profile profile;       // --profile: every fragment's and update's ops, per op kind
  mpmd::FragmentTrainerOptions options;
  options.clip_norm = c.clip_norm;  // the global norm over every stage's gradients
  options.remat = c.remat;          // each backward recomputes its stage's forward from the stage's input
  if (c.profile) options.profile = &profile;
  support::reset_peak_bytes_held();
  const int64_t held_before = support::bytes_held();
  std::unique_ptr<mpmd::FragmentTrainer> trainer;
  try {
    trainer = std::make_unique<mpmd::FragmentTrainer>(model, schedule, nn::init_parameters(model.config(), c.seed),
                                                      adam, stage_plan(pp), over, options);
  } catch (const support::UserError& e) {
    fail("--plan {} {}: {}", c.plan,
         c.schedule_csv.empty() ? microbatch_options : fmt::format("--microbatches {}", schedule.microbatches),
         e.what());
  }
  const nn::Config& cfg = model.config();
  const std::vector<nn::ParamSpec>& specs = trainer->model_step().parameters;
  // With --eval-every the last 10 % of the corpus is held out, as under the other plans.
  std::optional<CorpusSplit> split;
  if (c.eval_every > 0) split = split_corpus(text, c.seq, corpus_path);
  const int held_out = split ? kHeldOutPercent : 0;

  // --resume: every stage reads its parameters and moments piece by piece from the checkpoint,
  // whatever plan wrote it (the names and format every plan saves: runtime/checkpoint.h).
  const std::vector<std::string> state_names = checkpoint_state_names(specs);
  int64_t first_step = 1;
  std::optional<runtime::CheckpointReader> resumed;
  if (!c.resume.empty()) {
    try {
      resumed.emplace(c.resume);
      first_step = resumed->read_whole("step").get_int(0) + 1;
    } catch (const support::UserError& e) {
      fail("--resume {}: {}", c.resume, e.what());
    }
  }
  const int64_t last_step = first_step + c.steps - 1;
  const nn::LrSchedule lr_schedule = schedule_of(c, last_step);
  if (resumed) {
    std::string warning = check_resume(c.resume, resumed->metadata(), cfg, lr_schedule, held_out);
    if (!warning.empty() && rank0) std::cerr << warning << "\n";
    check_checkpoint_arrays(c.resume, *resumed, state_names, specs, cfg.dtype);
    const size_t np = specs.size();
    try {
      trainer->restore(
          [&](size_t i, int kind, const std::vector<int64_t>& start, const std::vector<int64_t>& extent) {
            return resumed->read(state_names[static_cast<size_t>(kind) * np + i], start, extent);
          },
          first_step - 1);
    } catch (const support::UserError& e) {
      fail("--resume {}: {}", c.resume, e.what());
    }
  }

  const std::string where =
      !mpi ? fmt::format("{} host devices ({} stages x {})", devices, pp.pp, group)
      : ranks_per_stage > 1
          ? fmt::format("{} MPI ranks ({} stages x {} devices, {} ranks per stage, {} device{} per rank)", ranks, pp.pp,
                        group, ranks_per_stage, per_rank, per_rank == 1 ? "" : "s")
          : fmt::format("{} MPI rank{} ({} stages x {} host device{}, {} stage{} per rank)", ranks,
                        ranks == 1 ? "" : "s", pp.pp, group, group == 1 ? "" : "s", pp.pp / ranks,
                        pp.pp / ranks == 1 ? "" : "s");
  out << fmt::format("tessera train: {} parameters, plan {} on {}, schedule {}, {} microbatches{}, batch {}x{}, {} "
                     "steps, corpus {} ({})\n",
                     nn::parameter_count(model.config()), c.plan, where, schedule.name, schedule.microbatches,
                     c.accumulate == 1 ? "" : fmt::format(" ({})", microbatch_options), c.batch, c.seq, c.steps,
                     corpus_path, support::format_bytes(static_cast<int64_t>(text.size())));
  if (cfg.compute)  // the model computes so on every stage (nn::CausalLM's islands, as under the other plans)
    out << fmt::format("mixed precision: matmuls and activations in {}; parameters, optimizer state, residual "
                       "stream (what crosses between stages), norms, softmax and loss in {}\n",
                       ir::spelling(*cfg.compute), ir::spelling(cfg.dtype));
  if (resumed) out << fmt::format("resuming from {} at step {}\n", resumed->directory(), first_step);
  resumed.reset();  // restored: its files need not stay open while training
  Batches data{split ? split->train : text, c.batch, c.seq, c.seed};

  // Evaluation: the model's @loss (nn::capture's) on the whole parameters (over MPI gathered to
  // every rank), over the same --eval-batches windows of the held-out tail each time, averaged.
  ir::Module eval_module("eval");
  std::shared_ptr<const exec::Executable> eval_loss;
  std::vector<std::pair<Literal, Literal>> eval_batches;
  if (split) {
    const nn::Programs programs = nn::capture(eval_module, nn::TrainingStep{model});
    exec::CompileOptions co;
    co.module = &eval_module;
    eval_loss = exec::Executable::compile(*eval_module.find_function(programs.loss), co);
    Batches held{split->held_out, c.batch, c.seq, c.seed + 0x5eed};
    for (int64_t k = 1; k <= c.eval_batches; ++k) eval_batches.push_back(held.at(k));
    out << fmt::format("evaluating every {} steps on {} batches of the held-out last {} % of the corpus ({})\n",
                       c.eval_every, c.eval_batches, kHeldOutPercent,
                       support::format_bytes(static_cast<int64_t>(split->held_out.size())));
  }
  auto evaluate = [&] {
    const std::vector<Literal> params = trainer->parameters();
    std::unique_ptr<exec::RunContext> context = eval_loss->make_context();
    double sum = 0;
    for (const auto& [x, y] : eval_batches) {
      std::vector<Literal> in = params;
      in.push_back(x);
      in.push_back(y);
      sum += eval_loss->run(std::move(in), interp::Options{}, *context)[0].get_double(0);
    }
    return sum / double(eval_batches.size());
  };

  // A checkpoint of the state after step `at`, in the sharded format every plan writes: on the
  // stage mesh (a stage's group of devices, or one device), device d's file holding device d's
  // pieces of every stage's parameters and moments, each array laid out as its stage lays it out.
  // A device file thus holds pieces of every stage: over MPI the ranks send rank 0 the pieces of
  // their stages and rank 0 writes the files (the others take part in the save's agreement, so a
  // failure fails it on every rank); a resume reads on each rank only its own stages' pieces.
  const std::optional<nn::ShardingPlan> group_plan = stage_plan(pp);
  const ir::Mesh save_mesh = group_plan ? group_plan->mesh : ir::Mesh{"stage", {{"data", 1}}, {}};
  runtime::SaveGroup save_group;
  save_group.rank = over->rank();
  save_group.owns = [rank0](int64_t) { return rank0; };
  save_group.exchange = [over](const std::string& payload) {
    std::vector<std::string> all;
    for (const std::vector<std::byte>& p : over->exchange("checkpoint save", std::as_bytes(std::span(payload))))
      all.emplace_back(reinterpret_cast<const char*>(p.data()), p.size());
    return all;
  };
  auto save = [&](int64_t at) {
    std::vector<std::string> names = state_names;
    std::vector<runtime::ShardedBuffer> bufs;
    const size_t np = specs.size();
    for (size_t k = 0; k < names.size(); ++k) {
      runtime::ShardedBuffer b = trainer->state(k % np, static_cast<int>(k / np));
      if (!b.pieces) {  // another rank's stage: its pieces come below (to rank 0)
        b.type = ir::Type(cfg.dtype, specs[k % np].shape);
        b.pieces = std::make_shared<std::vector<Literal>>(static_cast<size_t>(group));
      }
      if (!group_plan)  // one whole piece: replicated on the one-device mesh
        b.sharding = ir::Sharding{save_mesh.name, std::vector<ir::DimSharding>(b.type.shape.size()), {}, {}};
      bufs.push_back(std::move(b));
    }
    if (mpi) {
      std::vector<std::byte> mine;  // (array, device, piece) of every piece this rank holds
      for (size_t k = 0; k < bufs.size(); ++k)
        for (size_t d = 0; d < bufs[k].pieces->size(); ++d)
          if (!(*bufs[k].pieces)[d].bytes().empty()) {
            comm::wire::put<uint64_t>(mine, k);
            comm::wire::put<uint64_t>(mine, d);
            comm::wire::put_bytes(mine, mpmd::encode_literal((*bufs[k].pieces)[d]));
          }
      std::vector<std::vector<std::byte>> all = over->exchange("checkpoint pieces", mine);
      if (rank0)
        for (size_t r = 1; r < all.size(); ++r) {
          comm::wire::Reader in(all[r]);
          while (!in.done()) {
            const auto k = static_cast<size_t>(in.get<uint64_t>());
            const auto d = static_cast<size_t>(in.get<uint64_t>());
            Literal piece = mpmd::decode_literal(in.get_bytes());
            runtime::ShardedBuffer& b = bufs.at(k);
            if (b.sharding.dims.size() != b.type.shape.size() || b.sharding.mesh != save_mesh.name) {
              // Laid out as the owning rank's stage lays it out: its program's parameter layout.
              b.sharding = trainer->model_step().step().arg_sharding(k % np).value_or(
                  ir::Sharding{save_mesh.name, std::vector<ir::DimSharding>(b.type.shape.size()), {}, {}});
            }
            b.pieces->at(d) = std::move(piece);
          }
        }
    }
    names.push_back("step");  // replicated: every device holds it
    bufs.push_back(runtime::ShardedBuffer{
        ir::i32(), ir::Sharding{save_mesh.name, {}, {}, {}},
        std::make_shared<std::vector<Literal>>(static_cast<size_t>(group),
                                               Literal::scalar(ir::ElementType::i32, static_cast<double>(at)))});
    std::string written;
    try {
      written = runtime::save_sharded(c.save, names, bufs, save_mesh, at, run_metadata(cfg, lr_schedule, held_out),
                                      int(c.keep), save_group);
    } catch (const support::UserError& e) {
      fail("--save {}: {}", c.save, e.what());
    }
    return written;
  };

  // What each device will hold, known now: printed with --dry-run, and a run that cannot fit is
  // refused here. Besides the stages: the step's batch and the held-out batches, and between steps
  // an evaluation's run context and whole parameters (gathered, and copied into each run's inputs).
  int64_t once = 2 * c.batch * c.seq * 4, between = 0;
  if (eval_loss) {
    once += c.eval_batches * 2 * c.batch * c.seq * 4;
    between = eval_loss->context_bytes();
    between += 2 * nn::parameter_count(cfg) * ir::info(cfg.dtype).bytes;
  }
  const PipelineMemory memory = estimate_pipeline_memory(*trainer, group / ranks_per_stage, once, between);
  const std::string what = fmt::format("--plan {} on {}", c.plan, where);
  if (c.dry_run) {
    out << fmt::format("tessera train --dry-run: plan {} on {}, schedule {}, {} microbatches\n", c.plan, where,
                       schedule.name, schedule.microbatches)
        << memory.table();
    check_fits(memory, what);
    out << fmt::format("fits: the limit is {}\n", support::format_bytes(support::memory_limit()));
    return 0;
  }
  check_fits(memory, what);

  LossLog log(c, rank0, first_step);
  interp::Trace trace;  // --trace: stage s's actions, fragments' ops and update on the track of device s
  if (tracing) trainer->trace_into(&trace);
  std::vector<schedule::PipelineResult> measured;  // the stages' measurements of steps 2.. (step 1 warms up)
  std::vector<int64_t> peak_bytes(static_cast<size_t>(pp.pp), 0);  // per stage, over the measured steps
  int64_t transferred = 0;                     // bytes moved between stages in the last step
  std::vector<double> update_ms;               // the stages' AdamW updates, per measured step
  for (int64_t t = first_step; t <= last_step; ++t) {
    auto [x, y] = data.at(t);
    trace.set_step(t);
    // The schedule's lr and AdamW's bias corrections, in double on the host (nn/optimizer.h).
    const double lr = nn::lr_at(lr_schedule, t);
    const mpmd::FragmentPipelineRun& r = trainer->step(x, y, lr);
    transferred = r.transferred_bytes;
    std::string extra = fmt::format("  lr {:.3e}", lr);
    if (c.clip_norm > 0) extra += fmt::format("  norm {:.4f}", trainer->last_grad_norm());
    log.step(out, t, r.results[0].get_double(0), extra);
    if (t > first_step || c.steps == 1) {
      measured.push_back(r);  // the times only
      for (size_t s = 0; s < peak_bytes.size(); ++s) peak_bytes[s] = std::max(peak_bytes[s], r.peak_saved_bytes[s]);
      update_ms.push_back(trainer->last_update_ms());
    }
    if (split && (t % c.eval_every == 0 || t == last_step)) log.eval(out, t, evaluate());
    if (c.save_every > 0 && t % c.save_every == 0 && t != last_step)
      log.note(out, fmt::format("saved to {} (step {})", save(t), t));
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
    st.ranks = mpmd::stage_ranks(s, pp.pp, ranks);
    for (int64_t v = s; v < schedule.virtual_stages(); v += pp.pp) st.virtual_stages.push_back(v);
    st.parameter_bytes_per_device = trainer->parameter_bytes(s);
    st.optimizer_bytes_per_device = 2 * st.parameter_bytes_per_device;  // AdamW's m and v
    summaries.push_back(st);
  }

  // The per-stage table: what each device of a stage's group holds, and what the stage did.
  out << fmt::format("\nper stage ({} stages x {} host device{}{}, plan {}, schedule {}, {} microbatches, {}):\n", pp.pp,
                     group, group == 1 ? "" : "s", mpi ? fmt::format(" on {} MPI ranks", ranks) : "",
                     c.plan, schedule.name, schedule.microbatches,
                     c.remat ? "forward recomputed in the backward" : "activations saved");
  out << fmt::format("  {:>5}  {:<8}  {:<16}  {:>12}  {:>15}  {:>22}  {:>6}\n", "stage", "devices", "layers",
                     "params/dev", "optimizer/dev", "peak saved activations", "busy");
  // The microbatches in flight are the schedule's own (simulate's peak, which the order alone
  // decides); the bytes are measured.
  const std::vector<int64_t> in_flight = schedule::simulate(schedule, schedule::Costs{}).peak_in_flight;
  for (const StageSummary& st : summaries) {
    const auto s = static_cast<size_t>(st.stage);
    double busy = 0;
    for (const schedule::PipelineResult& m : measured) {
      schedule::Simulation sim = schedule::measured_simulation(schedule, m);
      busy += sim.busy[s] / sim.makespan / double(measured.size());
    }
    // Over MPI a rank numbers its host devices from 0: the stage's rank(s), then its devices there.
    const int64_t on_rank = group / st.ranks.count;  // the stage's devices on each of its ranks
    int64_t first = ranks_per_stage > 1 ? 0 : (st.stage % (pp.pp / ranks)) * group, last = first + on_rank - 1;
    std::string where_stage = on_rank == 1 ? fmt::format("{}", first) : fmt::format("{}-{}", first, last);
    if (mpi)
      where_stage = st.ranks.count == 1
                        ? fmt::format("r{}:{}", st.ranks.first, where_stage)
                        : fmt::format("r{}-{}:{}", st.ranks.first, st.ranks.first + st.ranks.count - 1, where_stage);
    out << fmt::format("  {:>5}  {:<8}  {:<16}  {:>12}  {:>15}  {:>22}  {:>5.1f}%\n", st.stage, where_stage,
                       stage_layers(model.config().layers, schedule.virtual_stages(), st.virtual_stages),
                       support::format_bytes(st.parameter_bytes_per_device),
                       support::format_bytes(st.optimizer_bytes_per_device),
                       fmt::format("{} ({} {})", support::format_bytes(peak_bytes[s]), in_flight[s],
                                   schedule.virtual_per_stage > 1 ? "chunks" : "microbatches"),
                       100 * busy);
  }
  out << fmt::format("  transfers per step: {} between stages (each destination device receives its own piece)\n",
                     support::format_bytes(transferred));
  out << fmt::format("  fragments: {} run by {} compiled programs (every microbatch's pass of a virtual stage is one)\n",
                     trainer->pipeline().plan().fragments.size(), trainer->pipeline().programs_compiled());
  const int64_t peak_held = support::peak_bytes_held() - held_before;
  out << fmt::format("  array memory peak  {} in this process (its {} host device{}); {}\n",
                     support::format_bytes(peak_held), per_rank, per_rank == 1 ? "" : "s",
                     estimate_against(memory.process(), peak_held));

  // The bubble: measured, and the simulator replaying the schedule with the measured medians.
  std::vector<schedule::FragmentTimes> medians = schedule::median_fragment_times(schedule, measured);
  double measured_bubble = schedule::mean_measured_bubble(schedule, measured);
  double simulated = schedule::simulate_with_stage_times(schedule, medians).bubble;
  out << fmt::format("pipeline bubble over {}: measured {:.4f}, simulator with the measured median fragment times "
                     "{:.4f} (measured / simulated {:.3f})\n",
                     c.steps == 1 ? fmt::format("step {}", first_step) : fmt::format("steps {}-{}", first_step + 1, last_step),
                     measured_bubble, simulated, simulated > 0 ? measured_bubble / simulated : 0.0);
  double replayed = schedule::mean_replayed_bubble(schedule, measured);
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
    for (double x : schedule::compute_cpu_share(schedule, measured)) shares += fmt::format(" {:.2f}", x);
    double dedicated =
        schedule::simulate_with_stage_times(schedule, schedule::median_fragment_times(schedule, measured, true)).bubble;
    out << fmt::format("  stage threads' CPU / wall time in F and B:{} (below 1: a stage waited for a core); the "
                       "simulator with median CPU times, a core per stage: {:.4f}\n",
                       shares, dedicated);
  }
  if (rank0 && !c.schedule_svg.empty()) {
    const schedule::PipelineResult& last = measured.back();
    std::ofstream svg(c.schedule_svg);
    svg << schedule::timeline_svg(schedule, schedule::measured_simulation(schedule, last),
                              fmt::format("{} P={} M={}: measured, step {} (ms)", schedule.name, pp.pp,
                                          schedule.microbatches, last_step));
    if (!svg) fail("--schedule-svg {}: cannot write the file", c.schedule_svg);
    out << fmt::format("measured timeline of step {} written to {}\n", last_step, c.schedule_svg);
  }
  if (c.profile) {
    // Per stage, the mean ms per step of its F, B (or BI) and W actions (the measured steps'), and
    // the updates; then the ops of every fragment and update by kind, as the other plans print them.
    out << fmt::format("\ntime per stage, ms per step (mean of {}):\n", measured.size() == 1 ? "1 step"
                                                                       : fmt::format("{} steps", measured.size()));
    out << fmt::format("  {:>5}  {:>10}  {:>10}  {:>10}  {:>10}\n", "stage", "forward", "backward", "weight", "busy");
    for (size_t s = 0; s < static_cast<size_t>(pp.pp); ++s) {
      double sum[3] = {0, 0, 0};
      for (const schedule::PipelineResult& m : measured)
        for (size_t a = 0; a < schedule.actions[s].size(); ++a) {
          using schedule::ActionKind;
          const ActionKind kind = schedule.actions[s][a].kind;
          const int k = kind == ActionKind::kForward                                          ? 0
                        : kind == ActionKind::kBackward || kind == ActionKind::kBackwardInput ? 1
                        : kind == ActionKind::kBackwardWeight                                 ? 2
                                                                                              : -1;
          if (k >= 0) sum[k] += m.times[s][a].end - m.times[s][a].start;
        }
      const double n = double(measured.size());
      out << fmt::format("  {:>5}  {:>10.3f}  {:>10.3f}  {:>10.3f}  {:>10.3f}\n", s, sum[0] / n, sum[1] / n, sum[2] / n,
                         (sum[0] + sum[1] + sum[2]) / n);
    }
    double update = 0;
    for (double u : update_ms) update += u / double(update_ms.size());
    out << fmt::format("  AdamW updates (every stage at once): {:.3f} ms per step\n", update);
    out << fmt::format("\ntime per op kind, {}:\n", mpi ? "rank 0's stages' devices" : "all stages' devices")
        << profile.to_string();
  }
  if (tracing) write_trace({trace.events_json()}, c.trace, c.trace_svg, out);
  if (!c.save.empty()) log.note(out, fmt::format("saved to {} (step {})", save(last_step), last_step));
  if (c.sample > 0) {
    std::vector<Literal> trained = trainer->parameters();  // over MPI, gathered
    if (rank0) out << "\nsample:\n" << generate(model, trained, "The ", c.sample, c.seed) << "\n";
  }
  return 0;
}

}  // namespace tessera::tools
