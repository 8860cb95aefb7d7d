// Per-stage fragment times and the replays that turn them into a simulated timeline (simulate.h).
#include <algorithm>

#include "mpmd/simulate.h"
#include "support/error.h"

namespace tessera::mpmd {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A UserError unless `run` has a time per action of `schedule`.
void check_matches(const Schedule& schedule, const PipelineResult& run, const char* who) {
  bool ok = run.stages.size() == schedule.actions.size();
  for (size_t s = 0; ok && s < run.stages.size(); ++s)
    ok = run.stages[s].times.size() == schedule.actions[s].size();
  if (!ok) support::fail("mpmd::{}: a run does not match schedule '{}' action for action", who, schedule.name);
}

template <typename F>
double mean_over(const std::vector<PipelineResult>& runs, F bubble) {
  double sum = 0;
  for (const PipelineResult& r : runs) sum += bubble(r);
  return runs.empty() ? 0 : sum / static_cast<double>(runs.size());
}

}  // namespace

std::vector<FragmentTimes> median_fragment_times(const Schedule& schedule, const std::vector<PipelineResult>& runs,
                                                 bool cpu) {
  for (const PipelineResult& r : runs) check_matches(schedule, r, "median_fragment_times");
  std::vector<FragmentTimes> out;
  for (size_t s = 0; s < schedule.actions.size(); ++s) {
    std::vector<double> f, b, w;
    for (const PipelineResult& r : runs)
      for (size_t i = 0; i < schedule.actions[s].size(); ++i) {
        const Interval& t = r.stages[s].times[i];
        const double d = cpu ? r.stages[s].cpu_ms.at(i) : t.end - t.start;
        const ActionKind kind = schedule.actions[s][i].kind;
        if (kind == ActionKind::kForward) f.push_back(d);
        if (kind == ActionKind::kBackward || kind == ActionKind::kBackwardInput) b.push_back(d);
        if (kind == ActionKind::kBackwardWeight) w.push_back(d);
      }
    out.push_back({median(f), median(b), median(w)});
  }
  return out;
}

std::vector<double> compute_cpu_share(const Schedule& schedule, const std::vector<PipelineResult>& runs) {
  for (const PipelineResult& r : runs) check_matches(schedule, r, "compute_cpu_share");
  std::vector<double> out;
  for (size_t s = 0; s < schedule.actions.size(); ++s) {
    double cpu = 0, wall = 0;
    for (const PipelineResult& r : runs)
      for (size_t i = 0; i < schedule.actions[s].size(); ++i)
        if (schedule.actions[s][i].is_compute()) {
          cpu += r.stages[s].cpu_ms.at(i);
          wall += r.stages[s].times[i].end - r.stages[s].times[i].start;
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
  check_matches(schedule, run, "simulate_with_action_times");
  auto duration = [&](size_t s, size_t i, const Action&) { return run.stages[s].times[i].end - run.stages[s].times[i].start; };
  return replay(schedule, duration, transfer);
}

double mean_replayed_bubble(const Schedule& schedule, const std::vector<PipelineResult>& runs) {
  return mean_over(runs, [&](const PipelineResult& r) { return simulate_with_action_times(schedule, r).bubble; });
}

double mean_measured_bubble(const Schedule& schedule, const std::vector<PipelineResult>& runs) {
  return mean_over(runs, [&](const PipelineResult& r) { return measured_simulation(schedule, r).bubble; });
}

Simulation measured_simulation(const Schedule& schedule, const PipelineResult& result) {
  check_matches(schedule, result, "measured_simulation");
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
