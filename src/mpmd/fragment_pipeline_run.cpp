// FragmentPipeline::run: one thread per stage executes its list from compile(). A stage keeps a
// value only while a later instruction of its list reads it, so what it holds follows the
// schedule's order (what makes 1F1B hold less than GPipe). Fragments run as StagePrograms
// (fragment_pipeline.h), compiled once; values cross to other stages as messages over Ranks
// (ranks.h).
#include <time.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "exec/accelerate.h"
#include "exec/executable.h"
#include "interp/interpreter.h"
#include "mpmd/fragment_pipeline.h"
#include "mpmd/fragment_store.h"
#include "runtime/executables.h"
#include "runtime/layout.h"
#include "spmd/reshard.h"
#include "stablehlo/printer.h"
#include "support/error.h"
#include "support/threads.h"

namespace tessera::mpmd {

using ir::Literal;
using runtime::ShardedBuffer;
using schedule::Action;
using schedule::Schedule;
using support::fail;

namespace {

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
      interp::TraceLabel l{schedule::describe(schedule, a), a.is_compute() ? "pipeline" : "transfer",
                           fmt::format("\"stage\": {}, \"microbatch\": {}, \"virtual_stage\": {}", st, a.microbatch,
                                       a.virtual_stage)};
      if (!a.is_compute()) l.args += fmt::format(", \"peer\": {}, \"bytes\": {}", schedule.peer(a), run.action_bytes[st][k]);
      trace.add(track, trace.intern(l), base_ns + std::llround(run.times[st][k].start * 1e6),
                base_ns + std::llround(run.times[st][k].end * 1e6));
    }
  }
}

}  // namespace

ShardedBuffer whole_buffer(Literal value) {
  ShardedBuffer b;
  b.type = value.type();
  b.pieces = std::make_shared<std::vector<Literal>>();
  b.pieces->push_back(std::move(value));
  return b;
}

StageProgram::StageProgram(const runtime::Session* session, const ir::Module& module, const std::string& function,
                           std::vector<std::pair<size_t, size_t>> donated, bool here) {
  if (session) {
    runtime::CompiledProgram p = session->compile(module, function);
    layouts_ = p.info.parameter_shardings;
    program_ = std::make_unique<runtime::ShardedProgram>(session->sharded_program(std::move(p), std::move(donated)));
    return;
  }
  const ir::Function& fn = *module.find_function(function);
  layouts_.resize(fn.num_parameters());
  donated_.assign(fn.num_parameters(), false);
  for (auto [in, out] : donated) donated_.at(in) = true;
  exec::CompileOptions o;
  o.module = &module;
  executable_ = exec::Executable::compile(fn, o);
  if (here) context_ = executable_->make_context();
}

StageProgram::~StageProgram() = default;

const ir::Function& StageProgram::local_function() const {
  return program_ ? program_->program().local_function() : executable_->function();
}

int64_t StageProgram::context_bytes() const {
  if (!program_) return executable_->context_bytes();
  // Device 0's executable, as its first run compiles it (every device's plan is the same program).
  const runtime::CompiledProgram& p = program_->program();
  if (p.executables) return p.executables->get(p.module, p.local_function(), 0, true)->context_bytes();
  exec::CompileOptions o;
  o.module = p.module.get();
  return exec::Executable::compile(p.local_function(), o)->context_bytes();
}

ShardedBuffer StageProgram::stage(size_t k, const Literal& x) const {
  return program_ ? program_->stage(k, x) : whole_buffer(x);
}

ShardedBuffer StageProgram::stage_pieces(size_t k, const runtime::PieceMaker& make) const {
  if (program_) return program_->stage_pieces(k, make);
  const ir::Type& type = executable_->function().parameter(k)->type();
  Literal x = make(std::vector<int64_t>(type.shape.size(), 0), type.shape);
  if (x.type() != type) fail("input {} made as {}, the program takes {}", k, ir::to_string(x.type()), ir::to_string(type));
  return whole_buffer(std::move(x));
}

