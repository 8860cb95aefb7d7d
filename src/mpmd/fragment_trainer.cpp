// FragmentTrainer (fragment_trainer.h): the pipeline, its compiled schedule and the stages'
// AdamW programs made once; a step runs the schedule on the resident parameters and then every
// stage's update.
#include "mpmd/fragment_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <utility>

#include "comm/mpi_wire.h"
#include "runtime/layout.h"
#include "ir/builder.h"
#include "support/error.h"
#include "support/threads.h"

namespace tessera::mpmd {

namespace {

using Bytes = std::vector<std::byte>;

// What `put` writes for each stage this rank runs, read by `get` on every rank, in rank order (a
// stage on several ranks once per rank; in one process, every stage once).
void share_stages(const FragmentPipeline& pipeline, const std::string& what,
                  const std::function<void(size_t, Bytes&)>& put,
                  const std::function<void(size_t, comm::wire::Reader&)>& get) {
  Bytes mine;
  for (int64_t st = 0; st < pipeline.stages(); ++st)
    if (pipeline.runs_here(st)) {
      comm::wire::put<uint64_t>(mine, static_cast<uint64_t>(st));
      put(static_cast<size_t>(st), mine);
    }
  for (const Bytes& payload : pipeline.ranks().exchange(what, mine)) {
    comm::wire::Reader r(payload);
    while (!r.done()) {
      const auto st = static_cast<size_t>(r.get<uint64_t>());
      get(st, r);
    }
  }
}

}  // namespace

FragmentTrainer::FragmentTrainer(const nn::CausalLM& model, schedule::Schedule schedule,
                                 const std::vector<ir::Literal>& parameters, nn::AdamW adamw,
                                 const std::optional<nn::ShardingPlan>& stage_plan, Ranks* ranks,
                                 FragmentTrainerOptions options)
    : step_(mpmd::model_step(model, schedule.stages * schedule.virtual_per_stage, schedule.microbatches, stage_plan)),
      schedule_(std::move(schedule)),
      adamw_(std::move(adamw)),
      options_(options) {
  const std::vector<nn::ParamSpec>& specs = step_.parameters;
  if (parameters.size() != specs.size())
    support::fail("pipeline trainer: {} parameters given, the model has {}", parameters.size(), specs.size());
  std::vector<std::string> names;
  for (const nn::ParamSpec& p : specs) names.push_back(p.name);
  nn::check_no_decay(adamw_, names);
  FragmentPipelineOptions o;
  for (size_t i = 0; i < specs.size(); ++i) o.wrt.push_back(i);
  o.split_backward = first_split_action(schedule_).has_value();
  o.remat = options_.remat;
  if (stage_plan) o.stage_mesh = stage_plan->mesh.name;
  o.ranks = ranks;
  o.profile = options_.profile;
  pipeline_ = std::make_unique<FragmentPipeline>(*step_.module, step_.step(), step_.virtual_stages, schedule_.stages, o);
  compiled_ = pipeline_->compile(schedule_);

  // Every parameter lives on the stage its piece is assigned to (v mod P), for good.
  const FragmentPlan& plan = pipeline_->plan();
  const ir::ElementType dtype = dtype_ = model.config().dtype;
  stages_.resize(static_cast<size_t>(schedule_.stages));
  where_.resize(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    TESSERA_CHECK(plan.parameter_mesh[i].has_value(), "parameter {} is read by no fragment", specs[i].name);
    if (parameters[i].type() != ir::Type(dtype, specs[i].shape))
      support::fail("pipeline trainer: parameter {} ('{}') is {}, the model needs {}", i, specs[i].name,
                    ir::to_string(parameters[i].type()), ir::to_string(ir::Type(dtype, specs[i].shape)));
    Stage& s = stages_[*plan.parameter_mesh[i]];
    where_[i] = {*plan.parameter_mesh[i], s.parameters.size()};
    s.parameters.push_back(i);
  }
  for (size_t st = 0; st < stages_.size(); ++st) {
    if (!pipeline_->runs_here(static_cast<int64_t>(st))) continue;  // another rank's
    Stage& s = stages_[st];
    s.module = std::make_unique<ir::Module>("adamw");
    if (stage_plan) s.module->add_mesh(stage_plan->mesh);
    ir::Function& update = ir::build_function(*s.module, "adamw", [&](ir::FunctionBuilder& f) {
      std::vector<ir::Tensor> p, m, v, g;
      for (auto* group : {&p, &m, &v, &g})
        for (size_t i : s.parameters)
          group->push_back(f.param(ir::Type(dtype, specs[i].shape), step_.step().arg_sharding(i)));
      ir::Tensor scalars = f.param(ir::Type(dtype, {3}));
      if (options_.clip_norm > 0) {  // clip_grad_norm_'s coefficient, from every stage's gradients
        ir::Tensor coef = f.param(ir::Type(dtype, {}));
        for (ir::Tensor& x : g) x = x * coef;
      }
      std::vector<nn::AdamWState> next;
      for (size_t j = 0; j < s.parameters.size(); ++j)
        next.push_back(
            nn::adamw_update(adamw_, {p[j], m[j], v[j]}, g[j], scalars, nn::decays(adamw_, specs[s.parameters[j]].name)));
      std::vector<ir::Tensor> out;  // p'..., m'..., v'...
      for (auto member : {&nn::AdamWState::p, &nn::AdamWState::m, &nn::AdamWState::v})
        for (const nn::AdamWState& n : next) out.push_back(n.*member);
      return out;
    });
    const size_t k = s.parameters.size();
    // p', m' and v' keep their inputs' layout: left open, a split the mesh does not divide (64
    // columns over 3 devices) came back replicated, and the next step's fragments refused it.
    for (size_t j = 0; j < 3 * k; ++j)
      if (std::optional<ir::Sharding> layout = step_.step().arg_sharding(s.parameters[j % k]))
        update.set_result_sharding(j, *layout);
    std::vector<std::pair<size_t, size_t>> donated;  // p, m, v update in place
    for (size_t j = 0; j < 3 * k; ++j) donated.emplace_back(j, j);
    s.update = std::make_unique<StageProgram>(pipeline_->session(static_cast<int64_t>(st)), *s.module, "adamw",
                                              donated);
    for (size_t j = 0; j < 3 * k; ++j) {  // the parameters, then zero moments
      const ir::Literal& x = parameters[s.parameters[j % k]];
      ir::Literal value = j < k ? x : ir::Literal(x.type());
      s.state.push_back(s.update->stage(j, value));
    }
  }
}

FragmentTrainer::~FragmentTrainer() = default;

// Every rank gets the loss (computed on one) and every stage's measurements from the rank that ran
// it, so that each reports the whole pipeline. The exchange also ends the run on every rank
// together.
void FragmentTrainer::share_measurements() {
  int64_t bytes = last_.transferred_bytes, transferred = 0;  // this rank's, told once
  // A stage on several ranks holds the sum of its ranks' bytes; its times are its last rank's.
  std::vector<int64_t> saved(stages_.size(), 0), store(stages_.size(), 0);
  auto put = [&](size_t st, Bytes& out) {
    const bool loss = !last_.results[0].bytes().empty();
    comm::wire::put<uint8_t>(out, loss ? 1 : 0);
    if (loss) comm::wire::put_bytes(out, encode_literal(last_.results[0]));
    comm::wire::put<int64_t>(out, std::exchange(bytes, 0));
    comm::wire::put<int64_t>(out, last_.peak_saved_bytes[st]);
    comm::wire::put<int64_t>(out, last_.peak_store_bytes[st]);
    for (size_t a = 0; a < last_.times[st].size(); ++a)
      for (double x : {last_.times[st][a].start, last_.times[st][a].end, last_.cpu_ms[st][a]})
        comm::wire::put<double>(out, x);
  };
  share_stages(*pipeline_, "pipeline step results", put, [&](size_t st, comm::wire::Reader& r) {
    if (r.get<uint8_t>() == 1) last_.results[0] = decode_literal(r.get_bytes());
    transferred += r.get<int64_t>();
    saved.at(st) += r.get<int64_t>();
    store.at(st) += r.get<int64_t>();
    for (size_t a = 0; a < last_.times.at(st).size(); ++a)
      for (double* x : {&last_.times[st][a].start, &last_.times[st][a].end, &last_.cpu_ms[st][a]}) *x = r.get<double>();
  });
  last_.transferred_bytes = transferred;
  last_.peak_saved_bytes = std::move(saved);
  last_.peak_store_bytes = std::move(store);
}

const FragmentPipelineRun& FragmentTrainer::step(const ir::Literal& tokens, const ir::Literal& targets,
                                                 std::optional<double> lr) {
  {
    RunInputs in;  // shares the parameters' pieces until the run ends: then the updates take them
    for (const auto& [st, slot] : where_) {
      const Stage& s = stages_[st];
      in.parameters.push_back(s.state.empty() ? runtime::ShardedBuffer{} : s.state[slot]);  // none: another rank's
    }
    for (ir::Literal& x : step_.batch_inputs(tokens, targets))  // split where a stage reads them
      in.parameters.push_back(whole_buffer(std::move(x)));
    in.whole_results = false;  // gradients stay on their stages
    in.trace = trace_;
    last_ = pipeline_->run(compiled_, schedule_, in);
  }
  last_.results = {last_.values[0].pieces ? pipeline_->whole(last_.values[0]) : ir::Literal()};  // the loss
  share_measurements();

  // AdamW on every stage at once, each on its own parameters, moments and gradients.
  ++steps_;
  const ir::Literal scalars = nn::adamw_scalars_literal(adamw_, steps_, lr.value_or(adamw_.lr), dtype_);
  std::optional<ir::Literal> coef;  // with clipping: the update program's last input
  if (options_.clip_norm > 0) coef = ir::Literal::scalar(dtype_, clip_coefficient());
  const auto start = std::chrono::steady_clock::now();
  support::run_concurrently(stages_.size(), [&](size_t st) {
    Stage& s = stages_[st];
    const size_t k = s.parameters.size();
    if (s.state.empty()) return;  // another rank's stage
    std::vector<runtime::ShardedBuffer> args = std::move(s.state);  // donated
    for (size_t i : s.parameters) args.push_back(std::move(last_.values[1 + i]));  // the gradients, freed after
    args.push_back(s.update->stage(4 * k, scalars));
    if (coef) args.push_back(s.update->stage(4 * k + 1, *coef));
    interp::Options options;  // on one device: the update's ops, and the update itself, on the stage's track
    options.profile = options_.profile;
    options.trace = trace_;
    options.trace_device = static_cast<int64_t>(st);
    const int64_t begin = trace_ ? trace_->now_ns() : 0;
    s.state = s.update->execute(args, options);  // p'..., m'..., v'...
    if (trace_)
      trace_->add(trace_->track(static_cast<int64_t>(st)), trace_->intern({"AdamW update", "pipeline", ""}), begin,
                  trace_->now_ns());
  });
  update_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return last_;
}

// clip_grad_norm_'s coefficient for the last run's gradients: each stage's sum of squares (in
// double, in parameter order), the stages' sums added in stage order, so that every rank and a
// run on host devices get the same norm.
double FragmentTrainer::clip_coefficient() {
  std::vector<double> squares(stages_.size(), 0.0);
  for (size_t i = 0; i < where_.size(); ++i) {
    const size_t st = where_[i].first;
    if (stages_[st].state.empty()) continue;  // another rank's
    const ir::Literal g = pipeline_->whole(last_.values[1 + i]);
    for (int64_t e = 0; e < g.num_elements(); ++e) squares[st] += g.get_double(e) * g.get_double(e);
  }
  share_stages(
      *pipeline_, "pipeline gradient norm", [&](size_t st, Bytes& out) { comm::wire::put<double>(out, squares[st]); },
      [&](size_t st, comm::wire::Reader& r) { squares.at(st) = r.get<double>(); });
  double total = 0;
  for (double x : squares) total += x;
  grad_norm_ = std::sqrt(total);
  return std::min(options_.clip_norm / (grad_norm_ + 1e-6), 1.0);
}

const runtime::ShardedBuffer& FragmentTrainer::state(size_t i, int kind) const {
  if (i >= where_.size() || kind < 0 || kind > 2)
    support::fail("pipeline trainer: no state {} of parameter {} (the model has {})", kind, i, where_.size());
  static const runtime::ShardedBuffer kNone;  // another rank's stage
  const Stage& s = stages_[where_[i].first];
  if (s.state.empty()) return kNone;
  return s.state[static_cast<size_t>(kind) * s.parameters.size() + where_[i].second];
}

void FragmentTrainer::restore(const StateReader& read, int64_t steps) {
  if (steps < 0) support::fail("pipeline trainer: restored at step {}, which is negative", steps);
  for (Stage& s : stages_) {
    const size_t k = s.parameters.size();
    for (size_t j = 0; j < s.state.size(); ++j) {  // empty on another rank's stage
      const size_t i = s.parameters[j % k];
      const int kind = static_cast<int>(j / k);
      auto piece = [&](const std::vector<int64_t>& start, const std::vector<int64_t>& extent) {
        return read(i, kind, start, extent);
      };
      try {
        s.state[j] = s.update->stage_pieces(j, piece);
      } catch (const support::UserError& e) {
        support::fail("pipeline trainer: state {} of parameter {} ('{}'): {}", kind, i, step_.parameters[i].name, e.what());
      }
    }
  }
  steps_ = steps;
}

std::vector<ir::Literal> FragmentTrainer::parameters() const {
  std::vector<ir::Literal> out(where_.size());
  for (size_t i = 0; i < where_.size(); ++i)
    if (const Stage& s = stages_[where_[i].first]; !s.state.empty())  // else another rank's
      out[i] = pipeline_->whole(s.state[where_[i].second]);
  // Over ranks, each stage's from the rank that holds it; in one process every stage is here
  // already (the exchange would copy each parameter twice to give back the same values).
  if (pipeline_->ranks().size() > 1)
    share_stages(
        *pipeline_, "pipeline parameters",
        [&](size_t st, Bytes& b) {
          for (size_t i : stages_[st].parameters) comm::wire::put_bytes(b, encode_literal(out[i]));
        },
        [&](size_t st, comm::wire::Reader& r) {
          for (size_t i : stages_.at(st).parameters) out[i] = decode_literal(r.get_bytes());
        });
  return out;
}

const std::vector<size_t>& FragmentTrainer::stage_parameters(int64_t stage) const {
  if (stage < 0 || stage >= static_cast<int64_t>(stages_.size()))
    support::fail("pipeline trainer: no stage {} (the schedule has {})", stage, stages_.size());
  return stages_[static_cast<size_t>(stage)].parameters;
}

std::vector<FragmentTrainer::StageBytes> FragmentTrainer::memory_plan() const {
  const std::vector<FragmentPipeline::StageMemory> pipeline = pipeline_->memory_plan(compiled_);
  std::vector<StageBytes> out;
  for (size_t st = 0; st < stages_.size(); ++st) {
    StageBytes b;
    b.parameters = b.gradients = parameter_bytes(static_cast<int64_t>(st));
    b.optimizer = 2 * b.parameters;  // m and v, as the parameters
    b.programs = pipeline[st].programs + (stages_[st].update ? stages_[st].update->context_bytes() : 0);
    b.store = pipeline[st].store;
    b.saved = pipeline[st].saved;
    out.push_back(b);
  }
  return out;
}

int64_t FragmentTrainer::parameter_bytes(int64_t stage) const {
  int64_t bytes = 0;
  const ir::Mesh* mesh = pipeline_->stage_mesh();
  for (size_t i : stage_parameters(stage)) {  // device 0's piece; the others hold as much
    const ir::Type type(dtype_, step_.parameters[i].shape);
    int64_t n = ir::info(dtype_).bytes;
    std::optional<ir::Sharding> s = step_.step().arg_sharding(i);
    for (int64_t e : mesh && s ? runtime::piece_box(type, *s, *mesh, 0).extent : type.shape) n *= e;
    bytes += n;
  }
  return bytes;
}

}  // namespace tessera::mpmd
