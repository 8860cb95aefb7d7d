// What one device of a training run will hold, before it runs: `tessera train --dry-run`, and the
// check that refuses a run that cannot fit (a 1,000-device run on one machine grew to 24 GB and was
// killed by the kernel; now it is refused in well under a second with this table).
//
// Per device, from the compiled step: its parameters' and optimizer state's pieces (the
// partitioner's report), the batch and step scalars, the temporaries of the step (the executable's
// buffer plan: activations kept for the backward, gradients and every intermediate, at the plan's
// peak with the results that take fresh buffers, collectives' results among them), and the
// communicator's own copies (host devices copy only small inputs; large ones are read in place). Host devices share this process, so
// the process needs the per-device figure times its devices; that is compared with the memory
// limit (this machine's memory, TESSERA_MAX_BYTES or --max-bytes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mpmd/fragment_trainer.h"
#include "nn/capture.h"
#include "runtime/session.h"

namespace tessera::tools {

struct MemoryEstimate {
  int64_t parameters = 0, optimizer = 0, inputs = 0, temporaries = 0, collectives = 0;
  // --eval-every: the loss program's own temporaries and the held-out batches staged for it, held
  // beside the step's for the whole run (0 without evaluation; the table leaves its line out).
  int64_t evaluation = 0;
  int64_t devices_here = 1;  // devices in this process
  int64_t per_device() const { return parameters + optimizer + inputs + temporaries + collectives + evaluation; }
  int64_t process() const { return per_device() * devices_here; }
  // The table: one line per kind, the per-device total, and this process's total.
  std::string table() const;
};

// The estimate of any partitioned program: `local` (of `module`) is one device's program, `report`
// the partitioner's; its first `parameters` arguments count as parameters, the next `state` as
// optimizer state, the rest as inputs. `tessera partition --memory` counts every argument a parameter.
MemoryEstimate estimate_memory(const ir::Module& module, const ir::Function& local, const spmd::Report& report,
                               size_t parameters, size_t state, int64_t devices_here);

MemoryEstimate estimate_training_memory(const runtime::CompiledProgram& step, const nn::Programs& programs,
                                        int64_t devices_here);
// Adds what evaluating with `loss` (the partitioned @loss: parameters, tokens, targets) on
// `batches` staged held-out batches holds per device: its plan's temporaries (its arena stays with
// its executable, beside the step's) and the batches' pieces. The parameters are the step's own.
void add_evaluation(MemoryEstimate& e, const runtime::CompiledProgram& loss, const nn::Programs& programs,
                    int64_t batches);

// A UserError with the table and the limit when the process would need more than the limit.
void check_fits(const MemoryEstimate& e, const std::string& what);

// "estimated before running 7.31 MiB (+0.4 %)": an estimate beside the peak a run measured.
std::string estimate_against(int64_t estimate, int64_t measured);

// A pipeline plan's estimate (`tessera train --plan pp=... --dry-run`): per stage, what one of its
// devices holds (mpmd::FragmentTrainer::memory_plan), and this process's total: each stage it
// runs times that stage's devices here, plus what the trainer holds once (the step's batch, and
// the held-out batches of --eval-every). `between` is held only between steps, when the stages
// hold no gradients and no store: an evaluation's run context and whole parameters.
struct PipelineMemory {
  std::vector<mpmd::FragmentTrainer::StageBytes> stages;
  std::vector<int64_t> devices_here;  // per stage: 0 where another rank runs it
  int64_t once = 0, between = 0;
  int64_t process() const;
  std::string table() const;
};
PipelineMemory estimate_pipeline_memory(const mpmd::FragmentTrainer& trainer, int64_t devices_per_stage_here,
                                        int64_t once, int64_t between);
void check_fits(const PipelineMemory& e, const std::string& what);

}  // namespace tessera::tools
