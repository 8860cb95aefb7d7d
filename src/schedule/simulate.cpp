// The schedule simulator, its text chart and SVG timeline, and the replays of measured runs
// (simulate.h says the model and the definitions).
#include "schedule/simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>

#include "schedule/schedule.h"
#include "support/error.h"
#include "support/strings.h"
#include "support/timeline_svg.h"

namespace tessera::schedule {

using support::fail;

Costs parse_costs(std::string_view text, std::string_view what) {
  std::vector<double> values;
  for (std::string_view item : support::split(text, ',')) {
    double v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || !std::isfinite(v) || v < 0)
      fail("{}: '{}' is not a non-negative number (expected f,b[,w[,transfer]], e.g. 1,2,1)", what, item);
    values.push_back(v);
  }
  if (values.size() < 2 || values.size() > 4)
    fail("{}: '{}' has {} values; expected f,b or f,b,w or f,b,w,transfer", what, text, values.size());
  Costs c;
  c.forward = values[0];
  c.backward = values[1];
  if (values.size() > 2) c.weight = values[2];
  if (values.size() > 3) c.transfer = values[3];
  if (c.forward + c.backward + c.weight == 0) fail("{}: '{}' makes every action free", what, text);
  return c;
}

double cost_of(const Action& a, const Costs& costs, int64_t virtual_per_stage) {
  const double share = 1.0 / static_cast<double>(virtual_per_stage);
  switch (a.kind) {
    case ActionKind::kForward: return costs.forward * share;
    case ActionKind::kBackward: return (costs.backward + costs.weight) * share;
    case ActionKind::kBackwardInput: return costs.backward * share;
    case ActionKind::kBackwardWeight: return costs.weight * share;
    case ActionKind::kSend:
    case ActionKind::kRecv: return 0;
  }
  return 0;
}

