// The pipeline half of `tessera train` (train_cmd.h): --plan pp=P[,dp=D][,tp=T] trains with the
// mpmd pipeline trainer, on host devices or with its stages spread over MPI ranks.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "ir/literal.h"
#include "nn/model.h"
#include "tools/tessera/train_cmd.h"

namespace tessera::tools {

// Trains `model` on `text` under the pipeline plan c.plan (train_pipeline.cpp).
int train_pipeline(const TrainCommand& c, std::ostream& out, const std::string& text, const std::string& corpus_path,
                   const nn::CausalLM& model);

// Greedy-ish sampling (temperature 0.8) of `count` bytes after `prompt`, one forward per byte on
// the whole parameters; both trainers print one at the end (train_cmd.cpp).
std::string generate(const nn::CausalLM& model, const std::vector<ir::Literal>& params, const std::string& prompt,
                     int64_t count, uint64_t seed);

}  // namespace tessera::tools
