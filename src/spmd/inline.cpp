// Call inlining for the partitioner: propagation and partitioning see one function.
#include <functional>

#include "ir/clone.h"
#include "spmd/partition.h"
#include "support/error.h"

namespace tessera::spmd {

namespace {

ir::Value* mapped(const ir::ValueMap& map, ir::Value* v) {
  auto it = map.find(v);
  return it == map.end() ? v : it->second;
}

bool has_call(const ir::Block& b) {
  for (const auto& op : b.ops()) {
    if (op->kind() == ir::OpKind::Call) return true;
    for (const auto& r : op->regions())
      if (has_call(*r)) return true;
  }
  return false;
}

// Clones `from` (but its terminator) into `into`, expanding each func.call into its callee's body.
void inline_ops(const ir::Module& module, const ir::Block& from, ir::Block& into, ir::ValueMap& map, int depth) {
  for (const auto& op : from.ops()) {
    if (op.get() == from.terminator()) break;
    if (op->kind() != ir::OpKind::Call) {
      for (const auto& r : op->regions())
        if (has_call(*r))
          support::fail("{}: a func.call inside a region cannot be partitioned; inline it first", op->name());
      ir::clone_op(into, *op, map);
      continue;
    }
    if (depth > 64) support::fail("func.call: calls nest more than 64 deep (recursion?)");
    const auto& callee_name = op->attrs().get<std::string>("callee");
    const ir::Function* callee = module.find_function(callee_name);
    if (!callee) support::fail("func.call: no function @{}", callee_name);
    ir::ValueMap inner;
    for (size_t i = 0; i < callee->num_parameters(); ++i) inner[callee->parameter(i)] = mapped(map, op->operand(i));
    inline_ops(module, callee->body(), into, inner, depth + 1);
    const ir::Op* ret = callee->body().terminator();
    for (size_t i = 0; i < op->num_results(); ++i) map[op->result(i)] = mapped(inner, ret->operand(i));
  }
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
  inline_ops(module, fn.body(), out.body(), map, 0);
  const ir::Op* ret = fn.body().terminator();
  std::vector<ir::Value*> results;
  for (ir::Value* v : ret->operands()) results.push_back(mapped(map, v));
  out.set_results(results);
  out.result_attrs = fn.result_attrs;
  return out;
}

}  // namespace tessera::spmd
