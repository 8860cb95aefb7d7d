// Per-stage fragment times and the replays that turn them into a simulated timeline (simulate.h).
#include "mpmd/simulate.h"

#include <algorithm>

#include "support/error.h"

namespace tessera::mpmd {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::vector<FragmentTimes> median_fragment_times(const Schedule& schedule, const std::vector<PipelineResult>& runs,
                                                 bool cpu) {
  std::vector<FragmentTimes> out;
  for (size_t s = 0; s < schedule.actions.size(); ++s) {
    std::vector<double> f, b, w;
    for (const PipelineResult& r : runs) {
      if (r.stages.size() != schedule.actions.size() || r.stages[s].times.size() != schedule.actions[s].size())
        support::fail("mpmd::median_fragment_times: a run does not match schedule '{}' (stage {})", schedule.name, s);
      for (size_t i = 0; i < schedule.actions[s].size(); ++i) {
        const Interval& t = r.stages[s].times[i];
        const double d = cpu ? r.stages[s].cpu_ms.at(i) : t.end - t.start;
        switch (schedule.actions[s][i].kind) {
          case ActionKind::kForward: f.push_back(d); break;
          case ActionKind::kBackward:
          case ActionKind::kBackwardInput: b.push_back(d); break;
          case ActionKind::kBackwardWeight: w.push_back(d); break;
          default: break;
        }
      }
    }
    out.push_back({median(f), median(b), median(w)});
  }
  return out;
}

std::vector<double> compute_cpu_share(const Schedule& schedule, const std::vector<PipelineResult>& runs) {
  std::vector<double> out;
  for (size_t s = 0; s < schedule.actions.size(); ++s) {
    double cpu = 0, wall = 0;
    for (const PipelineResult& r : runs)
      for (size_t i = 0; i < schedule.actions[s].size(); ++i)
        if (schedule.actions[s][i].is_compute()) {
          cpu += r.stages.at(s).cpu_ms.at(i);
          wall += r.stages[s].times.at(i).end - r.stages[s].times[i].start;
        }
    out.push_back(wall > 0 ? cpu / wall : 0.0);
  }
  return out;
}

Simulation simulate_with_stage_times(const Schedule& schedule, const std::vector<FragmentTimes>& times,
                                     double transfer) {
  if (times.size() != schedule.actions.size())
    support::fail("mpmd::simulate_with_stage_times: {} stage times for schedule '{}' of {} stages", times.size(),
                  schedule.name, schedule.actions.size());
  auto duration = [&](size_t s, size_t, const Action& a) {
    const FragmentTimes& c = times[s];
    return a.kind == ActionKind::kForward ? c.forward : a.kind == ActionKind::kBackwardWeight ? c.weight : c.backward;
  };
  return replay(schedule, duration, transfer);
}

Simulation simulate_with_action_times(const Schedule& schedule, const PipelineResult& run, double transfer) {
  if (run.stages.size() != schedule.actions.size())
    support::fail("mpmd::simulate_with_action_times: a run of {} stages for schedule '{}' of {} stages",
                  run.stages.size(), schedule.name, schedule.actions.size());
  for (size_t s = 0; s < run.stages.size(); ++s)
    if (run.stages[s].times.size() != schedule.actions[s].size())
      support::fail("mpmd::simulate_with_action_times: the run's stage {} has {} actions; schedule '{}' has {}", s,
                    run.stages[s].times.size(), schedule.name, schedule.actions[s].size());
  auto duration = [&](size_t s, size_t i, const Action&) {
    const Interval& t = run.stages[s].times[i];
    return t.end - t.start;
  };
  return replay(schedule, duration, transfer);
}

double mean_replayed_bubble(const Schedule& schedule, const std::vector<PipelineResult>& runs) {
  if (runs.empty()) return 0;
  double sum = 0;
  for (const PipelineResult& r : runs) sum += simulate_with_action_times(schedule, r).bubble;
  return sum / static_cast<double>(runs.size());
}

double mean_measured_bubble(const Schedule& schedule, const std::vector<PipelineResult>& runs) {
  if (runs.empty()) return 0;
  double sum = 0;
  for (const PipelineResult& r : runs) sum += measured_simulation(schedule, r).bubble;
  return sum / static_cast<double>(runs.size());
}

Simulation measured_simulation(const Schedule& schedule, const PipelineResult& result) {
  Simulation sim;
  for (size_t s = 0; s < result.stages.size(); ++s) {
    const StageMeasurements& m = result.stages[s];
    sim.times.push_back(m.times);
    double busy = 0;
    for (size_t i = 0; i < m.times.size(); ++i) {
      sim.makespan = std::max(sim.makespan, m.times[i].end);
      if (schedule.actions[s][i].is_compute()) busy += m.times[i].end - m.times[i].start;
    }
    sim.busy.push_back(busy);
    sim.peak_in_flight.push_back(m.peak_saved);
  }
  double total = sim.makespan * static_cast<double>(result.stages.size()), busy = 0;
  for (double b : sim.busy) busy += b;
  sim.bubble = total > 0 ? (total - busy) / total : 0.0;
  return sim;
}

}  // namespace tessera::mpmd
