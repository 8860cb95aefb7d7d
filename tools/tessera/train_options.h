// `tessera train`'s optimizer options made into nn's (AdamW with no-decay groups, the learning-rate
// schedule), and what a checkpoint records of the run: the model's configuration, so that --resume
// refuses a different model naming the field and both values, and the schedule, so that a resumed
// run continues it (docs/TRAINING.md, "Optimizer, schedule, clipping").
#pragma once

#include <map>
#include <string>

#include "nn/config.h"
#include "nn/optimizer.h"
#include "tools/tessera/train_cmd.h"

namespace tessera::tools {

// lr, --weight-decay and --no-decay (comma-separated fnmatch patterns).
nn::AdamW adamw_of(const TrainCommand& c);
// --lr-schedule, --warmup, --min-lr, and the step the decay ends at: --lr-steps, or `last_step`.
nn::LrSchedule schedule_of(const TrainCommand& c, int64_t last_step);

// index.json's "metadata" of a checkpoint: model.* (vocab, d_model, layers, heads, kv_heads, ffn,
// dtype), schedule.* (kind, lr, min_lr, warmup, total) and data.held_out_percent (the corpus tail
// --eval-every holds out, 0 without it), values as text (doubles exactly).
std::map<std::string, std::string> run_metadata(const nn::Config& config, const nn::LrSchedule& schedule,
                                                int held_out_percent);
// UserError when `saved` (a checkpoint's metadata) differs from this run's, naming the first field
// that differs and both values. A checkpoint without model.* fields (written before they were
// recorded) is accepted; the return value is then a warning to print (empty otherwise).
std::string check_resume(const std::string& resume, const std::map<std::string, std::string>& saved,
                         const nn::Config& config, const nn::LrSchedule& schedule, int held_out_percent);

}  // namespace tessera::tools
