// The stage programs of a CausalLM (stages.h). A piece's forward is the CausalLM's own blocks
// (nn::CausalLM::block) over its layers, on the microbatch's shapes; its backward programs are
// autodiff::reverse of that forward with different `wrt` sets.
#include "mpmd/stages.h"

#include <fmt/format.h>

#include <string>

#include "autodiff/reverse.h"
#include "ir/builder.h"
#include "nn/layers.h"
#include "support/error.h"

namespace tessera::mpmd {

using ir::Tensor;

namespace {

// The product of the mesh axes that split dimension 0 of `s`.
int64_t rows_split(const ir::Sharding& s, const ir::Mesh& mesh) { return s.dims.empty() ? 1 : ir::dim_shards(s, 0, mesh); }

}  // namespace

StagedModel::StagedModel(const nn::CausalLM& model, int64_t virtual_stages, int64_t microbatches,
                         std::optional<nn::ShardingPlan> stage_plan)
    : module_(std::make_unique<ir::Module>("pipeline")),
      config_(model.config()),
      micro_config_(model.config()),
      microbatches_(microbatches),
      specs_(model.parameters()),
      plan_(std::move(stage_plan)) {
  const nn::Config& c = config_;
  c.validate();
  if (virtual_stages < 1 || c.layers % virtual_stages != 0)
    support::fail("mpmd::StagedModel: {} layers do not split into {} pipeline stages of whole layers", c.layers,
                  virtual_stages);
  if (microbatches < 1 || c.batch % microbatches != 0)
    support::fail("mpmd::StagedModel: {} microbatches do not divide the batch of {}", microbatches, c.batch);
  micro_config_.batch = c.batch / microbatches;
  const nn::Config& mc = micro_config_;
  const nn::CausalLM micro(mc);  // the model's blocks on a microbatch's shapes
  const int64_t per_piece = c.layers / virtual_stages;
  const ir::Type tokens_type = ir::i32({mc.batch, mc.seq});
  const ir::Type activation_type(c.dtype, {mc.batch, mc.seq, c.d_model});

  // The plan's layouts: none without a plan (plain single-device programs).
  std::optional<ir::Sharding> tokens_sharding, targets_sharding, residual;
  auto param_sharding = [&](const nn::ParamSpec& p) -> std::optional<ir::Sharding> {
    if (!plan_) return std::nullopt;
    return plan_->parameter(p);
  };
  if (plan_) {
    module_->add_mesh(plan_->mesh);
    tokens_sharding = plan_->input({"tokens", tokens_type});
    targets_sharding = plan_->input({"targets", tokens_type});
    residual = tokens_sharding;
    residual->dims.emplace_back();  // features whole
    const int64_t split = rows_split(*tokens_sharding, plan_->mesh);
    if (mc.batch % split != 0)
      support::fail("mpmd::StagedModel: a microbatch of {} rows ({} / {} microbatches) does not split over the {} "
                    "devices that share the batch in stage plan '{}'",
                    mc.batch, c.batch, microbatches, split, plan_->name);
  }

  for (int64_t v = 0; v < virtual_stages; ++v) {
    StageProgram sp;
    sp.virtual_stage = v;
    sp.first_layer = v * per_piece;
    sp.end_layer = (v + 1) * per_piece;
    sp.embeds = v == 0;
    sp.has_loss = v == virtual_stages - 1;
    std::vector<nn::ParamSpec> own;
    for (size_t i = 0; i < specs_.size(); ++i)
      if (in_piece(specs_[i].name, sp.first_layer, sp.end_layer, sp.embeds, sp.has_loss)) {
        sp.parameters.push_back(i);
        own.push_back(specs_[i]);
      }
    const size_t n = own.size();

    ir::Function& fwd = ir::build_function(*module_, fmt::format("fwd_{}", v), [&](ir::FunctionBuilder& f) {
      std::vector<Tensor> params;
      for (const nn::ParamSpec& p : own) params.push_back(f.param(ir::Type(c.dtype, p.shape), param_sharding(p)));
      nn::Weights w(own, params);
      Tensor input = sp.embeds ? f.param(tokens_type, tokens_sharding) : f.param(activation_type, residual);
      Tensor x = sp.embeds ? micro.embed(w, input, residual) : input;
      for (int64_t i = sp.first_layer; i < sp.end_layer; ++i) x = micro.block(w, i, x, residual);
      if (!sp.has_loss) return x;
      Tensor targets = f.param(tokens_type, targets_sharding);
      return nn::cross_entropy(micro.head(w, x), targets);
    });
    if (residual && !sp.has_loss) fwd.set_result_sharding(0, *residual);
    sp.forward = &fwd;

    // The parameters are inputs 0..n-1 and the activation input is input n (tokens on piece 0 have
    // no gradient), so every backward returns parameter gradients first, in `parameters` order.
    std::vector<size_t> weights;
    for (size_t i = 0; i < n; ++i) weights.push_back(i);
    autodiff::ReverseOptions whole;
    whole.wrt = weights;
    if (!sp.embeds) whole.wrt.push_back(n);
    whole.name = fmt::format("bwd_{}", v);
    ir::Function& bwd = autodiff::reverse(*module_, fwd, whole);
    sp.backward = &bwd;
    autodiff::ReverseOptions weight;
    weight.wrt = weights;
    weight.name = fmt::format("bwd_weight_{}", v);
    ir::Function& bwd_weight = autodiff::reverse(*module_, fwd, weight);
    sp.backward_weight = &bwd_weight;
    ir::Function* bwd_input = nullptr;
    if (!sp.embeds) {
      autodiff::ReverseOptions input;
      input.wrt = {n};
      input.name = fmt::format("bwd_input_{}", v);
      bwd_input = &autodiff::reverse(*module_, fwd, input);
      sp.backward_input = bwd_input;
    }
    // The received cotangent (the last input of a backward that takes one) and the input cotangent
    // it returns are activations: laid out like the residual stream, so that every stage's group
    // splits and joins them the same way.
    if (residual) {
      for (ir::Function* g : {&bwd, bwd_input, &bwd_weight}) {
        if (g == nullptr) continue;
        if (!sp.has_loss) g->arg_attrs.back().set("sdy.sharding", *residual);
        if (!sp.embeds && g != &bwd_weight) g->set_result_sharding(g == &bwd ? n : 0, *residual);
      }
    }
    stages_.push_back(std::move(sp));
  }
}

const StageProgram& StagedModel::stage(int64_t virtual_stage) const {
  if (virtual_stage < 0 || virtual_stage >= virtual_stages())
    support::fail("mpmd::StagedModel: no virtual stage {} (the model is cut into {})", virtual_stage,
                  virtual_stages());
  return stages_[static_cast<size_t>(virtual_stage)];
}

}  // namespace tessera::mpmd
