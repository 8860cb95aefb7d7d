// Running an Executable (executable.h): the steps of each block in order over one array of values
// per run, indexed by slot.
#include <chrono>
#include <mutex>

#include "exec/executable_code.h"
#include "support/error.h"

namespace tessera::exec {

namespace detail {
namespace {

using ir::Literal;

// One run of one function's code: its values, and scratch reused from step to step.
struct Frame {
  Frame(const Code& c, const interp::RunState& s) : code(c), state(s), slots(c.slot_types.size()) {}

  const Code& code;
  const interp::RunState& state;
  std::vector<Literal> slots;
  std::vector<const Literal*> operands;  // the current kernel step's
  std::vector<Literal> results;          // what fast kernels and fused loops append to
  std::vector<std::pair<int64_t, double>> profile;  // per Code::profile_keys, when profiling
  // The fused loops' view of the values: by Value, and those dying at the current step.
  const Step* step = nullptr;
  std::function<const Literal&(const ir::Value*)> value;
  std::function<Literal*(const ir::Value*)> dying;
};

void free_slots(Frame& f, Range r) {
  const Slot* s = f.code.list(r);
  for (uint32_t k = 0; k < r.size; ++k) f.slots[s[k]] = Literal();
}

template <typename Results>
void store(Frame& f, const Step& s, Results& results) {
  const Slot* out = f.code.list(s.results);
  for (uint32_t k = 0; k < s.results.size; ++k) f.slots[out[k]] = std::move(results[k]);
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
    f.results.clear();
    if (f.code.accelerate(*s.op, operands, f.results)) {
      store(f, s, f.results);
      return;
    }
    b.declined[i].store(true, std::memory_order_relaxed);
  }
  // The reference kernel; its regions see the values of enclosing blocks that they read.
  interp::Scope scope;
  for (uint32_t k = 0; k < s.captures.size; ++k) {
    const auto& [v, slot] = f.code.captured[s.captures.begin + k];
    scope.values.emplace(v, f.slots[slot]);
  }
  interp::EvalContext ctx(*s.op, operands, scope, f.state);
  interp::Results results = s.reference(ctx);
  interp::check_results(*s.op, results);
  store(f, s, results);
}

void run_while(Frame& f, const Step& s) {
  const WhileCode& w = *f.code.whiles[static_cast<size_t>(s.nested)];
  const Slot* in = f.code.list(s.operands);
  for (size_t k = 0; k < w.state.size(); ++k) {
    if (w.move_in[k]) f.slots[w.state[k]] = std::move(f.slots[in[k]]);
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
  for (size_t k = 0; k < w.state.size(); ++k) f.slots[out[k]] = std::move(f.slots[w.state[k]]);
}

void run_call(Frame& f, const Step& s) {
  const CallCode& c = f.code.calls[static_cast<size_t>(s.nested)];
  const Slot* in = f.code.list(s.operands);
  std::vector<Literal> args;
  args.reserve(s.operands.size);
  for (uint32_t k = 0; k < s.operands.size; ++k) {
    if (c.move_in[k]) args.push_back(std::move(f.slots[in[k]]));
    else args.push_back(f.slots[in[k]]);
  }
  std::vector<Literal> results = execute(Access::code(*c.callee), std::move(args), f.state);
  store(f, s, results);
}

void run_step(Frame& f, const BlockCode& b, size_t i) {
  const Step& s = b.steps[i];
  switch (s.kind) {
    case StepKind::kKernel: run_kernel(f, b, i); return;
    case StepKind::kFused:
      f.step = &s;
      f.results.clear();
      if (b.plan->run(*s.op, f.value, f.dying, f.results)) {
        store(f, s, f.results);
        return;
      }
      run_kernel(f, b, i);
      return;
    case StepKind::kWhile: run_while(f, s); return;
    case StepKind::kCall: run_call(f, s); return;
  }
}

void run_steps(Frame& f, const BlockCode& b) {
  const bool timed = !f.profile.empty();
  for (size_t i = 0; i < b.steps.size(); ++i) {
    const Step& s = b.steps[i];
    if (timed && s.profile >= 0) {
      auto start = std::chrono::steady_clock::now();
      run_step(f, b, i);
      auto& [count, seconds] = f.profile[static_cast<size_t>(s.profile)];
      ++count;
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } else {
      run_step(f, b, i);
    }
    free_slots(f, s.frees);
  }
}

}  // namespace

std::vector<Literal> execute(const Code& code, std::vector<Literal> args, const interp::RunState& state) {
  Frame f(code, state);
  for (size_t k = 0; k < code.params.size(); ++k) f.slots[code.params[k]] = std::move(args[k]);
  interp::Profile* profile = state.options ? state.options->profile : nullptr;
  if (profile) f.profile.assign(code.profile_keys.size(), {0, 0.0});
  f.value = [&f](const ir::Value* v) -> const Literal& { return f.slots[f.code.slot_of.at(v)]; };
  f.dying = [&f](const ir::Value* v) -> Literal* {
    Slot slot = f.code.slot_of.at(v);
    const Slot* s = f.code.list(f.step->frees);
    for (uint32_t k = 0; k < f.step->frees.size; ++k)
      if (s[k] == slot) return &f.slots[slot];
    return nullptr;
  };
  run_steps(f, code.body);
  std::vector<Literal> results;
  take_returns(f, code.body, results);
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
  return results;
}

}  // namespace detail

std::vector<ir::Literal> Executable::run(std::vector<ir::Literal> args, const interp::Options& options) const {
  const ir::Function& fn = *code_->fn;
  if (args.size() != fn.num_parameters())
    support::fail("@{} takes {} arguments, got {}", fn.name(), fn.num_parameters(), args.size());
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].type() != fn.parameter(i)->type())
      support::fail("@{}: argument {} has type {}, but parameter {} has type {}", fn.name(), i,
                    to_string(args[i].type()), i, to_string(fn.parameter(i)->type()));
  // What kernels with regions hand to the interpreter (sdy.manual_computation's body, reduction
  // bodies) runs with this executable's fast kernels, as the interpreter would.
  interp::Options o = options;
  o.accelerate = code_->accelerate;
  if (o.module == nullptr) o.module = code_->module;
  interp::SingleProcessCollectives single;
  interp::RunState state{o.process, o.collectives ? o.collectives : &single, o.module, &o};
  return detail::execute(*code_, std::move(args), state);
}

}  // namespace tessera::exec