std::vector<ShardedBuffer> StageProgram::execute(std::vector<ShardedBuffer>& args, const interp::Options& options) const {
  if (program_) {
    for (size_t k = 0; k < args.size(); ++k)  // a whole input (a microbatch's tokens) split as the program takes it
      if (args[k].pieces->size() == 1 && !spmd::same_layout(args[k].sharding, layouts_[k], args[k].type.shape.size()))
        args[k] = program_->stage(k, (*args[k].pieces)[0]);
    return program_->execute(args);
  }
  std::vector<Literal> in;  // a donated input held by nothing else is moved in (results may take
  for (size_t k = 0; k < args.size(); ++k) {  // its buffer); the others are lent as views
    Literal& x = (*args[k].pieces)[0];
    in.push_back(donated_[k] && args[k].pieces.use_count() == 1 ? std::move(x)
                                                               : Literal::view(x.type(), x.bytes().data()));
  }
  std::vector<ShardedBuffer> out;
  TESSERA_CHECK(context_ != nullptr, "a stage program run on a rank that does not run its stage");
  for (Literal& r : executable_->run(std::move(in), options, *context_)) out.push_back(whole_buffer(std::move(r)));
  return out;
}

FragmentPipeline::~FragmentPipeline() = default;

void FragmentPipeline::compile_fragments() {
  compiled_ = std::make_shared<Compiled>();
  Compiled& c = *compiled_;
  meshes_.resize(plan_.meshes.size());
  for (const Fragment& f : plan_.fragments) {  // an spmd mesh is copied into its fragments' modules
    const std::string& name = plan_.meshes[f.mesh].spmd_mesh;
    if (name.empty() || meshes_[f.mesh]) continue;
    const ir::Mesh* mesh = f.module->find_mesh(name);
    TESSERA_CHECK(mesh != nullptr, "fragment {}'s module lacks its mesh's spmd mesh @{}", f.index, name);
    meshes_[f.mesh] = *mesh;
  }
  if (options_.ranks == nullptr) {  // this process as one rank
    local_ranks_ = std::make_unique<LocalRanks>();
    options_.ranks = local_ranks_.get();
  }
  Ranks* ranks = options_.ranks;
  for (int64_t s = 0; s < stages_; ++s) {
    const ir::Mesh* mesh = stage_mesh(s);
    const int64_t devices = mesh ? mesh->num_devices() : 1;
    const StageRanks sr = stage_ranks(s, stages_, ranks->size());
    if (sr.count > 1 && devices % sr.count != 0)
      fail("pipeline stages on ranks: a stage of {} device{} cannot split over {} ranks ({} ranks for {} stages); "
           "run a number of ranks whose share of a stage divides its devices",
           devices, devices == 1 ? "" : "s", sr.count, ranks->size(), stages_);
    runtime::SessionOptions so;
    so.timeout = options_.transfer_timeout;
    so.profile = options_.profile;
    if (mesh == nullptr) {
      c.sessions.emplace_back();
    } else if (sr.count > 1 && sr.contains(ranks->rank())) {
      c.sessions.push_back(ranks->stage_session(sr.first, sr.count, devices / sr.count, so));
      c.spanning_stage = s;
    } else {
      c.sessions.push_back(std::make_unique<runtime::Session>(runtime::Session::host(devices, so)));
    }
  }
  std::map<std::pair<size_t, std::string>, std::shared_ptr<StageProgram>> same;  // (stage, program text)
  for (const Fragment& f : plan_.fragments) {
    // The text with the fragment's own name (fragment<index>_<mesh>) taken out: what it computes.
    std::string text = stablehlo::print(*f.module);
    for (size_t at = 0; (at = text.find("@" + f.function + "(", at)) != std::string::npos;)
      text.replace(at, f.function.size() + 1, "@fragment");
    std::shared_ptr<StageProgram>& program = same[{f.mesh, text}];
    if (!program) {
      try {
        program = std::make_shared<StageProgram>(c.sessions[f.mesh].get(), *f.module, f.function,
                                                 std::vector<std::pair<size_t, size_t>>{},
                                                 runs_here(static_cast<int64_t>(f.mesh)));
      } catch (const support::UserError& e) {
        fail("fragment {} on stage {}: {}", f.index, f.mesh, e.what());
      }
      c.distinct++;
    }
    c.programs.push_back(program);
    for (size_t k = 0; k < f.inputs.size(); ++k)
      if (f.inputs[k].kind == Binding::Kind::kValue)
        c.arrival_layouts.try_emplace({f.inputs[k].index, f.mesh}, c.programs.back()->input_layout(k));
  }
}

