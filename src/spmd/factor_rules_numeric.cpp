// Factor rules of issue #17's numeric ops (package B): stablehlo.fft.
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
