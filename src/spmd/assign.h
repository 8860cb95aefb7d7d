// The factor assignment of one op: which mesh axes split each of its factors when it runs on local
// pieces. Results decide the pass-through factors; a reduction that every operand already splits
// the same way is kept (the op runs on the pieces it has and its partial results are summed);
// an axis serves one factor; and every tensor must be able to hold its factors' axes (a factor
// that would split a merged dimension unevenly, or below a partly split major factor, is dropped).
#pragma once

#include "ir/module.h"
#include "spmd/factor_rule.h"
#include "spmd/propagate.h"

namespace tessera::spmd {

FactorAxes assign_factors(const ir::Op& op, const FactorRule& rule, const ir::Mesh& mesh, const ShardingMap& sm);

}  // namespace tessera::spmd