namespace {

// The most intervals [start, end) that overlap at one time (ends before starts at equal times).
int64_t peak_overlap(const std::vector<Interval>& intervals) {
  std::vector<std::pair<double, int>> events;
  for (const Interval& i : intervals) {
    if (i.end <= i.start) continue;
    events.emplace_back(i.start, +1);
    events.emplace_back(i.end, -1);
  }
  std::sort(events.begin(), events.end());  // -1 sorts before +1 at equal times
  int64_t now = 0, peak = 0;
  for (auto [t, d] : events) peak = std::max(peak, now += d);
  return peak;
}

// busy, makespan and bubble from sim.times.
void summarize(const Schedule& s, Simulation& sim) {
  sim.busy.assign(s.actions.size(), 0.0);
  double busy = 0;
  for (size_t stage = 0; stage < s.actions.size(); ++stage)
    for (size_t i = 0; i < s.actions[stage].size(); ++i) {
      const Interval& t = sim.times[stage][i];
      sim.makespan = std::max(sim.makespan, t.end);
      if (s.actions[stage][i].is_compute()) sim.busy[stage] += t.end - t.start;
    }
  for (double x : sim.busy) busy += x;
  const double total = static_cast<double>(s.actions.size()) * sim.makespan;
  sim.bubble = total > 0 ? (total - busy) / total : 0.0;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A UserError unless `run` has a time per action of `schedule`.
void check_matches(const Schedule& schedule, const PipelineResult& run, const char* who) {
  bool ok = run.times.size() == schedule.actions.size();
  for (size_t s = 0; ok && s < run.times.size(); ++s)
    ok = run.times[s].size() == schedule.actions[s].size();
  if (!ok) support::fail("schedule::{}: a run does not match schedule '{}' action for action", who, schedule.name);
}

template <typename F>
double mean_over(const std::vector<PipelineResult>& runs, F bubble) {
  double sum = 0;
  for (const PipelineResult& r : runs) sum += bubble(r);
  return runs.empty() ? 0 : sum / static_cast<double>(runs.size());
}

}  // namespace

Simulation replay(const Schedule& s, const std::function<double(size_t, size_t, const Action&)>& duration,
                  double transfer) {
  validate(s);  // so the replay finishes
  const size_t P = s.actions.size();
  Simulation sim;
  sim.times.resize(P);
  for (size_t stage = 0; stage < P; ++stage) sim.times[stage].resize(s.actions[stage].size());

  // Arrival time of each posted send, by (payload, microbatch, producing virtual stage).
  std::map<std::tuple<Payload, int64_t, int64_t>, double> arrival;
  std::vector<double> clock(P, 0.0);
  const std::vector<size_t> ran = run_in_order(s, [&](size_t stage, size_t i) {
    const Action& a = s.actions[stage][i];
    Interval& t = sim.times[stage][i];
    t.start = clock[stage];
    t.end = t.start + (a.is_compute() ? duration(stage, i, a) : 0.0);
    if (a.kind == ActionKind::kSend) arrival[{a.payload, a.microbatch, a.virtual_stage}] = t.start + transfer;
    if (a.kind == ActionKind::kRecv) t.end = std::max(t.start, arrival.at({a.payload, a.microbatch, a.virtual_stage}));
    clock[stage] = t.end;
  });
  for (size_t stage = 0; stage < P; ++stage)
    TESSERA_CHECK(ran[stage] == s.actions[stage].size(), "schedule '{}' passed validation but stage {} stops",
                  s.name, stage);
  summarize(s, sim);

  // One lifetime per forward: from its start to the end of its backward (B, or W when split).
  std::map<std::pair<int64_t, int64_t>, Interval> life;  // (microbatch, virtual stage) -> lifetime
  for (size_t stage = 0; stage < P; ++stage) {
    const auto& list = s.actions[stage];
    for (size_t i = 0; i < list.size(); ++i) {
      const Action& a = list[i];
      Interval& l = life[{a.microbatch, a.virtual_stage}];
      if (a.kind == ActionKind::kForward) l.start = sim.times[stage][i].start;
      if (a.kind == ActionKind::kBackward || a.kind == ActionKind::kBackwardWeight) l.end = sim.times[stage][i].end;
    }
  }
  std::vector<std::vector<Interval>> per_stage(P);
  for (const auto& [key, interval] : life) per_stage[static_cast<size_t>(s.stage_of(key.second))].push_back(interval);
  for (size_t stage = 0; stage < P; ++stage) sim.peak_in_flight.push_back(peak_overlap(per_stage[stage]));
  return sim;
}

Simulation simulate(const Schedule& s, const Costs& costs) {
  return replay(s, [&](size_t, size_t, const Action& a) { return cost_of(a, costs, s.virtual_per_stage); },
                costs.transfer);
}

namespace {

// The drawn timeline of a simulated or measured schedule, for the text chart and the SVG: a row per
// stage, a box per compute action of positive duration labelled F3, B3, I3 (BI) or W3 (F3.1 for
// chunk 1 when V > 1), coloured by kind; alternate chunks of an interleaved schedule use the
// lighter shade so the virtual stages can be told apart.
support::Timeline schedule_timeline(const Schedule& s, const Simulation& sim) {
  // Per kind (F, B, BI, W): the letter, the dark and light colours and the meaning.
  static constexpr std::array<std::array<const char*, 4>, 4> kKinds = {{{"F", "#4e79a7", "#a0cbe8", "forward"},
                                                                        {"B", "#59a14f", "#8cd17d", "backward"},
                                                                        {"I", "#f28e2b", "#ffbe7d", "input gradient"},
                                                                        {"W", "#b07aa1", "#d4a6c8", "weight gradient"}}};
  support::Timeline t;
  t.span = sim.makespan > 0 ? sim.makespan : 1;
  t.unit = "time";
  t.px_per_unit = std::clamp(960.0 / t.span, 2.0, 48.0);
  std::array<bool, 4> used{};
  for (size_t stage = 0; stage < s.actions.size(); ++stage) {
    support::TimelineRow& row = t.rows.emplace_back(support::TimelineRow{fmt::format("stage {}", stage), {}});
    for (size_t i = 0; i < s.actions[stage].size(); ++i) {
      const Action& a = s.actions[stage][i];
      const Interval& span = sim.times[stage][i];
      if (!a.is_compute() || span.end <= span.start) continue;
      const size_t kind = static_cast<size_t>(a.kind);  // F, B, BI, W: 0-3
      const int64_t chunk = a.virtual_stage / s.stages;
      used[kind] = true;
      row.boxes.push_back({span.start, span.end, kKinds[kind][chunk % 2 == 0 ? 1 : 2],
                           fmt::format("{}: {} to {}", describe(s, a), span.start, span.end),
                           s.virtual_per_stage == 1 ? fmt::format("{}{}", kKinds[kind][0], a.microbatch)
                                                    : fmt::format("{}{}.{}", kKinds[kind][0], a.microbatch, chunk),
                           chunk % 2 == 0 ? "#ffffff" : "#000000"});
    }
  }
  for (size_t kind = 0; kind < kKinds.size(); ++kind)
    if (used[kind])
      t.legend.emplace_back(fmt::format("{} {}", kind_name(static_cast<ActionKind>(kind)), kKinds[kind][3]),
                            kKinds[kind][1]);
  if (s.virtual_per_stage > 1) t.legend.emplace_back("(lighter: odd chunks, virtual stages s+P, s+3P, ...)", "#555555");
  return t;
}

}  // namespace

std::string text_chart(const Schedule& s, const Simulation& sim, int64_t max_cells) {
  const support::Timeline t = schedule_timeline(s, sim);
  double quantum = INFINITY;
  size_t width = 1;
  for (const support::TimelineRow& row : t.rows)
    for (const support::TimelineBox& b : row.boxes) {
      quantum = std::min(quantum, b.end - b.start);
      width = std::max(width, b.label.size());
    }
  if (!std::isfinite(quantum) || sim.makespan <= 0) return "";
  int64_t cells = static_cast<int64_t>(std::ceil(sim.makespan / quantum - 1e-9));
  if (cells > max_cells) {
    quantum = sim.makespan / static_cast<double>(max_cells);
    cells = max_cells;
  }
  std::string out = fmt::format("time unit per cell: {:g}\n", quantum);
  for (size_t stage = 0; stage < t.rows.size(); ++stage) {
    out += fmt::format("stage {:>2} |", stage);
    const std::vector<support::TimelineBox>& boxes = t.rows[stage].boxes;
    size_t i = 0;
    for (int64_t c = 0; c < cells; ++c) {
      // The action running at the middle of the cell, if any.
      const double mid = (static_cast<double>(c) + 0.5) * quantum;
      while (i < boxes.size() && boxes[i].end <= mid) ++i;
      out += fmt::format(" {:<{}}", i < boxes.size() && boxes[i].start <= mid ? boxes[i].label : ".", width);
    }
    out += "\n";
  }
  return out;
}

std::string timeline_svg(const Schedule& s, const Simulation& sim, std::string_view title) {
  support::Timeline t = schedule_timeline(s, sim);
  t.title = title;
  return support::timeline_svg(t);
}

// ---- Measured runs ----

std::vector<FragmentTimes> median_fragment_times(const Schedule& schedule, const std::vector<PipelineResult>& runs,
                                                 bool cpu) {
  for (const PipelineResult& r : runs) check_matches(schedule, r, "median_fragment_times");
  std::vector<FragmentTimes> out;
  for (size_t s = 0; s < schedule.actions.size(); ++s) {
    std::vector<double> f, b, w;
    for (const PipelineResult& r : runs)
      for (size_t i = 0; i < schedule.actions[s].size(); ++i) {
        const Interval& t = r.times[s][i];
        const double d = cpu ? r.cpu_ms[s].at(i) : t.end - t.start;
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
          cpu += r.cpu_ms[s].at(i);
          wall += r.times[s][i].end - r.times[s][i].start;
        }
    out.push_back(wall > 0 ? cpu / wall : 0.0);
  }
  return out;
}

Simulation simulate_with_stage_times(const Schedule& schedule, const std::vector<FragmentTimes>& times,
                                     double transfer) {
  if (times.size() != schedule.actions.size())
    support::fail("schedule::simulate_with_stage_times: {} stage times for schedule '{}' of {} stages", times.size(),
                  schedule.name, schedule.actions.size());
  auto duration = [&](size_t s, size_t, const Action& a) {
    const FragmentTimes& c = times[s];
    return a.kind == ActionKind::kForward ? c.forward : a.kind == ActionKind::kBackwardWeight ? c.weight : c.backward;
  };
  return replay(schedule, duration, transfer);
}

Simulation simulate_with_action_times(const Schedule& schedule, const PipelineResult& run, double transfer) {
  check_matches(schedule, run, "simulate_with_action_times");
  auto duration = [&](size_t s, size_t i, const Action&) { return run.times[s][i].end - run.times[s][i].start; };
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
  sim.times = result.times;
  summarize(schedule, sim);
  return sim;
}

}  // namespace tessera::schedule
