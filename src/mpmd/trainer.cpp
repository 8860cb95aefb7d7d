// PipelineTrainer (trainer.h): run_pipeline on the stages' own parameters, then one thread per
// stage applying AdamW to what that stage holds. Over ranks, the same on this rank's stages; what
// every rank needs (whole parameters, stage summaries) goes through one exchange among the ranks.
#include "mpmd/trainer.h"

#include <chrono>
#include <exception>
#include <map>

#include "comm/mpi_wire.h"
#include "mpmd/validate.h"
#include "support/error.h"
#include "support/threads.h"

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
  stages_ = stage_states(model, schedule_.stages, parameters, adamw, options_.ranks);
}

const PipelineResult& PipelineTrainer::step(const ir::Literal& tokens, const ir::Literal& targets) {
  last_ = run_pipeline(*model_, schedule_, stages_, tokens, targets, options_);
  const int64_t t = steps_ + 1;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::exception_ptr> errors(stages_.size());
  support::run_concurrently(stages_.size(), [&](size_t s) {
    try {
      std::map<size_t, ir::Literal> grads;
      for (size_t i : stages_[s].parameter_indices()) grads.emplace(i, last_.gradients[i]);
      stages_[s].apply_adamw(t, grads);
    } catch (...) {
      errors[s] = std::current_exception();
    }
  });
  for (const std::exception_ptr& e : errors)
    if (e) {
      // The other ranks would wait for this one in the next step: let them stop now.
      if (options_.ranks) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          options_.ranks->report_failure(x.what());
        }
      }
      std::rethrow_exception(e);
    }
  update_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  steps_ = t;
  return last_;
}

std::vector<ir::Literal> PipelineTrainer::parameters() const {
  std::vector<ir::Literal> out(model_->parameters().size());
  for (const StageState& s : stages_)
    for (size_t i : s.parameter_indices()) out[i] = s.parameter(i);
  if (!options_.ranks) return out;
  // Each rank sends (index, value) of the parameters it holds; every rank assembles all of them.
  namespace wire = comm::wire;
  std::vector<std::byte> mine;
  for (const StageState& s : stages_)
    for (size_t i : s.parameter_indices()) {
      wire::put<uint64_t>(mine, i);
      std::vector<std::byte> value;
      encode_literal(value, out[i]);
      wire::put_bytes(mine, value);
    }
  for (const std::vector<std::byte>& theirs : options_.ranks->exchange("gathering the pipeline's parameters", mine)) {
    wire::Reader in(theirs);
    while (!in.done()) {
      const auto i = static_cast<size_t>(in.get<uint64_t>());
      TESSERA_CHECK(i < out.size(), "a rank sent parameter {} of {}", i, out.size());
      out[i] = decode_literal(in.get_bytes());
    }
  }
  return out;
}

std::vector<StageSummary> PipelineTrainer::stage_summaries() const {
  const int64_t P = schedule_.stages;
  std::vector<StageSummary> out(static_cast<size_t>(P));
  for (int64_t s = 0; s < P; ++s) {
    StageSummary& x = out[static_cast<size_t>(s)];
    x.stage = s;
    x.rank = options_.ranks ? owner_rank(s, P, options_.ranks->size()) : 0;
    for (int64_t vs = s; vs < schedule_.virtual_stages(); vs += P) x.virtual_stages.push_back(vs);
  }
  namespace wire = comm::wire;
  std::vector<std::byte> mine;
  for (const StageState& st : stages_) {
    StageSummary& x = out[static_cast<size_t>(st.stage())];
    x.parameter_bytes_per_device = st.parameter_bytes_per_device();
    x.optimizer_bytes_per_device = st.optimizer_bytes_per_device();
    wire::put<int64_t>(mine, st.stage());
    wire::put<int64_t>(mine, x.parameter_bytes_per_device);
    wire::put<int64_t>(mine, x.optimizer_bytes_per_device);
  }
  if (!options_.ranks) return out;
  for (const std::vector<std::byte>& theirs : options_.ranks->exchange("gathering the pipeline's stage summaries", mine)) {
    wire::Reader in(theirs);
    while (!in.done()) {
      const auto s = in.get<int64_t>();
      TESSERA_CHECK(s >= 0 && s < P, "a rank sent the summary of stage {} of {}", s, P);
      out[static_cast<size_t>(s)].parameter_bytes_per_device = in.get<int64_t>();
      out[static_cast<size_t>(s)].optimizer_bytes_per_device = in.get<int64_t>();
    }
  }
  return out;
}

}  // namespace tessera::mpmd
