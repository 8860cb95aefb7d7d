// The measured bubble of real pipeline runs against the simulator fed with their own fragment
// times.
//
// simulate() (simulate.h) takes one cost per action kind for the whole pipeline; a real model's
// stages differ (the first embeds, the last has the head and the loss), so this replays a schedule
// with a cost per stage and kind — the median measured duration of that stage's forwards, (whole or
// input-half) backwards and weight halves — under the simulator's rules: actions one at a time in
// each stage's order, a SEND takes no stage time and its value arrives `transfer` later, a RECV
// waits for it. The measured runs' own bubble is measured_simulation's (runtime.h): the share of
// P x makespan not spent in compute actions.
#pragma once

#include <cstdint>
#include <vector>

#include "mpmd/schedule.h"
#include "mpmd/simulate.h"

namespace tessera::mpmd {

// What one stage did in a pipeline run (FragmentPipelineRun's figures, per stage).
struct StageMeasurements {
  // The most microbatches held at once for a later backward, and the most bytes of activations
  // saved for a backward.
  int64_t peak_saved = 0;
  int64_t peak_saved_bytes = 0;
  std::vector<Interval> times;  // per action of the stage's list: ms since the run started
  // Per action, the CPU time of the stage's thread (ms): its wall time when the thread had a core
  // to itself, less when stage threads outnumber cores (on a device group, the devices' threads
  // compute, so it is only the stage thread's share).
  std::vector<double> cpu_ms;
};

struct PipelineResult {
  std::vector<StageMeasurements> stages;
};

// The measured run as a Simulation (times in ms; busy, makespan, bubble from them; peak_in_flight
// the measured peak_saved), so timeline_svg (svg.h) draws the real run like a simulated one.
Simulation measured_simulation(const Schedule& schedule, const PipelineResult& result);

// Median durations (ms) of one stage's compute actions: F, B or BI, W (0 when there are none).
struct FragmentTimes {
  double forward = 0;
  double backward = 0;
  double weight = 0;
};

// Per stage, the medians over every run given (each run of `schedule`): of the wall times, or with
// `cpu` of the stage threads' CPU times (StageMeasurements::cpu_ms) — what the fragments take with
// a core each, when stage threads outnumber the cores.
std::vector<FragmentTimes> median_fragment_times(const Schedule& schedule, const std::vector<PipelineResult>& runs,
                                                 bool cpu = false);

// Per stage, the stage thread's CPU time over the wall time of its compute actions, over all runs:
// about 1 when the stage had a core to itself whenever it computed.
std::vector<double> compute_cpu_share(const Schedule& schedule, const std::vector<PipelineResult>& runs);

// The schedule replayed with `times[s]` as the durations of stage s's actions (an unsplit B costs
// `backward`, BI `backward`, W `weight`): times, makespan, busy, bubble and peak in flight as
// simulate() defines them. UserError when the schedule deadlocks or `times` has another size.
Simulation simulate_with_stage_times(const Schedule& schedule, const std::vector<FragmentTimes>& times,
                                     double transfer = 0);

// The schedule replayed with every compute action taking the duration it took in `run` (its own
// wall time, not a median): the simulator fed fragment by fragment. What it leaves out is what the
// runtime adds between fragments — hand-offs, wake-ups, a stage waiting for a core to resume after
// its RECV — so the measured bubble over this one is the runtime's overhead, while the ratio to
// simulate_with_stage_times also tests the medians as a cost model.
Simulation simulate_with_action_times(const Schedule& schedule, const PipelineResult& run, double transfer = 0);

// The mean over `runs` of each run's bubble replayed by simulate_with_action_times.
double mean_replayed_bubble(const Schedule& schedule, const std::vector<PipelineResult>& runs);

// The mean measured bubble over `runs` (measured_simulation of each).
double mean_measured_bubble(const Schedule& schedule, const std::vector<PipelineResult>& runs);

}  // namespace tessera::mpmd