const runtime::Session* FragmentPipeline::session(int64_t stage) const {
  return compiled_->sessions.at(static_cast<size_t>(stage)).get();
}

const ir::Mesh* FragmentPipeline::stage_mesh(int64_t stage) const {
  const std::optional<ir::Mesh>& m = meshes_.at(static_cast<size_t>(stage));
  return m ? &*m : nullptr;
}

size_t FragmentPipeline::programs_compiled() const { return compiled_->distinct; }

int64_t FragmentPipeline::devices_of(size_t fragment) const {
  const ir::Mesh* mesh = stage_mesh(static_cast<int64_t>(plan_.fragments.at(fragment).mesh));
  return mesh ? mesh->num_devices() : 1;
}

bool FragmentPipeline::runs_here(int64_t stage) const {
  return stage_ranks(stage, stages_, options_.ranks->size()).contains(options_.ranks->rank());
}

Literal FragmentPipeline::whole(const ShardedBuffer& b, int64_t stage) const {
  TESSERA_CHECK(!b.donated(), "whole of a donated buffer");
  if (b.pieces->size() == 1) return (*b.pieces)[0];
  // A rank running a stage with other ranks holds pieces of that stage only; its ranks gather them
  // (a collective among them: they all call this alike).
  const Compiled& c = *compiled_;
  const auto s = static_cast<size_t>(c.spanning_stage < 0 ? stage : c.spanning_stage);
  for (size_t f = 0; f < plan_.fragments.size(); ++f)
    if (plan_.fragments[f].mesh == s) return c.programs[f]->sharded()->fetch(b);
  TESSERA_CHECK(false, "a value of {} pieces on stage {}, which runs no sharded fragment", b.pieces->size(), s);
}

