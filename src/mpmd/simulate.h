// An event simulator of pipeline schedules: when each action starts and ends, the makespan, the
// bubble and the peak number of microbatches in flight on each stage.
//
// The model: each stage runs its actions one at a time in the schedule's order. A compute action
// takes its cost. A SEND takes no time on its stage (it is posted and the link carries it); the
// value arrives at the peer `transfer` later. A RECV ends when the value has arrived (or at once
// if it already has); the stage waits there, and that wait is idle time. Dependencies inside a
// stage are met by the order (validate() checks it), so the only cross-stage edges are transfers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "mpmd/schedule.h"

namespace tessera::mpmd {

// Costs in arbitrary time units, of one stage's whole share of the model: its forward costs
// `forward`; its backward's input-gradient half (BI) `backward` and weight-gradient half (W)
// `weight`; an unsplit B both halves, `backward + weight`. With weight = 0 an unsplit backward costs
// `backward`, the "f = b = 1, no W split" setting of the classic formulas. A stage holding V
// virtual stages runs each of them on 1/V of its layers, so there every action costs 1/V of that,
// and schedules with and without virtual stages compare on the same model.
struct Costs {
  double forward = 1;
  double backward = 1;
  double weight = 0;
  double transfer = 0;  // latency of one send, from posting to arrival
};

// Parses "f,b" or "f,b,w" or "f,b,w,t" (a UserError names `what` and the bad item).
Costs parse_costs(std::string_view text, std::string_view what = "costs");

// The duration of `a` in a schedule with `virtual_per_stage` virtual stages per stage.
double cost_of(const Action& a, const Costs& costs, int64_t virtual_per_stage = 1);

struct Interval {
  double start = 0;
  double end = 0;
};

struct Simulation {
  std::vector<std::vector<Interval>> times;  // parallel to Schedule::actions
  double makespan = 0;                       // the end of the last action (everything starts at 0)
  std::vector<double> busy;                  // per stage: time spent in compute actions
  // idle / (stages × makespan), idle = stages × makespan − Σ busy: the share of the stages' time
  // spent waiting (at a receive, or after the stage's last action until the makespan).
  double bubble = 0;
  // Per stage: the most forwards in flight at once. A forward is in flight from its start until
  // the end of its backward (B, or W when the backward is split: W still reads the stored
  // activations); intervals are half-open, so a forward starting as another's backward ends does
  // not count both. With one virtual stage per stage this is the number of microbatches whose
  // activations the stage holds; with V virtual stages each forward holds one chunk (1/V of the
  // stage's layers), so the stage holds peak/V microbatches' worth of activations.
  std::vector<int64_t> peak_in_flight;
};

// Validates the schedule (validate.h: a schedule that cannot finish is refused there, naming the
// stuck receive), then simulates it.
Simulation simulate(const Schedule& s, const Costs& costs);

// The same with `duration(stage, index, action)` as each compute action's duration (simulate: the
// costs; bubble.h: measured times) and `transfer` as each send's latency.
Simulation replay(const Schedule& s, const std::function<double(size_t, size_t, const Action&)>& duration,
                  double transfer);

// A compact text timeline: one row per stage, one cell per time quantum (the shortest compute
// cost, coarsened so a row stays under `max_cells` cells), each cell showing the action that runs
// then (F3 = forward of microbatch 3, B/I/W for backward, input and weight gradient; with virtual
// stages the chunk follows as F3.1) or '.' when the stage waits.
std::string text_chart(const Schedule& s, const Simulation& sim, int64_t max_cells = 160);

}  // namespace tessera::mpmd
