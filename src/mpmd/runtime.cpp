// The pipeline runtime (runtime.h). One StageWorker per stage runs on its own thread; the workers
// share only the transport (transfer.h), the read-only programs and inputs, and each other's progress counters
// (read to explain a timeout). A worker evaluates its programs through its stage's StageState
// (sharded_stage.h): the interpreter for a one-device stage, the stage's Session for a group. A
// stage that fails in a computation aborts the transport so that every other stage stops at its
// next receive instead of waiting out its own timeout. A stage whose receive times out does not:
// the other stuck stages then time out too, each naming its own wait, and the run reports the
// cause among them (see run_pipeline), not whichever clock fired first.
//
// Over ranks (RunOptions::ranks) the same workers run, only this rank's, on a RoutedTransport:
// a failure of this rank's run is reported to the others (their waits on it end at once, naming
// it), and a successful run ends with one exchange among all ranks that hands every rank the loss
// and every stage's measurements and checks that every value sent between ranks was received.
#include "mpmd/runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include "comm/mpi_wire.h"
#include "mpmd/sharded_stage.h"
#include "mpmd/transfer.h"
#include "mpmd/validate.h"
#include "support/error.h"
#include "support/threads.h"

namespace tessera::mpmd {

namespace {

using Clock = std::chrono::steady_clock;
using Key = std::tuple<Payload, int64_t, int64_t>;  // (payload, microbatch, producing virtual stage)
using Slot = std::pair<int64_t, int64_t>;           // (microbatch, virtual stage)

// acc += x, element by element (typed loops for f32 and f64, the training dtypes).
void add_into(ir::Literal& acc, const ir::Literal& x) {
  TESSERA_CHECK(acc.type() == x.type(), "adding {} to {}", ir::to_string(x.type()), ir::to_string(acc.type()));
  auto add = [&]<ir::ElementType E>() {
    auto a = acc.data<ir::Elem<E>>();
    auto b = x.data<ir::Elem<E>>();
    for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  };
  if (acc.element() == ir::ElementType::f32) add.template operator()<ir::ElementType::f32>();
  else if (acc.element() == ir::ElementType::f64) add.template operator()<ir::ElementType::f64>();
  else
    for (int64_t i = 0; i < acc.num_elements(); ++i) acc.set_double(i, acc.get_double(i) + x.get_double(i));
}

// x *= factor in x's precision, as the accumulated step's `sum * (1/k)` rounds it.
void scale(ir::Literal& x, double factor) {
  if (x.element() == ir::ElementType::f32) {
    for (float& v : x.data<ir::Elem<ir::ElementType::f32>>()) v *= static_cast<float>(factor);
    return;
  }
  for (int64_t i = 0; i < x.num_elements(); ++i) x.set_double(i, x.get_double(i) * factor);
}

// CPU time of the calling thread: with more stage threads than cores, an action's wall time
// includes the time its thread waited for a core; this does not.
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

int64_t byte_size(const ir::Literal& x) { return static_cast<int64_t>(x.bytes().size()); }

// Shared by all workers of one run.
struct Run {
  const StagedModel& model;
  const Schedule& schedule;
  const RunOptions& options;
  std::vector<StageState*> stage_states;  // per stage: its parameters and devices (null: another rank's)
  std::vector<ir::Literal> tokens, targets;  // per microbatch
  Transport& transport;
  Clock::time_point start;
  // Per stage: the step it is at (its list's size once done). Read only to explain a timeout.
  std::vector<std::atomic<int64_t>> step;
  std::vector<std::atomic<bool>> stopped;  // failed or aborted, so its step will not advance

  double now_ms() const { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }
  bool local(int64_t stage) const { return stage_states[static_cast<size_t>(stage)] != nullptr; }
  // " (on rank r)" for a stage of another rank, else nothing.
  std::string on_rank(int64_t stage) const {
    if (local(stage)) return "";
    return fmt::format(" (on rank {})", owner_rank(stage, schedule.stages, options.ranks->size()));
  }
};

class StageWorker {
 public:
  StageWorker(Run& run, int64_t stage) : run_(run), stage_(stage) {}

