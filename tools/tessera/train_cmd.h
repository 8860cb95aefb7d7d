// `tessera train`: the main job. Trains a byte-level CausalLM (vocab 256) on a text corpus over
// host devices under a sharding plan, with a progress bar (loss, tokens/s, ETA), then prints the
// per-device table (parameter and optimizer-state bytes, collectives per step by kind and bytes)
// and a short generated sample. Checkpoints save and resume as sharded safetensors, under any plan
// and device count (read piece by piece),
// at the end and every --save-every steps, keeping the newest --keep; a save is atomic
// (runtime/checkpoint.h): killed or failing, it leaves the previous one loadable. --eval-every
// holds out the corpus's last 10 % and logs the loss on it; each step's line shows the model FLOPs
// utilization against this machine's measured SGEMM rate.
// With backend "mpi" (under `mpirun -np N`), each rank runs `devices` local devices and the plan's
// mesh has N x devices; every rank makes the same Session calls in the same order, and only rank 0
// prints and writes --losses. A checkpoint is written by its owners: each rank the files of its own
// devices, rank 0 the index and the switch; --resume reads on each rank only the byte ranges of its
// own pieces, and reports per rank the bytes it read. The losses are bitwise those of as many host
// devices (the MPI communicator folds in group order, as host devices do).
//
// A pipeline plan, --plan pp=P[,dp=D][,tp=T], cuts the model by layers into P stages on host
// devices, each stage a group of D x T devices laid out data- and/or tensor-parallel, and trains
// with a pipeline schedule over --microbatches (mpmd::FragmentTrainer: AdamW on every stage after
// the schedule's backward). It prints the same progress and a per-stage table, the measured bubble
// next to the simulator fed with the measured per-fragment times, and can draw the measured
// timeline (--schedule-svg). The learning-rate schedule, clipping (the global norm over every
// stage), --eval-every, --profile and checkpoints work as under the other plans, in the same format
// (a pipeline checkpoint resumes under fsdp and back). With backend "mpi" the stages are spread over the N ranks (N divides
// P; stage s on rank s·N/P, each rank running its stages' D x T host devices): activations and
// gradients cross between ranks as point-to-point messages, every rank gets every loss, and the
// losses are bitwise those of the same pipeline on host devices.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace tessera::tools {

struct TrainCommand {
  std::string plan = "dp";       // dp | fsdp | tp | dp,tp | ctx[=N] | ep[=N] | dp,ep | pp=P[,dp=D][,tp=T]
  std::string backend = "host";  // host | mpi
  int64_t devices = 0;           // host devices (0: 4), or with backend mpi devices per rank (0: 1)
  int64_t steps = 400;
  int64_t batch = 16, seq = 64;
  int64_t accumulate = 1;  // microbatches per step (gradient accumulation)
  bool remat = false;      // recompute element-wise activations in the backward
  double lr = 3e-3;
  // AdamW and its schedule (train_options.h; docs/TRAINING.md).
  double weight_decay = 0.01;          // PyTorch's default
  std::string no_decay = "*norm,embed";  // fnmatch patterns of parameters without weight decay
  std::string lr_schedule = "constant";  // constant | linear | cosine
  int64_t warmup = 0;                  // steps of linear warmup
  double min_lr = 0;                   // where linear and cosine decay end
  int64_t lr_steps = 0;                // the step the decay ends at (0: this run's last step)
  double clip_norm = 0;                // > 0: clip gradients to this global norm
  std::string precision = "f32";       // f32 | bf16 (mixed: bf16 matmuls, f32 master weights, state, reductions)
  int64_t d_model = 64, layers = 2, heads = 4, kv_heads = 2, ffn = 172;
  // Mixture of experts (nn/moe.h): "E" or "E,k" (E experts of width --ffn, top-k routing, k 1 or
  // 2; empty: the dense SwiGLU), the capacity factor and the load-balancing loss's coefficient.
  std::string moe;
  double capacity_factor = 1.25, aux_loss_coef = 0.01;
  uint64_t seed = 1;
  std::string corpus;  // a file, or a directory of text files; empty: Debian's fortunes
  std::string save, resume;
  int64_t save_every = 0;    // > 0: also save every N steps (into --save)
  int64_t keep = 2;          // checkpoints kept in --save: the newest ones
  int64_t eval_every = 0;    // > 0: the held-out loss every N steps and at the end (train_data.h)
  int64_t eval_batches = 4;  // batches per evaluation
  std::string losses;    // a file to write each step's loss to, exactly: "<step> <%.9g> <hex float>"
  int64_t sample = 200;  // bytes of generated text at the end (0: none)
  bool progress_bar = false;  // true: a bar redrawn with '\r' (the CLI: when stdout is a terminal)
  bool profile = false;      // print the time per op kind at the end
  bool dry_run = false;      // print the memory estimate per device (train_memory.h) and stop
  // non-empty: write the captured training step (the global program with its shardings, as
  // StableHLO text for `tessera partition`) to this file and stop; not for pipeline plans
  std::string emit_program;
  std::string trace;         // non-empty: write every step's trace-event JSON here (trace_out.h)
  std::string trace_svg;     // non-empty: draw its timeline here
  // Pipeline plans only.
  std::string schedule = "1f1b";  // gpipe | 1f1b | interleaved | zb-h1
  int64_t microbatches = 8;
  int64_t virtual_stages = 1;  // --virtual: virtual stages per stage (interleaved)
  // --schedule-csv: a user's own schedule in PyTorch's pipelining CSV (schedule/schedule.h), instead
  // of --schedule, --microbatches and --virtual.
  std::string schedule_csv;
  std::string schedule_svg;    // write the last step's measured timeline as SVG
  // Called after each step with its number and loss (the Python package's per-step callback).
  std::function<void(int64_t step, double loss)> on_step;
};

int train_command(const TrainCommand& c, std::ostream& out);

}  // namespace tessera::tools
