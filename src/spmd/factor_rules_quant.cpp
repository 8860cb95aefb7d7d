// Factor rules of uniform_quantize and uniform_dequantize: elementwise, one factor per dimension
// shared by operand and result, except a per-axis quantization dimension (of either side), which
// stays whole: its scales and zero points are one per index of that dimension, and the partitioned
// program's local types keep them all, so a shard of it would pair elements with the wrong ones.
#include "spmd/factor_rule.h"

namespace tessera::spmd::factor_rules {

namespace {

FactorRule quant_elementwise(const ir::Op& op) {
  const ir::Type& in = op.operand(0)->type();
  const ir::Type& out = op.result(0)->type();
  FactorRule r;
  r.operands.emplace_back(static_cast<size_t>(in.rank()));
  r.results.emplace_back(static_cast<size_t>(out.rank()));
  auto quant_dim = [](const ir::Type& t) { return t.quant && t.quant->axis ? *t.quant->axis : int64_t{-1}; };
  for (int64_t d = 0; d < out.rank(); ++d) {
    if (out.dim(d) == 1 || d == quant_dim(in) || d == quant_dim(out)) continue;
    int f = r.add(out.dim(d));
    r.operands[0][static_cast<size_t>(d)] = {f};
    r.results[0][static_cast<size_t>(d)] = {f};
  }
  return r;
}

}  // namespace

FactorRule rule_UniformQuantize(const ir::Op& op) { return quant_elementwise(op); }
FactorRule rule_UniformDequantize(const ir::Op& op) { return quant_elementwise(op); }

}  // namespace tessera::spmd::factor_rules
