// The schedule validator (schedule.h lists the checks and their order). Checks run from the
// cheapest and most local to the global progress check, so each defect is reported by the check
// that names it most precisely.
#include "schedule/schedule.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <tuple>

#include "support/error.h"

namespace tessera::schedule {

using support::fail;

namespace {

struct Place {
  int64_t stage = -1;
  int64_t step = -1;
};

// An action's identity: kind, payload, microbatch, virtual stage. Two actions with the same key are
// duplicates; a SEND and its RECV differ only in the kind.
using Key = std::tuple<ActionKind, Payload, int64_t, int64_t>;

Key key_of(const Action& a) { return {a.kind, a.payload, a.microbatch, a.virtual_stage}; }
Key compute_key(ActionKind kind, int64_t mb, int64_t vs) { return {kind, Payload::kNone, mb, vs}; }

class Validator {
 public:
  Validator(const Schedule& s, const PlaceName& place) : s_(s), place_(place) {}

  void run() {
    check_sizes();
    for_each([&](int64_t stage, int64_t step, const Action& a) { check_range(stage, step, a); });
    for_each([&](int64_t stage, int64_t step, const Action& a) { index(stage, step, a); });
    check_complete();
    check_pairs();
    for_each([&](int64_t stage, int64_t step, const Action& a) { check_order(stage, step, a); });
    check_progress();
  }

 private:
  template <typename F>
  void for_each(F f) {
    for (int64_t stage = 0; stage < s_.stages; ++stage) {
      const auto& list = s_.actions[static_cast<size_t>(stage)];
      for (size_t step = 0; step < list.size(); ++step) f(stage, static_cast<int64_t>(step), list[step]);
    }
  }

  std::string at(int64_t stage, int64_t step, const Action& a) const {
    return place_ ? fmt::format("{} {}", place_(stage, step), describe(s_, a)) : describe_at(s_, stage, step);
  }
  std::string at(const Place& p) const { return at(p.stage, p.step, action(p)); }
  const Action& action(const Place& p) const {
    return s_.actions[static_cast<size_t>(p.stage)][static_cast<size_t>(p.step)];
  }
  const Place* find(const Key& k) const {
    auto it = places_.find(k);
    return it == places_.end() ? nullptr : &it->second;
  }

  void check_sizes() const {
    check_counts(fmt::format("schedule '{}'", s_.name), s_.stages, s_.microbatches, s_.virtual_per_stage);
    if (static_cast<int64_t>(s_.actions.size()) != s_.stages)
      fail("schedule '{}': has action lists for {} stages but declares {}", s_.name, s_.actions.size(), s_.stages);
  }

  void check_range(int64_t stage, int64_t step, const Action& a) const {
    const int64_t vs = a.virtual_stage, last = s_.virtual_stages() - 1;
    if (a.microbatch < 0 || a.microbatch >= s_.microbatches)
      fail("{}: microbatch {} is out of range (the schedule has {} microbatches)", at(stage, step, a),
           a.microbatch, s_.microbatches);
    if (vs < 0 || vs > last)
      fail("{}: virtual stage {} is out of range (the schedule has {} virtual stages)", at(stage, step, a), vs,
           last + 1);
    if (a.is_compute()) {
      if (a.payload != Payload::kNone) fail("{}: a compute action has no payload", at(stage, step, a));
      if (s_.stage_of(vs) != stage)
        fail("{}: virtual stage {} is held by stage {}, not stage {}", at(stage, step, a), vs, s_.stage_of(vs), stage);
      return;
    }
    if (a.payload == Payload::kNone) fail("{}: a transfer needs a payload (act or grad)", at(stage, step, a));
    const bool act = a.payload == Payload::kActivation;
    if ((act && vs == last) || (!act && vs == 0))
      fail("{}: no virtual stage consumes it ({} is the {} virtual stage)", at(stage, step, a), vs,
           act ? "last" : "first");
    const int64_t consumer = act ? vs + 1 : vs - 1;
    const int64_t from = s_.stage_of(vs), to = s_.stage_of(consumer);
    if (from == to)
      fail("{}: virtual stages {} and {} are both on stage {}; no transfer is needed", at(stage, step, a), vs,
           consumer, from);
    const bool send = a.kind == ActionKind::kSend;
    if (stage != (send ? from : to))
      fail("{}: the value is {} by virtual stage {} on stage {}, not on stage {}", at(stage, step, a),
           send ? "produced" : "consumed", send ? vs : consumer, send ? from : to, stage);
  }

