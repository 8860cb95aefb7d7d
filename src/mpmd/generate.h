// The built-in pipeline schedules: GPipe, 1F1B, interleaved (circular) 1F1B and zero-bubble H1.
//
// Each generator decides only the order of compute actions on every stage; the sends and
// receives are then inserted mechanically (a receive right before the action that needs the
// value, a send right after the action that produced it), so every built-in schedule passes
// validate() and a custom one can be written the same way.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "mpmd/schedule.h"

namespace tessera::mpmd {

enum class ScheduleKind { kGPipe, kOneFOneB, kInterleaved, kZeroBubbleH1 };

// "gpipe", "1f1b", "interleaved", "zb-h1".
std::string_view schedule_kind_name(ScheduleKind kind);
// The inverse of schedule_kind_name; a UserError lists the known kinds.
ScheduleKind parse_schedule_kind(std::string_view name);

// GPipe: every stage runs all forwards, then all backwards. Peak in-flight: M on every stage.
Schedule gpipe(int64_t stages, int64_t microbatches);
// 1F1B (PipeDream-flush): stage s runs P−1−s warm-up forwards, then alternates one forward and one
// backward, then drains the remaining backwards. Peak in-flight on stage s: min(P−s, M).
Schedule one_f_one_b(int64_t stages, int64_t microbatches);
// Interleaved 1F1B (Megatron-LM's circular schedule): each stage holds V virtual stages s, s+P, ...;
// microbatches go through the chunks in groups of P. V > 1 needs M to be a multiple of P (as in
// Megatron-LM); V = 1 is 1F1B.
Schedule interleaved(int64_t stages, int64_t microbatches, int64_t virtual_per_stage);
// Zero-bubble H1 (Qi et al., "Zero Bubble Pipeline Parallelism"): 1F1B's order with each backward
// split into BI (input gradient, on the critical path) and W (weight gradient); stage s defers its
// W's by s backwards so they fill the drain bubble, which keeps at most P microbatches in flight
// per stage, as 1F1B does.
Schedule zero_bubble_h1(int64_t stages, int64_t microbatches);

Schedule generate(ScheduleKind kind, int64_t stages, int64_t microbatches, int64_t virtual_per_stage = 1);

// Adds the sends and receives to schedules given as compute actions only (see above).
void insert_transfers(Schedule& s);

}  // namespace tessera::mpmd
