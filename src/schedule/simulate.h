// The schedule simulator (when each action starts and ends, the makespan, the bubble, the peak of
// microbatches in flight per stage), its replays with measured times, and its pictures.
//
// The model: each stage runs its actions one at a time in order. A compute action takes its cost;
// a SEND takes no stage time and its value arrives `transfer` later; a RECV ends when the value has
// arrived, the wait being idle time. Dependencies inside a stage are met by the order (validate()),
// so transfers are the only edges between stages.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "schedule/schedule.h"

namespace tessera::schedule {

// Costs of one stage's whole share of the model, in any unit: F `forward`, BI `backward`, W
// `weight`, an unsplit B both (weight = 0: the classic f = b = 1 setting). With V virtual stages
// per stage each action costs 1/V of that, so schedules compare on the same model.
struct Costs {
  double forward = 1;
  double backward = 1;
  double weight = 0;
  double transfer = 0;  // from a send's posting to its arrival
};

// Parses "f,b", "f,b,w" or "f,b,w,t" (a UserError names `what` and the bad item).
Costs parse_costs(std::string_view text, std::string_view what = "costs");
double cost_of(const Action& a, const Costs& costs, int64_t virtual_per_stage = 1);

struct Interval {
  double start = 0;
  double end = 0;
};

struct Simulation {
  std::vector<std::vector<Interval>> times;  // parallel to Schedule::actions
  double makespan = 0;
  std::vector<double> busy;  // per stage: time in compute actions
  double bubble = 0;         // idle share of stages × makespan
  // Per stage: the most forwards in flight at once, each from its start to its backward's end (B,
  // or W: it still reads the activations), half-open. With V virtual stages each holds 1/V of the
  // stage's layers.
  std::vector<int64_t> peak_in_flight;
};

// Validates the schedule, then simulates it.
Simulation simulate(const Schedule& s, const Costs& costs);
// The same with `duration(stage, index, action)` for each compute action and `transfer` per send.
Simulation replay(const Schedule& s, const std::function<double(size_t, size_t, const Action&)>& duration,
                  double transfer);

// A text timeline: a row per stage, a cell per time quantum (coarsened to at most `max_cells`),
// showing the action running then (F3, B3, I3, W3; F3.1 for chunk 1) or '.'.
std::string text_chart(const Schedule& s, const Simulation& sim, int64_t max_cells = 160);
// The SVG timeline (support/timeline_svg.h): a row per stage, a box per compute action of positive
// duration, coloured by kind.
std::string timeline_svg(const Schedule& s, const Simulation& sim, std::string_view title);

// ---- Measured runs against the simulator ----
//
// A real model's stages differ (the first embeds, the last has the head and loss), so the replays
// below take a cost per stage and kind, or each action's own measured time.

// A measured run (FragmentPipelineRun is one): per stage, per schedule action, when the stage ran
// it (ms since the run started) and its thread's CPU time, less than the wall time when stage
// threads outnumber cores.
struct PipelineResult {
  std::vector<std::vector<Interval>> times;
  std::vector<std::vector<double>> cpu_ms;
};

// The measured run as a Simulation (ms; no peak_in_flight: simulate's, which the order alone
// decides), for timeline_svg.
Simulation measured_simulation(const Schedule& schedule, const PipelineResult& result);

// Median durations (ms) of one stage's F, B or BI, and W (0 when none).
struct FragmentTimes {
  double forward = 0;
  double backward = 0;
  double weight = 0;
};

// Per stage, the medians over `runs` of the wall times, or with `cpu` of the CPU times.
std::vector<FragmentTimes> median_fragment_times(const Schedule& schedule, const std::vector<PipelineResult>& runs,
                                                 bool cpu = false);
// Per stage, CPU time over wall time of its compute actions: about 1 with a core to itself.
std::vector<double> compute_cpu_share(const Schedule& schedule, const std::vector<PipelineResult>& runs);
// Replays with `times[s]` as stage s's durations (B and BI cost `backward`).
Simulation simulate_with_stage_times(const Schedule& schedule, const std::vector<FragmentTimes>& times,
                                     double transfer = 0);
// Replays with each action's own measured time: what it leaves out is the runtime's overhead
// between fragments (hand-offs, wake-ups).
Simulation simulate_with_action_times(const Schedule& schedule, const PipelineResult& run, double transfer = 0);
// Means over `runs` of the replayed and of the measured bubble.
double mean_replayed_bubble(const Schedule& schedule, const std::vector<PipelineResult>& runs);
double mean_measured_bubble(const Schedule& schedule, const std::vector<PipelineResult>& runs);

}  // namespace tessera::schedule
