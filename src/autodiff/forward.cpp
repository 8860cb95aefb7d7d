// The forward transform: copy f's ops into f_jvp in order, each followed by its JVP rule
// (jvp_rules.h), which turns the tangents of its operands into the tangents of its results.
#include "autodiff/forward.h"

#include <array>
#include <unordered_map>

#include "autodiff/jvp_rules.h"
#include "ir/clone.h"
#include "ir/quantize.h"
#include "transforms/simplify.h"

namespace tessera::autodiff {

using ir::Op;
using ir::Value;

Tensor JvpContext::dx(size_t i) const {
  const auto& t = tangents_.at(i);
  return t ? *t : zeros_like(b, x(i).type());
}

void JvpContext::set(size_t i, const std::optional<Tensor>& tangent) {
  if (!tangent || !is_differentiable(y(i).type())) return;
  TESSERA_CHECK(tangent->type() == y(i).type(), "{}: tangent {} for result {} of {}", op.name(),
                ir::to_string(tangent->type()), i, ir::to_string(y(i).type()));
  out_.at(i) = tangent;
}

std::vector<Tensor> JvpContext::again(const std::vector<Tensor>& operands, std::vector<ir::Type> results) {
  if (results.empty())
    for (const Tensor& r : results_) results.push_back(r.type());
  ir::AttrMap attrs = op.attrs();
  if (const auto* ch = attrs.find<ir::ChannelHandle>("channel_handle"); ch != nullptr && ch->handle > 0)
    attrs.set("channel_handle", ir::ChannelHandle{b.next_channel_id(), ch->type});
  return b.emit_with_regions(op.kind(), operands, std::move(attrs), std::move(results), [&](Op& copy) {
    ir::ValueMap map;
    for (const auto& region : op.regions()) {
      ir::Block& block = copy.add_region();
      for (const auto& arg : region->arguments()) map[arg.get()] = block.add_argument(arg->type());
      for (const auto& inner : region->ops()) renumber_channels(b.module(), *ir::clone_op(block, *inner, map));
    }
  });
}

std::optional<Tensor> sum_of(std::initializer_list<std::optional<Tensor>> terms) {
  std::optional<Tensor> total;
  for (const auto& t : terms)
    if (t) total = total ? *total + *t : *t;
  return total;
}

Tensor indicator(const Tensor& mask, const ir::Type& type) {
  ir::Builder& b = mask.builder();
  return ir::select(mask, full_like(b, type, 1), zeros_like(b, type));
}

void linear(JvpContext& c) {
  std::vector<Tensor> operands;
  for (size_t i = 0; i < c.num_operands(); ++i)
    operands.push_back(is_differentiable(c.x(i).type()) ? c.dx(i) : c.x(i));
  std::vector<Tensor> dys = c.again(operands);
  for (size_t k = 0; k < dys.size(); ++k) c.set(k, dys[k]);
}

void map_tangents(JvpContext& c) {
  std::vector<size_t> present;
  std::vector<Tensor> operands;
  std::vector<ir::Type> types;
  for (size_t i = 0; i < c.num_operands(); ++i)
    if (c.has_tangent(i)) {
      present.push_back(i);
      operands.push_back(*c.tangent(i));
      types.push_back(c.y(i).type());
    }
  std::vector<Tensor> dys = c.again(operands, types);
  for (size_t j = 0; j < present.size(); ++j) c.set(present[j], dys[j]);
}

namespace {

using Rule = void (*)(JvpContext&);
constexpr std::array<Rule, ir::kNumOpKinds> kRules = {
#define OP(e, spelling, arity, traits) &jvp_##e,
#include "ir/ops.def"
#undef OP
};

}  // namespace

JvpValues jvp_block(ir::Builder& into, const ir::Block& from, const std::vector<Tensor>& args,
                    const std::vector<std::optional<Tensor>>& arg_tangents) {
  ir::ValueMap map;
  std::unordered_map<const Value*, Tensor> tangents;
  for (size_t i = 0; i < args.size(); ++i) {
    map[from.argument(i)] = args[i].value();
    if (arg_tangents.at(i)) tangents.emplace(from.argument(i), *arg_tangents[i]);
  }
  auto primal = [&](Value* v) { return into.wrap(map.count(v) ? map.at(v) : v); };
  auto tangent_of = [&](const Value* v) {
    auto found = tangents.find(v);
    return found == tangents.end() ? std::nullopt : std::optional<Tensor>(found->second);
  };
  const Op* ret = from.terminator();
  TESSERA_CHECK(ret != nullptr && ret->kind() == ir::OpKind::Return, "a block without a return");
  for (const auto& op : from.ops()) {
    if (op.get() == ret) continue;
    Op* copy = ir::clone_op(into.block(), *op, map);
    renumber_channels(into.module(), *copy);
    std::vector<const Value*> read = {op->operands().begin(), op->operands().end()};
    for (const Value* v : implicit_operands(*op)) read.push_back(v);
    std::vector<std::optional<Tensor>> operand_tangents;
    bool any = false;
    for (const Value* v : read) {
      operand_tangents.push_back(tangent_of(v));
      any = any || operand_tangents.back().has_value();
    }
    // Nothing flows in, or the op is a constant to differentiation (ir::stop_gradient): every
    // result's tangent is zero.
    if (!any || op->attrs().has(ir::kStopGradient)) continue;
    std::vector<Tensor> operands, results;
    for (const Value* v : read) operands.push_back(primal(const_cast<Value*>(v)));
    for (size_t k = 0; k < op->num_results(); ++k) results.push_back(into.wrap(copy->result(k)));
    std::vector<std::optional<Tensor>> result_tangents(op->num_results());
    JvpContext ctx(into, *op, operands, results, operand_tangents, result_tangents);
    ir::refuse_unlowered_quantized(*op, "forward mode (JVP)");
    kRules[static_cast<size_t>(op->kind())](ctx);
    for (size_t k = 0; k < result_tangents.size(); ++k)
      if (result_tangents[k]) tangents.emplace(op->result(k), *result_tangents[k]);
  }
  JvpValues out;
  for (Value* v : ret->operands()) {
    out.primals.push_back(primal(v));
    out.tangents.push_back(tangent_of(v));
  }
  return out;
}

namespace {

ir::Function& build_forward(ir::Module& module, ir::Function& g, const ir::Function& f) {
  ir::FunctionBuilder b(module, g);
  std::vector<Tensor> args;
  std::vector<std::optional<Tensor>> arg_tangents(f.num_parameters());
  for (size_t i = 0; i < f.num_parameters(); ++i) {
    args.push_back(b.wrap(g.add_parameter(f.parameter(i)->type())));
    g.arg_attrs[i] = f.arg_attrs.at(i);  // shardings and any other argument attributes
  }
  for (size_t i = 0; i < f.num_parameters(); ++i)
    if (is_differentiable(f.parameter(i)->type()))
      arg_tangents[i] = b.param(f.parameter(i)->type(), f.arg_sharding(i));  // laid out like x_i

  JvpValues v = jvp_block(b, f.body(), args, arg_tangents);
  std::vector<Value*> results;
  std::vector<std::optional<ir::Sharding>> shardings;
  for (size_t k = 0; k < v.primals.size(); ++k) {
    results.push_back(v.primals[k].value());
    shardings.push_back(f.result_sharding(k));
  }
  for (size_t k = 0; k < v.primals.size(); ++k) {
    if (!is_differentiable(v.primals[k].type())) continue;
    results.push_back((v.tangents[k] ? *v.tangents[k] : zeros_like(b, v.primals[k].type())).value());
    shardings.push_back(f.result_sharding(k));
  }
  g.set_results(results);
  for (size_t k = 0; k < f.result_attrs.size() && k < v.primals.size(); ++k) g.result_attrs[k] = f.result_attrs[k];
  for (size_t k = v.primals.size(); k < results.size(); ++k)
    if (shardings[k]) g.set_result_sharding(k, *shardings[k]);
  transforms::simplify(g);
  return g;
}

}  // namespace

ir::Function& forward(ir::Module& module, const ir::Function& f, const ForwardOptions& o) {
  ir::Function& g = module.add_function(o.name.empty() ? f.name() + "_jvp" : o.name);
  try {
    return build_forward(module, g, f);
  } catch (...) {
    module.remove_function(g);  // no half-built JVP stays behind
    throw;
  }
}

}  // namespace tessera::autodiff
