// FragmentPipeline::run: one thread per stage executes the instruction list compile() made for it
// (fragment_pipeline.h). A stage keeps each value it computed or received in its store only while
// some later instruction of its list still reads it (a fragment input or a post), so what a stage
// holds follows the schedule's order, not the program's: that is what makes 1F1B hold less than GPipe.
// Each fragment is compiled once, when the pipeline is made, into an exec::Executable with a run
// context of its own; a run lends it the parameters (views: never written, never copied).
#include <time.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "exec/accelerate.h"
#include "exec/executable.h"
#include "interp/interpreter.h"
#include "mpmd/fragment_pipeline.h"
#include "mpmd/value_slots.h"
#include "support/error.h"

namespace tessera::mpmd {

using ir::Literal;
using support::fail;

namespace {

int64_t bytes_of(const Literal& l) { return static_cast<int64_t>(l.bytes().size()); }

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

// Each schedule action's interval as a span on its stage's track: F, B, BI and W (category
// "pipeline") enclose the spans of the ops their fragments ran; SEND and RECV ("transfer") carry
// their bytes. `base_ns` is the run's start on the trace's clock.
void trace_actions(interp::Trace& trace, const Schedule& schedule, const FragmentPipelineRun& run, int64_t base_ns) {
  for (size_t st = 0; st < run.times.size(); ++st) {
    std::vector<interp::TraceSpan>& track = trace.track(static_cast<int64_t>(st));
    for (size_t k = 0; k < run.times[st].size(); ++k) {
      const Action& a = schedule.actions[st][k];
      interp::TraceLabel l{describe(a), a.is_compute() ? "pipeline" : "transfer",
                           fmt::format("\"stage\": {}, \"microbatch\": {}, \"virtual_stage\": {}", st, a.microbatch,
                                       a.virtual_stage)};
      if (!a.is_compute()) l.args += fmt::format(", \"peer\": {}, \"bytes\": {}", a.peer, run.action_bytes[st][k]);
      trace.add(track, trace.intern(l), base_ns + std::llround(run.times[st][k].start * 1e6),
                base_ns + std::llround(run.times[st][k].end * 1e6));
    }
  }
}

}  // namespace

struct FragmentPipeline::Compiled {
  std::vector<std::shared_ptr<const exec::Executable>> executables;  // per fragment
  std::vector<std::unique_ptr<exec::RunContext>> contexts;
};

FragmentPipeline::~FragmentPipeline() = default;

void FragmentPipeline::compile_fragments() {
  compiled_ = std::make_shared<Compiled>();
  for (const Fragment& f : plan_.fragments) {
    exec::CompileOptions o;
    o.module = f.module.get();
    if (!options_.fast_kernels) o.accelerate = nullptr;
    compiled_->executables.push_back(exec::Executable::compile(f.fn(), o));
    compiled_->contexts.push_back(compiled_->executables.back()->make_context());
  }
}

FragmentPipelineRun FragmentPipeline::run(const Schedule& schedule, const std::vector<Literal>& parameters) const {
  RunInputs in;
  for (const Literal& p : parameters) in.parameters.push_back(&p);
  return run(compile(schedule), schedule, in);
}

FragmentPipelineRun FragmentPipeline::run(const CompiledSchedule& compiled, const Schedule& schedule,
                                          const RunInputs& inputs) const {
  const FragmentPlan& plan = plan_;
  const std::vector<const Literal*>& parameters = inputs.parameters;
  if (parameters.size() != plan.parameter_types.size())
    fail("pipeline run: the step takes {} parameters, got {}", plan.parameter_types.size(), parameters.size());
  for (size_t i = 0; i < parameters.size(); ++i)
    if (parameters[i]->type() != plan.parameter_types[i])
      fail("pipeline run: parameter {} is {}, the step's parameter %arg{} is {}", i,
           ir::to_string(parameters[i]->type()), i, ir::to_string(plan.parameter_types[i]));
  TESSERA_CHECK(compiled.stages.size() == static_cast<size_t>(stages_) && schedule.actions.size() == compiled.stages.size(),
                "a compiled schedule of {} stages run on a pipeline of {}", compiled.stages.size(), stages_);

  const size_t stages = compiled.stages.size();
  FragmentPipelineRun out;
  out.peak_saved_bytes.assign(stages, 0);
  out.peak_store_bytes.assign(stages, 0);
  out.fragment_runs.assign(plan.fragments.size(), 0);
  out.times.resize(stages);
  out.cpu_ms.resize(stages);
  for (size_t st = 0; st < stages; ++st) {
    out.times[st].assign(schedule.actions[st].size(), Interval{});
    out.cpu_ms[st].assign(schedule.actions[st].size(), 0.0);
  }
  out.action_bytes = std::vector<std::vector<int64_t>>(out.times.size());
  for (size_t st = 0; st < stages; ++st) out.action_bytes[st].assign(schedule.actions[st].size(), 0);
  const auto start = std::chrono::steady_clock::now();
  auto now_ms = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(); };
  std::vector<std::optional<Literal>> results(plan.results.size());
  std::multimap<size_t, size_t> result_of;  // value -> result index
  for (size_t r = 0; r < plan.results.size(); ++r) {
    const Binding& b = plan.results[r];
    if (b.kind == Binding::Kind::kParameter) results[r] = *parameters[b.index];
    else if (b.kind == Binding::Kind::kConstant) results[r] = b.constant;
    else result_of.insert({b.index, r});
  }
  ValueSlots slots;
  std::mutex mu;  // guards results and out.transferred_bytes

