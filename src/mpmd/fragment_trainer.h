// Training on the program form: the CausalLM's step as named computations (model_step.h),
// differentiated once and cut into fragments (FragmentPipeline), run under a schedule step after
// step, then AdamW on every stage.
//
// Made once: the whole step, its fragments (each compiled into an executable), the schedule's
// instruction lists (FragmentPipeline::compile) and each stage's AdamW program (nn's
// adamw_update on that stage's parameters). A step only runs them. Each stage holds its parameters
// and their AdamW moments for the whole run: a run reads the parameters where they are (lent, not
// copied), the gradient of a parameter is summed over microbatches on its stage, and after the
// schedule every stage updates its own parameters, all stages at once. Nothing of a stage's
// optimizer state moves to another stage. The activations a backward reads are the forward's own
// values, kept on the stage (nothing is recomputed, unless FragmentTrainerOptions::remat asks);
// zero-bubble schedules (BI and W actions) run the split transposes (split_backward).
//
// With M a power of two, step t equals step t of nn::TrainingStep{model}.accumulate(M).with(adamw)
// bit for bit (model_step.h says why the gradients agree; the update is the same program).
//
// With a stage plan (model_step.h: dp, tp or both over one stage's devices) every stage is a group
// of host devices: its fragments and its AdamW program run partitioned there (the optimizer takes
// its parameters and moments donated and returns the next ones in place), its parameters, moments,
// gradients and activations stay there as pieces, and only pieces cross between stages. The
// results then equal the accumulated step's within the sharded programs' rounding (the tests'
// documented tolerance), not bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ir/literal.h"
#include "mpmd/fragment_pipeline.h"
#include "mpmd/model_step.h"
#include "mpmd/schedule.h"
#include "nn/model.h"
#include "nn/optimizer.h"

namespace tessera::exec {
class Executable;
class RunContext;
}  // namespace tessera::exec

namespace tessera::mpmd {

// What a trainer does besides the schedule and AdamW (tools' --clip-norm and --profile).
struct FragmentTrainerOptions {
  // > 0: the gradients are clipped to this global norm before the update, as
  // torch.nn.utils.clip_grad_norm_ (and nn::TrainingStep::clipped) clip them: norm = sqrt of the sum
  // over every parameter of every stage of its gradient's squares (each stage's sum computed where
  // the stage runs, in double; over ranks, summed across them), every gradient times
  // min(1, clip_norm / (norm + 1e-6)) inside each stage's update program.
  double clip_norm = 0;
  // Time per op kind of every fragment and update (FragmentPipelineOptions::profile). Not owned.
  interp::Profile* profile = nullptr;
  // Each backward recomputes its stage's forward instead of reading saved activations
  // (FragmentPipelineOptions::remat; tools' --remat): the same steps, less saved per stage.
  bool remat = false;
};

class FragmentTrainer {
 public:
  // `parameters` in parameter_specs order (the step-0 values). The schedule's stages ×
  // virtual_per_stage pieces must divide the layers and its microbatches the batch (UserError).
  FragmentTrainer(const nn::CausalLM& model, Schedule schedule, const std::vector<ir::Literal>& parameters,
                  nn::AdamW adamw, const std::optional<nn::ShardingPlan>& stage_plan = std::nullopt,
                  Ranks* ranks = nullptr, FragmentTrainerOptions options = {});
  ~FragmentTrainer();
  FragmentTrainer(const FragmentTrainer&) = delete;
  FragmentTrainer& operator=(const FragmentTrainer&) = delete;

  // With `ranks` (FragmentPipelineOptions::ranks) every rank makes the same trainer and the same
  // calls; each holds and updates only its own stages, every rank gets every step's loss and every
  // stage's measurements, and parameters() gathers the whole parameters to every rank.
  //
  // One AdamW step on a batch (tokens, targets i32 [batch, seq]) at learning rate `lr` (default:
  // the AdamW's): the schedule's run, whose results[0] is the loss before the update (the
  // gradients that follow it were handed to the update).
  const FragmentPipelineRun& step(const ir::Literal& tokens, const ir::Literal& targets,
                                  std::optional<double> lr = std::nullopt);

  int64_t steps_taken() const { return steps_; }
  // The last step's global gradient norm before clipping (clip_norm > 0 only; 0 otherwise).
  double last_grad_norm() const { return grad_norm_; }

  // Checkpoints. The state of parameter i where its stage holds it (kind 0: the parameter, 1 and
  // 2: AdamW's m and v): its pieces on the stage's devices, laid out on stage_mesh() by its
  // sharding there, or one whole piece on a one-device stage; over ranks, no pieces when another
  // rank's stage holds it.
  const runtime::ShardedBuffer& state(size_t i, int kind) const;
  // Replaces the parameters and moments of this process's stages, each piece made alone by
  // `read(i, kind, start, extent)` (the box [start, start + extent) of parameter i's state `kind`),
  // and sets the steps taken to `steps`: the next step is step steps + 1 (AdamW's bias corrections).
  using StateReader = std::function<ir::Literal(size_t i, int kind, const std::vector<int64_t>& start,
                                                const std::vector<int64_t>& extent)>;
  void restore(const StateReader& read, int64_t steps);
  const Schedule& schedule() const { return schedule_; }
  const FragmentPipeline& pipeline() const { return *pipeline_; }
  const CompiledSchedule& compiled() const { return compiled_; }
  const ModelStep& model_step() const { return step_; }
  // Copies of the current parameters, in parameter_specs order.
  std::vector<ir::Literal> parameters() const;
  // The parameters stage s holds (indices into parameter_specs), and the parameter bytes each of its
  // devices holds (the optimizer's moments are twice that, on the same devices).
  const std::vector<size_t>& stage_parameters(int64_t stage) const;
  int64_t parameter_bytes(int64_t stage) const;
  // Records the following steps into `trace` (null: stop): stage s's fragments, schedule actions
  // and AdamW update on the track of device s (interp/trace.h).
  void trace_into(interp::Trace* trace) { trace_ = trace; }
  int64_t devices_per_stage() const;
  // Wall time of the last step's optimizer updates (all stages at once), in ms.
  double last_update_ms() const { return update_ms_; }

 private:
  struct Stage {
    std::vector<size_t> parameters;     // indices into parameter_specs
    std::vector<runtime::ShardedBuffer> p, m, v;  // resident, parallel to `parameters`
    std::unique_ptr<ir::Module> module;  // @adamw(p..., m..., v..., g..., scalars[3]) -> (p'..., m'..., v'...)
    // One device: the update's executable; a device group: its sharded program.
    std::shared_ptr<const exec::Executable> update;
    std::unique_ptr<exec::RunContext> context;
    std::unique_ptr<runtime::ShardedProgram> program;
  };
  ModelStep step_;
  Schedule schedule_;
  nn::AdamW adamw_;
  ir::ElementType dtype_ = ir::ElementType::f32;
  std::unique_ptr<FragmentPipeline> pipeline_;
  CompiledSchedule compiled_;
  std::vector<Stage> stages_;
  interp::Trace* trace_ = nullptr;
  std::vector<std::pair<size_t, size_t>> where_;  // per parameter: (stage, slot in it)
  Ranks* ranks_ = nullptr;
  int64_t steps_ = 0;
  FragmentTrainerOptions options_;
  double grad_norm_ = 0;
  FragmentPipelineRun last_;
  double clip_coefficient();
  void share_measurements();
  double update_ms_ = 0;
};

}  // namespace tessera::mpmd
