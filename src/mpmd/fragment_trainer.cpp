// FragmentTrainer (fragment_trainer.h): the pipeline, its compiled schedule and the stages'
// AdamW programs made once; a step runs the schedule on the resident parameters and then every
// stage's update.
#include "mpmd/fragment_trainer.h"

#include <chrono>

#include "exec/executable.h"
#include "ir/builder.h"
#include "support/error.h"
#include "support/threads.h"

namespace tessera::mpmd {

namespace {

bool splits_backward(const Schedule& s) {
  for (const auto& actions : s.actions)
    for (const Action& a : actions)
      if (a.kind == ActionKind::kBackwardInput || a.kind == ActionKind::kBackwardWeight) return true;
  return false;
}

}  // namespace

FragmentTrainer::FragmentTrainer(const nn::CausalLM& model, Schedule schedule,
                                 const std::vector<ir::Literal>& parameters, nn::AdamW adamw)
    : step_(mpmd::model_step(model, schedule.stages * schedule.virtual_per_stage, schedule.microbatches)),
      schedule_(std::move(schedule)),
      adamw_(std::move(adamw)) {
  const std::vector<nn::ParamSpec>& specs = step_.parameters;
  if (parameters.size() != specs.size())
    support::fail("pipeline trainer: {} parameters given, the model has {}", parameters.size(), specs.size());
  std::vector<std::string> names;
  for (const nn::ParamSpec& p : specs) names.push_back(p.name);
  nn::check_no_decay(adamw_, names);
  FragmentPipelineOptions o;
  for (size_t i = 0; i < specs.size(); ++i) o.wrt.push_back(i);
  o.split_backward = splits_backward(schedule_);
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
    s.p.push_back(parameters[i]);
    s.m.emplace_back(parameters[i].type());  // zeros
    s.v.emplace_back(parameters[i].type());
  }
  for (size_t st = 0; st < stages_.size(); ++st) {
    Stage& s = stages_[st];
    s.module = std::make_unique<ir::Module>("adamw");
    const ir::Function& fn = ir::build_function(*s.module, "adamw", [&](ir::FunctionBuilder& f) {
      std::vector<ir::Tensor> p, m, v, g;
      for (auto* group : {&p, &m, &v, &g})
        for (size_t i : s.parameters) group->push_back(f.param(ir::Type(dtype, specs[i].shape)));
      ir::Tensor scalars = f.param(ir::Type(dtype, {3}));
      std::vector<ir::Tensor> out_p, out_m, out_v;
      for (size_t k = 0; k < s.parameters.size(); ++k) {
        nn::AdamWState next =
            nn::adamw_update(adamw_, {p[k], m[k], v[k]}, g[k], scalars, nn::decays(adamw_, specs[s.parameters[k]].name));
        out_p.push_back(next.p);
        out_m.push_back(next.m);
        out_v.push_back(next.v);
      }
      std::vector<ir::Tensor> out = out_p;
      out.insert(out.end(), out_m.begin(), out_m.end());
      out.insert(out.end(), out_v.begin(), out_v.end());
      return out;
    });
    exec::CompileOptions co;
    co.module = s.module.get();
    s.update = exec::Executable::compile(fn, co);
    s.context = s.update->make_context();
  }
}

FragmentTrainer::~FragmentTrainer() = default;

const FragmentPipelineRun& FragmentTrainer::step(const ir::Literal& tokens, const ir::Literal& targets,
                                                 std::optional<double> lr) {
  const size_t n = step_.parameters.size();
  std::vector<ir::Literal> batch = step_.batch_inputs(tokens, targets);
  RunInputs in;
  for (size_t i = 0; i < n; ++i) in.parameters.push_back(&stages_[where_[i].first].p[where_[i].second]);
  for (const ir::Literal& x : batch) in.parameters.push_back(&x);
  in.trace = trace_;
  last_ = pipeline_->run(compiled_, schedule_, in);

  // AdamW on every stage at once, each on its own parameters, moments and gradients.
  ++steps_;
  const ir::Literal scalars = nn::adamw_scalars_literal(adamw_, steps_, lr.value_or(adamw_.lr), dtype_);
  const auto start = std::chrono::steady_clock::now();
  support::run_concurrently(stages_.size(), [&](size_t st) {
    Stage& s = stages_[st];
    const size_t k = s.parameters.size();
    std::vector<ir::Literal> args;
    for (auto* group : {&s.p, &s.m, &s.v})
      for (ir::Literal& x : *group) args.push_back(std::move(x));
    for (size_t i : s.parameters) args.push_back(std::move(last_.results[1 + i]));
    args.push_back(scalars);
    interp::Options options;  // the update's ops, and the update itself, on the stage's track
    options.trace = trace_;
    options.trace_device = static_cast<int64_t>(st);
    const int64_t begin = trace_ ? trace_->now_ns() : 0;
    std::vector<ir::Literal> out = s.update->run(std::move(args), options, *s.context);
    if (trace_)
      trace_->add(trace_->track(static_cast<int64_t>(st)), trace_->intern({"AdamW update", "pipeline", ""}), begin,
                  trace_->now_ns());
    for (size_t j = 0; j < k; ++j) {
      s.p[j] = std::move(out[j]);
      s.m[j] = std::move(out[k + j]);
      s.v[j] = std::move(out[2 * k + j]);
    }
  });
  update_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return last_;
}

std::vector<ir::Literal> FragmentTrainer::parameters() const {
  std::vector<ir::Literal> out;
  for (const auto& [st, slot] : where_) out.push_back(stages_[st].p[slot]);
  return out;
}

const std::vector<size_t>& FragmentTrainer::stage_parameters(int64_t stage) const {
  if (stage < 0 || stage >= static_cast<int64_t>(stages_.size()))
    support::fail("pipeline trainer: no stage {} (the schedule has {})", stage, stages_.size());
  return stages_[static_cast<size_t>(stage)].parameters;
}

int64_t FragmentTrainer::parameter_bytes(int64_t stage) const {
  int64_t bytes = 0;
  for (const ir::Literal& p : stages_.at(static_cast<size_t>(stage)).p) bytes += static_cast<int64_t>(p.bytes().size());
  return bytes;
}

}  // namespace tessera::mpmd
