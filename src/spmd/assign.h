// The factor assignment of one op: which mesh axes split each of its factors when it runs on local
// pieces. Results decide the pass-through factors; a reduction that every operand already splits
// the same way is kept (the op runs on the pieces it has and its partial results are summed);
// an axis serves one factor; and every tensor must be able to hold its factors' axes (a factor
// that would split a merged dimension unevenly, or below a partly split major factor, is dropped).
#pragma once

#include <optional>

#include "ir/module.h"
#include "spmd/factor_rule.h"
#include "spmd/propagate.h"

namespace tessera::spmd {

// With `from_operand`, the pass-through factors are split as that operand is (or, with
// kEveryOperand, as the first operand that splits each is), not as the results are: the op runs
// in its operands' layouts and its results are resharded after (the partitioner takes that where
// the cost model finds it cheaper, as Shardy reshards a result rather than every operand).
// With `regroup`, the deciding layouts are read with project_dim's regrouping (factor_rule.h): a
// reshape whose axes overflow a factor keeps them, cut and reordered at the factor boundaries.
inline constexpr size_t kEveryOperand = static_cast<size_t>(-1);
FactorAxes assign_factors(const ir::Op& op, const FactorRule& rule, const ir::Mesh& mesh, const ShardingMap& sm,
                          std::optional<size_t> from_operand = std::nullopt, bool regroup = false);

// An axis serves one factor (later factors lose what earlier ones hold), and every tensor must be
// able to hold its factors' axes (a factor below a partly split major one, or split unevenly
// inside a merged dimension, is dropped).
void legalize(const FactorRule& rule, const ir::Mesh& mesh, FactorAxes& assign);

// Each factor split as the first tensor of `order` (operand indices, then num_operands + result
// index) that splits it, by the axes no earlier factor holds, a sub-axis of a conflicting axis
// included: a candidate layout for the cost model, one per tensor put first.
FactorAxes assign_in_order(const ir::Op& op, const FactorRule& rule, const ir::Mesh& mesh, const ShardingMap& sm,
                           const std::vector<size_t>& order);

}  // namespace tessera::spmd
