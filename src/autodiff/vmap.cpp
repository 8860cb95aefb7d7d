// The vmap transform: check the options (axes, batch size), give f_vmap its batched parameters and
// move each one's batch to dimension 0, copy f's ops in order (an op that sees a batched value goes
// through its rule in vmap_rules.h, any other is copied as is), and move each result's batch to its
// out_axes position. Shardings of parameters and results gain a replicated batch dimension.
#include "autodiff/vmap.h"

#include <array>
#include <numeric>

#include "autodiff/vmap_rules.h"
#include "ir/quantize.h"
#include "transforms/simplify.h"

namespace tessera::autodiff {

using ir::Op;
using ir::Value;

void refuse_vmap(const ir::Op& op, std::string_view why) {
  support::fail("cannot vmap {}: {}", op.name(), why);
}

ir::Type VmapContext::batched_type(const ir::Type& t) const {
  std::vector<int64_t> shape = t.shape;
  shape.insert(shape.begin(), batch());
  ir::Type out = t.with_shape(shape);
  if (t.quant && t.quant->axis) {  // a per-axis quantization dimension moves with the batch in front
    ir::Quantization q = *t.quant;
    q.axis = *q.axis + 1;
    out.quant = std::make_shared<const ir::Quantization>(std::move(q));
  }
  return out;
}

Tensor VmapContext::bx(size_t i) const { return batched(i) ? x(i) : batch_broadcast(x(i), batch()); }

void VmapContext::set(size_t k, const Tensor& value, bool is_batched) {
  const ir::Type want = is_batched ? batched_type(result_type(k)) : result_type(k);
  TESSERA_CHECK(value.type() == want, "vmap of {}: result {} is {}, expected {}", op.name(), k,
                ir::to_string(value.type()), ir::to_string(want));
  out_.at(k) = BValue{value, is_batched};
}

std::vector<Tensor> VmapContext::again(const std::vector<Tensor>& operands, std::optional<ir::AttrMap> attrs,
                                       std::optional<std::vector<ir::Type>> results) {
  if (!results) {
    results.emplace();
    for (size_t k = 0; k < op.num_results(); ++k) results->push_back(batched_type(result_type(k)));
  }
  if (!attrs) attrs = op.attrs();
  if (!op.regions().empty() && captures_batched(op, env))
    fail("its region reads a batched value from outside; only its operands may be batched");
  Op* copy = nullptr;
  std::vector<Tensor> out =
      b.emit_with_regions(op.kind(), operands, std::move(*attrs), std::move(*results), [&](Op& o) {
        for (const auto& region : op.regions()) {
          ir::Block& block = o.add_region();
          for (const auto& arg : region->arguments()) env.map[arg.get()] = block.add_argument(arg->type());
          for (const auto& inner : region->ops()) ir::clone_op(block, *inner, env.map);
        }
        copy = &o;
      });
  renumber_channels(b.module(), *copy);
  return out;
}

Tensor batch_broadcast(const Tensor& t, int64_t batch) {
  std::vector<int64_t> shape = t.shape(), dims(static_cast<size_t>(t.rank()));
  shape.insert(shape.begin(), batch);
  std::iota(dims.begin(), dims.end(), 1);
  return ir::broadcast_in_dim(t, shape, dims);
}

Tensor move_axis(const Tensor& t, int64_t from, int64_t to) {
  if (from == to) return t;
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < t.rank(); ++d)
    if (d != from) perm.push_back(d);
  perm.insert(perm.begin() + to, from);
  return ir::transpose(t, perm);
}

std::vector<int64_t> shifted(const std::vector<int64_t>& dims, std::optional<int64_t> front) {
  std::vector<int64_t> out;
  if (front) out.push_back(*front);
  for (int64_t d : dims) out.push_back(d + 1);
  return out;
}

ir::Sharding with_batch_dim(ir::Sharding s, int64_t at, bool open) {
  ir::DimSharding d;
  d.open = open;
  s.dims.insert(s.dims.begin() + at, d);
  return s;
}

bool captures_batched(const ir::Op& op, const VmapEnv& env) {
  for (const auto& region : op.regions())
    for (const auto& inner : region->ops()) {
      for (const Value* v : inner->operands())
        if (v->owner_block() != region.get() &&
            (v->defining_op() == nullptr || v->defining_op()->parent != region.get()) && env.batched.count(v))
          return true;
      if (captures_batched(*inner, env)) return true;
    }
  return false;
}

void elementwise(VmapContext& c) {
  const ir::Type& out = c.result_type();
  std::vector<Tensor> operands;
  for (size_t i = 0; i < c.num_operands(); ++i) {
    int64_t rank = c.op.operand(i)->type().rank();
    if (c.batched(i) && rank < out.rank()) {  // a batched scalar predicate or bound: one per example
      std::vector<int64_t> shape = out.shape;
      shape.insert(shape.begin(), c.batch());
      operands.push_back(ir::broadcast_in_dim(c.x(i), shape, {0}));
    } else if (!c.batched(i) && rank < out.rank()) {
      operands.push_back(c.x(i));  // a shared scalar predicate or bound stays a scalar
    } else {
      operands.push_back(c.bx(i));
    }
  }
  c.set(0, c.again(operands)[0]);
}

