// The CausalLM's step as named computations (model_step.h).
#include "mpmd/model_step.h"

#include <fmt/format.h>

#include <cstring>

#include "ir/builder.h"
#include "mpmd/program.h"
#include "support/error.h"

namespace tessera::mpmd {

using ir::Tensor;

namespace {

// Whether parameter `name` belongs to the piece of layers [first, end), the first piece `embeds`,
// the last `has_loss`.
bool in_piece(const std::string& name, int64_t first, int64_t end, bool embeds, bool has_loss) {
  if (name == "embed") return embeds;
  if (name == "norm" || name == "head") return has_loss;
  // "layers.<i>.<rest>"
  size_t dot = name.find('.', 7);
  int64_t layer = std::stoll(name.substr(7, dot - 7));
  return layer >= first && layer < end;
}

// Rows i, i+M, i+2M, ... of a batch-major array: accumulate's microbatch i of M.
ir::Literal microbatch_rows(const ir::Literal& batch, int64_t i, int64_t microbatches) {
  const std::vector<int64_t>& shape = batch.shape();
  if (shape.empty() || microbatches < 1 || shape[0] % microbatches != 0 || i < 0 || i >= microbatches)
    support::fail("mpmd::microbatch_rows: cannot take microbatch {} of {} from an array of type {}", i, microbatches,
                  ir::to_string(batch.type()));
  std::vector<int64_t> part_shape = shape;
  part_shape[0] = shape[0] / microbatches;
  ir::Literal part(ir::Type(batch.element(), part_shape));
  const size_t row = batch.bytes().size() / static_cast<size_t>(shape[0]);
  for (int64_t r = 0; r < part_shape[0]; ++r)
    std::memcpy(part.bytes().data() + static_cast<size_t>(r) * row,
                batch.bytes().data() + static_cast<size_t>(i + r * microbatches) * row, row);
  return part;
}

}  // namespace

const ir::Function& ModelStep::step() const { return *module->find_function("step"); }

std::vector<ir::Literal> ModelStep::batch_inputs(const ir::Literal& tokens, const ir::Literal& targets) const {
  std::vector<ir::Literal> out;
  for (int64_t i = 0; i < microbatches; ++i) out.push_back(microbatch_rows(tokens, i, microbatches));
  for (int64_t i = 0; i < microbatches; ++i) out.push_back(microbatch_rows(targets, i, microbatches));
  return out;
}

ModelStep model_step(const nn::CausalLM& model, int64_t virtual_stages, int64_t microbatches,
                     const std::optional<nn::ShardingPlan>& plan) {
  const nn::Config& c = model.config();
  c.validate();
  // The stages pass only the residual stream on: an MoE block's load-balancing loss would be lost.
  if (c.experts > 0)
    support::fail("pipeline of the CausalLM: MoE blocks ({} experts) are not supported; their load-balancing loss "
                  "does not cross stages", c.experts);
  if (virtual_stages < 1 || c.layers % virtual_stages != 0)
    support::fail("pipeline of the CausalLM: {} layers do not split into {} pipeline stages of whole layers",
                  c.layers, virtual_stages);
  if (microbatches < 1 || c.batch % microbatches != 0)
    support::fail("pipeline of the CausalLM: {} microbatches do not divide the batch of {}", microbatches, c.batch);
  nn::Config mc = c;
  mc.batch = c.batch / microbatches;
  const nn::CausalLM micro(mc);
  const ir::Type tokens_type = ir::i32({mc.batch, mc.seq});
  const int64_t per_piece = c.layers / virtual_stages;

  ModelStep out;
  out.module = std::make_unique<ir::Module>("pipeline");
  // The plan's layouts (none: plain single-device programs): parameters as it lays them out, the
  // tokens and targets by its input rule, the residual stream like the tokens with features whole.
  std::optional<ir::Sharding> tokens_sharding, targets_sharding, residual;
  auto param_sharding = [&](const nn::ParamSpec& p) -> std::optional<ir::Sharding> {
    return plan ? std::optional(plan->parameter(p)) : std::nullopt;
  };
  // A stage's moments are laid out like its parameters (fragment_trainer.h); a plan that shards
  // the weight update apart from them (nn::zero1) would silently train as data parallel.
  if (plan && plan->state)
    support::fail("pipeline of the CausalLM: stage plan '{}' shards the weight update apart from the parameters, "
                  "which pipeline stages do not do; use dp or tp within stages",
                  plan->name);
  if (plan) {
    out.module->add_mesh(plan->mesh);
    tokens_sharding = plan->input({"tokens", tokens_type});
    targets_sharding = plan->input({"targets", tokens_type});
    residual = tokens_sharding;
    residual->dims.emplace_back();
    const int64_t split = tokens_sharding->dims.empty() ? 1 : ir::dim_shards(*tokens_sharding, 0, plan->mesh);
    if (mc.batch % split != 0)
      support::fail("pipeline of the CausalLM: a microbatch of {} rows ({} / {} microbatches) does not split over the "
                    "{} devices that share the batch in stage plan '{}'",
                    mc.batch, c.batch, microbatches, split, plan->name);
  }
  out.parameters = model.parameters();
  out.microbatches = microbatches;
  const std::vector<nn::ParamSpec>& specs = out.parameters;
  std::vector<const ir::Function*> pieces;
  std::vector<std::vector<size_t>> owned;  // per piece: its parameters, in order
  for (int64_t v = 0; v < virtual_stages; ++v) {
    const int64_t first = v * per_piece, end = first + per_piece;
    const bool embeds = v == 0, has_loss = v == virtual_stages - 1;
    std::vector<size_t> own;
    std::vector<nn::ParamSpec> own_specs;
    for (size_t i = 0; i < specs.size(); ++i)
      if (in_piece(specs[i].name, first, end, embeds, has_loss)) {
        own.push_back(i);
        own_specs.push_back(specs[i]);
      }
    out.virtual_stages.push_back(fmt::format("stage{}", v));
    owned.push_back(own);
    pieces.push_back(&ir::build_function(*out.module, out.virtual_stages.back(), [&](ir::FunctionBuilder& f) {
      std::vector<Tensor> params;
      for (const nn::ParamSpec& p : own_specs) params.push_back(f.param(ir::Type(c.dtype, p.shape), param_sharding(p)));
      nn::Weights w(own_specs, params);
      Tensor x = embeds ? micro.embed(w, f.param(tokens_type, tokens_sharding), residual)
                        : f.param(ir::Type(c.dtype, {mc.batch, mc.seq, c.d_model}), residual);
      for (int64_t l = first; l < end; ++l) x = micro.block(w, l, x, residual);
      if (!has_loss) return x;
      return nn::cross_entropy(micro.head(w, x), f.param(tokens_type, targets_sharding));
    }));
  }
  ir::build_function(*out.module, "step", [&](ir::FunctionBuilder& f) {
    std::vector<Tensor> params, tokens, targets;
    for (const nn::ParamSpec& p : specs) params.push_back(f.param(ir::Type(c.dtype, p.shape), param_sharding(p)));
    for (int64_t i = 0; i < microbatches; ++i) tokens.push_back(f.param(tokens_type, tokens_sharding));
    for (int64_t i = 0; i < microbatches; ++i) targets.push_back(f.param(tokens_type, targets_sharding));
    std::vector<Tensor> xs = tokens;
    for (int64_t v = 0; v < virtual_stages; ++v) {
      ScanResult r = scan_calls(f, *pieces[static_cast<size_t>(v)], microbatches, {}, [&](int64_t i) {
        std::vector<Tensor> args;
        for (size_t k : owned[static_cast<size_t>(v)]) args.push_back(params[k]);
        args.push_back(xs[static_cast<size_t>(i)]);
        if (v == virtual_stages - 1) args.push_back(targets[static_cast<size_t>(i)]);
        return args;
      });
      for (int64_t i = 0; i < microbatches; ++i) xs[static_cast<size_t>(i)] = r.ys[static_cast<size_t>(i)][0];
    }
    Tensor loss = xs[0];  // accumulate's sum and scaling (nn/capture.cpp)
    for (int64_t i = 1; i < microbatches; ++i) loss = loss + xs[static_cast<size_t>(i)];
    return loss * (1.0 / static_cast<double>(microbatches));
  });
  return out;
}

}  // namespace tessera::mpmd
