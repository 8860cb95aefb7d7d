// The partitioner's rules for ops with regions: while (layouts kept through the loop), if and
// case (branches partitioned alike), and Shardy's manual_computation.
#include "spmd/partitioner.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include "ir/builder.h"
#include "ir/clone.h"
#include "ir/manual_mesh.h"
#include "spmd/assign.h"
#include "spmd/combine.h"
#include "spmd/factor_rule.h"
#include "spmd/identities.h"
#include "spmd/mesh_math.h"
#include "spmd/propagate.h"
#include "spmd/reshard.h"
#include "spmd/split_reads.h"
#include "support/error.h"

namespace tessera::spmd::partition_detail {

// while: every loop-carried value keeps its propagated layout through the loop.
void Partitioner::while_op(const Op& op, Builder& b) {
  std::vector<Tensor> init;
  std::vector<Type> types;
  for (size_t i = 0; i < op.num_results(); ++i) {
    const Sharding& s = sm_.at(op.result(i));
    init.push_back(get(op.operand(i), s));
    types.push_back(init.back().type());
  }
  std::vector<Tensor> results = b.emit_with_regions(OpKind::While, init, {}, types, [&](Op& copy) {
    for (size_t r = 0; r < 2; ++r) {
      const ir::Block& from = op.region(r);
      ir::Block& into = copy.add_region();
      Builder rb(out_, into);
      for (size_t i = 0; i < from.arguments().size(); ++i) {
        Value* a = into.add_argument(types[i]);
        local_.insert_or_assign(from.argument(i), rb.wrap(a));
        const_cast<ShardingMap&>(sm_).values[from.argument(i)] = sm_.at(op.result(i));
      }
      block(from, rb);
      const Op* ret = from.terminator();
      std::vector<Value*> vals;
      for (size_t i = 0; i < ret->operands().size(); ++i) {
        const Value* v = ret->operand(i);
        Sharding want = r == 0 ? replicated(sm_.at(v).mesh, 0) : sm_.at(op.result(i));
        vals.push_back(get(v, want).value());
      }
      into.append(std::make_unique<Op>(OpKind::Return, vals, std::vector<Type>{}));
    }
  });
  for (size_t i = 0; i < results.size(); ++i) local_.insert_or_assign(op.result(i), results[i]);
}

// if and case: the predicate or index is whole on every device, so every device runs the same
// branch; each branch is partitioned where it stands and returns its values in the results'
// layouts (collectives inside a branch then run on all devices or none).
void Partitioner::branches(const Op& op, Builder& b) {
  Tensor selector = get(op.operand(0), replicated(sm_.at(op.operand(0)).mesh, 0));
  std::vector<Type> types;
  for (size_t i = 0; i < op.num_results(); ++i) {
    const Value* r = op.result(i);
    types.push_back(local_type(r->type(), sm_.at(r)));
  }
  std::vector<Tensor> results = b.emit_with_regions(op.kind(), {selector}, {}, types, [&](Op& copy) {
    for (const auto& from : op.regions()) {
      ir::Block& into = copy.add_region();
      Builder rb(out_, into);
      block(*from, rb);
      const Op* ret = from->terminator();
      std::vector<Value*> vals;
      for (size_t i = 0; i < ret->operands().size(); ++i) vals.push_back(get(ret->operand(i), sm_.at(op.result(i))).value());
      into.append(std::make_unique<Op>(OpKind::Return, vals, std::vector<Type>{}));
    }
  });
  for (size_t i = 0; i < results.size(); ++i) local_.insert_or_assign(op.result(i), results[i]);
}

// manual_computation: the body is written for pieces split by the manual axes; a free axis in
// an in or out sharding is Shardy's to partition automatically in the body. Here the body runs
// on pieces whole along the free axes (the inputs are brought to in_shardings less the free
// axes, the results read as out_shardings less them): every device of a free group computes the
// same piece, which is correct for any body, and the results are then resharded to their layouts.
void Partitioner::manual(const Op& op, Builder& b) {
  const auto& in = op.attrs().get<ir::ShardingList>("in_shardings");
  const auto& out = op.attrs().get<ir::ShardingList>("out_shardings");
  const auto& axes = op.attrs().get<ir::AxisNames>("manual_axes");
  auto is_manual = [&](const AxisRef& a) { return std::find(axes.begin(), axes.end(), a.name) != axes.end(); };
  // A layout on a mesh without axes (Shardy allows one beside the computation's mesh) splits
  // nothing: it is read on the computation's mesh.
  const ir::Mesh* own = ir::manual_mesh(gm_, op);
  auto manual_part = [&](const Sharding& s, std::string_view what, size_t i) {
    Sharding m = s;
    if (!own->axes.empty() && gm_.mesh(s.mesh).axes.empty()) m.mesh = own->name;
    for (auto& d : m.dims) {
      auto free = std::find_if(d.axes.begin(), d.axes.end(), [&](const AxisRef& a) { return !is_manual(a); });
      if (std::any_of(free, d.axes.end(), is_manual))
        support::fail("{}: {} {}: axis \"{}\" is free (not manual) and comes before a manual axis in a dimension; "
                      "manual axes come first",
                      describe(op), what, i, free->name);
      d.axes.erase(free, d.axes.end());
    }
    return m;
  };
  std::vector<Tensor> operands;
  for (size_t i = 0; i < op.operands().size(); ++i) operands.push_back(get(op.operand(i), manual_part(in.at(i), "input", i)));
  const ir::Block& body = op.region(0);
  ir::ValueMap map;
  for (size_t i = 0; i < body.arguments().size(); ++i) map[body.argument(i)] = operands[i].value();
  for (const auto& inner : body.ops()) {
    if (inner.get() == body.terminator()) break;
    const Op* copy = ir::clone_op(b.block(), *inner, map);
    record_written(info_.report, *copy, ctx_.origin + " (written)");
  }
  const Op* ret = body.terminator();
  for (size_t i = 0; i < op.num_results(); ++i) {
    auto it = map.find(ret->operand(i));
    Tensor t = b.wrap(it == map.end() ? ret->operand(i) : it->second);
    local_.insert_or_assign(op.result(i), reshard(ctx_, t, op.result(i)->type(), manual_part(out.at(i), "result", i),
                                                  sm_.at(op.result(i))));
  }
}

}  // namespace tessera::spmd::partition_detail
