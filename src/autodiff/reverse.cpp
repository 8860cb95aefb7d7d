// The reverse transform: copy f's forward ops into f_grad, then walk them backwards applying each
// op's VJP rule (rules.h), summing cotangents where a value is used more than once.
#include "autodiff/reverse.h"

#include <functional>

#include <array>
#include <unordered_map>
#include <unordered_set>

#include "autodiff/rules.h"
#include "ir/clone.h"
#include "ir/quantize.h"
#include "transforms/simplify.h"

namespace tessera::autodiff {

using ir::Op;
using ir::Value;

// Tokens and tuples carry no cotangent (their element field is a placeholder).
bool is_differentiable(const ir::Type& t) { return t.is_tensor() && ir::is_float(t.element); }

Tensor full_like(ir::Builder& b, const ir::Type& t, double v) {
  return ir::broadcast_to(b.scalar(t.element, v), t.shape);
}

Tensor zeros_like(ir::Builder& b, const ir::Type& t) { return full_like(b, t, 0); }

Tensor VjpContext::dy(size_t i) const {
  const auto& c = cotangents_.at(i);
  return c ? *c : zeros_like(b, y(i).type());
}

void VjpContext::add(size_t i, const Tensor& cotangent) {
  if (!is_differentiable(x(i).type())) return;
  TESSERA_CHECK(cotangent.type() == x(i).type(), "{}: cotangent {} for operand {} of {}",
                op.name(), ir::to_string(cotangent.type()), i, ir::to_string(x(i).type()));
  auto& slot = out_.at(i);
  slot = slot ? *slot + cotangent : cotangent;
}

// The forward copy's collectives get channel ids of their own: ids are unique in a module.
void renumber_channels(ir::Module& module, ir::Op& op) {
  if (const auto* ch = op.attrs().find<ir::ChannelHandle>("channel_handle"); ch && ch->handle > 0)
    op.attrs().set("channel_handle", ir::ChannelHandle{++module.channel_ids, ch->type});
  for (const auto& r : op.regions())
    for (const auto& inner : r->ops()) renumber_channels(module, *inner);
}

namespace {

using Rule = void (*)(VjpContext&);
constexpr std::array<Rule, ir::kNumOpKinds> kRules = {
#define OP(e, spelling, arity, traits) &vjp_##e,
#include "ir/ops.def"
#undef OP
};

std::vector<size_t> parameters_to_differentiate(const ir::Function& f, const ReverseOptions& o) {
  std::vector<size_t> wrt = o.wrt;
  if (wrt.empty())
    for (size_t i = 0; i < f.num_parameters(); ++i)
      if (is_differentiable(f.parameter(i)->type())) wrt.push_back(i);
  for (size_t i : wrt) {
    if (i >= f.num_parameters())
      support::fail("@{} has {} parameters; there is no parameter {} to differentiate", f.name(),
                    f.num_parameters(), i);
    const ir::Type& t = f.parameter(i)->type();
    if (!is_differentiable(t))
      support::fail("parameter {} of @{} has type {}: only float parameters have gradients", i,
                    f.name(), ir::to_string(t));
  }
  return wrt;
}

ir::Function& build_reverse(ir::Module& module, ir::Function& g, const ir::Function& f,
                            const std::vector<size_t>& wrt, const ReverseOptions& o);

}  // namespace

ir::Function& reverse(ir::Module& module, const ir::Function& f, const ReverseOptions& o) {
  std::vector<size_t> wrt = parameters_to_differentiate(f, o);
  ir::Function& g = module.add_function(o.name.empty() ? f.name() + "_grad" : o.name);
  try {
    return build_reverse(module, g, f, wrt, o);
  } catch (...) {
    module.remove_function(g);  // no half-built gradient stays behind
    throw;
  }
}

namespace {

// Marks the ops from index `from` of `body` on (what op's VJP rule and the cotangent sums just
// emitted) with ReverseOptions::inherit_attrs copied from `op` and the backward mark.
void inherit(ir::Block& body, size_t from, const Op& op, const ReverseOptions& o) {
  if (o.inherit_attrs.empty() && o.backward_mark.empty()) return;
  const auto& ops = body.ops();
  for (size_t i = from; i < ops.size(); ++i) {
    ir::AttrMap& attrs = ops[i]->attrs();
    for (const std::string& name : o.inherit_attrs)
      for (const auto& [key, value] : op.attrs())
        if (key == name) attrs.set(key, value);
    if (!o.backward_mark.empty()) attrs.set(o.backward_mark, true);
  }
}

ir::Function& build_reverse(ir::Module& module, ir::Function& g, const ir::Function& f,
                            const std::vector<size_t>& wrt, const ReverseOptions& o) {
  const Op* ret = f.body().terminator();
  TESSERA_CHECK(ret != nullptr && ret->kind() == ir::OpKind::Return, "@{} has no return", f.name());
  bool loss = f.result_types.size() == 1 && f.result_types[0].rank() == 0 &&
              is_differentiable(f.result_types[0]);

  ir::FunctionBuilder b(module, g);
  ir::ValueMap map;
  for (size_t i = 0; i < f.num_parameters(); ++i) {
    map[f.parameter(i)] = g.add_parameter(f.parameter(i)->type());
    g.arg_attrs[i] = f.arg_attrs.at(i);  // shardings and any other argument attributes
  }
  std::unordered_map<const Value*, std::optional<Tensor>> cot;
  auto accumulate = [&](const Value* v, const Tensor& t) {
    auto& slot = cot[v];
    slot = slot ? *slot + t : t;
  };
  std::vector<Tensor> seeds;
  if (!loss)
    for (const ir::Type& t : f.result_types) seeds.push_back(b.param(t));

  for (const auto& op : f.body().ops())
    if (op.get() != ret) renumber_channels(module, *ir::clone_op(g.body(), *op, map));
  auto primal = [&](const Value* v) { return b.wrap(map.count(v) ? map.at(v) : const_cast<Value*>(v)); };
  // Rematerialized forward values for the backward: computed again at their first backward use
  // (clones are marked so CSE does not merge them back into the forward's values).
  ir::ValueMap again;
  std::unordered_set<const Value*> saved;  // contraction operands and results
  if (o.remat == Remat::kSaveDots)
    for (const auto& op : f.body().ops())
      if (op->kind() == ir::OpKind::DotGeneral) {
        for (const Value* x : op->operands()) saved.insert(x);
        saved.insert(op->result(0));
      }
  std::function<Value*(const Value*)> recompute = [&](const Value* v) -> Value* {
    const Op* def = v->defining_op();
    bool keep = o.remat == Remat::kNone || def == nullptr || def->parent != &f.body() ||
                !ir::has_trait(def->kind(), ir::kPure) || def->kind() == ir::OpKind::Constant || saved.count(v) ||
                (o.remat == Remat::kSaveKept && o.keep && o.keep(*v));
    if (keep) return primal(v).value();
    if (auto it = again.find(v); it != again.end()) return it->second;
    ir::ValueMap operands;
    for (const Value* x : def->operands()) operands[x] = recompute(x);
    Op* copy = ir::clone_op(g.body(), *def, operands);
    copy->attrs().set("tessera.remat", true);
    for (size_t i = 0; i < def->num_results(); ++i) again[def->result(i)] = copy->result(i);
    return again.at(v);
  };
  auto backward_primal = [&](const Value* v) { return b.wrap(recompute(v)); };

  if (loss) {
    accumulate(ret->operand(0), b.scalar(f.result_types[0].element, 1));
  } else {
    for (size_t i = 0; i < seeds.size(); ++i)
      if (is_differentiable(seeds[i].type())) accumulate(ret->operand(i), seeds[i]);
  }

  const auto& ops = f.body().ops();
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    const Op& op = **it;
    if (&op == ret) continue;
    std::vector<std::optional<Tensor>> result_cots;
    bool any = false;
    for (Value* r : op.results()) {
      auto found = cot.find(r);
      result_cots.push_back(found == cot.end() ? std::nullopt : found->second);
      any = any || result_cots.back().has_value();
    }
    // No cotangent flows past an op marked constant to differentiation (ir::stop_gradient).
    if (!any || op.attrs().has(ir::kStopGradient)) continue;
    std::vector<Tensor> operands, results;
    std::vector<const Value*> read = {op.operands().begin(), op.operands().end()};
    for (const Value* v : implicit_operands(op)) read.push_back(v);
    // From here on (rematerialized forward values included) the ops emitted are op's backward.
    size_t emitted_from = g.body().ops().size();
    for (const Value* v : read) operands.push_back(backward_primal(v));
    for (Value* v : op.results()) results.push_back(backward_primal(v));
    std::vector<std::optional<Tensor>> operand_cots(read.size());
    VjpContext ctx(b, op, operands, results, result_cots, operand_cots);
    ir::refuse_unlowered_quantized(op, "gradient (reverse mode)");
    kRules[static_cast<size_t>(op.kind())](ctx);
    for (size_t j = 0; j < operand_cots.size(); ++j)
      if (operand_cots[j]) accumulate(read[j], *operand_cots[j]);
    inherit(g.body(), emitted_from, op, o);
  }

  std::vector<Tensor> outputs;
  if (o.return_value)
    for (Value* v : ret->operands()) outputs.push_back(primal(v));
  for (size_t i : wrt) {
    const Value* p = f.parameter(i);
    auto found = cot.find(p);
    Tensor grad = found != cot.end() && found->second ? *found->second : zeros_like(b, p->type());
    // Each gradient is laid out like its parameter (what verify_gradient_shardings checks), or as
    // the caller asks (gradient_sharding; verify_gradient_shardings does not apply then).
    std::optional<ir::Sharding> s = o.gradient_sharding ? o.gradient_sharding(i) : f.arg_sharding(i);
    if (s) grad = ir::constrain(grad, *s);
    outputs.push_back(grad);
  }
  std::vector<Value*> values;
  for (const Tensor& t : outputs) values.push_back(t.value());
  g.set_results(values);
  if (o.simplify) transforms::simplify(g);  // gradient programs print small: no dead or repeated work
  return g;
}

}  // namespace

}  // namespace tessera::autodiff
