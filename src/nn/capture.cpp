// capture (capture.h): @loss from the model, @step from autodiff::reverse, @train_step calling
// @step and then the optimizer's update on every parameter.
#include "nn/capture.h"

#include <cmath>

#include "autodiff/reverse.h"
#include "ir/builder.h"
#include "support/error.h"

namespace tessera::nn {

using ir::FunctionBuilder;
using ir::Tensor;

TrainingStep TrainingStep::with(Optimizer o) const {
  TrainingStep s = *this;
  s.optimizer = std::move(o);
  return s;
}

TrainingStep TrainingStep::accumulate(int64_t k) const {
  if (k < 1 || model.config().batch % k != 0)
    support::fail("nn::TrainingStep::accumulate: {} microbatches do not divide the batch of {}", k, model.config().batch);
  TrainingStep s = *this;
  s.microbatches = k;
  return s;
}

TrainingStep TrainingStep::with_remat(autodiff::Remat policy) const {
  TrainingStep s = *this;
  s.remat = policy;
  return s;
}

TrainingStep TrainingStep::clipped(double max_norm) const {
  if (!(max_norm > 0) || !std::isfinite(max_norm))
    support::fail("nn::TrainingStep::clipped: the maximum norm {} is not a positive number", max_norm);
  TrainingStep s = *this;
  s.clip_norm = max_norm;
  return s;
}

ir::Literal Programs::step_scalars(int64_t step, std::optional<double> lr) const {
  if (!adamw) support::fail("nn::Programs::step_scalars: the programs were captured without AdamW");
  return adamw_scalars_literal(*adamw, step, lr.value_or(adamw->lr), dtype);
}

TrainingStep TrainingStep::sharded(ShardingPlan p) const {
  TrainingStep s = *this;
  s.plan = std::move(p);
  s.model = s.model.with_expert_axis(s.plan->expert_axis);
  return s;
}

namespace {

std::optional<ir::Sharding> parameter_sharding(const TrainingStep& s, const ParamSpec& p) {
  if (!s.plan) return std::nullopt;
  return s.plan->parameter(p);
}

// The sharding of a parameter's optimizer state and gradient (the parameter's, unless the plan
// shards the weight update: nn::zero1).
std::optional<ir::Sharding> state_sharding_of(const TrainingStep& s, const ParamSpec& p) {
  if (!s.plan) return std::nullopt;
  return nn::state_sharding(*s.plan, p);
}

std::optional<ir::Sharding> input_sharding(const TrainingStep& s, const std::string& name, const ir::Type& t) {
  if (!s.plan) return std::nullopt;
  return s.plan->input(DataInput{name, t});
}

ir::Type batch_type(const Config& c) { return ir::i32({c.batch, c.seq}); }

// The model the plan runs: under a context-parallel plan, with its sequence split.
CausalLM model_of(const TrainingStep& s, const CausalLM& model) {
  return s.plan && s.plan->context ? model.context_parallel(*s.plan->context) : model;
}

// The residual stream [b, s, d] laid out like the tokens along batch and sequence, features whole
// (under context parallelism, split along the sequence).
std::optional<ir::Sharding> residual_sharding(const TrainingStep& s) {
  if (s.plan && s.plan->context) return split_dim(s.plan->mesh, 3, 1, s.plan->context->axis);
  std::optional<ir::Sharding> tokens = input_sharding(s, "tokens", batch_type(s.model.config()));
  if (tokens) tokens->dims.emplace_back();
  return tokens;
}

}  // namespace

Programs capture(ir::Module& module, const TrainingStep& s) {
  Programs out;
  out.parameters = s.model.parameters();
  const Config& c = s.model.config();
  const auto& specs = out.parameters;
  size_t n = specs.size();
  for (const std::string& name : {std::string("loss"), std::string("step"), std::string("train_step")})
    if (module.find_function(name) != nullptr)
      support::fail("nn::capture: module '{}' already has a function @{}", module.name, name);
  if (s.plan) {
    const ir::Mesh* existing = module.find_mesh(s.plan->mesh.name);
    if (existing == nullptr) module.add_mesh(s.plan->mesh);
    else if (!(*existing == s.plan->mesh))
      support::fail("nn::capture: module '{}' has another mesh named '{}'", module.name, s.plan->mesh.name);
  }

  // @loss(params..., tokens, targets)
  ir::Function& loss = ir::build_function(module, out.loss, [&](FunctionBuilder& f) {
    std::vector<Tensor> params;
    for (const ParamSpec& p : specs) params.push_back(f.param(ir::Type(c.dtype, p.shape), parameter_sharding(s, p)));
    Tensor tokens = f.param(batch_type(c), input_sharding(s, "tokens", batch_type(c)));
    Tensor targets = f.param(batch_type(c), input_sharding(s, "targets", batch_type(c)));
    return model_of(s, s.model).loss(Weights(specs, params), tokens, targets, residual_sharding(s));
  });

  // @step: the loss and the gradient of every parameter (not of the integer inputs).
  autodiff::ReverseOptions ro;
  for (size_t i = 0; i < n; ++i) ro.wrt.push_back(i);
  ro.return_value = true;
  ro.name = out.step;
  ro.remat = s.remat;
  if (s.plan) ro.gradient_sharding = [&](size_t i) { return state_sharding_of(s, specs[i]); };
  ir::Function* step_fn = nullptr;
  int64_t k = s.microbatches;
  if (k == 1) {
    step_fn = &autodiff::reverse(module, loss, ro);
  } else {
    // @loss_micro and its gradient @step_micro on b/k rows; @step averages them over the batch.
    Config mc = c;
    mc.batch = c.batch / k;
    CausalLM micro = CausalLM(mc).with_expert_axis(s.model.expert_axis());
    TrainingStep ms = s;
    ms.model = micro;
    ir::Function& loss_micro = ir::build_function(module, "loss_micro", [&](FunctionBuilder& f) {
      std::vector<Tensor> params;
      for (const ParamSpec& p : specs) params.push_back(f.param(ir::Type(c.dtype, p.shape), parameter_sharding(s, p)));
      Tensor tokens = f.param(batch_type(mc), input_sharding(s, "tokens", batch_type(mc)));
      Tensor targets = f.param(batch_type(mc), input_sharding(s, "targets", batch_type(mc)));
      return model_of(s, micro).loss(Weights(specs, params), tokens, targets, residual_sharding(ms));
    });
    autodiff::ReverseOptions mo = ro;
    mo.name = "step_micro";
    ir::Function& step_micro = autodiff::reverse(module, loss_micro, mo);
    step_fn = &ir::build_function(module, out.step, [&](FunctionBuilder& f) {
      std::vector<Tensor> params;
      for (const ParamSpec& p : specs) params.push_back(f.param(ir::Type(c.dtype, p.shape), parameter_sharding(s, p)));
      Tensor tokens = f.param(batch_type(c), input_sharding(s, "tokens", batch_type(c)));
      Tensor targets = f.param(batch_type(c), input_sharding(s, "targets", batch_type(c)));
      auto part = [&](const Tensor& x, int64_t i) {  // rows i, i+k, ...
        Tensor grouped = ir::reshape(x, {mc.batch, k, c.seq});
        return ir::reshape(ir::slice(grouped, {0, i, 0}, {mc.batch, i + 1, c.seq}), {mc.batch, c.seq});
      };
      std::vector<Tensor> sum;
      for (int64_t i = 0; i < k; ++i) {
        std::vector<Tensor> args = params;
        args.push_back(part(tokens, i));
        args.push_back(part(targets, i));
        std::vector<Tensor> r = ir::call(f, step_micro, args);
        if (sum.empty()) sum = r;
        else
          for (size_t j = 0; j < r.size(); ++j) sum[j] = sum[j] + r[j];
      }
      for (Tensor& x : sum) x = x * (1.0 / double(k));
      return sum;
    });
  }
  ir::Function& step = *step_fn;
  if (!s.optimizer) return out;

  // @train_step: @step, then the optimizer on each parameter.
  out.train_step = "train_step";
  out.state_per_parameter = state_per_parameter(*s.optimizer);
  out.dtype = c.dtype;
  out.grad_norm = s.clip_norm > 0;
  const auto* adamw = std::get_if<AdamW>(&*s.optimizer);
  if (adamw) {
    out.adamw = *adamw;
    std::vector<std::string> names;
    for (const ParamSpec& p : specs) names.push_back(p.name);
    check_no_decay(*adamw, names);
  }
  ir::Function& train = ir::build_function(module, out.train_step, [&](FunctionBuilder& f) {
    std::vector<Tensor> params, m, v;
    for (const ParamSpec& p : specs) params.push_back(f.param(ir::Type(c.dtype, p.shape), parameter_sharding(s, p)));
    for (auto* moments : {&m, &v}) {
      if (!adamw) break;
      for (const ParamSpec& p : specs) moments->push_back(f.param(ir::Type(c.dtype, p.shape), state_sharding_of(s, p)));
    }
    std::optional<Tensor> scalars;
    if (adamw) scalars = f.param(ir::Type(c.dtype, {3}));
    Tensor tokens = f.param(batch_type(c), input_sharding(s, "tokens", batch_type(c)));
    Tensor targets = f.param(batch_type(c), input_sharding(s, "targets", batch_type(c)));

    std::vector<Tensor> args = params;
    args.push_back(tokens);
    args.push_back(targets);
    std::vector<Tensor> loss_and_grads = ir::call(f, step, args);
    std::vector<Tensor> results = {loss_and_grads[0]}, new_m, new_v;
    std::vector<Tensor> grads(loss_and_grads.begin() + 1, loss_and_grads.end());
    std::optional<Tensor> norm;
    if (s.clip_norm > 0) {  // clip_grad_norm_ (capture.h), on whole arrays: the partitioner adds the all-reduce
      Tensor squares = ir::sum(grads[0] * grads[0]);
      for (size_t i = 1; i < n; ++i) squares = squares + ir::sum(grads[i] * grads[i]);
      norm = ir::sqrt(squares);
      Tensor coef = ir::minimum(s.clip_norm / (*norm + 1e-6), f.scalar(c.dtype, 1.0));
      for (Tensor& g : grads) g = g * coef;
    }
    for (size_t i = 0; i < n; ++i) {
      const Tensor& g = grads[i];
      if (!adamw) {
        results.push_back(sgd_update(std::get<Sgd>(*s.optimizer), params[i], g));
        continue;
      }
      AdamWState next = adamw_update(*adamw, {params[i], m[i], v[i]}, g, *scalars, decays(*adamw, specs[i].name));
      results.push_back(next.p);
      new_m.push_back(next.m);
      new_v.push_back(next.v);
    }
    results.insert(results.end(), new_m.begin(), new_m.end());
    results.insert(results.end(), new_v.begin(), new_v.end());
    if (norm) results.push_back(*norm);
    return results;
  });

  // Parameter (and moment) j of each group is input g*n + j and output 1 + g*n + j.
  for (size_t g = 0; g < 1 + out.state_per_parameter; ++g)
    for (size_t i = 0; i < n; ++i) {
      out.output_aliases.emplace_back(g * n + i, 1 + g * n + i);
      if (auto sh = g == 0 ? parameter_sharding(s, specs[i]) : state_sharding_of(s, specs[i]))
        train.set_result_sharding(1 + g * n + i, *sh);
    }
  return out;
}

std::vector<ir::Literal> train_step_inputs(const Programs& p, const std::vector<ir::Literal>& params,
                                           int64_t step, const ir::Literal& tokens, const ir::Literal& targets) {
  if (p.train_step.empty()) support::fail("nn::train_step_inputs: the programs were captured without an optimizer");
  if (params.size() != p.num_parameters())
    support::fail("nn::train_step_inputs: {} parameters given, the model has {}", params.size(), p.num_parameters());
  std::vector<ir::Literal> in = params;
  for (size_t k = 0; k < p.state_per_parameter; ++k)
    for (const ir::Literal& x : params) in.emplace_back(x.type());  // zeros
  if (p.state_per_parameter > 0) in.push_back(p.step_scalars(step));
  in.push_back(tokens);
  in.push_back(targets);
  return in;
}

}  // namespace tessera::nn