FragmentPipelineRun FragmentPipeline::run(const CompiledSchedule& compiled, const Schedule& schedule,
                                          const RunInputs& inputs) const {
  const FragmentPlan& plan = plan_;
  const std::vector<ShardedBuffer>& parameters = inputs.parameters;
  const Compiled& c = *compiled_;
  Ranks& ranks = *options_.ranks;
  auto refuse = [&](const std::string& why) {
    ranks.report_failure(why);  // the other ranks would wait for this one
    fail("{}", why);
  };
  if (parameters.size() != plan.parameter_types.size())
    refuse(fmt::format("pipeline run: the step takes {} parameters, got {}", plan.parameter_types.size(),
                       parameters.size()));
  for (size_t i = 0; i < parameters.size(); ++i)
    if (parameters[i].pieces && parameters[i].type != plan.parameter_types[i])
      refuse(fmt::format("pipeline run: parameter {} is {}, the step's parameter %arg{} is {}", i,
                         ir::to_string(parameters[i].type), i, ir::to_string(plan.parameter_types[i])));
  TESSERA_CHECK(compiled.stages.size() == static_cast<size_t>(stages_) && schedule.actions.size() == compiled.stages.size(),
                "a compiled schedule of {} stages run on a pipeline of {}", compiled.stages.size(), stages_);

  const size_t stages = compiled.stages.size();
  FragmentPipelineRun out;
  out.peak_saved_bytes.assign(stages, 0);
  out.peak_store_bytes.assign(stages, 0);
  out.fragment_runs.assign(plan.fragments.size(), 0);
  out.fragment_times.resize(plan.fragments.size());
  for (const std::vector<Action>& actions : schedule.actions) {
    out.times.emplace_back(actions.size());
    out.cpu_ms.emplace_back(actions.size());
    out.action_bytes.emplace_back(actions.size());
  }
  const auto start = std::chrono::steady_clock::now();
  auto now_ms = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(); };
  std::vector<ShardedBuffer> results(plan.results.size());  // no pieces: not computed here
  std::multimap<size_t, size_t> result_of;  // value -> result index
  for (size_t r = 0; r < plan.results.size(); ++r) {
    const Binding& b = plan.results[r];
    if (b.kind == Binding::Kind::kParameter) results[r] = parameters[b.index];
    else if (b.kind == Binding::Kind::kConstant) results[r] = whole_buffer(b.constant);
    else result_of.insert({b.index, r});
  }
  std::atomic<bool> aborted{false};  // a stage failed: the others stop waiting
  const uint64_t run_number = ranks.next_run();
  // Where a value of stage st laid out as `sharding` has its pieces.
  auto placement = [&](size_t st, const ir::Sharding& sharding) {
    Placement p;
    p.mesh = stage_mesh(static_cast<int64_t>(st));
    if (p.mesh) p.sharding = sharding;
    p.ranks = stage_ranks(static_cast<int64_t>(st), stages_, ranks.size());
    return p;
  };
  std::atomic<int64_t> transferred{0};  // out.transferred_bytes, from every stage's thread

  auto where = [&](size_t st, int64_t step) { return instruction_place(schedule, st, step); };
  auto label = [&](size_t f) { return plan.fragments[f].describe(); };

  auto run_stage = [&](size_t st) {
    const std::vector<Instruction>& list = compiled.stages[st];
    // Readers left per value on this stage, and which values are activations kept for a backward.
    StoreReaders kept = store_readers(plan, roles_, list);
    std::unordered_map<size_t, int64_t>& readers = kept.readers;
    const std::set<size_t>& saved = kept.saved;
    std::unordered_map<size_t, ShardedBuffer> store;
    StoreBytes count;
    interp::Options exec_options;  // the fragments' ops on this stage's track when tracing
    exec_options.trace = inputs.trace;
    exec_options.trace_device = static_cast<int64_t>(st);
    exec_options.profile = options_.profile;
    auto keep = [&](size_t id, ShardedBuffer v) {
      count.keep(v.local_bytes(), saved.count(id) > 0);
      out.peak_store_bytes[st] = count.peak;
      out.peak_saved_bytes[st] = count.peak_saved;
      store.emplace(id, std::move(v));
    };
    auto read_done = [&](size_t id) {
      if (--readers[id] > 0) return;
      auto it = store.find(id);
      TESSERA_CHECK(it != store.end(), "stage {} dropped {} before its last reader", st, plan.values[id].name);
      count.drop(it->second.local_bytes(), saved.count(id) > 0);
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
      if (aborted) return;
      enter(in.step);
      switch (in.kind) {
        case Instruction::Kind::kWait: {
          // Each piece this rank holds of the value here, part by part from each rank of the source stage.
          const PlanValue& pv = plan.values[in.value];
          const StageRanks source = stage_ranks(static_cast<int64_t>(in.mesh), stages_, ranks.size());
          const Placement here = placement(st, c.arrival_layouts.at({in.value, st}));
          ShardedBuffer v;
          v.type = pv.type;
          v.sharding = here.sharding;
          v.pieces = std::make_shared<std::vector<Literal>>(static_cast<size_t>(here.devices()));
          for (int64_t d = 0; d < here.devices(); ++d) {
            if (here.rank_of(d) != ranks.rank()) continue;  // another rank's piece
            Literal& piece = (*v.pieces)[static_cast<size_t>(d)];
            piece = Literal(ir::Type(v.type.element, here.box(v.type, d).shape));
            const WireKey key{static_cast<int64_t>(in.value), static_cast<int64_t>(in.mesh), static_cast<int64_t>(st), d};
            for (int from = source.first; from < source.first + source.count; ++from) {
              std::vector<std::byte> message;
              ReceiveStatus got = ReceiveStatus::kReceived;
              try {
                got = ranks.receive(from, run_number, key, options_.transfer_timeout, aborted, message);
                if (got == ReceiveStatus::kReceived) unpack_parts(message, piece);
              } catch (const support::UserError& e) {
                fail("{}: waits for {} from stage {} (on rank {}): {}", where(st, in.step), pv.name, in.mesh, from,
                     e.what());
              }
              if (got != ReceiveStatus::kReceived && aborted) return;
              if (got == ReceiveStatus::kTimedOut)
                fail("{}: waits for {} from stage {} ({}): nothing arrived within {} ms", where(st, in.step), pv.name,
                     in.mesh, pv.parameter ? std::string("a parameter") : label(pv.producer),
                     options_.transfer_timeout.count());
            }
          }
          if (in.step >= 0) out.action_bytes[st][static_cast<size_t>(in.step)] += v.local_bytes();
          keep(in.value, std::move(v));
          break;
        }
        case Instruction::Kind::kPost: {
          // The parts this rank holds of each destination piece, from this stage's pieces (which it
          // may read again), one message to each destination piece's rank.
          const PlanValue& pv = plan.values[in.value];
          const ShardedBuffer& v = pv.parameter ? parameters[*pv.parameter] : store.at(in.value);
          Placement from = placement(st, v.sharding);
          if (v.pieces->size() == 1) from.mesh = nullptr;  // a whole array
          const Placement to = placement(in.mesh, c.arrival_layouts.at({in.value, in.mesh}));
          int64_t moved = 0;
          for (const PieceMessage& m : transfer_messages(v.type, from, to)) {
            if (m.from != ranks.rank()) continue;
            for (const PiecePart& part : m.parts) moved += part.elements() * ir::info(v.type.element).bytes;
            const WireKey key{static_cast<int64_t>(in.value), static_cast<int64_t>(st), static_cast<int64_t>(in.mesh),
                              m.piece};
            ranks.send(m.to, run_number, key, pack_parts(m, *v.pieces));
          }
          transferred += moved;
          if (in.step >= 0) out.action_bytes[st][static_cast<size_t>(in.step)] += moved;
          if (!pv.parameter) read_done(in.value);
          break;
        }
        case Instruction::Kind::kRun: {
          const Fragment& f = plan.fragments[in.fragment];
          // A value of this stage is laid out as the fragment takes it (fragments.h rule 7); a whole
          // input (a microbatch's tokens) is split by execute.
          std::vector<ShardedBuffer> args;
          for (const Binding& b : f.inputs)
            args.push_back(b.kind == Binding::Kind::kParameter ? parameters[b.index] : store.at(b.index));
          std::vector<ShardedBuffer> outputs;
          const double begun = now_ms();
          try {
            outputs = c.programs[in.fragment]->execute(args, exec_options);
          } catch (const support::UserError& e) {
            fail("{}: {}: {}", where(st, in.step), label(in.fragment), e.what());
          }
          out.fragment_runs[in.fragment]++;  // each fragment runs on one stage only
          out.fragment_times[in.fragment] = {begun, now_ms()};
          for (const Binding& b : f.inputs)
            if (b.kind == Binding::Kind::kValue) read_done(b.index);
          for (size_t k = 0; k < f.outputs.size(); ++k) {
            size_t id = f.outputs[k];
            auto [lo, hi] = result_of.equal_range(id);  // a result is written by its producer's stage only
            for (auto r = lo; r != hi; ++r) results[r->second] = outputs[k];
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

  std::vector<size_t> here;
  for (size_t st = 0; st < stages; ++st)
    if (runs_here(static_cast<int64_t>(st))) here.push_back(st);
  try {
    support::run_concurrently(here.size(), [&](size_t i) {
      try {
        run_stage(here[i]);
      } catch (...) {
        aborted = true;  // the other stages stop waiting
        throw;
      }
    });
  } catch (const std::exception& e) {
    ranks.report_failure(e.what());  // the other ranks' waits on this one end now
    throw;
  }
  out.transferred_bytes = transferred;
  if (inputs.trace) trace_actions(*inputs.trace, schedule, out, inputs.trace->ns(start));
  for (size_t r = 0; r < results.size(); ++r) {
    ShardedBuffer& b = results[r];
    TESSERA_CHECK(ranks.size() > 1 || b.pieces, "result {} of the step was never computed", r);
    const Binding& rb = plan.results[r];
    const size_t stage = rb.kind == Binding::Kind::kValue ? plan.fragments[plan.values[rb.index].producer].mesh : 0;
    if (inputs.whole_results) out.results.push_back(b.pieces ? whole(b, static_cast<int64_t>(stage)) : Literal());
    out.values.push_back(std::move(b));
  }
  return out;
}

}  // namespace tessera::mpmd
