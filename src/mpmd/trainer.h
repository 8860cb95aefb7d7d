// Training over a pipeline: the schedule's forward and backward over a batch, then AdamW on every
// stage, step after step.
//
// Each stage's StageState (sharded_stage.h) holds its parameters and their AdamW moments for the
// whole run: the runtime reads the parameters where they are, the gradients of a stage's
// parameters are summed on that stage, and after the schedule's last backward every stage applies
// nn's AdamW update (the program nn::capture's @train_step uses) to its own parameters, all stages
// at once. Nothing of a stage's optimizer state ever moves to another stage. Step t of the
// trainer equals step t of nn::TrainingStep{model}.accumulate(M).with(adamw) on the whole model.
//
// Over ranks (RunOptions::ranks, e.g. MpiRanks of mpi_transfer.h) every rank makes the same
// trainer and the same calls; each holds and updates only its own stages (owner_rank), every rank
// gets every step's loss, and parameters() gathers the whole parameters to every rank.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/literal.h"
#include "mpmd/runtime.h"
#include "mpmd/schedule.h"
#include "mpmd/sharded_stage.h"
#include "mpmd/stages.h"
#include "nn/optimizer.h"

namespace tessera::mpmd {

// What one stage holds, for reports (the same on every rank).
struct StageSummary {
  int64_t stage = 0;
  int rank = 0;                         // the rank that runs it (0 without ranks)
  std::vector<int64_t> virtual_stages;  // stage, stage + P, ...
  int64_t parameter_bytes_per_device = 0, optimizer_bytes_per_device = 0;
};

class PipelineTrainer {
 public:
  // `parameters` in parameter_specs order (the step-0 values); the schedule must fit the model's
  // cut and microbatches (run_pipeline's checks, made here once).
  PipelineTrainer(const StagedModel& model, Schedule schedule, const std::vector<ir::Literal>& parameters,
                  nn::AdamW adamw, RunOptions options = {});

  // One training step on a batch (tokens, targets i32 [batch, seq]): returns the run — the loss
  // before the update, the gradients, and the measurements of every stage.
  const PipelineResult& step(const ir::Literal& tokens, const ir::Literal& targets);

  int64_t steps_taken() const { return steps_; }
  const Schedule& schedule() const { return schedule_; }
  // The stages this process runs (all of them without ranks).
  const std::vector<StageState>& stages() const { return stages_; }
  // The current parameters, whole, in parameter_specs order (gathered from the stages; over ranks
  // from every rank, so every rank must call it).
  std::vector<ir::Literal> parameters() const;
  // Every stage's summary in stage order (over ranks gathered from every rank, like parameters()).
  std::vector<StageSummary> stage_summaries() const;
  // Wall time of the last step's optimizer updates (all stages at once), in ms.
  double last_update_ms() const { return update_ms_; }

 private:
  const StagedModel* model_;
  Schedule schedule_;
  RunOptions options_;
  std::vector<StageState> stages_;
  int64_t steps_ = 0;
  PipelineResult last_;
  double update_ms_ = 0;
};

}  // namespace tessera::mpmd
