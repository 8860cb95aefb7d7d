// Named computations: emitting them (named_call, scan_calls), inlining them with their marks
// (flatten) and differentiating the whole step so the backward keeps the marks (whole_step).
#include "mpmd/program.h"

#include <algorithm>
#include <memory>
#include <unordered_set>

#include <fmt/ranges.h>

#include "autodiff/reverse.h"
#include "ir/clone.h"
#include "support/error.h"

namespace tessera::mpmd {

using ir::Op;
using ir::Tensor;
using support::fail;

std::vector<Tensor> named_call(ir::Builder& b, const ir::Function& callee, const std::vector<Tensor>& args,
                               std::optional<int64_t> call_counter, const std::string& name) {
  if (call_counter && *call_counter < 0)
    fail("named computation '{}': call counter {} is negative", name.empty() ? callee.name() : name,
         *call_counter);
  std::vector<Tensor> results = ir::call(b, callee, args);
  // The call op is the block's last one; results may be empty (a call with no results), so the
  // op is found through the block, not through a result.
  Op& op = *b.block().ops().back();
  op.attrs().set(kNameAttr, name.empty() ? callee.name() : name);
  if (call_counter) op.attrs().set(kCallCounterAttr, *call_counter);
  return results;
}

ScanResult scan_calls(ir::Builder& b, const ir::Function& callee, int64_t count, std::vector<Tensor> carry,
                      const std::function<std::vector<Tensor>(int64_t)>& inputs, const std::string& name) {
  if (count < 1) fail("scan_calls of @{}: {} calls; a microbatch loop needs at least one", callee.name(), count);
  if (callee.result_types.size() < carry.size())
    fail("scan_calls of @{}: {} carried values, but @{} returns only {} results", callee.name(), carry.size(),
         callee.name(), callee.result_types.size());
  ScanResult out;
  for (int64_t i = 0; i < count; ++i) {
    std::vector<Tensor> args = carry;
    for (const Tensor& x : inputs(i)) args.push_back(x);
    std::vector<Tensor> r = named_call(b, callee, args, i, name);
    carry.assign(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(carry.size()));
    out.ys.emplace_back(r.begin() + static_cast<std::ptrdiff_t>(carry.size()), r.end());
  }
  out.carry = std::move(carry);
  return out;
}

std::string Origin::to_string() const {
  std::string s = name;
  if (call_counter >= 0) s += fmt::format("#{}", call_counter);
  if (transpose) s += "ᵀ";
  if (weight) s += "w";
  return s;
}

std::optional<Origin> origin_of(const Op& op) {
  const std::string* name = op.attrs().find<std::string>(kNameAttr);
  if (name == nullptr) {
    if (op.kind() != ir::OpKind::Call) return std::nullopt;
    name = &op.attrs().get<std::string>("callee");  // a plain call is named by its callee
  }
  Origin o{*name};
  if (const int64_t* c = op.attrs().find<int64_t>(kCallCounterAttr)) o.call_counter = *c;
  o.transpose = op.attrs().get_or<bool>(kTransposeAttr, false);
  o.weight = op.attrs().get_or<bool>(kWeightAttr, false);
  return o;
}

void strip_marks(Op& op) {
  op.attrs().erase(kNameAttr);
  op.attrs().erase(kCallCounterAttr);
  op.attrs().erase(kTransposeAttr);
}

namespace {

// Inlines `fn`'s body into `into`, its parameters bound to `args`; each copied op gets `mark`'s
// attributes unless it already has a name (an op of an inner call keeps the outermost name, which
// `mark` carries: marks are applied from the outside in). Returns the values fn returns.
std::vector<ir::Value*> inline_body(const ir::Module& module, const ir::Function& fn,
                                    const std::vector<ir::Value*>& args, ir::Block& into,
                                    const std::optional<Origin>& mark, std::vector<std::string>& stack) {
  if (std::find(stack.begin(), stack.end(), fn.name()) != stack.end())
    fail("named computation @{} calls itself (through {}); MPMD programs cannot recurse", fn.name(),
         fmt::join(stack, " -> "));
  stack.push_back(fn.name());
  ir::ValueMap map;
  for (size_t i = 0; i < fn.num_parameters(); ++i) map[fn.parameter(i)] = args.at(i);
  const Op* ret = fn.body().terminator();
  for (const auto& op : fn.body().ops()) {
    if (op.get() == ret) break;
    if (op->kind() == ir::OpKind::Call) {
      const std::string& callee = op->attrs().get<std::string>("callee");
      const ir::Function* g = module.find_function(callee);
      if (g == nullptr) fail("@{}: call of @{}, which is not defined", fn.name(), callee);
      std::vector<ir::Value*> call_args;
      for (ir::Value* v : op->operands()) call_args.push_back(map.count(v) ? map.at(v) : v);
      std::optional<Origin> inner = mark ? mark : origin_of(*op);
      std::vector<ir::Value*> results = inline_body(module, *g, call_args, into, inner, stack);
      for (size_t i = 0; i < results.size(); ++i) map[op->result(i)] = results[i];
      continue;
    }
    Op* copy = ir::clone_op(into, *op, map);
    if (mark) {
      copy->attrs().set(kNameAttr, mark->name);
      if (mark->call_counter >= 0) copy->attrs().set(kCallCounterAttr, mark->call_counter);
      else copy->attrs().erase(kCallCounterAttr);
    }
  }
  TESSERA_CHECK(ret != nullptr && ret->kind() == ir::OpKind::Return, "@{} has no return", fn.name());
  std::vector<ir::Value*> out;
  for (ir::Value* v : ret->operands()) out.push_back(map.count(v) ? map.at(v) : v);
  stack.pop_back();
  return out;
}

}  // namespace

ir::Function& flatten(ir::Module& module, const ir::Function& step, const std::string& name) {
  if (module.find_function(name)) fail("flatten @{}: the module already has a function @{}", step.name(), name);
  ir::Function& flat = module.add_function(name);
  try {
    std::vector<ir::Value*> args;
    for (size_t i = 0; i < step.num_parameters(); ++i) args.push_back(flat.add_parameter(step.parameter(i)->type()));
    flat.arg_attrs = step.arg_attrs;
    std::vector<std::string> stack;
    std::vector<ir::Value*> results = inline_body(module, step, args, flat.body(), std::nullopt, stack);
    flat.set_results(results);
    flat.result_attrs = step.result_attrs;
  } catch (...) {
    module.remove_function(flat);
    throw;
  }
  return flat;
}

ir::Function& whole_step(ir::Module& module, const ir::Function& step, const std::vector<size_t>& wrt,
                         const std::string& name, bool remat) {
  std::string base = name.empty() ? step.name() + "_whole" : name;
  ir::Function& flat = flatten(module, step, base + "_forward");
  autodiff::ReverseOptions o;
  o.wrt = wrt;
  o.return_value = true;
  o.name = base;
  o.inherit_attrs = {kNameAttr, kCallCounterAttr};
  o.backward_mark = kTransposeAttr;
  if (remat) {
    // Kept: every value read by an op of another call (or by glue, or returned) and every value
    // glue makes; so a call's recomputation never reaches into another call's ops.
    auto kept = std::make_shared<std::unordered_set<const ir::Value*>>();
    for (const auto& op : flat.body().ops()) {
      const std::optional<Origin> mine = origin_of(*op);  // the call (the forward has no transposes)
      if (!mine)
        for (const ir::Value* r : op->results()) kept->insert(r);
      for (const ir::Value* x : op->operands())
        if (const ir::Op* def = x->defining_op(); def && (!mine || origin_of(*def) != mine)) kept->insert(x);
    }
    o.remat = autodiff::Remat::kSaveKept;
    o.keep = [kept](const ir::Value& v) { return kept->count(&v) > 0; };
  }
  try {
    ir::Function& whole = autodiff::reverse(module, flat, o);
    module.remove_function(flat);  // only the whole step is needed; its forward is inside it
    return whole;
  } catch (...) {
    module.remove_function(flat);
    throw;
  }
}

std::vector<const ir::Value*> outer_uses(const ir::Op& op) {
  std::vector<const ir::Value*> out;
  for (const ir::Value* v : op.operands())
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  for (const ir::Value* v : ir::captures_of(op))
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  return out;
}

}  // namespace tessera::mpmd
