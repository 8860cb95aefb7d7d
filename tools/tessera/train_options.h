// `tessera train`'s optimizer options made into nn's (AdamW with no-decay groups, the learning-rate
// schedule), and what a checkpoint records of the run: the model's configuration, so that --resume
// refuses a different model naming the field and both values, and the schedule, so that a resumed
// run continues it (docs/TRAINING.md, "Optimizer, schedule, clipping").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nn/config.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "runtime/checkpoint.h"
#include "tools/tessera/train_cmd.h"

namespace tessera::tools {

// lr, --weight-decay and --no-decay (comma-separated fnmatch patterns).
nn::AdamW adamw_of(const TrainCommand& c);
// --lr-schedule, --warmup, --min-lr, and the step the decay ends at: --lr-steps, or `last_step`.
nn::LrSchedule schedule_of(const TrainCommand& c, int64_t last_step);

// --moe E[,k], --capacity-factor and --aux-loss-coef into config (nothing without --moe).
void apply_moe(const TrainCommand& c, nn::Config& config);
// Expert parallelism's plans: "ep" (every device on the expert axis), "ep=N" (N devices), "dp,ep"
// (2 on the expert axis, the rest data) and "dp=D,ep=N": the expert axis's size on `devices`, or
// nullopt for another plan; a UserError when the sizes do not fit the devices.
std::optional<int64_t> expert_axis_size(const std::string& plan, int64_t devices);
// The devices a plan names itself (ep=N, dp=D,ep=N), when it does.
std::optional<int64_t> plan_devices(const std::string& plan);

// index.json's "metadata" of a checkpoint: model.* (vocab, d_model, layers, heads, kv_heads, ffn,
// dtype, experts, top_k, capacity_factor, aux_loss_coef), schedule.* (kind, lr, min_lr, warmup, total) and data.held_out_percent (the corpus tail
// --eval-every holds out, 0 without it), values as text (doubles exactly).
std::map<std::string, std::string> run_metadata(const nn::Config& config, const nn::LrSchedule& schedule,
                                                int held_out_percent);
// The model run_metadata recorded (model.*), read back for `tessera generate`; a missing or
// malformed field is a UserError naming the checkpoint `resume` and the field.
nn::Config config_of_metadata(const std::string& resume, const std::map<std::string, std::string>& meta);
// UserError when `saved` (a checkpoint's metadata) differs from this run's, naming the first field
// that differs and both values. A checkpoint without model.* fields (written before they were
// recorded) is accepted; the return value is then a warning to print (empty otherwise).
std::string check_resume(const std::string& resume, const std::map<std::string, std::string>& saved,
                         const nn::Config& config, const nn::LrSchedule& schedule, int held_out_percent);

// The checkpoint options of every plan, checked before training rather than after it: --save's
// directory (every part of the path that exists must be a directory; nothing is created yet, so
// every MPI rank checks alike), --save-every needing --save, --keep and --eval-batches.
void check_checkpoint_options(const TrainCommand& c);

// What a checkpoint names the parameters and AdamW's moments, in its order: every parameter's
// name, then "m." and "v." before each (every plan saves and reads these, pipelines included).
std::vector<std::string> checkpoint_state_names(const std::vector<nn::ParamSpec>& parameters);
// UserError naming --resume unless the checkpoint holds every one of `names` with this model's
// type (names[i] is parameters[i % P]'s); a checkpoint without recorded configuration
// (check_resume) is still refused when it cannot be this model's.
void check_checkpoint_arrays(const std::string& resume, const runtime::CheckpointReader& reader,
                             const std::vector<std::string>& names, const std::vector<nn::ParamSpec>& parameters,
                             ir::ElementType dtype);

}  // namespace tessera::tools