  void execute() {
    const auto& list = run_.schedule.actions[static_cast<size_t>(stage_)];
    out_.times.assign(list.size(), Interval{});
    out_.cpu_ms.assign(list.size(), 0.0);
    for (size_t i = 0; i < list.size(); ++i) {
      run_.step[static_cast<size_t>(stage_)] = static_cast<int64_t>(i);
      step_ = static_cast<int64_t>(i);
      began_ = run_.now_ms();
      const double cpu = thread_cpu_ms();
      perform(list[i]);
      out_.times[i] = {began_, run_.now_ms()};
      out_.cpu_ms[i] = thread_cpu_ms() - cpu;
    }
    run_.step[static_cast<size_t>(stage_)] = static_cast<int64_t>(list.size());
    finish();
  }

  StageMeasurements& measurements() { return out_; }
  std::map<size_t, ir::Literal>& gradients() { return gradients_; }
  std::optional<ir::Literal>& loss() { return loss_; }
  double action_started() const { return began_; }  // of the action running or last run
  bool timed_out() const { return timed_out_; }
  bool missing_send() const { return missing_send_; }  // the timed-out RECV's SEND is in no list

 private:
  const Action& current() const { return run_.schedule.actions[static_cast<size_t>(stage_)][static_cast<size_t>(step_)]; }
  std::string here() const { return describe_at(stage_, step_, current()); }

  void perform(const Action& a) {
    switch (a.kind) {
      case ActionKind::kForward: return forward(a);
      case ActionKind::kBackward: return backward(a, /*input=*/true, /*weight=*/true);
      case ActionKind::kBackwardInput: return backward(a, true, false);
      case ActionKind::kBackwardWeight: return backward(a, false, true);
      case ActionKind::kSend: return send(a);
      case ActionKind::kRecv: return receive(a);
    }
  }

  std::vector<ir::Literal> evaluate(const ir::Function* fn, const Action& a, std::vector<ir::Literal> tail) {
    try {
      return run_.stage_states[static_cast<size_t>(stage_)]->evaluate(*fn, a.virtual_stage, std::move(tail));
    } catch (const support::UserError& e) {
      support::fail("{}: {}", here(), e.what());
    }
  }

  ir::Literal take_local(const Key& key, std::string_view what) {
    auto it = local_.find(key);
    if (it == local_.end()) support::fail("{}: {} is not on this stage (no action before it produced or received it)", here(), what);
    ir::Literal x = std::move(it->second);
    local_.erase(it);
    return x;
  }

  void forward(const Action& a) {
    const StageProgram& sp = run_.model.stage(a.virtual_stage);
    const Slot slot{a.microbatch, a.virtual_stage};
    if (saved_.count(slot)) support::fail("{}: this forward already ran", here());
    ir::Literal input = sp.embeds ? run_.tokens[static_cast<size_t>(a.microbatch)]
                                  : take_local({Payload::kActivation, a.microbatch, a.virtual_stage - 1},
                                               fmt::format("the activation of F(mb {}, vs {})", a.microbatch,
                                                           a.virtual_stage - 1));
    saved_bytes_ += byte_size(input);
    saved_.emplace(slot, input);
    note_peak();
    std::vector<ir::Literal> tail = {std::move(input)};
    if (sp.has_loss) tail.push_back(run_.targets[static_cast<size_t>(a.microbatch)]);
    std::vector<ir::Literal> r = evaluate(sp.forward, a, std::move(tail));
    if (!sp.has_loss) {
      local_[{Payload::kActivation, a.microbatch, a.virtual_stage}] = std::move(r[0]);
      return;
    }
    if (loss_) add_into(*loss_, r[0]);
    else loss_ = std::move(r[0]);
  }

