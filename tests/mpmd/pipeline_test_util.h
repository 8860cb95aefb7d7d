// What the pipeline tests share (tests/mpmd and the MPI pipeline tests): the small 4-layer
// CausalLM every schedule is checked on, its initial parameters and AdamW settings, and the
// parameter struct of schedule cases with readable names for ctest.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "ir/literal.h"
#include "nn/config.h"
#include "nn/optimizer.h"
#include "schedule/schedule.h"

namespace tessera::mpmd::testing {

// vocab 32, d_model 32, 4 layers, 4/2 heads, FFN 64, batch 8 x seq 8.
inline nn::Config pipeline_config() {
  nn::Config c;
  c.vocab = 32, c.d_model = 32, c.layers = 4, c.heads = 4, c.kv_heads = 2, c.ffn = 64, c.seq = 8, c.batch = 8;
  return c;
}

// As in tests/nn/sharded_test.cpp: AdamW's m / (sqrt(v) + eps) has slope up to 1 / eps, so the
// rounding differences of a sharded stage's gradients (sums in another order, ~1e-9) move a
// parameter by up to lr / eps times them; eps = 1e-4 keeps that near 1e-7. lr = 1e-2 moves the
// parameters by several percent in six steps, far past the tolerances.
inline nn::AdamW pipeline_adamw() { return nn::AdamW{1e-2, 0.9, 0.95, 1e-4, 0.1}; }

inline const std::vector<ir::Literal>& pipeline_initial_parameters() {
  static const std::vector<ir::Literal> p = nn::init_parameters(pipeline_config(), 5);
  return p;
}

struct ScheduleCase {
  schedule::ScheduleKind kind;
  int64_t stages, microbatches, virtual_per_stage = 1;
};

// gtest prints parameters into ctest's test names; a readable one instead of the struct's bytes.
inline void PrintTo(const ScheduleCase& c, std::ostream* out) {
  *out << schedule::schedule_kind_name(c.kind) << " P=" << c.stages << " M=" << c.microbatches
       << " V=" << c.virtual_per_stage;
}

// Every built-in schedule the acceptance asks for: GPipe, 1F1B and zero-bubble H1 on 2 and 4 stages
// with 4 and 8 microbatches, interleaved (V = 2) on 2 stages.
inline std::vector<ScheduleCase> all_schedule_cases() {
  std::vector<ScheduleCase> out;
  using schedule::ScheduleKind;
  for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB, ScheduleKind::kZeroBubbleH1})
    for (int64_t p : {2, 4})
      for (int64_t m : {4, 8}) out.push_back({kind, p, m});
  for (int64_t m : {4, 8}) out.push_back({ScheduleKind::kInterleaved, 2, m, 2});
  return out;
}

inline std::string case_name(const ::testing::TestParamInfo<ScheduleCase>& info) {
  std::string kind(schedule::schedule_kind_name(info.param.kind));
  std::replace(kind.begin(), kind.end(), '-', '_');
  std::string name = kind + "_P" + std::to_string(info.param.stages) + "_M" + std::to_string(info.param.microbatches);
  if (info.param.virtual_per_stage > 1) name += "_V" + std::to_string(info.param.virtual_per_stage);
  return name;
}

}  // namespace tessera::mpmd::testing