void each_operand(VmapContext& c) {
  std::vector<Tensor> operands;
  std::vector<ir::Type> types;
  for (size_t i = 0; i < c.num_operands(); ++i) {
    operands.push_back(c.x(i));
    types.push_back(c.x(i).type());
  }
  std::vector<Tensor> ys = c.again(operands, std::nullopt, types);
  for (size_t k = 0; k < ys.size(); ++k) c.set(k, ys[k], c.batched(k));
}

namespace {

using Rule = void (*)(VmapContext&);
constexpr std::array<Rule, ir::kNumOpKinds> kRules = {
#define OP(e, spelling, arity, traits) &vmap_##e,
#include "ir/ops.def"
#undef OP
};

// A batched result of an op marked constant to differentiation (ir::stop_gradient) stays one:
// the op the rule emitted for it is marked; a value the rule passed through from elsewhere goes
// through an optimization_barrier that carries the mark, so the value's other readers keep their
// gradients.
Tensor stopped(ir::Builder& into, const Tensor& v, size_t emitted_from) {
  Op* def = v.value()->defining_op();
  const auto& ops = into.block().ops();
  for (size_t i = emitted_from; def != nullptr && i < ops.size(); ++i)
    if (ops[i].get() == def) {
      def->attrs().set(ir::kStopGradient, true);
      return v;
    }
  return ir::stop_gradient(ir::optimization_barrier({v})[0]);
}

}  // namespace

std::vector<BValue> vmap_block(ir::Builder& into, const ir::Block& from, VmapEnv& env,
                               const std::vector<BValue>& args) {
  auto lookup = [&](const Value* v) {
    auto found = env.map.find(v);
    return into.wrap(found == env.map.end() ? const_cast<Value*>(v) : found->second);
  };
  auto record = [&](const Value* v, const BValue& bv) {
    env.map[v] = bv.value.value();
    if (bv.batched) {
      env.batched.insert(v);
    } else {
      env.batched.erase(v);
    }
  };
  for (size_t i = 0; i < args.size(); ++i) record(from.argument(i), args[i]);
  const Op* ret = from.terminator();
  TESSERA_CHECK(ret != nullptr && ret->kind() == ir::OpKind::Return, "a block without a return");
  for (const auto& op : from.ops()) {
    if (op.get() == ret) continue;
    bool any = false;
    for (const Value* v : op->operands()) any = any || env.batched.count(v) != 0;
    if (!any && !captures_batched(*op, env)) {
      Op* copy = ir::clone_op(into.block(), *op, env.map);
      renumber_channels(into.module(), *copy);
      for (size_t k = 0; k < op->num_results(); ++k) env.batched.erase(op->result(k));
      continue;
    }
    std::vector<BValue> operands;
    for (const Value* v : op->operands()) operands.push_back({lookup(v), env.batched.count(v) != 0});
    std::vector<std::optional<BValue>> results(op->num_results());
    VmapContext ctx(into, *op, env, operands, results);
    ir::refuse_unlowered_quantized(*op, "vmap");
    const size_t emitted_from = into.block().ops().size();
    kRules[static_cast<size_t>(op->kind())](ctx);
    for (size_t k = 0; k < results.size(); ++k) {
      TESSERA_CHECK(results[k].has_value(), "vmap rule of {} left result {} unset", op->name(), k);
      if (op->attrs().has(ir::kStopGradient)) results[k]->value = stopped(into, results[k]->value, emitted_from);
      record(op->result(k), *results[k]);
    }
  }
  std::vector<BValue> out;
  for (const Value* v : ret->operands()) out.push_back({lookup(v), env.batched.count(v) != 0});
  return out;
}

