// A pipeline stage's parameters, optimizer state and devices (sharded_stage.h). The two ways of
// running — the plain interpreter for one device, a Session over the stage's group otherwise —
// share one interface so that the runtime's workers and the trainer never ask which it is.
#include "mpmd/sharded_stage.h"

#include <fmt/format.h>

#include <algorithm>

#include "exec/accelerate.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "support/error.h"

namespace tessera::mpmd {

using ir::Literal;

struct StageState::Piece {
  int64_t vs = 0;
  std::vector<size_t> indices;  // into the model's parameter_specs
  // One device: the host arrays.
  std::vector<Literal> params, m, v;
  // A device group: parameters, then m, then v (with AdamW), on the group's devices.
  std::vector<runtime::ShardedBuffer> buffers;
  std::map<const ir::Function*, std::unique_ptr<runtime::ShardedProgram>> programs;  // compiled on first use
  const ir::Function* adamw = nullptr;  // @adamw_<vs> in the optimizer module
};

namespace {

interp::Options plain_options(const ir::Module& module) {
  interp::Options o;
  o.module = &module;
  o.accelerate = exec::accelerate;
  return o;
}

}  // namespace

StageState::StageState(const StagedModel& model, int64_t stage, int64_t stages, const std::vector<Literal>& parameters,
                       std::optional<nn::AdamW> adamw)
    : model_(&model), stage_(stage), adamw_(adamw) {
  if (stages < 1 || model.virtual_stages() % stages != 0 || stage < 0 || stage >= stages)
    support::fail("mpmd::StageState: stage {} of {} cannot hold an equal share of the model's {} virtual stages", stage,
                  stages, model.virtual_stages());
  if (parameters.size() != model.parameters().size())
    support::fail("mpmd::StageState: {} parameters given, the model has {}", parameters.size(),
                  model.parameters().size());
  for (int64_t vs = stage; vs < model.virtual_stages(); vs += stages) pieces_.push_back(vs);
  const auto& plan = model.stage_plan();
  if (plan) session_ = std::make_unique<runtime::Session>(runtime::Session::host(plan->mesh.num_devices()));
  const ir::ElementType dtype = model.config().dtype;

  if (adamw_) {
    // @adamw_<vs>(params[n], m[n], v[n], grads[n], adamw [3]) -> (params'[n], m'[n], v'[n]): nn's
    // update of each parameter, laid out like the parameter, as nn::capture's @train_step does it.
    optimizer_module_ = std::make_unique<ir::Module>(fmt::format("stage{}_adamw", stage));
    if (plan) optimizer_module_->add_mesh(plan->mesh);
  }
  for (int64_t vs : pieces_) {
    auto p = std::make_unique<Piece>();
    p->vs = vs;
    p->indices = model.stage(vs).parameters;
    for (size_t i : p->indices) p->params.push_back(parameters[i]);
    if (adamw_) {
      std::vector<std::optional<ir::Sharding>> shardings;
      for (size_t i : p->indices)
        shardings.push_back(plan ? std::optional(plan->parameter(model.parameters()[i])) : std::nullopt);
      ir::Function& f =
          ir::build_function(*optimizer_module_, fmt::format("adamw_{}", vs), [&](ir::FunctionBuilder& b) {
            const size_t n = p->indices.size();
            std::vector<ir::Tensor> in[4];
            for (auto& group : in)
              for (size_t j = 0; j < n; ++j)
                group.push_back(b.param(ir::Type(dtype, model.parameters()[p->indices[j]].shape), shardings[j]));
            ir::Tensor t = b.param(ir::Type(dtype, {3}));  // nn::adamw_scalars_literal
            std::vector<ir::Tensor> ps, ms, vs_;
            for (size_t j = 0; j < n; ++j) {
              nn::AdamWState next = nn::adamw_update(*adamw_, {in[0][j], in[1][j], in[2][j]}, in[3][j], t,
                                                         nn::decays(*adamw_, model.parameters()[p->indices[j]].name));
              ps.push_back(next.p);
              ms.push_back(next.m);
              vs_.push_back(next.v);
            }
            ps.insert(ps.end(), ms.begin(), ms.end());
            ps.insert(ps.end(), vs_.begin(), vs_.end());
            return ps;
          });
      for (size_t j = 0; j < 3 * p->indices.size(); ++j)
        if (shardings[j % p->indices.size()]) f.set_result_sharding(j, *shardings[j % p->indices.size()]);
      p->adamw = &f;
      for (const Literal& x : p->params) {
        p->m.emplace_back(x.type());  // zeros
        p->v.emplace_back(x.type());
      }
    }
    if (session_) {
      // Staged once through the forward's layout, which every program of the piece shares.
      const ir::Function& fwd = *model.stage(vs).forward;
      auto compiled = std::make_unique<runtime::ShardedProgram>(
          session_->sharded_program(session_->compile(model.module(), fwd.name())));
      for (auto* group : {&p->params, &p->m, &p->v})
        for (size_t j = 0; j < group->size(); ++j) p->buffers.push_back(compiled->stage(j, (*group)[j]));
      p->programs.emplace(&fwd, std::move(compiled));
      p->params.clear();  // the devices hold them now
      p->m.clear();
      p->v.clear();
    }
    state_.push_back(std::move(p));
  }
}

StageState::StageState(StageState&&) noexcept = default;
StageState::~StageState() = default;

StageState::Piece& StageState::piece(int64_t vs) const {
  for (const auto& p : state_)
    if (p->vs == vs) return *p;
  support::fail("mpmd::StageState: stage {} does not hold virtual stage {}", stage_, vs);
}

std::vector<Literal> StageState::evaluate(const ir::Function& fn, int64_t vs, std::vector<Literal> tail) {
  Piece& p = piece(vs);
  if (!session_) {
    std::vector<Literal> args = p.params;
    for (Literal& x : tail) args.push_back(std::move(x));
    return interp::evaluate(fn, std::move(args), plain_options(model_->module()));
  }
  auto& slot = p.programs[&fn];
  if (!slot)
    slot = std::make_unique<runtime::ShardedProgram>(
        session_->sharded_program(session_->compile(model_->module(), fn.name())));
  const size_t n = p.indices.size();
  std::vector<runtime::ShardedBuffer> in(p.buffers.begin(), p.buffers.begin() + static_cast<std::ptrdiff_t>(n));
  for (size_t i = 0; i < tail.size(); ++i) in.push_back(slot->stage(n + i, tail[i]));
  std::vector<Literal> out;
  for (const runtime::ShardedBuffer& b : slot->execute(in)) out.push_back(slot->fetch(b));
  return out;
}

void StageState::apply_adamw(int64_t step, const std::map<size_t, Literal>& gradients) {
  if (!adamw_) support::fail("mpmd::StageState: stage {} was made without an optimizer", stage_);
  const Literal t = nn::adamw_scalars_literal(*adamw_, step, adamw_->lr, model_->config().dtype);
  for (auto& p : state_) {
    const size_t n = p->indices.size();
    std::vector<Literal> grads;
    for (size_t i : p->indices) {
      auto g = gradients.find(i);
      if (g == gradients.end())
        support::fail("mpmd::StageState: stage {} has no gradient for parameter '{}'", stage_,
                      model_->parameters()[i].name);
      grads.push_back(g->second);
    }
    if (!session_) {
      std::vector<Literal> args = p->params;
      args.insert(args.end(), p->m.begin(), p->m.end());
      args.insert(args.end(), p->v.begin(), p->v.end());
      args.insert(args.end(), grads.begin(), grads.end());
      args.push_back(t);
      std::vector<Literal> r = interp::evaluate(*p->adamw, std::move(args), plain_options(*optimizer_module_));
      for (size_t j = 0; j < n; ++j) {
        p->params[j] = std::move(r[j]);
        p->m[j] = std::move(r[n + j]);
        p->v[j] = std::move(r[2 * n + j]);
      }
      continue;
    }
    auto& slot = p->programs[p->adamw];
    if (!slot) {
      std::vector<std::pair<size_t, size_t>> donated;  // parameters and moments update in place
      for (size_t j = 0; j < 3 * n; ++j) donated.emplace_back(j, j);
      slot = std::make_unique<runtime::ShardedProgram>(
          session_->sharded_program(session_->compile(*optimizer_module_, p->adamw->name()), donated));
    }
    std::vector<runtime::ShardedBuffer> in = p->buffers;
    for (size_t j = 0; j < n; ++j) in.push_back(slot->stage(3 * n + j, grads[j]));
    in.push_back(slot->stage(4 * n, t));
    std::vector<runtime::ShardedBuffer> out = slot->execute(in);
    p->buffers.assign(out.begin(), out.end());
  }
}

Literal StageState::parameter(size_t index) const {
  for (const auto& p : state_)
    for (size_t j = 0; j < p->indices.size(); ++j) {
      if (p->indices[j] != index) continue;
      if (!session_) return p->params[j];
      return p->programs.at(model_->stage(p->vs).forward)->fetch(p->buffers[j]);
    }
  support::fail("mpmd::StageState: stage {} does not hold parameter {}", stage_, index);
}

std::vector<size_t> StageState::parameter_indices() const {
  std::vector<size_t> out;
  for (const auto& p : state_) out.insert(out.end(), p->indices.begin(), p->indices.end());
  std::sort(out.begin(), out.end());
  return out;
}

int64_t StageState::parameter_bytes_per_device() const {
  int64_t bytes = 0;
  for (const auto& p : state_)
    for (size_t j = 0; j < p->indices.size(); ++j)
      bytes += static_cast<int64_t>(session_ ? (*p->buffers[j].pieces)[0].bytes().size() : p->params[j].bytes().size());
  return bytes;
}

int64_t StageState::optimizer_bytes_per_device() const {
  if (!adamw_) return 0;
  return 2 * parameter_bytes_per_device();  // m and v, laid out like the parameters
}

std::vector<StageState> stage_states(const StagedModel& model, int64_t stages, const std::vector<Literal>& parameters,
                                     std::optional<nn::AdamW> adamw, const Ranks* ranks) {
  std::vector<StageState> out;
  for (int64_t s : local_stages(stages, ranks)) out.emplace_back(model, s, stages, parameters, adamw);
  return out;
}

}  // namespace tessera::mpmd
