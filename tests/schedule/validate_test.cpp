// Every refusal of the schedule validator, each with its exact message: a valid built-in schedule
// is broken in one place and the validator must name that place.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/error_of.h"
#include "schedule/schedule.h"

namespace tessera::schedule {
namespace {

using testing::error_of;

std::string refusal(const Schedule& s) { return error_of([&] { validate(s); }); }

// The index of the first action on `stage` that describe()s as `text` (the test fails if none).
size_t step_of(const Schedule& s, int64_t stage, const std::string& text) {
  const auto& list = s.actions[static_cast<size_t>(stage)];
  for (size_t i = 0; i < list.size(); ++i)
    if (describe(s, list[i]) == text) return i;
  ADD_FAILURE() << "no " << text << " on stage " << stage;
  return 0;
}

void erase(Schedule& s, int64_t stage, const std::string& text) {
  auto& list = s.actions[static_cast<size_t>(stage)];
  list.erase(list.begin() + static_cast<std::ptrdiff_t>(step_of(s, stage, text)));
}

// Moves the action `text` on `stage` to position `to` (after removing it).
void move_to(Schedule& s, int64_t stage, const std::string& text, size_t to) {
  auto& list = s.actions[static_cast<size_t>(stage)];
  size_t from = step_of(s, stage, text);
  Action a = list[from];
  list.erase(list.begin() + static_cast<std::ptrdiff_t>(from));
  list.insert(list.begin() + static_cast<std::ptrdiff_t>(to), a);
}

// 1F1B on 2 stages and 2 microbatches (see Csv.FormatIsDocumentedColumns for its shape):
//   stage 0: F0 SEND-act0 F1 SEND-act1 RECV-grad0 B0 RECV-grad1 B1
//   stage 1: RECV-act0 F0 B0 SEND-grad0 RECV-act1 F1 B1 SEND-grad1
Schedule base() { return one_f_one_b(2, 2); }

TEST(Validate, BuiltInScheduleIsAccepted) { EXPECT_NO_THROW(validate(base())); }

TEST(Validate, ReceiveBeforeItsMatchingSendDeadlocks) {
  // Stage 0 waits for the gradient of microbatch 0 before sending the activation that produces it.
  Schedule s = base();
  move_to(s, 0, "RECV grad(mb 0, vs 1) from stage 1", 1);
  EXPECT_EQ(refusal(s),
            "stage 0 step 1 RECV grad(mb 0, vs 1) from stage 1: receive before its matching send stage 1 step 3 "
            "SEND grad(mb 0, vs 1) to stage 0: that stage waits first at stage 1 step 0 RECV act(mb 0, vs 0) from "
            "stage 0 (the schedule deadlocks)");
}

TEST(Validate, CrossedReceivesDeadlock) {
  // Stage 0 runs 1F1B's order (microbatch 1's forward after microbatch 0's backward) while stage 1
  // runs GPipe's (both forwards before any backward): each waits for what the other sends later.
  Schedule s = gpipe(2, 2);
  move_to(s, 0, "RECV grad(mb 0, vs 1) from stage 1", 2);
  move_to(s, 0, "B(mb 0, vs 0)", 3);
  EXPECT_EQ(refusal(s),
            "stage 0 step 2 RECV grad(mb 0, vs 1) from stage 1: receive before its matching send stage 1 step 5 "
            "SEND grad(mb 0, vs 1) to stage 0: that stage waits first at stage 1 step 2 RECV act(mb 1, vs 0) from "
            "stage 0 (the schedule deadlocks)");
}

TEST(Validate, MissingMicrobatch) {
  Schedule s = base();
  for (auto& list : s.actions)
    list.erase(std::remove_if(list.begin(), list.end(), [](const Action& a) { return a.microbatch == 1; }),
               list.end());
  EXPECT_EQ(refusal(s), "schedule '1f1b': microbatch 1 is missing F(mb 1, vs 0) on stage 0");
}

TEST(Validate, MissingBackward) {
  Schedule s = base();
  erase(s, 1, "B(mb 1, vs 1)");
  EXPECT_EQ(refusal(s),
            "schedule '1f1b': microbatch 1 is missing its backward on virtual stage 1 (stage 1): no B(mb 1, vs 1), "
            "nor BI and W");
}

TEST(Validate, DuplicatedMicrobatch) {
  Schedule s = base();
  s.actions[0].push_back(s.actions[0][2]);  // F(mb 1) again at the end
  EXPECT_EQ(refusal(s), "stage 0 step 8 F(mb 1, vs 0): duplicates stage 0 step 2 F(mb 1, vs 0)");
}

TEST(Validate, MicrobatchOutOfRange) {
  Schedule s = base();
  s.actions[0][2].microbatch = 2;
  EXPECT_EQ(refusal(s), "stage 0 step 2 F(mb 2, vs 0): microbatch 2 is out of range (the schedule has 2 microbatches)");
}

TEST(Validate, VirtualStageOutOfRangeOrOnTheWrongStage) {
  Schedule s = base();
  s.actions[0][0].virtual_stage = 2;
  EXPECT_EQ(refusal(s),
            "stage 0 step 0 F(mb 0, vs 2): virtual stage 2 is out of range (the schedule has 2 virtual stages)");
  s = base();
  s.actions[0][0].virtual_stage = 1;
  EXPECT_EQ(refusal(s), "stage 0 step 0 F(mb 0, vs 1): virtual stage 1 is held by stage 1, not stage 0");
}

TEST(Validate, BackwardBeforeItsForward) {
  Schedule s = base();
  move_to(s, 1, "B(mb 0, vs 1)", 1);  // before F(mb 0, vs 1)
  EXPECT_EQ(refusal(s), "stage 1 step 1 B(mb 0, vs 1): backward before its forward F(mb 0, vs 1)");
}

TEST(Validate, ForwardBeforeThePreviousStagesActivationIsReceived) {
  Schedule s = base();
  move_to(s, 1, "F(mb 0, vs 1)", 0);  // before RECV act(mb 0)
  EXPECT_EQ(refusal(s),
            "stage 1 step 0 F(mb 0, vs 1): runs before its input arrives: no earlier RECV act(mb 0, vs 0) from stage 0 "
            "(the value of F(mb 0, vs 0))");
}

TEST(Validate, ForwardWithoutAnyTransferOfItsInput) {
  Schedule s = base();
  erase(s, 0, "SEND act(mb 1, vs 0) to stage 1");
  erase(s, 1, "RECV act(mb 1, vs 0) from stage 0");
  EXPECT_EQ(refusal(s),
            "stage 1 step 4 F(mb 1, vs 1): runs before its input arrives: no earlier RECV act(mb 1, vs 0) from stage 0 "
            "(the value of F(mb 1, vs 0))");
}

TEST(Validate, SendBeforeTheForwardThatComputesIt) {
  // Stage 0 hands on microbatch 1's activation before computing it.
  Schedule s = base();
  move_to(s, 0, "SEND act(mb 1, vs 0) to stage 1", 2);
  EXPECT_EQ(refusal(s),
            "stage 0 step 2 SEND act(mb 1, vs 0) to stage 1: sends a value before it is computed by F(mb 1, vs 0)");
  s = base();
  move_to(s, 1, "SEND grad(mb 0, vs 1) to stage 0", 2);
  EXPECT_EQ(refusal(s),
            "stage 1 step 2 SEND grad(mb 0, vs 1) to stage 0: sends a value before it is computed by B(mb 0, vs 1)");
}

TEST(Validate, BackwardBeforeItsGradientArrives) {
  Schedule s = base();
  move_to(s, 0, "B(mb 0, vs 0)", 4);  // before RECV grad(mb 0)
  EXPECT_EQ(refusal(s),
            "stage 0 step 4 B(mb 0, vs 0): runs before its input arrives: no earlier RECV grad(mb 0, vs 1) from stage 1 "
            "(the value of the backward of (mb 0, vs 1))");
}

TEST(Validate, MismatchedSendAndReceive) {
  Schedule s = base();
  erase(s, 1, "RECV act(mb 1, vs 0) from stage 0");
  EXPECT_EQ(refusal(s),
            "stage 0 step 3 SEND act(mb 1, vs 0) to stage 1: has no matching RECV act(mb 1, vs 0) on stage 1");
  s = base();
  erase(s, 1, "SEND grad(mb 0, vs 1) to stage 0");
  EXPECT_EQ(refusal(s),
            "stage 0 step 4 RECV grad(mb 0, vs 1) from stage 1: has no matching SEND grad(mb 0, vs 1) on stage 1");
}

TEST(Validate, TransferOnTheWrongStage) {
  Schedule s = one_f_one_b(3, 1);
  s.actions[2].insert(s.actions[2].begin(), s.actions[0][1]);  // stage 0's send, on stage 2
  EXPECT_EQ(refusal(s),
            "stage 2 step 0 SEND act(mb 0, vs 0) to stage 1: the value is produced by virtual stage 0 on stage 0, not "
            "on stage 2");
  s = one_f_one_b(3, 1);
  Action past_end = s.actions[2][0];  // RECV act(mb 0, vs 1); make it claim the last stage's output
  past_end.virtual_stage = 2;
  s.actions[2].insert(s.actions[2].begin(), past_end);
  EXPECT_EQ(refusal(s),
            "stage 2 step 0 RECV act(mb 0, vs 2) from stage 2: no virtual stage consumes it (2 is the last virtual "
            "stage)");
}

TEST(Validate, TransferWithinOneStageIsRefused) {
  // One stage holding two virtual stages needs no transfer between them.
  Schedule s = interleaved(1, 2, 2);
  ASSERT_NO_THROW(validate(s));
  Action send;
  send.kind = ActionKind::kSend;
  send.payload = Payload::kActivation;
  send.virtual_stage = 0;
  s.actions[0].insert(s.actions[0].begin() + 1, send);
  EXPECT_EQ(refusal(s),
            "stage 0 step 1 SEND act(mb 0, vs 0) to stage 0: virtual stages 0 and 1 are both on stage 0; no transfer "
            "is needed");
}

TEST(Validate, ForwardBeforeItsInputOnTheSameStage) {
  Schedule s = interleaved(1, 2, 2);  // F0.0 F0.1 B0.1 F1.0 B0.0 F1.1 B1.1 B1.0
  move_to(s, 0, "F(mb 0, vs 1)", 0);
  EXPECT_EQ(refusal(s), "stage 0 step 0 F(mb 0, vs 1): runs before F(mb 0, vs 0) on the same stage");
}

TEST(Validate, SplitBackwardRefusals) {
  // Stage 1: RECV-act0 F0 BI0 SEND-grad0 RECV-act1 F1 BI1 SEND-grad1 W0 W1.
  Schedule s = zero_bubble_h1(2, 2);
  ASSERT_NO_THROW(validate(s));
  Schedule t = s;
  erase(t, 1, "W(mb 1, vs 1)");
  EXPECT_EQ(refusal(t), "stage 1 step 6 BI(mb 1, vs 1): has no matching W(mb 1, vs 1)");
  t = s;
  erase(t, 1, "BI(mb 0, vs 1)");
  EXPECT_EQ(refusal(t), "stage 1 step 7 W(mb 0, vs 1): has no matching BI(mb 0, vs 1)");
  t = s;
  move_to(t, 1, "W(mb 0, vs 1)", 1);
  EXPECT_EQ(refusal(t), "stage 1 step 1 W(mb 0, vs 1): weight gradient before its input gradient BI(mb 0, vs 1)");
  t = s;
  Action whole = t.actions[1][step_of(t, 1, "BI(mb 0, vs 1)")];
  whole.kind = ActionKind::kBackward;
  t.actions[1].push_back(whole);
  EXPECT_EQ(refusal(t),
            "stage 1 step 10 B(mb 0, vs 1): the backward is given both whole and split: stage 1 step 2 BI(mb 0, vs 1)");
}

TEST(Validate, ComputeActionWithATransferField) {
  Schedule s = base();
  s.actions[0][0].payload = Payload::kActivation;
  EXPECT_EQ(refusal(s), "stage 0 step 0 F(mb 0, vs 0): a compute action has no payload");
}

TEST(Validate, Sizes) {
  Schedule s = base();
  s.actions.pop_back();
  EXPECT_EQ(refusal(s), "schedule '1f1b': has action lists for 1 stages but declares 2");
  s = base();
  s.microbatches = 0;
  EXPECT_EQ(refusal(s), "schedule '1f1b': the microbatch count must be at least 1, got 0");
  s = base();
  s.virtual_per_stage = 0;
  EXPECT_EQ(refusal(s), "schedule '1f1b': the virtual stage count per stage must be at least 1, got 0");
}

}  // namespace
}  // namespace tessera::schedule