namespace {

// An axis of a rank-`rank` array, negative counting from the end; nullopt when out of range.
std::optional<int64_t> normalize(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

ir::Type inserted(const ir::Type& t, int64_t at, int64_t size) {
  std::vector<int64_t> shape = t.shape;
  shape.insert(shape.begin() + at, size);
  return t.with_shape(shape);
}

struct Plan {
  std::vector<std::optional<int64_t>> in_axes, out_axes;  // normalized
  int64_t batch = 0;
};

Plan plan(const ir::Function& f, const VmapOptions& o) {
  const std::string& fn = f.name();
  size_t n = f.num_parameters();
  Plan p;
  p.in_axes = o.in_axes.empty() ? std::vector<std::optional<int64_t>>(n, int64_t{0}) : o.in_axes;
  if (p.in_axes.size() != n)
    support::fail("vmap of @{}: in_axes has {} entries for {} parameters", fn, p.in_axes.size(), n);
  if (!o.in_types.empty() && o.in_types.size() != n)
    support::fail("vmap of @{}: in_types has {} entries for {} parameters", fn, o.in_types.size(), n);
  p.batch = o.batch_size;
  std::optional<size_t> source;  // the parameter the batch size was read from
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    const ir::Type& t = f.parameter(i)->type();
    if (!p.in_axes[i]) {
      if (!o.in_types.empty() && o.in_types[i] != t)
        support::fail(
            "vmap of @{}: parameter {} is not batched (in_axes nullopt), so its type must be {}, not {}", fn,
            i, ir::to_string(t), ir::to_string(o.in_types[i]));
      continue;
    }
    any = true;
    auto axis = normalize(*p.in_axes[i], t.rank() + 1);
    if (!axis)
      support::fail("vmap of @{}: in_axes[{}] = {} is out of range for a batched parameter of rank {}", fn, i,
                    *p.in_axes[i], t.rank() + 1);
    p.in_axes[i] = axis;
    if (o.in_types.empty()) continue;
    const ir::Type& given = o.in_types[i];
    if (given.rank() != t.rank() + 1 || inserted(t, *axis, given.shape[static_cast<size_t>(*axis)]) != given)
      support::fail("vmap of @{}: parameter {} has type {}, which is not {} with a batch dimension at {}", fn,
                    i, ir::to_string(given), ir::to_string(t), *axis);
    int64_t size = given.shape[static_cast<size_t>(*axis)];
    if (p.batch != 0 && size != p.batch)
      support::fail(
          "vmap of @{}: batch sizes disagree: parameter {} has {} examples (dimension {} of {}), but {}", fn,
          i, size, *axis, ir::to_string(given),
          source ? fmt::format("parameter {} has {}", *source, p.batch)
                 : fmt::format("batch_size is {}", p.batch));
    if (p.batch == 0) source = i;
    p.batch = size;
  }
  if (!any) support::fail("vmap of @{}: no parameter is batched (every in_axes entry is nullopt)", fn);
  if (p.batch <= 0) support::fail("vmap of @{}: the batch size is unknown (give batch_size or in_types)", fn);
  size_t m = f.result_types.size();
  p.out_axes = o.out_axes.empty() ? std::vector<std::optional<int64_t>>(m, int64_t{0}) : o.out_axes;
  if (p.out_axes.size() != m)
    support::fail("vmap of @{}: out_axes has {} entries for {} results", fn, p.out_axes.size(), m);
  for (size_t k = 0; k < m; ++k) {
    if (!p.out_axes[k]) continue;
    int64_t rank = f.result_types[k].rank() + 1;
    auto axis = normalize(*p.out_axes[k], rank);
    if (!axis)
      support::fail("vmap of @{}: out_axes[{}] = {} is out of range for a batched result of rank {}", fn, k,
                    *p.out_axes[k], rank);
    p.out_axes[k] = axis;
  }
  return p;
}

ir::Function& build_vmap(ir::Module& module, ir::Function& g, const ir::Function& f, const Plan& p) {
  ir::FunctionBuilder b(module, g);
  VmapEnv env;
  env.batch = p.batch;
  std::vector<BValue> args;
  for (size_t i = 0; i < f.num_parameters(); ++i) {
    const ir::Type& t = f.parameter(i)->type();
    const auto& axis = p.in_axes[i];
    Tensor param = b.wrap(g.add_parameter(axis ? inserted(t, *axis, p.batch) : t));
    g.arg_attrs[i] = f.arg_attrs.at(i);  // shardings and any other argument attributes
    if (auto s = f.arg_sharding(i); s && axis)
      g.arg_attrs[i].set("sdy.sharding", with_batch_dim(*s, *axis, false));
    args.push_back(axis ? BValue{move_axis(param, *axis, 0), true} : BValue{param, false});
  }
  std::vector<BValue> outs = vmap_block(b, f.body(), env, args);
  std::vector<Value*> results;
  for (size_t k = 0; k < outs.size(); ++k) {
    const auto& axis = p.out_axes[k];
    if (!axis) {
      if (outs[k].batched)
        support::fail("vmap of @{}: result {} depends on the batched parameters, but out_axes[{}] is nullopt",
                      f.name(), k, k);
      results.push_back(outs[k].value.value());
      continue;
    }
    Tensor v = outs[k].batched ? outs[k].value : batch_broadcast(outs[k].value, p.batch);
    results.push_back(move_axis(v, 0, *axis).value());
  }
  g.set_results(results);
  for (size_t k = 0; k < f.result_attrs.size() && k < results.size(); ++k) {
    g.result_attrs[k] = f.result_attrs[k];
    if (auto s = f.result_sharding(k); s && p.out_axes[k])
      g.set_result_sharding(k, with_batch_dim(*s, *p.out_axes[k], false));
  }
  transforms::simplify(g);
  return g;
}

}  // namespace

ir::Function& vmap(ir::Module& module, const ir::Function& f, const VmapOptions& o) {
  Plan p = plan(f, o);
  ir::Function& g = module.add_function(o.name.empty() ? f.name() + "_vmap" : o.name);
  try {
    return build_vmap(module, g, f, p);
  } catch (...) {
    module.remove_function(g);  // no half-built batched function stays behind
    throw;
  }
}

}  // namespace tessera::autodiff
