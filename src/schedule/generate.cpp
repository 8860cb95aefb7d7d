// The built-in schedule generators (schedule.h says what each schedule is).
#include "schedule/schedule.h"

#include <fmt/format.h>

#include <algorithm>

#include "support/error.h"

namespace tessera::schedule {

using support::fail;

namespace {

void check_sizes(std::string_view kind, int64_t stages, int64_t microbatches, int64_t virtual_per_stage) {
  check_counts(fmt::format("{} schedule", kind), stages, microbatches, virtual_per_stage);
  // Each (microbatch, virtual stage) pair becomes a few actions; refuse sizes that would exhaust memory.
  constexpr int64_t kMaxPairs = 10'000'000;
  if (stages > kMaxPairs || microbatches > kMaxPairs || virtual_per_stage > kMaxPairs ||
      stages * microbatches > kMaxPairs || stages * microbatches * virtual_per_stage > kMaxPairs)
    fail("{} schedule: {} stages x {} microbatches x {} virtual stages is more than the {} (microbatch, virtual "
         "stage) pairs a generated schedule may have",
         kind, stages, microbatches, virtual_per_stage, kMaxPairs);
}

// Stage `stage`'s order in interleaved 1F1B with `backward` as the backward kind (BI for zero
// bubble). The k-th forward: microbatches advance in groups of P, each group passing through every
// chunk of the stage before the next starts; backwards visit the chunks in reverse. V = 1 is 1F1B.
std::vector<Action> interleaved_order(int64_t stage, int64_t P, int64_t M, int64_t V, ActionKind backward) {
  const int64_t total = V * M;
  auto microbatch_of = [&](int64_t k) { return (k / (P * V)) * P + k % P; };
  auto chunk_of = [&](int64_t k, bool forward) {
    int64_t c = (k % (P * V)) / P;
    return forward ? c : V - 1 - c;
  };
  std::vector<Action> order;
  auto fwd = [&](int64_t k) { order.push_back({ActionKind::kForward, microbatch_of(k), stage + chunk_of(k, true) * P}); };
  auto bwd = [&](int64_t k) { order.push_back({backward, microbatch_of(k), stage + chunk_of(k, false) * P}); };
  // Enough forwards that the first backward chunk of the stage has its gradient by the time the
  // warm-up ends: one per later stage with V = 1 (P−1−s), else two (there and back) plus one group
  // for every extra chunk.
  const int64_t warmup = std::min((P - 1 - stage) * (V == 1 ? 1 : 2) + (V - 1) * P, total);
  for (int64_t k = 0; k < warmup; ++k) fwd(k);
  for (int64_t i = 0; i + warmup < total; ++i) {
    fwd(warmup + i);
    bwd(i);
  }
  for (int64_t k = total - warmup; k < total; ++k) bwd(k);
  return order;
}

// Zero-bubble H1's order on `stage`: 1F1B's with split backwards. 1F1B keeps P−s microbatches in
// flight on stage s; deferring the W's by s input-gradient passes raises that to P and no further,
// and leaves the later stages (whose drain bubble is longest) with W's to run while the gradients
// travel back to the earlier stages.
std::vector<Action> zero_bubble_h1_order(int64_t stage, int64_t P, int64_t M) {
  std::vector<Action> order;
  int64_t backwards = 0, weights = 0;
  for (const Action& a : interleaved_order(stage, P, M, 1, ActionKind::kBackwardInput)) {
    order.push_back(a);
    if (a.kind == ActionKind::kBackwardInput && ++backwards > stage)
      order.push_back({ActionKind::kBackwardWeight, weights++, stage});
  }
  while (weights < M) order.push_back({ActionKind::kBackwardWeight, weights++, stage});
  return order;
}

constexpr std::pair<ScheduleKind, std::string_view> kKinds[] = {{ScheduleKind::kGPipe, "gpipe"},
                                                                {ScheduleKind::kOneFOneB, "1f1b"},
                                                                {ScheduleKind::kInterleaved, "interleaved"},
                                                                {ScheduleKind::kZeroBubbleH1, "zb-h1"}};

}  // namespace

std::string_view schedule_kind_name(ScheduleKind kind) {
  for (const auto& [k, name] : kKinds)
    if (k == kind) return name;
  return "?";
}

ScheduleKind parse_schedule_kind(std::string_view name) {
  for (const auto& [kind, n] : kKinds)
    if (n == name) return kind;
  fail("unknown schedule kind '{}' (expected gpipe, 1f1b, interleaved or zb-h1)", name);
}

void insert_transfers(Schedule& s) {
  const int64_t last = s.virtual_stages() - 1;
  for (int64_t stage = 0; stage < s.stages; ++stage) {
    std::vector<Action> out;
    for (const Action& a : s.actions[static_cast<size_t>(stage)]) {
      const int64_t m = a.microbatch, vs = a.virtual_stage;
      const bool forward = a.kind == ActionKind::kForward;
      const bool input_grad = a.kind == ActionKind::kBackward || a.kind == ActionKind::kBackwardInput;
      // The value this action needs from another stage: the previous virtual stage's activation,
      // or the next virtual stage's gradient.
      if (forward && vs > 0 && s.stage_of(vs - 1) != stage)
        out.push_back({ActionKind::kRecv, m, vs - 1, Payload::kActivation});
      if (input_grad && vs < last && s.stage_of(vs + 1) != stage)
        out.push_back({ActionKind::kRecv, m, vs + 1, Payload::kGradient});
      out.push_back(a);
      if (forward && vs < last && s.stage_of(vs + 1) != stage)
        out.push_back({ActionKind::kSend, m, vs, Payload::kActivation});
      if (input_grad && vs > 0 && s.stage_of(vs - 1) != stage)
        out.push_back({ActionKind::kSend, m, vs, Payload::kGradient});
    }
    s.actions[static_cast<size_t>(stage)] = std::move(out);
  }
}

Schedule generate(ScheduleKind kind, int64_t stages, int64_t microbatches, int64_t virtual_per_stage) {
  const std::string_view name = schedule_kind_name(kind);
  if (kind != ScheduleKind::kInterleaved && virtual_per_stage != 1)
    fail("{} schedule: {} virtual stages per stage apply only to the interleaved schedule", name, virtual_per_stage);
  check_sizes(name, stages, microbatches, virtual_per_stage);  // before M % P
  if (virtual_per_stage > 1 && microbatches % stages != 0)
    fail("interleaved schedule with {} virtual stages per stage: the microbatch count ({}) must be a "
         "multiple of the stage count ({})",
         virtual_per_stage, microbatches, stages);
  Schedule s;
  s.name = std::string(name);
  s.stages = stages;
  s.microbatches = microbatches;
  s.virtual_per_stage = virtual_per_stage;
  for (int64_t stage = 0; stage < stages; ++stage) {
    std::vector<Action>& order = s.actions.emplace_back();
    if (kind == ScheduleKind::kGPipe) {  // all forwards, then all backwards
      for (ActionKind k : {ActionKind::kForward, ActionKind::kBackward})
        for (int64_t m = 0; m < microbatches; ++m) order.push_back({k, m, stage});
    } else if (kind == ScheduleKind::kZeroBubbleH1) {
      order = zero_bubble_h1_order(stage, stages, microbatches);
    } else {
      order = interleaved_order(stage, stages, microbatches, virtual_per_stage, ActionKind::kBackward);
    }
  }
  insert_transfers(s);
  return s;
}

}  // namespace tessera::schedule
