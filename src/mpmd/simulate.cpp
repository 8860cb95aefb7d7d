// The schedule simulator and its text chart (see simulate.h for the model and the definitions).
#include "mpmd/simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>

#include "mpmd/schedule.h"
#include "support/error.h"
#include "support/strings.h"

namespace tessera::mpmd {

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

}  // namespace

Simulation replay(const Schedule& s, const std::function<double(size_t, size_t, const Action&)>& duration,
                  double transfer) {
  validate(s);  // so the replay finishes
  const size_t P = s.actions.size();
  Simulation sim;
  sim.times.resize(P);
  sim.busy.assign(P, 0.0);
  for (size_t stage = 0; stage < P; ++stage) sim.times[stage].resize(s.actions[stage].size());

  // Arrival time of each posted send, by (payload, microbatch, producing virtual stage).
  std::map<std::tuple<Payload, int64_t, int64_t>, double> arrival;
  std::vector<size_t> next(P, 0);
  std::vector<double> clock(P, 0.0);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t stage = 0; stage < P; ++stage) {
      const auto& list = s.actions[stage];
      for (size_t& i = next[stage]; i < list.size(); ++i, progress = true) {
        const Action& a = list[i];
        Interval& t = sim.times[stage][i];
        t.start = clock[stage];
        t.end = t.start + (a.is_compute() ? duration(stage, i, a) : 0.0);
        if (a.kind == ActionKind::kSend) {
          arrival[{a.payload, a.microbatch, a.virtual_stage}] = t.start + transfer;
        } else if (a.kind == ActionKind::kRecv) {
          auto it = arrival.find({a.payload, a.microbatch, a.virtual_stage});
          if (it == arrival.end()) break;
          t.end = std::max(t.start, it->second);
        } else {
          sim.busy[stage] += t.end - t.start;
        }
        clock[stage] = t.end;
      }
    }
  }
  for (size_t stage = 0; stage < P; ++stage) {
    TESSERA_CHECK(next[stage] == s.actions[stage].size(), "schedule '{}' passed validation but stage {} stops",
                  s.name, stage);
    sim.makespan = std::max(sim.makespan, clock[stage]);
  }
  double busy = 0;
  for (double b : sim.busy) busy += b;
  const double total = static_cast<double>(P) * sim.makespan;
  sim.bubble = total > 0 ? (total - busy) / total : 0.0;

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

std::string text_chart(const Schedule& s, const Simulation& sim, int64_t max_cells) {
  double quantum = INFINITY;
  size_t width = 1;
  auto label = [&](const Action& a) {
    const char* letter = a.kind == ActionKind::kForward          ? "F"
                         : a.kind == ActionKind::kBackward       ? "B"
                         : a.kind == ActionKind::kBackwardInput  ? "I"
                                                                 : "W";
    if (s.virtual_per_stage == 1) return fmt::format("{}{}", letter, a.microbatch);
    return fmt::format("{}{}.{}", letter, a.microbatch, a.virtual_stage / s.stages);
  };
  for (size_t stage = 0; stage < s.actions.size(); ++stage)
    for (size_t i = 0; i < s.actions[stage].size(); ++i) {
      const Action& a = s.actions[stage][i];
      const Interval& t = sim.times[stage][i];
      if (!a.is_compute() || t.end <= t.start) continue;
      quantum = std::min(quantum, t.end - t.start);
      width = std::max(width, label(a).size());
    }
  if (!std::isfinite(quantum) || sim.makespan <= 0) return "";
  int64_t cells = static_cast<int64_t>(std::ceil(sim.makespan / quantum - 1e-9));
  if (cells > max_cells) {
    quantum = sim.makespan / static_cast<double>(max_cells);
    cells = max_cells;
  }
  std::string out = fmt::format("time unit per cell: {:g}\n", quantum);
  for (size_t stage = 0; stage < s.actions.size(); ++stage) {
    out += fmt::format("stage {:>2} |", stage);
    const auto& list = s.actions[stage];
    size_t i = 0;
    for (int64_t c = 0; c < cells; ++c) {
      // The action running at the middle of the cell, if any.
      const double mid = (static_cast<double>(c) + 0.5) * quantum;
      while (i < list.size() && (!list[i].is_compute() || sim.times[stage][i].end <= mid)) ++i;
      std::string cell = ".";
      if (i < list.size() && sim.times[stage][i].start <= mid) cell = label(list[i]);
      out += fmt::format(" {:<{}}", cell, width);
    }
    out += "\n";
  }
  return out;
}

}  // namespace tessera::mpmd