  // B (input and weight), BI (input only) or W (weight only) of one microbatch on one piece.
  void backward(const Action& a, bool input, bool weight) {
    const StageProgram& sp = run_.model.stage(a.virtual_stage);
    const Slot slot{a.microbatch, a.virtual_stage};
    auto saved = saved_.find(slot);
    if (saved == saved_.end()) support::fail("{}: no saved input (its forward has not run here)", here());
    // The output cotangent: received (or computed here) for B and BI; kept from BI for W.
    std::optional<ir::Literal> cotangent;
    if (!sp.has_loss) {
      if (input) {
        cotangent = take_local({Payload::kGradient, a.microbatch, a.virtual_stage + 1},
                               fmt::format("the gradient of B(mb {}, vs {})", a.microbatch, a.virtual_stage + 1));
      } else {
        auto kept = kept_cotangents_.find(slot);
        if (kept == kept_cotangents_.end()) support::fail("{}: its BI has not run", here());
        cotangent = std::move(kept->second);
        saved_bytes_ -= byte_size(*cotangent);
        kept_cotangents_.erase(kept);
      }
    }
    std::vector<ir::Literal> tail = {saved->second};
    if (sp.has_loss) tail.push_back(run_.targets[static_cast<size_t>(a.microbatch)]);
    if (cotangent) tail.push_back(*cotangent);

    const size_t n = sp.parameters.size();
    if (input && weight) {
      std::vector<ir::Literal> r = evaluate(sp.backward, a, std::move(tail));
      accumulate(sp, r);
      if (!sp.embeds) local_[{Payload::kGradient, a.microbatch, a.virtual_stage}] = std::move(r[n]);
    } else if (input) {
      if (sp.backward_input != nullptr)
        local_[{Payload::kGradient, a.microbatch, a.virtual_stage}] =
            std::move(evaluate(sp.backward_input, a, std::move(tail))[0]);
      // W still needs the cotangent; it and the input stay saved until then.
      if (cotangent) {
        saved_bytes_ += byte_size(*cotangent);
        kept_cotangents_.emplace(slot, std::move(*cotangent));
        note_peak();
      }
      return;
    } else {
      accumulate(sp, evaluate(sp.backward_weight, a, std::move(tail)));
    }
    saved_bytes_ -= byte_size(saved->second);
    saved_.erase(saved);
  }

  void accumulate(const StageProgram& sp, const std::vector<ir::Literal>& r) {
    for (size_t i = 0; i < sp.parameters.size(); ++i) {
      auto [it, fresh] = gradients_.try_emplace(sp.parameters[i], r[i]);
      if (!fresh) add_into(it->second, r[i]);
    }
  }

  void note_peak() {
    out_.peak_saved = std::max(out_.peak_saved, static_cast<int64_t>(saved_.size()));
    out_.peak_saved_bytes = std::max(out_.peak_saved_bytes, saved_bytes_);
  }

  void send(const Action& a) {
    ir::Literal value = take_local({a.payload, a.microbatch, a.virtual_stage}, "the value to send");
    run_.transport.send({stage_, a.peer, a.payload, a.microbatch, a.virtual_stage}, std::move(value));
  }

  void receive(const Action& a) {
    ir::Literal value;
    ReceiveStatus status;
    try {
      status = run_.transport.receive({a.peer, stage_, a.payload, a.microbatch, a.virtual_stage},
                                      run_.options.transfer_timeout, value);
    } catch (const support::UserError& e) {  // the sender's rank failed or left: it is named
      support::fail("{}{}: {}", here(), run_.on_rank(a.peer), e.what());
    }
    switch (status) {
      case ReceiveStatus::kReceived: local_[{a.payload, a.microbatch, a.virtual_stage}] = std::move(value); return;
      case ReceiveStatus::kAborted: throw Aborted{};
      case ReceiveStatus::kTimedOut:
        missing_send_ = sender_state(a).find("no matching SEND") != std::string::npos;
        timed_out_ = true;
        support::fail("{}{}: no value arrived within {} ms; {}", here(), run_.on_rank(a.peer),
                      run_.options.transfer_timeout.count(), sender_state(a));
    }
  }

  // Where the sender of `a`'s value stands, to tell a missing SEND from a slow or stuck one.
  std::string sender_state(const Action& a) const {
    const auto& list = run_.schedule.actions.at(static_cast<size_t>(a.peer));
    int64_t send_step = -1;
    for (size_t j = 0; j < list.size(); ++j) {
      const Action& s = list[j];
      if (s.kind == ActionKind::kSend && s.payload == a.payload && s.microbatch == a.microbatch &&
          s.virtual_stage == a.virtual_stage && s.peer == stage_)
        send_step = static_cast<int64_t>(j);
    }
    if (send_step < 0) return fmt::format("stage {} has no matching SEND in its list", a.peer);
    if (!run_.local(a.peer))  // where another rank's stage stands is not known here
      return fmt::format("stage {} runs on rank {} and has not sent it (its SEND is at step {})", a.peer,
                         owner_rank(a.peer, run_.schedule.stages, run_.options.ranks->size()), send_step);
    const int64_t at = run_.step[static_cast<size_t>(a.peer)];
    if (at >= static_cast<int64_t>(list.size())) return fmt::format("stage {} has finished", a.peer);
    return fmt::format("stage {} is {} step {} {}, before its SEND at step {}", a.peer,
                       run_.stopped[static_cast<size_t>(a.peer)] ? "stopped at" : "at", at,
                       describe(list[static_cast<size_t>(at)]), send_step);
  }

