// PipelineTrainer (trainer.h): run_pipeline on the stages' own parameters, then one thread per
// stage applying AdamW to what that stage holds.
#include "mpmd/trainer.h"

#include <chrono>
#include <exception>
#include <map>
#include <thread>

#include "mpmd/validate.h"
#include "support/error.h"

namespace tessera::mpmd {

PipelineTrainer::PipelineTrainer(const StagedModel& model, Schedule schedule, const std::vector<ir::Literal>& parameters,
                                 nn::AdamW adamw, RunOptions options)
    : model_(&model), schedule_(std::move(schedule)), options_(options) {
  const auto& specs = model.parameters();
  if (parameters.size() != specs.size())
    support::fail("mpmd::PipelineTrainer: {} parameters given, the model has {}", parameters.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i)
    if (parameters[i].type() != ir::Type(model.config().dtype, specs[i].shape))
      support::fail("mpmd::PipelineTrainer: parameter '{}' is {}, the model needs {}", specs[i].name,
                    ir::to_string(parameters[i].type()), ir::to_string(ir::Type(model.config().dtype, specs[i].shape)));
  if (schedule_.virtual_stages() != model.virtual_stages())
    support::fail("mpmd::PipelineTrainer: schedule '{}' has {} stages x {} virtual = {} pieces, the model is cut into {}",
                  schedule_.name, schedule_.stages, schedule_.virtual_per_stage, schedule_.virtual_stages(),
                  model.virtual_stages());
  if (options_.validate) validate(schedule_);
  options_.validate = false;  // once is enough: the schedule does not change between steps
  stages_ = stage_states(model, schedule_.stages, parameters, adamw);
}

const PipelineResult& PipelineTrainer::step(const ir::Literal& tokens, const ir::Literal& targets) {
  last_ = run_pipeline(*model_, schedule_, stages_, tokens, targets, options_);
  const int64_t t = steps_ + 1;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::exception_ptr> errors(stages_.size());
  std::vector<std::thread> threads;
  for (size_t s = 0; s < stages_.size(); ++s)
    threads.emplace_back([&, s] {
      try {
        std::map<size_t, ir::Literal> grads;
        for (size_t i : stages_[s].parameter_indices()) grads.emplace(i, last_.gradients[i]);
        stages_[s].apply_adamw(t, grads);
      } catch (...) {
        errors[s] = std::current_exception();
      }
    });
  for (std::thread& th : threads) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  update_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  steps_ = t;
  return last_;
}

std::vector<ir::Literal> PipelineTrainer::parameters() const {
  std::vector<ir::Literal> out(model_->parameters().size());
  for (const StageState& s : stages_)
    for (size_t i : s.parameter_indices()) out[i] = s.parameter(i);
  return out;
}

}  // namespace tessera::mpmd