  void index(int64_t stage, int64_t step, const Action& a) {
    auto [it, inserted] = places_.emplace(key_of(a), Place{stage, step});
    if (!inserted) fail("{}: duplicates {}", at(stage, step, a), at(it->second));
    if (a.kind == ActionKind::kBackward || a.kind == ActionKind::kBackwardInput) {
      ActionKind other = a.kind == ActionKind::kBackward ? ActionKind::kBackwardInput : ActionKind::kBackward;
      if (const Place* p = find(compute_key(other, a.microbatch, a.virtual_stage)))
        fail("{}: the backward is given both whole and split: {}", at(stage, step, a), at(*p));
    }
  }

  void check_complete() const {
    for (int64_t vs = 0; vs < s_.virtual_stages(); ++vs)
      for (int64_t m = 0; m < s_.microbatches; ++m) {
        const int64_t stage = s_.stage_of(vs);
        if (!find(compute_key(ActionKind::kForward, m, vs)))
          fail("schedule '{}': microbatch {} is missing F(mb {}, vs {}) on stage {}", s_.name, m, m, vs, stage);
        const Place* b = find(compute_key(ActionKind::kBackward, m, vs));
        const Place* bi = find(compute_key(ActionKind::kBackwardInput, m, vs));
        const Place* w = find(compute_key(ActionKind::kBackwardWeight, m, vs));
        if (bi && !w) fail("{}: has no matching W(mb {}, vs {})", at(*bi), m, vs);
        if (w && !bi) fail("{}: has no matching BI(mb {}, vs {})", at(*w), m, vs);
        if (!b && !bi)
          fail("schedule '{}': microbatch {} is missing its backward on virtual stage {} (stage {}): "
               "no B(mb {}, vs {}), nor BI and W",
               s_.name, m, vs, stage, m, vs);
      }
  }

  void check_pairs() const {
    for (const auto& [key, place] : places_) {
      const Action& a = action(place);
      if (a.is_compute()) continue;
      ActionKind other = a.kind == ActionKind::kSend ? ActionKind::kRecv : ActionKind::kSend;
      if (!find({other, a.payload, a.microbatch, a.virtual_stage}))
        fail("{}: has no matching {} {}(mb {}, vs {}) on stage {}", at(place), kind_name(other),
             payload_name(a.payload), a.microbatch, a.virtual_stage, s_.peer(a));
    }
  }

  // The backward of (mb, vs) as given: B, or BI when split (check_complete made sure of one).
  Key backward_key(int64_t mb, int64_t vs) const {
    const Key whole = compute_key(ActionKind::kBackward, mb, vs);
    return find(whole) ? whole : compute_key(ActionKind::kBackwardInput, mb, vs);
  }

  // `producer` (named `what`) must come before (stage, step): on this stage at an earlier step, or
  // on another stage with its value received here before.
  void need_before(int64_t stage, int64_t step, const Action& a, const Key& producer, const std::string& what,
                   Payload payload) const {
    const int64_t producer_vs = std::get<3>(producer), producer_stage = s_.stage_of(producer_vs);
    if (producer_stage == stage) {
      if (const Place* p = find(producer); p && p->step < step) return;
      fail("{}: runs before {} on the same stage", at(stage, step, a), what);
    }
    const Place* r = find({ActionKind::kRecv, payload, a.microbatch, producer_vs});
    if (r && r->stage == stage && r->step < step) return;
    fail("{}: runs before its input arrives: no earlier RECV {}(mb {}, vs {}) from stage {} (the value of {})",
         at(stage, step, a), payload_name(payload), a.microbatch, producer_vs, producer_stage, what);
  }

