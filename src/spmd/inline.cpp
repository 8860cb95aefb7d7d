// Call inlining for the partitioner: propagation and partitioning see one function, and a callee's
// argument and result layouts become sharding constraints where its body meets the caller. A
// stablehlo.composite is a call of its decomposition, so it is inlined the same way, and the
// batch-norm ops are replaced by their expansion (ir/batch_norm.h): its reductions and elementwise
// ops have factor rules that split the batch and the features, which the fused ops' own rules
// cannot say (a sharded batch needs its partial sums combined).
#include <algorithm>
#include <functional>
#include <unordered_map>

#include "ir/batch_norm.h"
#include "ir/clone.h"
#include "ir/effects.h"
#include "spmd/mesh_math.h"
#include "spmd/partition.h"
#include "support/error.h"

namespace tessera::spmd {

namespace {

ir::Value* mapped(const ir::ValueMap& map, ir::Value* v) {
  auto it = map.find(v);
  return it == map.end() ? v : it->second;
}

bool is_call(const ir::Op& op) { return op.kind() == ir::OpKind::Call || op.kind() == ir::OpKind::Composite; }

bool has_call(const ir::Block& b) {
  for (const auto& op : b.ops()) {
    if (is_call(*op)) return true;
    for (const auto& r : op->regions())
      if (has_call(*r)) return true;
  }
  return false;
}

// Tuples built in the program are not materialized until something other than get_tuple_element
// reads them: get_tuple_element(tuple(x...), i) is x_i, so the partitioner sees the members as the
// values they are (a tuple is whole on every device). `pending` holds the tuples not made yet.
using Pending = std::unordered_map<const ir::Value*, const ir::Op*>;

void materialize(ir::Block& into, ir::ValueMap& map, Pending& pending, const ir::Value* v) {
  auto it = pending.find(v);
  if (it == pending.end()) return;
  const ir::Op* tuple = it->second;
  pending.erase(it);
  if (!map.count(tuple->result(0))) {
    for (const ir::Value* member : tuple->operands()) materialize(into, map, pending, member);
    ir::clone_op(into, *tuple, map);
  }
  map[v] = map.at(tuple->result(0));  // v may be a get_tuple_element of an enclosing tuple
}

void inline_ops(const ir::Module& module, const ir::Block& from, ir::Module& out, ir::Block& into, ir::ValueMap& map,
                int depth);

// A callee's argument and result layouts hold where its body meets the caller's values, as
// sharding constraints: propagation flows through them as through the inlined body, and a value
// laid out otherwise outside is resharded there (Shardy's named computations, whose in and out
// shardings the parser puts on the function it makes of one, mean this).
ir::Value* constrained(ir::Module& out, ir::Block& into, ir::Value* v, const std::optional<ir::Sharding>& sharding) {
  if (!sharding || !v->type().is_tensor()) return v;
  const ir::Mesh* mesh = out.find_mesh(sharding->mesh);
  if (mesh == nullptr || is_maximal(*mesh)) return v;  // a device placement is not a layout
  ir::Builder b(out, into);
  return ir::constrain(b.wrap(v), *sharding).value();
}

// Copies `op`, whose regions call functions (a shard_map body's call inside its manual
// computation, a while body's), with each region's calls inlined in its copy.
void inline_regions(const ir::Module& module, const ir::Op& op, ir::Module& out, ir::Block& into, ir::ValueMap& map,
                    int depth) {
  std::vector<ir::Value*> operands;
  for (ir::Value* v : op.operands()) operands.push_back(mapped(map, v));
  auto copy = std::make_unique<ir::Op>(op.kind(), operands, op.result_types(), op.attrs());
  copy->loc = op.loc;
  for (const auto& r : op.regions()) {
    ir::Block& block = copy->add_region();
    for (const auto& a : r->arguments()) map[a.get()] = block.add_argument(a->type());
    inline_ops(module, *r, out, block, map, depth);
    const ir::Op* t = r->terminator();
    std::vector<ir::Value*> returned;
    for (ir::Value* v : t->operands()) returned.push_back(mapped(map, v));
    auto ret = std::make_unique<ir::Op>(t->kind(), returned, t->result_types(), t->attrs());
    ret->loc = t->loc;
    block.append(std::move(ret));
  }
  ir::Op* made = into.append(std::move(copy));
  for (size_t i = 0; i < op.num_results(); ++i) map[op.result(i)] = made->result(i);
}

// Clones `from` (but its terminator) into `into`, expanding each func.call (and composite) into its
// callee's body and folding get_tuple_element of a tuple built in the program.
void inline_ops(const ir::Module& module, const ir::Block& from, ir::Module& out, ir::Block& into, ir::ValueMap& map,
                int depth) {
  Pending pending;
  for (const auto& op : from.ops()) {
    if (op.get() == from.terminator()) break;
    if (op->kind() == ir::OpKind::Tuple) {
      pending[op->result(0)] = op.get();
      continue;
    }
    if (op->kind() == ir::OpKind::GetTupleElement) {
      auto it = pending.find(op->operand(0));
      const int64_t* index = op->attrs().find<int64_t>("index");
      if (it != pending.end() && index && *index >= 0 && static_cast<size_t>(*index) < it->second->operands().size()) {
        ir::Value* member = it->second->operand(static_cast<size_t>(*index));
        if (auto inner = pending.find(member); inner != pending.end()) {  // a nested tuple: still not made
          pending[op->result(0)] = inner->second;
          continue;
        }
        map[op->result(0)] = mapped(map, member);
        continue;
      }
    }
    for (const ir::Value* v : op->operands()) materialize(into, map, pending, v);
    for (const ir::Value* v : ir::captures_of(*op)) materialize(into, map, pending, v);
    if (ir::is_batch_norm(op->kind()) && op->regions().empty()) {
      auto a = ir::batch_norm_attrs_of(op->attrs());
      if (!a) support::fail("{}: epsilon (f32) and feature_index (i64) attributes are required", op->name());
      ir::Builder b(out, into);
      std::vector<ir::Tensor> xs;
      for (ir::Value* v : op->operands()) xs.push_back(b.wrap(mapped(map, v)));
      std::vector<ir::Tensor> ys = ir::decompose_batch_norm(op->kind(), xs, *a);
      for (size_t i = 0; i < ys.size(); ++i) map[op->result(i)] = ys[i].value();
      continue;
    }
    if (!is_call(*op)) {
      if (std::any_of(op->regions().begin(), op->regions().end(), [](const auto& r) { return has_call(*r); })) {
        inline_regions(module, *op, out, into, map, depth);
        continue;
      }
      ir::clone_op(into, *op, map);
      continue;
    }
    std::string callee_name = op->kind() == ir::OpKind::Call ? op->attrs().get<std::string>("callee")
                                                             : ir::decomposition_of(op->attrs()).value_or("");
    if (depth > 64)
      support::fail("{}{} of @{}: calls nest more than 64 deep (recursion?)", op->name(),
                    op->loc.line > 0 ? fmt::format(" at line {}:{}", op->loc.line, op->loc.column) : "", callee_name);
    const ir::Function* callee = module.find_function(callee_name);
    if (!callee) support::fail("{}: no function @{}", op->name(), callee_name);
    ir::ValueMap inner;
    for (size_t i = 0; i < callee->num_parameters(); ++i)
      inner[callee->parameter(i)] = constrained(out, into, mapped(map, op->operand(i)), callee->arg_sharding(i));
    inline_ops(module, callee->body(), out, into, inner, depth + 1);
    const ir::Op* ret = callee->body().terminator();
    for (size_t i = 0; i < op->num_results(); ++i)
      map[op->result(i)] = constrained(out, into, mapped(inner, ret->operand(i)), callee->result_sharding(i));
  }
  if (const ir::Op* ret = from.terminator())
    for (const ir::Value* v : ret->operands()) materialize(into, map, pending, v);
}

}  // namespace

ir::Function& inline_calls(const ir::Module& module, const ir::Function& fn, ir::Module& into, const std::string& name) {
  ir::Function& out = into.add_function(name);
  out.is_public = fn.is_public;
  out.loc = fn.loc;
  ir::ValueMap map;
  for (size_t i = 0; i < fn.num_parameters(); ++i) {
    map[fn.parameter(i)] = out.add_parameter(fn.parameter(i)->type());
    out.arg_attrs[i] = fn.arg_attrs[i];
  }
  inline_ops(module, fn.body(), into, out.body(), map, 0);
  const ir::Op* ret = fn.body().terminator();
  std::vector<ir::Value*> results;
  for (ir::Value* v : ret->operands()) results.push_back(mapped(map, v));
  out.set_results(results);
  out.result_attrs = fn.result_attrs;
  return out;
}

}  // namespace tessera::spmd