  auto where = [&](size_t st, int64_t step) {
    if (step < 0) return fmt::format("stage {} (glue)", st);
    return describe_at(static_cast<int64_t>(st), step, schedule.actions[st][static_cast<size_t>(step)]);
  };
  auto label = [&](size_t f) {
    const Fragment& fr = plan.fragments[f];
    return fmt::format("fragment {} ({})", f, fr.origin ? fr.origin->to_string() : std::string("glue"));
  };

  auto run_stage = [&](size_t st) {
    const std::vector<Instruction>& list = compiled.stages[st];
    // Readers left per value on this stage, and which values are activations kept for a backward.
    std::unordered_map<size_t, int64_t> readers;
    std::set<size_t> saved;
    for (const Instruction& in : list) {
      if (in.kind == Instruction::Kind::kPost && !plan.values[in.value].parameter) readers[in.value]++;
      if (in.kind != Instruction::Kind::kRun) continue;
      bool backward = role(in.fragment).kind == FragmentRole::Kind::kBackward ||
                      role(in.fragment).kind == FragmentRole::Kind::kWeight;
      for (const Binding& b : plan.fragments[in.fragment].inputs) {
        if (b.kind != Binding::Kind::kValue) continue;
        readers[b.index]++;
        const PlanValue& v = plan.values[b.index];
        if (backward && !v.parameter && role(v.producer).kind == FragmentRole::Kind::kForward) saved.insert(b.index);
      }
    }
    std::unordered_map<size_t, Literal> store;
    int64_t held = 0, held_saved = 0;
    interp::Options exec_options;  // the fragments' ops on this stage's track when tracing
    exec_options.trace = inputs.trace;
    exec_options.trace_device = static_cast<int64_t>(st);
    auto keep = [&](size_t id, Literal v) {
      held += bytes_of(v);
      if (saved.count(id)) held_saved += bytes_of(v);
      out.peak_store_bytes[st] = std::max(out.peak_store_bytes[st], held);
      out.peak_saved_bytes[st] = std::max(out.peak_saved_bytes[st], held_saved);
      store.emplace(id, std::move(v));
    };
    auto read_done = [&](size_t id) {
      if (--readers[id] > 0) return;
      auto it = store.find(id);
      TESSERA_CHECK(it != store.end(), "stage {} dropped {} before its last reader", st, plan.values[id].name);
      held -= bytes_of(it->second);
      if (saved.count(id)) held_saved -= bytes_of(it->second);
      store.erase(it);
    };
    // An action's interval runs from its first instruction's start to its last one's end.
    int64_t action = -1;
    double action_cpu = 0;
    auto enter = [&](int64_t step) {
      if (step == action || step < 0) return;
      action = step;
      action_cpu = thread_cpu_ms();
      out.times[st][static_cast<size_t>(step)].start = now_ms();
    };
    auto leave = [&](int64_t step) {
      if (step < 0) return;
      out.times[st][static_cast<size_t>(step)].end = now_ms();
      out.cpu_ms[st][static_cast<size_t>(step)] = thread_cpu_ms() - action_cpu;
    };
    for (const Instruction& in : list) {
      if (slots.aborted()) return;
      enter(in.step);
      switch (in.kind) {
        case Instruction::Kind::kWait: {
          std::optional<Literal> v = slots.take(in.value, st, options_.transfer_timeout);
          if (!v) {
            if (slots.aborted()) return;
            const PlanValue& pv = plan.values[in.value];
            fail("{}: waits for {} from stage {} ({}): nothing arrived within {} ms", where(st, in.step), pv.name,
                 in.mesh, pv.parameter ? std::string("a parameter") : label(pv.producer),
                 options_.transfer_timeout.count());
          }
          if (in.step >= 0) out.action_bytes[st][static_cast<size_t>(in.step)] += bytes_of(*v);
          keep(in.value, std::move(*v));
          break;
        }
        case Instruction::Kind::kPost: {
          const PlanValue& pv = plan.values[in.value];
          Literal v = pv.parameter ? *parameters[*pv.parameter] : store.at(in.value);  // a copy: it may be read again
          {
            std::lock_guard lock(mu);
            out.transferred_bytes += bytes_of(v);
          }
          if (in.step >= 0) out.action_bytes[st][static_cast<size_t>(in.step)] += bytes_of(v);
          slots.post(in.value, in.mesh, std::move(v));
          if (!pv.parameter) read_done(in.value);
          break;
        }
        case Instruction::Kind::kRun: {
          const Fragment& f = plan.fragments[in.fragment];
          // Parameters and kept values are lent as views: the executable reads them, never writes.
          std::vector<Literal> args;
          for (const Binding& b : f.inputs) {
            const Literal& v = b.kind == Binding::Kind::kParameter ? *parameters[b.index] : store.at(b.index);
            args.push_back(Literal::view(v.type(), const_cast<std::byte*>(v.bytes().data())));
          }
          std::vector<Literal> outputs;
          try {
            outputs = compiled_->executables[in.fragment]->run(std::move(args), exec_options, *compiled_->contexts[in.fragment]);
          } catch (const support::UserError& e) {
            fail("{}: {}: {}", where(st, in.step), label(in.fragment), e.what());
          }
          out.fragment_runs[in.fragment]++;  // each fragment runs on one stage only
          for (const Binding& b : f.inputs)
            if (b.kind == Binding::Kind::kValue) read_done(b.index);
          for (size_t k = 0; k < f.outputs.size(); ++k) {
            size_t id = f.outputs[k];
            {
              std::lock_guard lock(mu);
              auto [lo, hi] = result_of.equal_range(id);
              for (auto r = lo; r != hi; ++r) results[r->second] = outputs[k];
            }
            if (readers.count(id) && readers[id] > 0) keep(id, std::move(outputs[k]));
          }
          break;
        }
      }
      leave(in.step);
    }
    TESSERA_CHECK(store.empty(), "stage {} ends holding {} values", st, store.size());
    // An action with no instruction (a BI with nothing to run, a SEND that carries nothing here)
    // takes no time where it stands in the list.
    std::vector<bool> seen(schedule.actions[st].size(), false);
    for (const Instruction& in : list)
      if (in.step >= 0) seen[static_cast<size_t>(in.step)] = true;
    for (size_t k = 0; k < seen.size(); ++k)
      if (!seen[k]) out.times[st][k].start = out.times[st][k].end = k == 0 ? 0.0 : out.times[st][k - 1].end;
  };

  run_on_threads(stages, run_stage, slots);
  if (inputs.trace) trace_actions(*inputs.trace, schedule, out, inputs.trace->ns(start));
  for (size_t r = 0; r < results.size(); ++r) {
    TESSERA_CHECK(results[r].has_value(), "result {} of the step was never computed", r);
    out.results.push_back(std::move(*results[r]));
  }
  return out;
}

}  // namespace tessera::mpmd
