// The tessera command line. Subcommands grow with the layers beneath them; each is a thin shell
// over a library call.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <cmath>
#include <iostream>
#include <thread>

#include "ir/op_kind.h"
#include "runtime/session.h"
#include "support/error.h"
#include "support/memory.h"
#include "support/threads.h"
#include "tools/tessera/bench_cmd.h"
#include "tools/tessera/check.h"
#include "tools/tessera/generate_cmd.h"
#include "tools/tessera/ops_cmd.h"
#include "tools/tessera/partition_cmd.h"
#include "tools/tessera/train_cmd.h"
#include "tools/tessera/schedule_cmd.h"
#include "version_info.h"

namespace {

// The subcommand that ran, for messages.
std::string command_name(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) return sub->get_name();
  return "";
}

constexpr int64_t kMaxHostDevices = 64;

// CLI11's PositiveNumber and NonNegativeNumber refuse a value as "Value 0 not in range 0.000000 to
// 1797693134862315708145274237317043567980...": a range of 309 digits that seems to hold the value.
// These say what is expected (the help shows the same tags, INT:POSITIVE).
std::string checked_number(const std::string& v, bool zero_allowed) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  const bool number = end != v.c_str() && *end == '\0';
  if (number && (zero_allowed ? d >= 0 : d > 0)) return "";
  return fmt::format("expected {}, got '{}'", zero_allowed ? "a number >= 0" : "a positive number", v);
}
const CLI::Validator kPositive([](std::string& v) { return checked_number(v, false); }, "POSITIVE");
const CLI::Validator kNonNegative([](std::string& v) { return checked_number(v, true); }, "NONNEGATIVE");

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tessera: sharded tensor programs"};
  app.set_version_flag("--version", "tessera " TESSERA_VERSION " (commit " TESSERA_GIT_COMMIT ")");
  app.require_subcommand(1);
  auto* ops = app.add_subcommand("ops", "List the op table (ops.def) and which rules each op has");
  auto* check = app.add_subcommand("check", "Run the cases of StableHLO interpreter test files");
  std::vector<std::string> files;
  double timeout_s = 30;
  check->add_option("files", files, "Test files (.mlir)")->required()->check(CLI::ExistingFile);
  check->add_option("--timeout", timeout_s, "Seconds a collective waits for its peers")
      ->check(kPositive);
  bool check_executable = false;
  std::string probe_dir;
  check->add_option("--probe-dir", probe_dir,
                    "Where interpreter.probe writes its .npy files (a folder per case; default: a temporary one)");
  check->add_flag("--executable", check_executable,
                  "Run the cases compiled (exec::Executable, fast kernels), as devices run programs");
  auto* part = app.add_subcommand("partition", "Print a module's per-device program and what it communicates");
  tessera::tools::PartitionCommand pc;
  part->add_option("file", pc.file, "StableHLO module (.mlir)")->required()->check(CLI::ExistingFile);
  part->add_option("--function", pc.function, "Function to partition (default @main or the first public one)");
  part->add_option("--mesh", pc.mesh, "Axes of the module's mesh, e.g. data=4,model=2");
  part->add_flag("--memory", pc.memory, "Print what each device holds at its peak: arguments, temporaries, collective copies");
  part->add_flag("--show", pc.show, "Draw which device holds which block of each argument and result");
  part->add_option("--show-svg", pc.show_svg, "Write those pictures as SVG files (arg<i>.svg, result<i>.svg) into this folder");
  part->add_flag("--explain", pc.explain, "List each collective with the op, operand or result and dimension that "
                 "forced it, and warn of gathers a cheaper way avoids");
  part->add_flag("--strict", pc.strict, "Fail (exit 1) on any gather a cheaper way avoids, naming the op and place");
  auto* run = app.add_subcommand("run", "Run a StableHLO module on host devices or MPI ranks");
  tessera::tools::RunCommand rc;
  run->add_option("file", rc.file, "StableHLO module (.mlir)")->required()->check(CLI::ExistingFile);
  run->add_option("--devices", rc.devices, "Number of host devices (default: as many as the module's mesh has; with "
                  "--backend mpi: devices per rank, default 1)")
      ->check(kPositive);
  run->add_option("--backend", rc.backend, "host (threads of this process) or mpi (under mpirun; rank 0 prints)")
      ->check(CLI::IsMember({"host", "mpi"}));
  run->add_option("--input", rc.inputs, "argN=file.npy, argN=file.safetensors or argN=file.safetensors:NAME, one per parameter");
  run->add_option("--output-dir", rc.output_dir, "Where result<i>.npy (or results.safetensors) are written");
  run->add_option("--output-format", rc.output_format, "npy (one file per result) or safetensors (one file)")
      ->capture_default_str();
  run->add_option("--function", rc.function, "Function to run (default @main or the first public one)");
  run->add_option("--mesh", rc.mesh, "Axes of the module's mesh, e.g. data=4");
  run->add_option("--trace", rc.trace, "Write a Chrome trace-event JSON (Perfetto): a track per device, a span per op "
                  "and collective");
  run->add_option("--trace-svg", rc.trace_svg, "Draw the trace's timeline as SVG");
  run->add_option("--timeout", rc.timeout_s, "Seconds a collective waits for its peers")->capture_default_str()
      ->check(kPositive);
  run->add_option("--max-while-iterations", rc.max_while_iterations,
                  "Refuse a while loop whose body would run more often than this (default: no limit)")
      ->check(kNonNegative);
  auto* sched = app.add_subcommand("schedule", "Simulate a pipeline schedule; print its timeline and bubble");
  tessera::tools::ScheduleCommand sc;
  auto* sched_kind = sched->add_option("--kind", sc.kind, "gpipe, 1f1b, interleaved or zb-h1")->capture_default_str();
  auto* sched_p = sched->add_option("--stages", sc.stages, "Pipeline stages P")->capture_default_str();
  auto* sched_m = sched->add_option("--microbatches", sc.microbatches, "Microbatches M")->capture_default_str();
  auto* sched_v = sched->add_option("--virtual", sc.virtual_per_stage, "Virtual stages per stage (interleaved)");
  sched->add_option("--costs", sc.costs, "f,b[,w[,transfer]]: F costs f, BI b, W w, B b+w")->capture_default_str();
  sched->add_option("--input", sc.input, "Simulate this schedule CSV (PyTorch's pipelining form, as --csv writes it or "
                    "compute_only) instead of a built-in one")
      ->check(CLI::ExistingFile)->excludes(sched_kind)->excludes(sched_p)->excludes(sched_m)->excludes(sched_v);
  sched->add_option("--csv", sc.csv, "Write the schedule as CSV, PyTorch's pipelining form with its sends and receives "
                    "(_load_csv format compute_comms)");
  sched->add_option("--svg", sc.svg, "Write the timeline as SVG");
  auto* train = app.add_subcommand("train", "Train a byte-level CausalLM on a text corpus over host devices or MPI ranks");
  tessera::tools::TrainCommand tc;
  train->add_option("--plan", tc.plan,
                    "Sharding plan: dp, fsdp, zero1 (dp with the weight update sharded), tp, dp,tp, ctx[=N] (sequence "
                    "split, ring attention), ep[=N] (experts split), dp,ep, or a pipeline pp=P[,dp=D][,tp=T]")
      ->capture_default_str();
  train->add_option("--devices", tc.devices, "Host devices (default 4); with --backend mpi, devices per rank (default 1)")
      ->check(kPositive);
  train->add_option("--backend", tc.backend, "host (threads of this process) or mpi (under mpirun; rank 0 prints)")
      ->capture_default_str()->check(CLI::IsMember({"host", "mpi"}));
  train->add_option("--steps", tc.steps, "Training steps")->capture_default_str()->check(kPositive);
  train->add_option("--batch", tc.batch, "Sequences per step")->capture_default_str()->check(kPositive);
  train->add_option("--seq", tc.seq, "Bytes per sequence")->capture_default_str()->check(kPositive);
  train->add_option("--lr", tc.lr, "AdamW learning rate")->capture_default_str();
  train->add_option("--weight-decay", tc.weight_decay, "AdamW's decoupled weight decay (PyTorch's default)")
      ->capture_default_str()->check(kNonNegative);
  train->add_option("--no-decay", tc.no_decay, "Comma-separated name patterns (fnmatch) of parameters without weight decay; '' for none")
      ->capture_default_str();
  train->add_option("--lr-schedule", tc.lr_schedule, "Learning-rate schedule after the warmup: cosine, linear or constant")
      ->capture_default_str()->check(CLI::IsMember({"cosine", "linear", "constant"}));
  train->add_option("--warmup", tc.warmup, "Steps of linear learning-rate warmup")->capture_default_str()
      ->check(kNonNegative);
  train->add_option("--min-lr", tc.min_lr, "Learning rate at the end of the linear or cosine decay")->capture_default_str()
      ->check(kNonNegative);
  train->add_option("--lr-steps", tc.lr_steps, "The step the decay ends at (default: this run's last step)")
      ->check(kPositive);
  train->add_option("--clip-norm", tc.clip_norm, "Clip the gradients to this global L2 norm (0: no clipping)")
      ->capture_default_str()->check(kNonNegative);
  train->add_option("--precision", tc.precision,
                    "f32, or bf16: mixed precision (bf16 matmuls and activations; f32 parameters, optimizer state, norms, "
                    "softmax and loss)")
      ->capture_default_str()->check(CLI::IsMember({"f32", "bf16"}));
  train->add_option("--accumulate", tc.accumulate, "Microbatches per step (gradient accumulation)")
      ->capture_default_str()->check(kPositive);
  train->add_option("--d-model", tc.d_model, "Model width")->capture_default_str();
  train->add_option("--layers", tc.layers, "Transformer blocks")->capture_default_str();
  train->add_option("--heads", tc.heads, "Query heads")->capture_default_str();
  train->add_option("--kv-heads", tc.kv_heads, "Key/value heads")->capture_default_str();
  train->add_option("--ffn", tc.ffn, "SwiGLU hidden width")->capture_default_str();
  train->add_option("--moe", tc.moe, "Mixture of experts E,k: E SwiGLU experts per block, top-k routing (k 1 or 2)");
  train->add_option("--capacity-factor", tc.capacity_factor, "MoE: expert slots per sequence = factor * k * seq / E")
      ->capture_default_str();
  train->add_option("--aux-loss-coef", tc.aux_loss_coef, "MoE: the load-balancing loss's coefficient")
      ->capture_default_str();
  train->add_option("--seed", tc.seed, "Initialisation and data seed")->capture_default_str();
  train->add_option("--corpus", tc.corpus, "Text file or directory (default: Debian's fortunes)");
  train->add_option("--save", tc.save, "Checkpoint directory: each save adds step-<N>/ and then points DIR/latest at it");
  train->add_option("--resume", tc.resume, "Checkpoint to start from: a --save directory (its latest) or a step directory (any plan, pipelines included, or device count)");
  train->add_option("--save-every", tc.save_every, "Also save every N steps (needs --save)")
      ->check(kPositive);
  train->add_option("--keep", tc.keep, "Checkpoints kept in the --save directory (the newest)")
      ->capture_default_str()->check(kPositive);
  train->add_option("--eval-every", tc.eval_every, "Evaluate on the held-out last 10 % of the corpus every N steps")
      ->check(kPositive);
  train->add_option("--eval-batches", tc.eval_batches, "Batches per evaluation")
      ->capture_default_str()->check(kPositive);
  train->add_option("--losses", tc.losses, "File to write each step's loss to (step, %.9g, hex float)");
  train->add_option("--sample", tc.sample, "Bytes of text to generate at the end")->capture_default_str();
  // The bar redraws one line with carriage returns: right on a terminal, 400 updates on one line
  // in a log. Without either flag it is drawn only when stdout is a terminal.
  bool bar_on = false, bar_off = false;
  auto* bar_flag = train->add_flag("--progress-bar", bar_on, "Draw the progress bar even when stdout is not a terminal");
  train->add_flag("--no-progress-bar", bar_off, "Print a line per tenth of the run instead of a bar")->excludes(bar_flag);
  train->add_flag("--dry-run", tc.dry_run, "Print the memory each device will hold and stop (a run that cannot fit is refused)");
  train->add_option("--emit-program", tc.emit_program, "Write the training step (StableHLO with its shardings, for "
                    "`tessera partition`) to this file and stop");
  train->add_flag("--profile", tc.profile, "Print the time spent per op kind (pp plans: and per stage in F, B, W)");
  train->add_option("--trace", tc.trace, "Write a Chrome trace-event JSON (Perfetto): a track per device, a span per op, "
                    "collective and pipeline action");
  train->add_option("--trace-svg", tc.trace_svg, "Draw the trace's timeline as SVG");
  train->add_flag("--remat", tc.remat, "Recompute activations in the backward pass (element-wise ones; under pp plans each stage's "
                   "whole forward, from its input)");
  auto* train_schedule = train->add_option("--schedule", tc.schedule, "Pipeline schedule (pp plans): gpipe, 1f1b, interleaved or zb-h1")
      ->capture_default_str();
  auto* train_microbatches = train->add_option("--microbatches", tc.microbatches, "Microbatches per step (pp plans)")
      ->capture_default_str()->check(kPositive);
  auto* train_virtual = train->add_option("--virtual", tc.virtual_stages, "Virtual stages per stage (pp plans, interleaved)")
      ->capture_default_str()->check(kPositive);
  train->add_option("--schedule-csv", tc.schedule_csv,
                    "Your own pipeline schedule (pp plans), as PyTorch's pipelining _load_csv reads it: a row per stage, "
                    "a column per time step, cells like 1F0, 0B2, 1I3, 0W1 (compute_only: the sends and receives are "
                    "inserted) or with 1SEND_F0, 2RECV_F0, ... (compute_comms, as `tessera schedule --csv` writes it); "
                    "validated first")
      ->excludes(train_schedule)->excludes(train_microbatches)->excludes(train_virtual);
  train->add_option("--schedule-svg", tc.schedule_svg, "Write the last step's measured pipeline timeline as SVG");
  auto* gen = app.add_subcommand("generate", "Generate text from a `tessera train --save` checkpoint, with a KV cache on the devices");
  tessera::tools::GenerateCommand gc;
  gen->add_option("--resume", gc.resume, "Checkpoint: a --save directory (its latest) or a step directory")->required();
  gen->add_option("--prompt", gc.prompts, "A prompt (repeat for several, generated together in one batch)")->required();
  gen->add_option("--tokens", gc.tokens, "New tokens (bytes) per prompt")->capture_default_str()->check(kPositive);
  gen->add_option("--plan", gc.plan,
                  "tp (heads and KV cache split over the devices), dp (the prompts split), ctx (the KV cache split "
                  "by position) or ep (an MoE model's experts and the prompts split)")
      ->capture_default_str()->check(CLI::IsMember({"tp", "dp", "ctx", "ep"}));
  gen->add_option("--devices", gc.devices, "Host devices")->capture_default_str()->check(kPositive);
  gen->add_option("--temperature", gc.temperature, "Sampling temperature; 0 is greedy")->capture_default_str()
      ->check(kNonNegative);
  gen->add_option("--top-k", gc.top_k, "Sample among the k likeliest tokens (0: all)")->capture_default_str()
      ->check(kNonNegative);
  gen->add_option("--seed", gc.seed, "Sampler seed")->capture_default_str();
  gen->add_flag("--print-tokens", gc.print_tokens, "Also print each sequence's token ids");
  gen->add_option("--block-size", gc.block_size, "Positions per block of the paged KV cache; 0: a contiguous cache "
                  "(default: 16 under tp, contiguous under dp)");
  gen->add_option("--blocks", gc.blocks, "Blocks in the paged cache's pool (default: every slot's longest sequence)");
  gen->add_option("--stop", gc.stops, "A stop string: a sequence stops once its new bytes end with it (repeat for several)");
  gen->add_option("--stop-byte", gc.stop_bytes, "An end token: a sequence stops after generating this byte (0-255; repeat)");
  gen->add_option("--max-batch", gc.max_batch, "Decode slots (paged cache): more prompts wait and take the slots and "
                  "blocks of finished sequences (default: one slot per prompt)")->check(kPositive);
  gen->add_option("--prefill-rows", gc.prefill_rows, "Prompts per prefill run (default: every slot when all prompts "
                  "have one, else 1)")->check(kPositive);
  auto* bench = app.add_subcommand("bench", "Time collectives against OpenMPI's and memcpy (nccl-tests' bandwidths)");
  tessera::tools::BenchCommand bc;
  bench->add_option("what", bc.what, "What to time: collectives")->required()->check(CLI::IsMember({"collectives"}));
  bench->add_option("--devices", bc.devices, "Host devices (and OpenMPI ranks)")->capture_default_str()
      ->check(kPositive);
  bench->add_option("--devices-per-rank", bc.devices_per_rank,
                    "With --backend mpi: devices (threads) per rank; --devices / this many ranks")
      ->capture_default_str()->check(kPositive);
  bench->add_option("--backend", bc.backend, "host (threads of this process) or mpi (Tessera's MPI communicator)")
      ->capture_default_str()->check(CLI::IsMember({"host", "mpi"}));
  bench->add_option("--json", bc.json, "Write the records as JSON");
  bench->add_option("--sizes", bc.sizes, "Message sizes, e.g. 8,4K,64M (default 8 B x 4^k up to 64 MiB)");
  bench->add_flag("!--no-openmpi", bc.openmpi, "Skip OpenMPI's collectives (no mpirun)");
  bench->add_option("--mpirun", bc.mpirun, "The mpirun to start the MPI half with")->capture_default_str();
  bench->add_option("--mpi-bench", bc.mpi_bench, "The MPI half (default: tessera_mpi_collectives_bench beside tessera)");
  // Limits every subcommand shares: host devices per process (threads and per-device state grow
  // with them; more than cores is already slow) and the bytes of array data held at once.
  int64_t max_bytes = 0, threads = -1;  // -1: not given
  bool force = false;
  for (CLI::App* sub : {ops, check, part, run, sched, train, gen, bench}) {
    sub->add_option("--threads", threads,
                    "Busy threads at most: host devices and the kernels' helpers together (default: TESSERA_THREADS, "
                    "else this machine's cores)");
    sub->add_option("--max-bytes", max_bytes, "Refuse to hold more array data than this (e.g. 8G; default: this machine's memory)")
        ->transform(CLI::AsSizeValue(false));
    sub->add_flag("--force", force, fmt::format("Allow more than {} host devices", kMaxHostDevices));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a bad command line is a user error like any other: exit 1.
    return app.exit(e) == 0 ? 0 : 1;
  }
  try {
    if (max_bytes > 0) tessera::support::set_memory_limit(max_bytes);
    if (threads != -1 && threads < 1) tessera::support::fail("--threads {}: Tessera needs at least 1 thread", threads);
    if (threads > 0) tessera::support::set_thread_limit(threads);
    tessera::support::thread_limit();  // a bad TESSERA_THREADS fails now, naming it
    if (train->parsed() && !(tc.lr > 0 && std::isfinite(tc.lr)))
      tessera::support::fail("--lr {}: the learning rate must be a positive number", tc.lr);
    for (auto [sub, n] : {std::pair{run, rc.devices}, {train, tc.devices}, {gen, gc.devices}, {bench, bc.devices}})
      if (sub->parsed() && n > kMaxHostDevices && !force)
        tessera::support::fail("--devices {}: more than {} host devices in one process (each is a thread with its own "
                               "state, on {} cores); pass --force to run them anyway",
                               n, kMaxHostDevices, std::thread::hardware_concurrency());
    if (ops->parsed()) {
      std::cout << tessera::tools::ops_listing();
      return 0;
    }
    if (train->parsed()) {
      tc.progress_bar = bar_on || (!bar_off && isatty(STDOUT_FILENO));
      return tessera::tools::train_command(tc, std::cout);
    }
    if (gen->parsed()) return tessera::tools::generate_command(gc, std::cout);
    if (part->parsed()) return tessera::tools::partition_command(pc, std::cout);
    if (run->parsed()) return tessera::tools::run_command(rc, std::cout);
    if (sched->parsed()) return tessera::tools::schedule_command(sc, std::cout);
    if (bench->parsed()) return tessera::tools::bench_command(bc, std::cout);
    if (check->parsed()) {
      tessera::tools::CheckOptions options;
      options.timeout = tessera::runtime::timeout_from_seconds(timeout_s, "--timeout");
      options.executable = check_executable;
      options.probe_dir = probe_dir;
      tessera::tools::CheckCounts total;
      for (const std::string& f : files) {
        auto c = tessera::tools::check_file(f, std::cout, options);
        total.passed += c.passed;
        total.failed += c.failed;
      }
      std::cout << fmt::format("{} passed, {} failed\n", total.passed, total.failed);
      return total.failed == 0 ? 0 : 1;
    }
  } catch (const tessera::support::UserError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "error: tessera {}: out of memory (lower the sizes, or set --max-bytes)\n", command_name(app));
    return 1;
  } catch (const std::exception& e) {
    // Not the user's fault: a bug, reported as one (exit 2), never an abort.
    fmt::print(stderr, "internal error: tessera {}: {}\n", command_name(app), e.what());
    return 2;
  }
  return 0;
}