  // A stage must end holding nothing: a value left over means the schedule forgot an action.
  void finish() {
    if (!saved_.empty()) {
      auto [mb, vs] = saved_.begin()->first;
      support::fail("stage {} ends holding the saved input of F(mb {}, vs {}): its backward never ran", stage_, mb, vs);
    }
    if (!local_.empty()) {
      auto [payload, mb, vs] = local_.begin()->first;
      support::fail("stage {} ends holding the {} of (mb {}, vs {}), which no action used", stage_,
                    payload_name(payload), mb, vs);
    }
  }

 public:
  struct Aborted {};  // another stage failed first

 private:
  Run& run_;
  int64_t stage_;
  int64_t step_ = 0;
  double began_ = 0;
  bool timed_out_ = false, missing_send_ = false;
  std::map<Key, ir::Literal> local_;             // produced or received, waiting for their user
  std::map<Slot, ir::Literal> saved_;            // inputs of forwards whose backward is pending
  std::map<Slot, ir::Literal> kept_cotangents_;  // from BI, for W
  int64_t saved_bytes_ = 0;
  std::map<size_t, ir::Literal> gradients_;  // parameter index -> sum over microbatches
  std::optional<ir::Literal> loss_;
  StageMeasurements out_;
};

void check_schedule(const StagedModel& model, const Schedule& schedule) {
  if (schedule.virtual_stages() != model.virtual_stages())
    support::fail("mpmd::run_pipeline: schedule '{}' has {} stages x {} virtual = {} pieces, the model is cut into {}",
                  schedule.name, schedule.stages, schedule.virtual_per_stage, schedule.virtual_stages(),
                  model.virtual_stages());
  if (schedule.microbatches != model.microbatches())
    support::fail("mpmd::run_pipeline: schedule '{}' has {} microbatches, the stage programs were built for {}",
                  schedule.name, schedule.microbatches, model.microbatches());
  if (static_cast<int64_t>(schedule.actions.size()) != schedule.stages)
    support::fail("mpmd::run_pipeline: schedule '{}' has {} action lists for {} stages", schedule.name,
                  schedule.actions.size(), schedule.stages);
}

void check_batch(const StagedModel& model, const ir::Literal& tokens, const ir::Literal& targets) {
  const ir::Type batch = ir::i32({model.config().batch, model.config().seq});
  for (const auto& [name, x] : {std::pair{"tokens", &tokens}, std::pair{"targets", &targets}})
    if (x->type() != batch)
      support::fail("mpmd::run_pipeline: {} are {}, the model needs {}", name, ir::to_string(x->type()),
                    ir::to_string(batch));
}

void check_inputs(const StagedModel& model, const Schedule& schedule, const std::vector<ir::Literal>& parameters,
                  const ir::Literal& tokens, const ir::Literal& targets) {
  check_schedule(model, schedule);
  const auto& specs = model.parameters();
  if (parameters.size() != specs.size())
    support::fail("mpmd::run_pipeline: {} parameters given, the model has {}", parameters.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i)
    if (parameters[i].type() != ir::Type(model.config().dtype, specs[i].shape))
      support::fail("mpmd::run_pipeline: parameter '{}' is {}, the model needs {}", specs[i].name,
                    ir::to_string(parameters[i].type()), ir::to_string(ir::Type(model.config().dtype, specs[i].shape)));
  check_batch(model, tokens, targets);
}

// What a rank hands every other rank at the end of a run over ranks: how many values sent to it
// nobody took, the loss when it holds the last stage, its stages' measurements, and how many
// values it sent to and received from each rank.
void encode_measurements(std::vector<std::byte>& out, const StageMeasurements& m) {
  namespace wire = comm::wire;
  wire::put<int64_t>(out, m.peak_saved);
  wire::put<int64_t>(out, m.peak_saved_bytes);
  wire::put<uint64_t>(out, m.times.size());
  for (size_t i = 0; i < m.times.size(); ++i) {
    wire::put<double>(out, m.times[i].start);
    wire::put<double>(out, m.times[i].end);
    wire::put<double>(out, m.cpu_ms[i]);
  }
}

StageMeasurements decode_measurements(comm::wire::Reader& in) {
  StageMeasurements m;
  m.peak_saved = in.get<int64_t>();
  m.peak_saved_bytes = in.get<int64_t>();
  const auto n = in.get<uint64_t>();
  for (uint64_t i = 0; i < n; ++i) {
    Interval t;
    t.start = in.get<double>();
    t.end = in.get<double>();
    m.times.push_back(t);
    m.cpu_ms.push_back(in.get<double>());
  }
  return m;
}

// The end of a run over ranks, on every rank alike: fills in the loss (from the rank that holds
// the last stage) and the other ranks' stages' measurements, and fails on every rank when some
// value was never received, here or between ranks.
void exchange_results(Ranks& ranks, const Schedule& schedule, const std::vector<int64_t>& mine, size_t undelivered,
                      const RoutedTransport& transport, PipelineResult& result) {
  namespace wire = comm::wire;
  std::vector<std::byte> payload;
  wire::put<uint64_t>(payload, undelivered);
  const bool has_loss = !result.loss.bytes().empty();
  wire::put<uint8_t>(payload, has_loss ? 1 : 0);
  if (has_loss) {
    std::vector<std::byte> loss;
    encode_literal(loss, result.loss);
    wire::put_bytes(payload, loss);
  }
  for (int64_t s : mine) encode_measurements(payload, result.stages[static_cast<size_t>(s)]);
  for (int64_t n : transport.sent()) wire::put<int64_t>(payload, n);
  for (int64_t n : transport.received()) wire::put<int64_t>(payload, n);
  const std::vector<std::vector<std::byte>> all =
      ranks.exchange(fmt::format("the end of pipeline run '{}'", schedule.name), payload);

  const auto R = static_cast<size_t>(ranks.size());
  std::vector<std::vector<int64_t>> sent(R, std::vector<int64_t>(R)), received = sent;
  uint64_t left_over = 0;
  for (size_t r = 0; r < R; ++r) {
    wire::Reader in(all[r]);
    left_over += in.get<uint64_t>();
    if (in.get<uint8_t>() != 0) {
      ir::Literal loss = decode_literal(in.get_bytes());
      if (r != static_cast<size_t>(ranks.rank())) result.loss = std::move(loss);
    }
    for (int64_t s = 0; s < schedule.stages; ++s)
      if (owner_rank(s, schedule.stages, ranks.size()) == static_cast<int>(r)) {
        StageMeasurements m = decode_measurements(in);
        if (r != static_cast<size_t>(ranks.rank())) result.stages[static_cast<size_t>(s)] = std::move(m);
      }
    for (int64_t& n : sent[r]) n = in.get<int64_t>();
    for (int64_t& n : received[r]) n = in.get<int64_t>();
  }
  for (size_t a = 0; a < R; ++a)
    for (size_t b = 0; b < R; ++b) left_over += static_cast<uint64_t>(sent[a][b] - received[b][a]);
  if (left_over > 0)
    support::fail("mpmd::run_pipeline: schedule '{}' sent {} value(s) that no RECV took", schedule.name, left_over);
}

// run_pipeline on this process's stages (all of them without ranks).
PipelineResult run_stages(const StagedModel& model, const Schedule& schedule, std::vector<StageState>& stages,
                          const ir::Literal& tokens, const ir::Literal& targets, const RunOptions& options) {
  check_schedule(model, schedule);
  check_batch(model, tokens, targets);
  const std::vector<int64_t> mine = local_stages(schedule.stages, options.ranks);
  const std::string where = options.ranks ? fmt::format(" on rank {}", options.ranks->rank()) : "";
  if (stages.size() != mine.size())
    support::fail("mpmd::run_pipeline: {} stage states{} for schedule '{}', which has {} stages there", stages.size(),
                  where, schedule.name, mine.size());
  for (size_t i = 0; i < stages.size(); ++i)
    if (stages[i].stage() != mine[i] ||
        static_cast<int64_t>(stages[i].virtual_stages().size()) != schedule.virtual_per_stage)
      support::fail("mpmd::run_pipeline: stage state {}{} holds {} virtual stages as stage {}; schedule '{}' needs {} "
                    "on stage {}",
                    i, where, stages[i].virtual_stages().size(), stages[i].stage(), schedule.name,
                    schedule.virtual_per_stage, mine[i]);
  // Over MPI ranks always: a message to a tag already pending replaces it (MpiProcess's mailbox
  // keeps one per key), so a schedule with a duplicated SEND would mislead instead of failing.
  if (options.validate || options.ranks) validate(schedule);
  const auto P = static_cast<size_t>(schedule.stages);
  const int64_t M = schedule.microbatches;

  std::unique_ptr<Transport> transport;
  RoutedTransport* routed = nullptr;
  if (options.ranks) {
    auto r = std::make_unique<RoutedTransport>(*options.ranks, schedule.stages, options.ranks->next_run());
    routed = r.get();
    transport = std::move(r);
  } else {
    transport = std::make_unique<Mailbox>();
  }
  Run run{model, schedule, options, std::vector<StageState*>(P, nullptr), {}, {}, *transport, {},
          std::vector<std::atomic<int64_t>>(P), std::vector<std::atomic<bool>>(P)};
  for (size_t i = 0; i < stages.size(); ++i) run.stage_states[static_cast<size_t>(mine[i])] = &stages[i];
  for (int64_t i = 0; i < M; ++i) {
    run.tokens.push_back(microbatch_rows(tokens, i, M));
    run.targets.push_back(microbatch_rows(targets, i, M));
  }

  std::vector<StageWorker> workers;
  workers.reserve(P);
  for (size_t s = 0; s < P; ++s) workers.emplace_back(run, static_cast<int64_t>(s));
  // Per stage: the failure (aborted stages record none) and how likely it is the cause: a failed
  // computation first, then a receive whose SEND is in no list, then the receive that started
  // waiting earliest (it heads the chain of waits); ties by the failing action's start.
  std::vector<std::exception_ptr> errors(P);
  std::vector<std::pair<int, double>> rank(P);
  run.start = Clock::now();
  // Each stage on a persistent worker of its own (support/threads.h).
  support::run_concurrently(mine.size(), [&](size_t j) {
    auto s = static_cast<size_t>(mine[j]);
    try {
      workers[s].execute();
    } catch (const StageWorker::Aborted&) {
      run.stopped[s] = true;
    } catch (...) {
      run.stopped[s] = true;
      errors[s] = std::current_exception();
      const StageWorker& w = workers[s];
      rank[s] = {w.timed_out() ? (w.missing_send() ? 1 : 2) : 0, w.action_started()};
      if (!w.timed_out()) run.transport.abort();
    }
  });

  std::optional<size_t> first;
  for (size_t s = 0; s < P; ++s)
    if (errors[s] && (!first || rank[s] < rank[*first])) first = s;
  if (first) std::rethrow_exception(errors[*first]);
  const size_t undelivered = run.transport.undelivered();
  if (!options.ranks && undelivered > 0)
    support::fail("mpmd::run_pipeline: schedule '{}' sent {} value(s) that no RECV took", schedule.name, undelivered);

  PipelineResult result;
  result.gradients.resize(model.parameters().size());
  result.stages.resize(P);
  std::vector<size_t> held;  // the parameters whose gradients are here
  for (int64_t stage : mine) {
    const auto s = static_cast<size_t>(stage);
    for (auto& [i, g] : workers[s].gradients()) {
      result.gradients[i] = std::move(g);
      held.push_back(i);
    }
    if (workers[s].loss()) result.loss = std::move(*workers[s].loss());
    result.stages[s] = std::move(workers[s].measurements());
  }
  // The accumulated step's mean: the sums over microbatches times 1/M.
  if (!result.loss.bytes().empty()) scale(result.loss, 1.0 / static_cast<double>(M));
  for (size_t i : held) scale(result.gradients[i], 1.0 / static_cast<double>(M));
  if (options.ranks) exchange_results(*options.ranks, schedule, mine, undelivered, *routed, result);
  return result;
}

}  // namespace

PipelineResult run_pipeline(const StagedModel& model, const Schedule& schedule,
                            const std::vector<ir::Literal>& parameters, const ir::Literal& tokens,
                            const ir::Literal& targets, const RunOptions& options) {
  try {
    check_inputs(model, schedule, parameters, tokens, targets);
  } catch (const support::UserError& e) {
    if (options.ranks) options.ranks->report_failure(e.what());
    throw;
  }
  std::vector<StageState> stages = stage_states(model, schedule.stages, parameters, std::nullopt, options.ranks);
  return run_pipeline(model, schedule, stages, tokens, targets, options);
}

PipelineResult run_pipeline(const StagedModel& model, const Schedule& schedule, std::vector<StageState>& stages,
                            const ir::Literal& tokens, const ir::Literal& targets, const RunOptions& options) {
  if (!options.ranks) return run_stages(model, schedule, stages, tokens, targets, options);
  // Over ranks, the others may be waiting for this rank's values: tell them it failed, so that
  // they stop now, naming this rank, rather than at their timeouts.
  try {
    return run_stages(model, schedule, stages, tokens, targets, options);
  } catch (const std::exception& e) {
    options.ranks->report_failure(e.what());  // their messages name this rank
    throw;
  }
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
