// Factor rules of tokens, tuples, composite and map. Tokens and tuples have no dimensions, so their
// rules have no factors: the partitioner passes them as they are. A composite is inlined before
// propagation (inline.cpp), so its rule (whole values) only applies to a composite met on its own.
// interpreter.probe and check.expect_serialized_eq see whole values, and so do the streaming ops:
// infeed's values arrive whole and outfeed writes whole values (a stream has no layout to split);
// async_start and async_done keep their values whole too.
// map is elementwise: one factor per dimension, shared by every input and the result. chlo.scan's
// body may mix any elements of a slice and carries them from step to step, so its values are whole.
#include "spmd/factor_rule.h"

namespace tessera::spmd::factor_rules {

namespace {

FactorRule whole(const ir::Op& op) {
  FactorRule r;
  for (ir::Value* v : op.operands()) r.operands.emplace_back(static_cast<size_t>(v->type().rank()));
  for (ir::Value* v : op.results()) r.results.emplace_back(static_cast<size_t>(v->type().rank()));
  return r;
}

}  // namespace

FactorRule rule_AfterAll(const ir::Op& op) { return whole(op); }
FactorRule rule_CreateToken(const ir::Op& op) { return whole(op); }
FactorRule rule_Tuple(const ir::Op& op) { return whole(op); }
FactorRule rule_GetTupleElement(const ir::Op& op) { return whole(op); }
FactorRule rule_Composite(const ir::Op& op) { return whole(op); }
FactorRule rule_Infeed(const ir::Op& op) { return whole(op); }
FactorRule rule_Outfeed(const ir::Op& op) { return whole(op); }
FactorRule rule_AsyncStart(const ir::Op& op) { return whole(op); }
FactorRule rule_AsyncDone(const ir::Op& op) { return whole(op); }
// A probe writes the whole value; a serialized check reads the whole value.
FactorRule rule_Probe(const ir::Op& op) { return whole(op); }
FactorRule rule_ExpectSerializedEq(const ir::Op& op) { return whole(op); }
FactorRule rule_Scan(const ir::Op& op) { return whole(op); }
// send and recv move whole values between processes.
FactorRule rule_Send(const ir::Op& op) { return whole(op); }
FactorRule rule_Recv(const ir::Op& op) { return whole(op); }

FactorRule rule_Map(const ir::Op& op) {
  FactorRule r = whole(op);
  const auto& shape = op.result(0)->type().shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    int f = r.add(shape[d]);
    for (auto& t : r.operands) t[d] = {f};
    r.results[0][d] = {f};
  }
  return r;
}

}  // namespace tessera::spmd::factor_rules