  void check_order(int64_t stage, int64_t step, const Action& a) const {
    const int64_t m = a.microbatch, vs = a.virtual_stage, last = s_.virtual_stages() - 1;
    auto describe_key = [](const Key& k) {
      return fmt::format("{}(mb {}, vs {})", kind_name(std::get<0>(k)), std::get<2>(k), std::get<3>(k));
    };
    auto earlier_here = [&](const Key& k, const char* why) {
      const Place* p = find(k);
      if (!p || p->stage != stage || p->step >= step) fail("{}: {} {}", at(stage, step, a), why, describe_key(k));
    };
    switch (a.kind) {
      case ActionKind::kForward:
        if (vs > 0) {
          const Key input = compute_key(ActionKind::kForward, m, vs - 1);
          need_before(stage, step, a, input, describe_key(input), Payload::kActivation);
        }
        return;
      case ActionKind::kBackward:
      case ActionKind::kBackwardInput:
        earlier_here(compute_key(ActionKind::kForward, m, vs), "backward before its forward");
        if (vs < last)
          need_before(stage, step, a, backward_key(m, vs + 1), fmt::format("the backward of (mb {}, vs {})", m, vs + 1),
                      Payload::kGradient);
        return;
      case ActionKind::kBackwardWeight:
        earlier_here(compute_key(ActionKind::kBackwardInput, m, vs), "weight gradient before its input gradient");
        return;
      case ActionKind::kSend:
        earlier_here(a.payload == Payload::kActivation ? compute_key(ActionKind::kForward, m, vs) : backward_key(m, vs),
                     "sends a value before it is computed by");
        return;
      case ActionKind::kRecv:
        return;
    }
  }

  void check_progress() const {
    const std::vector<size_t> ran = run_in_order(s_, nullptr);
    for (int64_t stage = 0; stage < s_.stages; ++stage) {
      const size_t i = ran[static_cast<size_t>(stage)];
      const auto& list = s_.actions[static_cast<size_t>(stage)];
      if (i == list.size()) continue;
      const Action& r = list[i];
      const Place& send = *find({ActionKind::kSend, r.payload, r.microbatch, r.virtual_stage});
      const Place blocker{send.stage, static_cast<int64_t>(ran[static_cast<size_t>(send.stage)])};
      fail("{}: receive before its matching send {}: that stage waits first at {} (the schedule deadlocks)",
           at(stage, static_cast<int64_t>(i), r), at(send), at(blocker));
    }
  }

  const Schedule& s_;
  const PlaceName& place_;
  std::map<Key, Place> places_;
};

}  // namespace

void check_counts(std::string_view what, int64_t stages, int64_t microbatches, int64_t virtual_per_stage) {
  if (stages < 1) fail("{}: the stage count must be at least 1, got {}", what, stages);
  if (microbatches < 1) fail("{}: the microbatch count must be at least 1, got {}", what, microbatches);
  if (virtual_per_stage < 1)
    fail("{}: the virtual stage count per stage must be at least 1, got {}", what, virtual_per_stage);
}

void validate(const Schedule& s, const PlaceName& place) { Validator(s, place).run(); }

std::vector<size_t> run_in_order(const Schedule& s, const std::function<void(size_t stage, size_t step)>& run) {
  std::vector<size_t> next(s.actions.size(), 0);
  std::set<Key> sent;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t stage = 0; stage < s.actions.size(); ++stage)
      for (size_t& i = next[stage]; i < s.actions[stage].size(); ++i, progress = true) {
        const Action& a = s.actions[stage][i];
        if (a.kind == ActionKind::kRecv && !sent.count({ActionKind::kSend, a.payload, a.microbatch, a.virtual_stage}))
          break;
        if (a.kind == ActionKind::kSend) sent.insert(key_of(a));
        if (run) run(stage, i);
      }
  }
  return next;
}

}  // namespace tessera::schedule
