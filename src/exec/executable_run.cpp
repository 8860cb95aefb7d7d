// Running an Executable (executable.h): the steps of each block in order over one array of values
// per run, indexed by slot.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>

#include "exec/executable_code.h"
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
  explicit Frame(const Code& c) : code(c), slots(c.slot_types.size()) {}

  const Code& code;
  const interp::RunState* state = nullptr;
  bool planned = false;  // the block's values are views of `arena`: never freed or moved out
  std::unique_ptr<Arena> arena;
  std::vector<Literal> slots;
  std::vector<const Literal*> operands;  // the current kernel step's
  std::vector<Literal> results;          // what fast kernels and fused loops append to
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
  // A planned frame's frames of its compiled callees (per Code::calls), planned too, and the
  // arguments handed to them.
  std::vector<std::unique_ptr<Frame>> callees;
  std::vector<Literal> call_args;
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
  while (true) {
    run_steps(f, w.cond);
    bool go = f.slots[w.cond.returns[0]].get_int(0) != 0;
    free_slots(f, w.cond.return_frees);
    if (!go) break;
    run_steps(f, w.body);
    take_returns(f, w.body, next);
    for (size_t k = 0; k < w.state.size(); ++k) f.slots[w.state[k]] = std::move(next[k]);
  }
  const Slot* out = f.code.list(s.results);
  for (size_t k = 0; k < w.state.size(); ++k) put(f, out[k], std::move(f.slots[w.state[k]]));
}

void run_function(Frame& f, std::vector<Literal>& args, std::vector<Literal>& out);

void run_call(Frame& f, const Step& s) {
  const CallCode& c = f.code.calls[static_cast<size_t>(s.nested)];
  const Slot* in = f.code.list(s.operands);
  if (f.planned) {
    // The callee's own planned frame, its arguments lent as views (it never writes them); its
    // results, fresh, are copied into this frame's arena.
    Frame& callee = *f.callees[static_cast<size_t>(s.nested)];
    callee.state = f.state;
    f.call_args.clear();
    for (uint32_t k = 0; k < s.operands.size; ++k) {
      Literal& v = f.slots[in[k]];
      f.call_args.push_back(Literal::view(v.type(), v.bytes().data()));
    }
    run_function(callee, f.call_args, f.call_args);
    store(f, s, f.call_args);
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

void run_step(Frame& f, const BlockCode& b, size_t i) {
  const Step& s = b.steps[i];
  switch (s.kind) {
    case StepKind::kKernel: run_kernel(f, b, i); return;
    case StepKind::kFused:
      f.step = &s;
      lend(f, s);
      if (b.plan->run(*s.op, f.value, f.dying, f.results)) {
        store(f, s, f.results);
        return;
      }
      give_back(f, s);
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

void run_steps(Frame& f, const BlockCode& b) {
  const bool timed = !f.profile.empty() || f.track != nullptr;  // the one branch per step when off
  for (size_t i = 0; i < b.steps.size(); ++i) {
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
    if (f.slots[slot].is_view()) return nullptr;
    const Slot* s = f.code.list(f.step->frees);
    for (uint32_t k = 0; k < f.step->frees.size; ++k)
      if (s[k] == slot) return &f.slots[slot];
    return nullptr;
  };
}

// Runs the function's block in `f` on `args` and leaves its results in `out`.
void run_function(Frame& f, std::vector<Literal>& args, std::vector<Literal>& out) {
  const Code& code = f.code;
  for (size_t k = 0; k < code.params.size(); ++k) f.slots[code.params[k]] = std::move(args[k]);
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
    // Views are copied out (the next run writes over the arena): into a parameter's buffer, else
    // a fresh one. Parameters still held are dropped after.
    out.resize(code.body.returns.size());
    for (size_t k = 0; k < code.body.returns.size(); ++k) {
      Literal& v = f.slots[code.body.returns[k]];
      int32_t d = code.return_donor[k];
      Literal* donor = d >= 0 ? &f.slots[code.params[static_cast<size_t>(d)]] : nullptr;
      if (v.is_view() && donor != nullptr && !donor->is_view() && donor->type() == v.type()) {
        if (!v.bytes().empty()) std::memcpy(donor->bytes().data(), v.bytes().data(), v.bytes().size());
        out[k] = std::move(*donor);
      } else if (!v.is_view() && code.body.move_return[k]) {
        out[k] = std::move(v);
      } else {
        out[k] = v;
      }
    }
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
  detail::Frame& f = *detail::Access::frame(context);
  TESSERA_CHECK(&f.code == code_.get(), "a run context of another executable");
  interp::check_arguments(*code_->fn, args);
  RunSetup run(*code_, options);
  f.state = &run.state;
  support::RunCache::Scope scope(f.cache);
  // The vector of the arguments carries the results back (no allocation when it is long enough).
  try {
    detail::run_function(f, args, args);
  } catch (...) {
    // A step that threw may hold views lent to its kernel: lay the context out afresh.
    detail::Access::frame(context) = detail::planned_frame(*code_);
    throw;
  }
  f.state = nullptr;
  return args;
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
  size_t most_args = 0;
  for (const CallCode& c : code.calls) {
    f.callees.push_back(planned_frame(Access::code(*c.callee)));
    most_args = std::max(most_args, std::max(c.callee->function().num_parameters(), c.callee->function().result_types.size()));
  }
  f.call_args.reserve(most_args);
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
