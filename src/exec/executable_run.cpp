// Running an Executable (executable.h): the steps of each block in order over one array of values
// per run, indexed by slot.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>

#include "exec/executable_code.h"
#include "exec/fusion.h"
#include "support/error.h"
#include "support/run_cache.h"

namespace tessera::exec {

namespace detail {
namespace {

using ir::Literal;

}  // namespace

// The values of one run of one function's code, and scratch reused from step to step. A
// RunContext keeps one across runs: its planned slots are views of the context's arena.
struct Frame {
  explicit Frame(const Code& c) : code(c), slots(c.slot_types.size()), lent(c.slot_types.size(), 0) {}

  const Code& code;
  const interp::RunState* state = nullptr;
  bool planned = false;  // the block's values are views of `arena`: never freed or moved out
  std::unique_ptr<Arena> arena;
  std::vector<Literal> slots;
  std::vector<const Literal*> operands;  // the current kernel step's
  std::vector<Literal> results;          // what fast kernels and fused loops append to
  std::vector<Literal*> group_dests;     // a row group's destinations (run_group)
  std::vector<std::pair<int64_t, double>> profile;  // per Code::profile_keys, when profiling
  // When tracing: the device's track, and the trace's ids of Code::trace_labels (interned once
  // per frame and trace).
  interp::Trace* trace = nullptr;
  std::vector<interp::TraceSpan>* track = nullptr;
  std::vector<uint32_t> trace_ids;
  uint64_t trace_ids_of = 0;  // Trace::serial
  // The fused loops' view of the values: by Value, and those dying at the current step.
  const Step* step = nullptr;
  std::function<const Literal&(const ir::Value*)> value;
  std::function<Literal*(const ir::Value*)> dying;
  // A planned frame's frames of its compiled callees (per Code::calls), planned too, and per call
  // the views of its arguments and of the slots that take its results (made on the first call,
  // kept while the viewed storage stays where it is: a call in the steady state allocates nothing).
  std::vector<std::unique_ptr<Frame>> callees;
  std::vector<std::vector<Literal>> call_args, call_results;
  // Per slot: a parameter lent by the caller (read in place, handed back after the run, never
  // written over nor given a result).
  std::vector<uint8_t> lent;
  // Per return of a planned frame: a view of its donor's buffer (kept while the buffer stays put),
  // swapped with the result's arena view while the result is computed there (in_donor).
  std::vector<Literal> donor_views;
  std::vector<uint8_t> in_donor;
  // When set, the only slot f.dying may give a fused loop (a donor, at the step that computes its
  // result in place).
  Slot dying_only = kNoSlot;
  static constexpr Slot kNoSlot = ~Slot{0};
  // What kernels keep from run to run (contraction plans, fused loops' workspaces, collectives'
  // groups): current while a run in this frame's context runs.
  support::RunCache cache;
};

namespace {

void free_slots(Frame& f, Range r) {
  const Slot* s = f.code.list(r);
  for (uint32_t k = 0; k < r.size; ++k) f.slots[s[k]] = Literal();
}

// Puts a value in its slot: copied into the slot's storage when the slot is a view of the arena,
// else moved there.
void put(Frame& f, Slot s, Literal&& v) {
  Literal& slot = f.slots[s];
  // memmove: a reshape's result slot views its operand's storage.
  if (slot.is_view()) {
    if (!slot.bytes().empty()) std::memmove(slot.bytes().data(), v.bytes().data(), slot.bytes().size());  // null when empty
  }
  else slot = std::move(v);
}

template <typename Results>
void store(Frame& f, const Step& s, Results& results) {
  const Slot* out = f.code.list(s.results);
  for (uint32_t k = 0; k < s.results.size; ++k) put(f, out[k], std::move(results[k]));
}

// A planned step's destinations: its result slots' views, lent to the kernel in f.results, and
// given back (store() moves a view back into its slot; so does give_back after a kernel declines).
void lend(Frame& f, const Step& s) {
  f.results.clear();
  if (!s.planned || !f.planned) return;
  const Slot* out = f.code.list(s.results);
  for (uint32_t k = 0; k < s.results.size; ++k) f.results.push_back(std::move(f.slots[out[k]]));
}
void give_back(Frame& f, const Step& s) {
  if (!s.planned || !f.planned) return;
  const Slot* out = f.code.list(s.results);
  for (uint32_t k = 0; k < s.results.size; ++k) f.slots[out[k]] = std::move(f.results[k]);
}

// Whether an operand may be moved (into a while loop or a call) rather than copied: never a view
// of the arena, nor a parameter of a planned run (its buffer may take a result).
bool movable(const Frame& f, Slot s) {
  return !f.planned || (f.code.slot_offset[s] < 0 &&
                        std::find(f.code.params.begin(), f.code.params.end(), s) == f.code.params.end());
}

// The block's return values: moved out where the block owns them and no later operand of the
// return names them again, copied otherwise.
void take_returns(Frame& f, const BlockCode& b, std::vector<Literal>& out) {
  out.resize(b.returns.size());
  for (size_t k = 0; k < b.returns.size(); ++k) {
    Literal& v = f.slots[b.returns[k]];
    if (b.move_return[k]) out[k] = std::move(v);
    else out[k] = v;
  }
  free_slots(f, b.return_frees);
}

void run_steps(Frame& f, const BlockCode& b);

void run_kernel(Frame& f, const BlockCode& b, size_t i) {
  const Step& s = b.steps[i];
  const Slot* in = f.code.list(s.operands);
  f.operands.clear();
  for (uint32_t k = 0; k < s.operands.size; ++k) f.operands.push_back(&f.slots[in[k]]);
  std::span<const Literal* const> operands(f.operands);
  // partition_id and replica_id: the process's number written into the result's slot (the
  // partitioner's per-device offsets read it; the reference kernel would allocate every run).
  if (s.op->kind() == ir::OpKind::PartitionId || s.op->kind() == ir::OpKind::ReplicaId) {
    const auto& p = f.state->process;
    uint32_t id = s.op->kind() == ir::OpKind::PartitionId ? p.partition_id : p.replica_id;
    lend(f, s);
    if (f.results.empty()) f.results.emplace_back(s.op->result(0)->type());
    std::memcpy(f.results[0].bytes().data(), &id, sizeof id);
    store(f, s, f.results);
    return;
  }
  if (s.try_fast && !b.declined[i].load(std::memory_order_relaxed)) {
    lend(f, s);
    if (f.code.accelerate(*s.op, operands, f.results)) {
      store(f, s, f.results);
      return;
    }
    give_back(f, s);
    b.declined[i].store(true, std::memory_order_relaxed);
  }
  // A collective straight from its operand into its slot in the arena, when the run's
  // collectives can (no copies of either).
  if (s.collective && f.planned &&
      f.state->collectives->run_into(*s.op, *operands[0], f.slots[f.code.list(s.results)[0]], f.state->process))
    return;
  // The reference kernel; its regions see the values of enclosing blocks that they read.
  interp::Scope scope;
  for (uint32_t k = 0; k < s.captures.size; ++k) {
    const auto& [v, slot] = f.code.captured[s.captures.begin + k];
    scope.values.emplace(v, f.slots[slot]);
  }
  interp::EvalContext ctx(*s.op, operands, scope, *f.state);
  interp::Results results = s.reference(ctx);
  interp::check_results(*s.op, results);
  store(f, s, results);
}

void run_while(Frame& f, const Step& s) {
  const WhileCode& w = *f.code.whiles[static_cast<size_t>(s.nested)];
  const Slot* in = f.code.list(s.operands);
  for (size_t k = 0; k < w.state.size(); ++k) {
    if (w.move_in[k] && movable(f, in[k])) f.slots[w.state[k]] = std::move(f.slots[in[k]]);
    else f.slots[w.state[k]] = f.slots[in[k]];
  }
  std::vector<Literal> next;
  const int64_t limit = f.state->options != nullptr ? f.state->options->max_while_iterations : -1;
  for (int64_t iterations = 0;; ++iterations) {
    run_steps(f, w.cond);
    bool go = f.slots[w.cond.returns[0]].get_int(0) != 0;
    free_slots(f, w.cond.return_frees);
    if (!go) break;
    if (iterations == limit) interp::refuse_while_iterations(*s.op, limit);
    run_steps(f, w.body);
    take_returns(f, w.body, next);
    for (size_t k = 0; k < w.state.size(); ++k) f.slots[w.state[k]] = std::move(next[k]);
  }
  const Slot* out = f.code.list(s.results);
  for (size_t k = 0; k < w.state.size(); ++k) put(f, out[k], std::move(f.slots[w.state[k]]));
}

void run_function(Frame& f, std::vector<Literal>& args, std::vector<Literal>& out,
                  std::span<const uint8_t> lent = {});

// Makes `view` a view of `v`'s storage, unless it is one already (a new view copies the shape).
void point_at(Literal& view, Literal& v) {
  std::byte* data = v.bytes().data();
  if (view.is_view() && view.bytes().data() == data && view.type() == v.type()) return;
  view = Literal::view(v.type(), data);
}

void run_call(Frame& f, const Step& s) {
  const CallCode& c = f.code.calls[static_cast<size_t>(s.nested)];
  const Slot* in = f.code.list(s.operands);
  if (f.planned) {
    // The callee's own planned frame, its arguments lent as views (it never writes them); it
    // writes its results into this frame's slots in the arena (the views of call_results), and
    // hands back those it has nowhere to write (slots of while bodies) in fresh buffers.
    Frame& callee = *f.callees[static_cast<size_t>(s.nested)];
    callee.state = f.state;
    std::vector<Literal>& args = f.call_args[static_cast<size_t>(s.nested)];
    std::vector<Literal>& results = f.call_results[static_cast<size_t>(s.nested)];
    args.resize(s.operands.size);
    results.resize(s.results.size);
    for (uint32_t k = 0; k < s.operands.size; ++k) point_at(args[k], f.slots[in[k]]);
    const Slot* out = f.code.list(s.results);
    for (uint32_t k = 0; k < s.results.size; ++k) {
      Literal& r = f.slots[out[k]];
      if (r.is_view()) point_at(results[k], r);
      else results[k] = Literal();
    }
    run_function(callee, args, results);
    for (uint32_t k = 0; k < s.results.size; ++k)
      if (!f.slots[out[k]].is_view()) f.slots[out[k]] = std::move(results[k]);
    return;
  }
  std::vector<Literal> args;
  args.reserve(s.operands.size);
  for (uint32_t k = 0; k < s.operands.size; ++k) {
    if (c.move_in[k] && movable(f, in[k])) args.push_back(std::move(f.slots[in[k]]));
    else args.push_back(f.slots[in[k]]);
  }
  std::vector<Literal> results = execute(Access::code(*c.callee), std::move(args), *f.state);
  store(f, s, results);
}

// A fused step that computes return r in its donor's buffer, which dies here (kind 2 of
// Code::return_in_donor): the loop gets no destination, and f.dying offers it the donor only. When
// it writes over the donor in place, the donor's parameter gets its buffer back; when it computes
// into a fresh buffer (it reads the donor through a broadcast) or declines, the result goes to the
// arena as usual and is copied in after the run, from now on.
void run_fused_in_donor(Frame& f, const BlockCode& b, size_t i, int32_t r) {
  const Step& s = b.steps[i];
  const Code& code = f.code;
  Slot donor = code.params[static_cast<size_t>(code.return_donor[static_cast<size_t>(r)])];
  Slot out = code.list(s.results)[0];
  std::byte* storage = f.slots[donor].bytes().data();
  f.results.clear();
  f.dying_only = donor;
  bool ran = b.plan->run(*s.op, f.value, f.dying, f.results);
  f.dying_only = Frame::kNoSlot;
  if (ran && f.results.size() == 1 && f.results[0].bytes().data() == storage) {
    f.slots[donor] = std::move(f.results[0]);
    f.results.clear();
    return;
  }
  code.in_donor_declined[static_cast<size_t>(r)].store(true, std::memory_order_relaxed);
  if (ran) {  // a fresh buffer: the donor, dead from here on, takes it
    store(f, s, f.results);
    return;
  }
  std::swap(f.slots[out], f.donor_views[static_cast<size_t>(r)]);  // the arena's view again
  f.in_donor[static_cast<size_t>(r)] = 0;
  run_kernel(f, b, i);
}

void run_step(Frame& f, const BlockCode& b, size_t i) {
  const Step& s = b.steps[i];
  switch (s.kind) {
    case StepKind::kKernel: run_kernel(f, b, i); return;
    case StepKind::kFused:
      f.step = &s;
      if (f.planned && &b == &f.code.body && f.code.step_in_donor[i] >= 0 &&
          f.in_donor[static_cast<size_t>(f.code.step_in_donor[i])]) {
        run_fused_in_donor(f, b, i, f.code.step_in_donor[i]);
        return;
      }
      lend(f, s);
      if (b.plan->run(*s.op, f.value, f.dying, f.results)) {
        store(f, s, f.results);
        return;
      }
      give_back(f, s);
      // A loop with riders computes them too: it never declines (runs() decided it).
      TESSERA_CHECK(s.results.size == s.op->num_results(), "a fused loop with riders declined");
      run_kernel(f, b, i);
      return;
    case StepKind::kWhile: run_while(f, s); return;
    case StepKind::kCall: run_call(f, s); return;
  }
}

// One timed step's interval, for the profile and the trace alike.
void record(Frame& f, int32_t key, std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point end) {
  const size_t k = static_cast<size_t>(key);
  if (!f.profile.empty()) {
    auto& [count, seconds] = f.profile[k];
    ++count;
    seconds += std::chrono::duration<double>(end - start).count();
  }
  if (f.track) f.trace->add(*f.track, f.trace_ids[k], f.trace->ns(start), f.trace->ns(end));
}

// A row group of a planned run (fusion_rows.h): the steps it moves before its tiles, the members'
// tiles (their results written into their slots' views of the arena), the steps it moves after.
void run_group(Frame& f, const BlockCode& b, const RowGroup& g) {
  for (uint32_t k : g.before) run_step(f, b, k);
  f.group_dests.clear();
  for (const RowMember& m : g.members) {
    const Step& s = b.steps[m.step];
    const Slot* out = f.code.list(s.results);
    for (uint32_t k = 0; k < s.results.size; ++k) f.group_dests.push_back(&f.slots[out[k]]);
  }
  run_row_group(static_cast<const MultiResultPlan&>(*b.plan), g, f.value, f.group_dests);
  for (uint32_t k : g.after) run_step(f, b, k);
}

void run_steps(Frame& f, const BlockCode& b) {
  const bool timed = !f.profile.empty() || f.track != nullptr;  // the one branch per step when off
  const bool groups = f.planned && &b == &f.code.body && !f.code.row_groups.empty();
  for (size_t i = 0; i < b.steps.size(); ++i) {
    if (groups && f.code.group_at[i] >= 0) {
      const RowGroup& g = f.code.row_groups[static_cast<size_t>(f.code.group_at[i])];
      auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      run_group(f, b, g);
      if (timed) record(f, g.profile, start, std::chrono::steady_clock::now());
      i = g.last;
      continue;
    }
    const Step& s = b.steps[i];
    if (timed && s.profile >= 0) {
      auto start = std::chrono::steady_clock::now();
      run_step(f, b, i);
      record(f, s.profile, start, std::chrono::steady_clock::now());
    } else {
      run_step(f, b, i);
    }
    // A planned run keeps its block's values where the plan put them, and its parameters.
    if (!f.planned || &b != &f.code.body) free_slots(f, s.frees);
  }
}

// The views of the fused loops (built once per frame: they capture it).
void bind(Frame& f) {
  f.value = [&f](const ir::Value* v) -> const Literal& { return f.slots[f.code.slot_of.at(v)]; };
  f.dying = [&f](const ir::Value* v) -> Literal* {
    Slot slot = f.code.slot_of.at(v);
    if (f.slots[slot].is_view() || f.lent[slot] || (f.dying_only != Frame::kNoSlot && slot != f.dying_only)) return nullptr;
    const Slot* s = f.code.list(f.step->frees);
    for (uint32_t k = 0; k < f.step->frees.size; ++k)
      if (s[k] == slot) return &f.slots[slot];
    return nullptr;
  };
}

// Whether `out` is a destination for `v`: a buffer of its type (an owned one from an earlier
// run, or a view of a caller's slot).
bool takes(const Literal& out, const Literal& v) {
  return out.type() == v.type() && out.bytes().size() == v.bytes().size();
}

// Points the slots of results computed in their donors' buffers (Code::return_in_donor) there for
// this run, where the donor is an owned argument of the result's type.
void point_into_donors(Frame& f) {
  const Code& code = f.code;
  for (size_t r = 0; r < code.return_in_donor.size(); ++r) {
    uint8_t how = code.return_in_donor[r];
    if (how == 0 || (how == 2 && code.in_donor_declined[r].load(std::memory_order_relaxed))) continue;
    Slot d = code.params[static_cast<size_t>(code.return_donor[r])];
    Slot s = code.body.returns[r];
    Literal& donor = f.slots[d];
    if (donor.is_view() || f.lent[d] || donor.type() != *code.slot_types[s] || donor.bytes().empty()) continue;
    point_at(f.donor_views[r], donor);
    std::swap(f.slots[s], f.donor_views[r]);
    f.in_donor[r] = 1;
  }
}

// Gives the slots pointed into donors their arena views back.
void point_back(Frame& f) {
  for (size_t r = 0; r < f.in_donor.size(); ++r)
    if (f.in_donor[r]) {
      std::swap(f.slots[f.code.body.returns[r]], f.donor_views[r]);
      f.in_donor[r] = 0;
    }
}

// Hands the lent parameters of a planned frame back to the caller's `args` (swapped in, swapped
// back: the caller's literals, views included, keep their storage).
void hand_back(Frame& f, std::vector<Literal>& args) {
  for (size_t k = 0; k < f.code.params.size(); ++k) {
    Slot p = f.code.params[k];
    if (!f.lent[p]) continue;
    std::swap(f.slots[p], args[k]);
    f.lent[p] = 0;
  }
}

// Runs the function's block in `f` on `args` and leaves its results in `out` (at least as long as
// the results; `args` and `out` are distinct in a planned frame). A planned frame borrows the
// arguments that are views, or that `lent` marks, and hands them back after; it writes results
// into the entries of `out` that take them (takes()).
void run_function(Frame& f, std::vector<Literal>& args, std::vector<Literal>& out, std::span<const uint8_t> lent) {
  const Code& code = f.code;
  for (size_t k = 0; k < code.params.size(); ++k) {
    Literal& a = args[k];
    Slot p = code.params[k];
    if (f.planned && (a.is_view() || (k < lent.size() && lent[k]))) {
      std::swap(f.slots[p], a);
      f.lent[p] = 1;
    } else {
      f.slots[p] = std::move(a);
    }
  }
  if (f.planned) point_into_donors(f);
  interp::Profile* profile = f.state->options ? f.state->options->profile : nullptr;
  if (profile) f.profile.assign(code.profile_keys.size(), {0, 0.0});
  else f.profile.clear();
  f.trace = f.state->options ? f.state->options->trace : nullptr;
  f.track = nullptr;
  if (f.trace) {
    if (f.trace_ids_of != f.trace->serial()) {
      f.trace_ids.clear();
      for (const interp::TraceLabel& l : code.trace_labels) f.trace_ids.push_back(f.trace->intern(l));
      f.trace_ids_of = f.trace->serial();
    }
    f.track = &f.trace->track(interp::trace_device(*f.state->options));
  }
  run_steps(f, code.body);
  if (!f.planned) {
    take_returns(f, code.body, out);
  } else {
    // Views are copied out (the next run writes over the arena): into the caller's destination,
    // else a parameter's buffer, else a fresh one. Lent parameters go back to the caller; those
    // still held are dropped.
    if (out.size() < code.body.returns.size()) out.resize(code.body.returns.size());
    for (size_t k = 0; k < code.body.returns.size(); ++k) {
      Literal& v = f.slots[code.body.returns[k]];
      int32_t d = code.return_donor[k];
      Literal* donor = d >= 0 ? &f.slots[code.params[static_cast<size_t>(d)]] : nullptr;
      if (takes(out[k], v)) {
        // memmove: a callee may return its argument, a view of the caller's slot.
        if (!v.bytes().empty() && out[k].bytes().data() != v.bytes().data())
          std::memmove(out[k].bytes().data(), v.bytes().data(), v.bytes().size());
      } else if (v.is_view() && donor != nullptr && !donor->is_view() && !f.lent[code.params[static_cast<size_t>(d)]] &&
                 donor->type() == v.type()) {
        // Nothing to copy when the result was computed in the donor's buffer.
        if (!v.bytes().empty() && donor->bytes().data() != v.bytes().data())
          std::memcpy(donor->bytes().data(), v.bytes().data(), v.bytes().size());
        out[k] = std::move(*donor);
      } else if (!v.is_view() && code.body.move_return[k] && !f.lent[code.body.returns[k]]) {
        out[k] = std::move(v);
      } else {
        out[k] = v;
      }
    }
    point_back(f);
    hand_back(f, args);
    for (Slot p : code.params) f.slots[p] = Literal();
  }
  if (profile) {
    std::lock_guard<std::mutex> lock(profile->mutex);
    for (size_t k = 0; k < f.profile.size(); ++k) {
      if (f.profile[k].first == 0) continue;
      const auto& [name, typed] = code.profile_keys[k];
      auto& entry = profile->by_op[profile->by_type ? typed : name];
      entry.first += f.profile[k].first;
      entry.second += f.profile[k].second;
    }
  }
}

}  // namespace

std::vector<Literal> execute(const Code& code, std::vector<Literal> args, const interp::RunState& state) {
  Frame f(code);
  f.state = &state;
  bind(f);
  std::vector<Literal> results;
  run_function(f, args, results);
  return results;
}

std::unique_ptr<Frame> planned_frame(const Code& code);

}  // namespace detail

namespace {

// The interpreter state a run hands its kernels. What kernels with regions hand to the interpreter
// (sdy.manual_computation's body, reduction bodies) runs with this executable's fast kernels, as
// the interpreter would. Pointers into itself: built in place, never copied.
struct RunSetup {
  RunSetup(const detail::Code& code, const interp::Options& options) : o(with_code(code, options)) {}
  static interp::Options with_code(const detail::Code& code, interp::Options o) {
    o.accelerate = code.accelerate;
    if (o.module == nullptr) o.module = code.module;
    return o;
  }
  RunSetup(const RunSetup&) = delete;
  RunSetup& operator=(const RunSetup&) = delete;
  interp::Options o;
  interp::SingleProcessCollectives single;
  interp::RunState state{o.process, o.collectives ? o.collectives : &single, o.module, &o};
};

}  // namespace

std::vector<ir::Literal> Executable::run(std::vector<ir::Literal> args, const interp::Options& options) const {
  interp::check_arguments(*code_->fn, args);
  RunSetup run(*code_, options);
  return detail::execute(*code_, std::move(args), run.state);
}

std::vector<ir::Literal> Executable::run(std::vector<ir::Literal> args, const interp::Options& options,
                                         RunContext& context) const {
  std::vector<ir::Literal> results;
  run_into(args, {}, results, options, context);
  return results;
}

void Executable::run_into(std::vector<ir::Literal>& args, std::span<const uint8_t> lent,
                          std::vector<ir::Literal>& results, const interp::Options& options,
                          RunContext& context) const {
  detail::Frame& f = *detail::Access::frame(context);
  TESSERA_CHECK(&f.code == code_.get(), "a run context of another executable");
  TESSERA_CHECK(&args != &results, "run_into: the arguments and the results are one vector");
  interp::check_arguments(*code_->fn, args);
  RunSetup run(*code_, options);
  f.state = &run.state;
  support::RunCache::Scope scope(f.cache);
  try {
    detail::run_function(f, args, results, lent);
  } catch (...) {
    // A step that threw may hold views lent to its kernel: lay the context out afresh, after
    // handing the caller's lent arguments back.
    detail::hand_back(f, args);
    detail::Access::frame(context) = detail::planned_frame(*code_);
    throw;
  }
  f.state = nullptr;
  results.resize(code_->body.returns.size());
}

namespace detail {

// A planned frame of `code` with its arena laid out, and its callees' frames.
std::unique_ptr<Frame> planned_frame(const Code& code) {
  auto frame = std::make_unique<Frame>(code);
  Frame& f = *frame;
  f.planned = true;
  f.arena = std::make_unique<Arena>(code.arena_bytes);
  for (size_t s = 0; s < code.slot_offset.size(); ++s)
    if (code.slot_offset[s] >= 0) f.slots[s] = Literal::view(*code.slot_types[s], f.arena->data() + code.slot_offset[s]);
  f.operands.reserve(code.max_operands);
  f.results.reserve(code.max_results);
  f.profile.reserve(code.profile_keys.size());
  for (const CallCode& c : code.calls) f.callees.push_back(planned_frame(Access::code(*c.callee)));
  f.call_args.resize(code.calls.size());
  f.call_results.resize(code.calls.size());
  f.donor_views.resize(code.body.returns.size());
  f.in_donor.assign(code.body.returns.size(), 0);
  bind(f);
  return frame;
}

}  // namespace detail

std::unique_ptr<RunContext> Executable::make_context() const {
  std::unique_ptr<RunContext> c = detail::Access::context();
  detail::Access::frame(*c) = detail::planned_frame(*code_);
  return c;
}

RunContext::RunContext() = default;
RunContext::~RunContext() = default;
int64_t RunContext::arena_bytes() const { return frame_->arena ? frame_->arena->size() : 0; }

}  // namespace tessera::exec
