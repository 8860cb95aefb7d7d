// Training on the program form: the CausalLM's step as named computations (model_step.h), cut
// into fragments once (FragmentPipeline), run under a compiled schedule step after step, then
// AdamW on every stage.
//
// Each stage holds its parameters and their AdamW moments for the whole run, where its fragments
// read them (lent, not copied); a parameter's gradient is summed over microbatches on its stage and
// every stage updates its own parameters, all at once: no optimizer state moves between stages.
// Activations are the forward's own values kept on the stage (recomputed only with remat).
//
// With M a power of two, step t equals step t of nn::TrainingStep{model}.accumulate(M).with(adamw)
// bit for bit (model_step.h says why). With a stage plan (dp, tp or both over one stage's devices)
// fragments and AdamW run partitioned there (moments updated in place), only pieces cross stages,
// and results equal the accumulated step's within the sharded programs' rounding.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ir/literal.h"
#include "mpmd/fragment_pipeline.h"
#include "mpmd/model_step.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "schedule/schedule.h"

namespace tessera::mpmd {

struct FragmentTrainerOptions {
  // > 0: gradients clipped to this global norm before the update, as clip_grad_norm_ and
  // nn::TrainingStep::clipped do (each stage's squares summed in double, then over stages in order).
  double clip_norm = 0;
  interp::Profile* profile = nullptr;  // FragmentPipelineOptions::profile, updates too. Not owned.
  bool remat = false;                  // FragmentPipelineOptions::remat
};

class FragmentTrainer {
 public:
  // `parameters` in parameter_specs order. The schedule's virtual stages must divide the layers
  // and its microbatches the batch (UserError). With `ranks` every rank makes the same trainer and
  // calls; each holds and updates its own stages, and gets every step's loss and measurements.
  FragmentTrainer(const nn::CausalLM& model, schedule::Schedule schedule, const std::vector<ir::Literal>& parameters,
                  nn::AdamW adamw, const std::optional<nn::ShardingPlan>& stage_plan = std::nullopt,
                  Ranks* ranks = nullptr, FragmentTrainerOptions options = {});
  ~FragmentTrainer();
  FragmentTrainer(const FragmentTrainer&) = delete;
  FragmentTrainer& operator=(const FragmentTrainer&) = delete;

  // One AdamW step on a batch (tokens, targets i32 [batch, seq]) at `lr` (default: the AdamW's);
  // the run's results[0] is the loss before the update (its gradients went to the update).
  const FragmentPipelineRun& step(const ir::Literal& tokens, const ir::Literal& targets,
                                  std::optional<double> lr = std::nullopt);

  int64_t steps_taken() const { return steps_; }
  // The last step's gradient norm before clipping (clip_norm > 0 only).
  double last_grad_norm() const { return grad_norm_; }

  // Checkpoints: parameter i's state where its stage holds it (kind 0: the parameter, 1 and 2:
  // AdamW's m and v), as pieces on stage_mesh() or one whole piece; none on another rank's stage.
  const runtime::ShardedBuffer& state(size_t i, int kind) const;
  // Replaces this process's stages' states, each piece read alone (the box [start, start +
  // extent) of parameter i's state `kind`); the next step is step steps + 1.
  using StateReader = std::function<ir::Literal(size_t i, int kind, const std::vector<int64_t>& start,
                                                const std::vector<int64_t>& extent)>;
  void restore(const StateReader& read, int64_t steps);
  const schedule::Schedule& schedule() const { return schedule_; }
  const FragmentPipeline& pipeline() const { return *pipeline_; }
  const ModelStep& model_step() const { return step_; }
  // Copies of the current parameters (over ranks: gathered to every rank).
  std::vector<ir::Literal> parameters() const;
  // The parameters stage s holds, and the parameter bytes each of its devices holds.
  const std::vector<size_t>& stage_parameters(int64_t stage) const;
  int64_t parameter_bytes(int64_t stage) const;
  // What one device of each stage holds in a step, known before any step: its parameters' pieces,
  // AdamW's m and v, the step's gradients (held until the update), the run contexts of its
  // programs (the fragments', and the update's where this rank runs the stage), and its store at
  // its fullest (FragmentPipeline::memory_plan), of which saved activations.
  struct StageBytes {
    int64_t parameters = 0, optimizer = 0, gradients = 0, programs = 0, store = 0, saved = 0;
    int64_t total() const { return parameters + optimizer + gradients + programs + store; }
  };
  std::vector<StageBytes> memory_plan() const;
  // Records the following steps into `trace` (null: stop), stage s on track s.
  void trace_into(interp::Trace* trace) { trace_ = trace; }
  double last_update_ms() const { return update_ms_; }  // of the last step's updates

 private:
  struct Stage {
    std::vector<size_t> parameters;     // indices into parameter_specs
    std::vector<runtime::ShardedBuffer> state;  // resident: p..., m..., v..., parallel to `parameters`
    std::unique_ptr<ir::Module> module;  // @adamw(p..., m..., v..., g..., scalars[3]) -> (p'..., m'..., v'...)
    std::unique_ptr<StageProgram> update;
  };
  ModelStep step_;
  schedule::Schedule schedule_;
  nn::AdamW adamw_;
  ir::ElementType dtype_ = ir::ElementType::f32;
  std::unique_ptr<FragmentPipeline> pipeline_;
  CompiledSchedule compiled_;
  std::vector<Stage> stages_;
  interp::Trace* trace_ = nullptr;
  std::vector<std::pair<size_t, size_t>> where_;  // per parameter: (stage, slot in it)
  int64_t steps_ = 0;
  FragmentTrainerOptions options_;
  double grad_norm_ = 0;
  FragmentPipelineRun last_;
  double clip_coefficient();
  void share_measurements();
  double update_ms_ = 0;
};

}  // namespace tessera::mpmd
