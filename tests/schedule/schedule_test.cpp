// The schedule data: the generators' shapes (action counts, 1F1B's warm-up, the circular
// assignment of interleaved virtual stages, zero-bubble's split backward) and the generators'
// refusals (the CSV's round trip and refusals: schedule_csv_test.cpp).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>

#include "common/error_of.h"
#include "schedule/schedule.h"

namespace tessera::schedule {
namespace {

using testing::error_of;

int64_t count(const Schedule& s, int64_t stage, ActionKind kind) {
  const auto& list = s.actions[static_cast<size_t>(stage)];
  return std::count_if(list.begin(), list.end(), [&](const Action& a) { return a.kind == kind; });
}

// The compute actions of one stage as "F0 F1 B0 ...", chunk appended as ".c" when V > 1.
std::string compute_order(const Schedule& s, int64_t stage) {
  std::string out;
  for (const Action& a : s.actions[static_cast<size_t>(stage)]) {
    if (!a.is_compute()) continue;
    if (!out.empty()) out += ' ';
    out += fmt::format("{}{}", kind_name(a.kind), a.microbatch);
    if (s.virtual_per_stage > 1) out += fmt::format(".{}", a.virtual_stage / s.stages);
  }
  return out;
}

TEST(Generators, OneFOneBWarmsUpThenAlternates) {
  Schedule s = one_f_one_b(4, 6);
  EXPECT_EQ(compute_order(s, 0), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  EXPECT_EQ(compute_order(s, 2), "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5");
  EXPECT_EQ(compute_order(s, 3), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
}

TEST(Generators, GPipeRunsAllForwardsFirst) {
  EXPECT_EQ(compute_order(gpipe(3, 3), 1), "F0 F1 F2 B0 B1 B2");
}

TEST(Generators, TransfersSurroundTheirComputeActions) {
  // Stage 1 of 3 receives each activation right before its forward and sends it right after; the
  // same for gradients on the way back.
  Schedule s = gpipe(3, 1);
  std::vector<std::string> got;
  for (const Action& a : s.actions[1]) got.push_back(describe(s, a));
  EXPECT_EQ(got, (std::vector<std::string>{"RECV act(mb 0, vs 0) from stage 0", "F(mb 0, vs 1)",
                                           "SEND act(mb 0, vs 1) to stage 2", "RECV grad(mb 0, vs 2) from stage 2",
                                           "B(mb 0, vs 1)", "SEND grad(mb 0, vs 1) to stage 0"}));
  // The first stage only sends activations and receives gradients; the last the other way round.
  EXPECT_EQ(count(s, 0, ActionKind::kSend), 1);
  EXPECT_EQ(count(s, 0, ActionKind::kRecv), 1);
  EXPECT_EQ(s.actions[2].front().payload, Payload::kActivation);
}

TEST(Generators, InterleavedHoldsVirtualStagesCircularly) {
  Schedule s = interleaved(2, 4, 2);
  ASSERT_EQ(s.virtual_stages(), 4);
  for (int64_t stage = 0; stage < 2; ++stage)
    for (const Action& a : s.actions[static_cast<size_t>(stage)])
      if (a.is_compute()) {
        EXPECT_EQ(a.virtual_stage % 2, stage) << describe(s, a);
      }
  // Groups of P microbatches pass through chunk 0, then chunk 1; backwards visit chunk 1 first.
  EXPECT_EQ(compute_order(s, 0), "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
  // The hop from the last stage back to stage 0 (virtual stage 1 -> 2) is a real transfer.
  EXPECT_EQ(describe(s, s.actions[1][2]), "SEND act(mb 0, vs 1) to stage 0");
  EXPECT_NO_THROW(validate(s));
}

TEST(Generators, InterleavedWithOneVirtualStageIs1F1B) {
  Schedule a = interleaved(4, 5, 1), b = one_f_one_b(4, 5);
  EXPECT_EQ(a.actions, b.actions);
}

TEST(Generators, ZeroBubbleSplitsEveryBackward) {
  Schedule s = zero_bubble_h1(4, 8);
  for (int64_t stage = 0; stage < 4; ++stage) {
    EXPECT_EQ(count(s, stage, ActionKind::kBackward), 0);
    EXPECT_EQ(count(s, stage, ActionKind::kBackwardInput), 8);
    EXPECT_EQ(count(s, stage, ActionKind::kBackwardWeight), 8);
  }
  // Stage 0 runs each W right after its BI; the last stage defers them by P-1 backwards.
  EXPECT_EQ(compute_order(s, 0), "F0 F1 F2 F3 BI0 W0 F4 BI1 W1 F5 BI2 W2 F6 BI3 W3 F7 BI4 W4 BI5 W5 BI6 W6 BI7 W7");
  EXPECT_EQ(compute_order(s, 3),
            "F0 BI0 F1 BI1 F2 BI2 F3 BI3 W0 F4 BI4 W1 F5 BI5 W2 F6 BI6 W3 F7 BI7 W4 W5 W6 W7");
}

TEST(Generators, EveryBuiltInScheduleValidates) {
  for (int64_t P : {1, 2, 3, 4, 8})
    for (int64_t M : {1, 2, 4, 8, 16}) {
      EXPECT_NO_THROW(validate(gpipe(P, M))) << P << " " << M;
      EXPECT_NO_THROW(validate(one_f_one_b(P, M))) << P << " " << M;
      EXPECT_NO_THROW(validate(zero_bubble_h1(P, M))) << P << " " << M;
      for (int64_t V : {1, 2, 3, 4})
        if (V == 1 || M % P == 0) {
          EXPECT_NO_THROW(validate(interleaved(P, M, V))) << P << " " << M << " " << V;
        }
    }
}

TEST(Generators, Refusals) {
  EXPECT_EQ(error_of([] { interleaved(4, 6, 2); }),
            "interleaved schedule with 2 virtual stages per stage: the microbatch count (6) must be a multiple "
            "of the stage count (4)");
  EXPECT_EQ(error_of([] { one_f_one_b(0, 4); }), "1f1b schedule: the stage count must be at least 1, got 0");
  EXPECT_EQ(error_of([] { gpipe(2, 0); }), "gpipe schedule: the microbatch count must be at least 1, got 0");
  EXPECT_EQ(error_of([] { generate(ScheduleKind::kOneFOneB, 4, 8, 2); }),
            "1f1b schedule: 2 virtual stages per stage apply only to the interleaved schedule");
  EXPECT_EQ(error_of([] { one_f_one_b(100'000, 1'000); }),
            "1f1b schedule: 100000 stages x 1000 microbatches x 1 virtual stages is more than the 10000000 "
            "(microbatch, virtual stage) pairs a generated schedule may have");
  EXPECT_EQ(error_of([] { parse_schedule_kind("pipedream"); }),
            "unknown schedule kind 'pipedream' (expected gpipe, 1f1b, interleaved or zb-h1)");
  EXPECT_EQ(parse_schedule_kind("zb-h1"), ScheduleKind::kZeroBubbleH1);
}

}  // namespace
}  // namespace tessera::schedule
