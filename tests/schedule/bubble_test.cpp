// The per-stage replay of simulate.h: with equal times on every stage it is the simulator itself
// (same makespan, bubble and peaks for every built-in schedule); with unequal stages it gives the
// timeline worked out by hand; medians and CPU shares are taken per stage and per kind.
#include <gtest/gtest.h>

#include "schedule/schedule.h"
#include "schedule/simulate.h"
#include "support/error.h"

namespace tessera::schedule {
namespace {

TEST(StageTimesReplay, EqualStagesAreTheSimulator) {
  struct Case {
    ScheduleKind kind;
    int64_t stages, microbatches, virtual_per_stage;
    Costs costs;
  };
  for (const Case& c : {Case{ScheduleKind::kGPipe, 4, 8, 1, {1, 2, 0, 0}}, Case{ScheduleKind::kOneFOneB, 4, 8, 1, {1, 2, 0, 0.25}},
                        Case{ScheduleKind::kOneFOneB, 2, 3, 1, {1.5, 1, 0.5, 0}},
                        Case{ScheduleKind::kInterleaved, 4, 8, 2, {1, 1, 0, 0}},
                        Case{ScheduleKind::kZeroBubbleH1, 4, 8, 1, {1, 1, 1, 0}}}) {
    Schedule s = generate(c.kind, c.stages, c.microbatches, c.virtual_per_stage);
    Simulation want = simulate(s, c.costs);
    // The replay takes each action's own duration: a chunk of V is 1/V of the stage's share, and an
    // unsplit B costs b + w.
    const double v = static_cast<double>(c.virtual_per_stage);
    const bool split = c.kind == ScheduleKind::kZeroBubbleH1;
    FragmentTimes t{c.costs.forward / v, (split ? c.costs.backward : c.costs.backward + c.costs.weight) / v,
                    split ? c.costs.weight / v : 0.0};
    Simulation got = simulate_with_stage_times(s, std::vector<FragmentTimes>(size_t(c.stages), t), c.costs.transfer);
    EXPECT_DOUBLE_EQ(got.makespan, want.makespan) << s.name;
    EXPECT_DOUBLE_EQ(got.bubble, want.bubble) << s.name;
    EXPECT_EQ(got.peak_in_flight, want.peak_in_flight) << s.name;
  }
}

TEST(StageTimesReplay, UnequalStagesByHand) {
  // 1F1B on 2 stages, 1 microbatch: F0 on stage 0 [0, 1], F on stage 1 [1, 3], B on stage 1
  // [3, 6], B on stage 0 [6, 10]. Makespan 10, each stage busy 5: bubble 10 / 20.
  Schedule s = one_f_one_b(2, 1);
  Simulation sim = simulate_with_stage_times(s, {{1, 4, 0}, {2, 3, 0}});
  EXPECT_DOUBLE_EQ(sim.makespan, 10);
  EXPECT_EQ(sim.busy, (std::vector<double>{5, 5}));
  EXPECT_DOUBLE_EQ(sim.bubble, 0.5);
  EXPECT_THROW(simulate_with_stage_times(s, {{1, 4, 0}}), support::UserError);
}

TEST(StageTimesReplay, MediansPerStageAndKind) {
  Schedule s = one_f_one_b(2, 2);
  PipelineResult r;
  r.times.resize(2);
  r.cpu_ms.resize(2);
  for (size_t st = 0; st < 2; ++st) {
    double at = 0;
    int f = 0;
    for (const Action& a : s.actions[st]) {
      // Forwards take 1, 3 (median 2) on stage 0 and 2, 4 on stage 1; backwards 10 + stage; the
      // transfers 0.5. The thread had the CPU for half of each compute action.
      double d = a.kind == ActionKind::kForward ? (f++ == 0 ? 1.0 : 3.0) + double(st)
                 : a.kind == ActionKind::kBackward ? 10.0 + double(st)
                                                   : 0.5;
      r.times[st].push_back({at, at + d});
      r.cpu_ms[st].push_back(a.is_compute() ? d / 2 : 0.0);
      at += d;
    }
  }
  std::vector<FragmentTimes> t = median_fragment_times(s, {r});
  ASSERT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t[0].forward, 2);
  EXPECT_DOUBLE_EQ(t[1].forward, 3);
  EXPECT_DOUBLE_EQ(t[0].backward, 10);
  EXPECT_DOUBLE_EQ(t[1].backward, 11);
  EXPECT_DOUBLE_EQ(t[1].weight, 0);
  EXPECT_DOUBLE_EQ(median_fragment_times(s, {r}, /*cpu=*/true)[1].backward, 5.5);
  EXPECT_EQ(compute_cpu_share(s, {r}), (std::vector<double>{0.5, 0.5}));
}

// Fed fragment by fragment: a run whose own timeline obeys the simulator's rules replays to
// exactly that timeline (same makespan, same bubble as measured), and a run that idled beyond them
// (a late wake-up) shows the extra idle as measured bubble above the replay's.
TEST(ActionTimesReplay, ReproducesARunThatFollowsTheRulesAndExposesExtraIdle) {
  Schedule s = one_f_one_b(2, 2);
  // Each compute action's own duration (forwards 1 + microbatch, backwards 3 + stage); only the
  // durations of a run matter to the replay, so the first run is just durations from time 0.
  PipelineResult durations;
  durations.times.resize(2);
  for (size_t st = 0; st < 2; ++st)
    for (const Action& a : s.actions[st]) {
      double d = !a.is_compute() ? 0.0
                 : a.kind == ActionKind::kForward ? 1.0 + double(a.microbatch)
                                                  : 3.0 + double(st);
      durations.times[st].push_back({0, d});
    }
  Simulation sim = simulate_with_action_times(s, durations);
  EXPECT_DOUBLE_EQ(sim.busy[0], 1 + 2 + 3 + 3);
  EXPECT_DOUBLE_EQ(sim.busy[1], 1 + 2 + 4 + 4);

  // A run with exactly that timeline replays to itself.
  PipelineResult run;
  run.times = sim.times;
  Simulation again = simulate_with_action_times(s, run);
  EXPECT_DOUBLE_EQ(again.makespan, sim.makespan);
  EXPECT_DOUBLE_EQ(measured_simulation(s, run).bubble, again.bubble);
  EXPECT_DOUBLE_EQ(mean_replayed_bubble(s, {run, run}), again.bubble);

  // Everything from stage 1's last backward on starts 2 later (a late wake-up): the replay is
  // unchanged, the measured bubble grows.
  double from = 0;
  for (size_t i = 0; i < s.actions[1].size(); ++i)
    if (s.actions[1][i].kind == ActionKind::kBackward && s.actions[1][i].microbatch == 1) from = sim.times[1][i].start;
  PipelineResult late = run;
  for (auto& stage : late.times)
    for (Interval& t : stage)
      if (t.start >= from) t = {t.start + 2, t.end + 2};
  EXPECT_DOUBLE_EQ(simulate_with_action_times(s, late).bubble, again.bubble);
  EXPECT_GT(measured_simulation(s, late).bubble, again.bubble + 0.05);

  PipelineResult one_stage;
  one_stage.times.resize(1);
  EXPECT_THROW(simulate_with_action_times(s, one_stage), support::UserError);
}

}  // namespace
}  // namespace tessera::schedule
