// Factor rules of issue #17's numeric ops (package B): stablehlo.fft and the batch-norm ops.
#include <algorithm>

#include "spmd/factor_rule.h"

namespace tessera::spmd::factor_rules {

using ir::Op;

// fft: the leading (batch) dimensions pass through; the transformed trailing ones are read whole
// (every output entry mixes the whole line), so they carry no factor.
FactorRule rule_Fft(const Op& op) {
  FactorRule r;
  const ir::Type& x = op.operand(0)->type();
  r.operands.emplace_back(static_cast<size_t>(x.rank()));
  r.results.emplace_back(static_cast<size_t>(x.rank()));
  const auto* length = op.attrs().find<std::vector<int64_t>>("fft_length");
  size_t transformed = length ? std::min(length->size(), x.shape.size()) : x.shape.size();
  for (size_t d = 0; d + transformed < x.shape.size(); ++d) {
    if (x.shape[d] == 1) continue;
    int f = r.add(x.shape[d]);
    r.operands[0][d] = {f};
    r.results[0][d] = {f};
  }
  return r;
}

}  // namespace tessera::spmd::factor_rules

namespace tessera::spmd::factor_rules {

namespace {

// The batch-norm ops are expanded before propagation (inline.cpp), so these rules only apply to one
// met on its own (inside a region). The feature dimension is pass-through: every operand and result
// has it (the operand-shaped ones at feature_index, the 1-D ones at 0) and features never mix. The
// other dimensions of inference are pass-through too (elementwise given the features); training
// and grad reduce them into their 1-D results while keeping them in the operand-shaped ones, which
// no single factor kind describes, so they are whole.
FactorRule batch_norm_rule(const Op& op, bool others_pass_through) {
  FactorRule r;
  for (ir::Value* v : op.operands()) r.operands.emplace_back(static_cast<size_t>(v->type().rank()));
  for (ir::Value* v : op.results()) r.results.emplace_back(static_cast<size_t>(v->type().rank()));
  const ir::Type& x = op.operand(0)->type();
  const int64_t* fi = op.attrs().find<int64_t>("feature_index");
  if (fi == nullptr || *fi < 0 || *fi >= x.rank()) return r;
  auto place = [&](TensorFactors& t, const ir::Type& type, size_t d, int f) {
    if (type.rank() == x.rank()) t[d] = {f};
    else if (type.rank() == 1 && d == static_cast<size_t>(*fi)) t[0] = {f};
  };
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (x.shape[d] == 1) continue;
    if (d != static_cast<size_t>(*fi) && !others_pass_through) continue;
    int f = r.add(x.shape[d]);
    for (size_t i = 0; i < op.operands().size(); ++i) place(r.operands[i], op.operand(i)->type(), d, f);
    for (size_t i = 0; i < op.results().size(); ++i) place(r.results[i], op.result(i)->type(), d, f);
  }
  return r;
}

}  // namespace

// The random ops' results are whole on every device: each device computes the same numbers from
// the same state (rng: the same op position), so a sharded run draws what an unsharded one does.
// No dimension is shardable.
FactorRule rule_RngBitGenerator(const Op& op) {
  FactorRule r;
  for (ir::Value* v : op.operands()) r.operands.emplace_back(static_cast<size_t>(v->type().rank()));
  for (ir::Value* v : op.results()) r.results.emplace_back(static_cast<size_t>(v->type().rank()));
  return r;
}
FactorRule rule_Rng(const Op& op) { return rule_RngBitGenerator(op); }

FactorRule rule_BatchNormInference(const Op& op) { return batch_norm_rule(op, true); }
FactorRule rule_BatchNormTraining(const Op& op) { return batch_norm_rule(op, false); }
FactorRule rule_BatchNormGrad(const Op& op) { return batch_norm_rule(op, false); }

}  // namespace tessera::spmd::factor_rules
