// Which mesh axes split each factor of an op, given the layouts propagation chose (see assign.h).
#include "spmd/assign.h"

#include <algorithm>
#include <optional>

#include "spmd/mesh_math.h"

namespace tessera::spmd {

using ir::AxisRef;
using ir::Mesh;
using ir::Op;
using ir::Sharding;
using ir::Value;

namespace {

bool contains_factor(const std::vector<int>& fs, int f) { return std::find(fs.begin(), fs.end(), f) != fs.end(); }


}  // namespace

void legalize(const FactorRule& rule, const Mesh& mesh, FactorAxes& assign) {
  std::vector<AxisRef> used;
  for (auto& fa : assign) {
    size_t keep = 0;
    while (keep < fa.size() &&
           std::none_of(used.begin(), used.end(), [&](const AxisRef& u) { return overlaps(u, fa[keep], mesh); }))
      ++keep;
    fa.erase(fa.begin() + static_cast<ptrdiff_t>(keep), fa.end());
    used.insert(used.end(), fa.begin(), fa.end());
  }
  // Every tensor must be able to hold its factors' axes: drop what a dimension cannot express.
  for (bool changed = true; changed;) {
    changed = false;
    auto check = [&](const TensorFactors& tf) {
      for (const auto& fs : tf) {
        bool open = true;
        for (int f : fs) {
          auto& fa = assign[static_cast<size_t>(f)];
          int64_t size = rule.sizes[static_cast<size_t>(f)];
          if (!open && !fa.empty()) {
            fa.clear();
            changed = true;
          }
          int64_t n = shard_count(mesh, fa);
          if (fs.size() > 1 && size % n != 0) {  // uneven inside a merged dimension
            fa.clear();
            changed = true;
            n = 1;
          }
          if (n != size) open = false;
        }
      }
    };
    for (const auto& tf : rule.operands) check(tf);
    for (const auto& tf : rule.results) check(tf);
  }
}

namespace {

// The tensor an order names: operands first, then results.
std::pair<const Value*, const TensorFactors*> tensor_at(const Op& op, const FactorRule& rule, size_t t) {
  const size_t n = op.operands().size();
  return t < n ? std::pair{static_cast<const Value*>(op.operand(t)), &rule.operands[t]}
               : std::pair{static_cast<const Value*>(op.result(t - n)), &rule.results[t - n]};
}

}  // namespace

// The axes each factor is split by: results decide pass-through factors; the operands, the
// reductions (the longest split an operand already has, so splitting costs no communication).
FactorAxes assign_factors(const Op& op, const FactorRule& rule, const Mesh& mesh, const ShardingMap& sm,
                          std::optional<size_t> from_operand, bool regroup) {
  FactorAxes assign(rule.num_factors());
  auto read = [&](const Value* v, const TensorFactors& tf, bool regrouped = false) {
    FactorAxes axes(rule.num_factors());
    const Sharding& s = sm.at(v);
    if (s.mesh != mesh.name) return axes;
    for (size_t d = 0; d < tf.size() && d < s.dims.size(); ++d)
      project_dim(s.dims[d].axes, tf[d], rule, mesh, axes, regrouped);
    return axes;
  };
  // A reduction every operand already splits the same way is kept: the op runs on the pieces it
  // has and its partial results are reduce-scattered or summed, instead of gathering operands.
  std::vector<std::optional<std::vector<AxisRef>>> agreed(rule.num_factors());
  std::vector<bool> conflict(rule.num_factors());
  for (size_t i = 0; i < op.operands().size(); ++i) {
    FactorAxes a = read(op.operand(i), rule.operands[i]);
    for (size_t f = 0; f < a.size(); ++f) {
      if (rule.kinds[f] != FactorKind::kReduction) continue;
      bool present = false;
      for (const auto& fs : rule.operands[i]) present |= contains_factor(fs, static_cast<int>(f));
      if (!present) continue;
      if (!agreed[f]) agreed[f] = a[f];
      else if (*agreed[f] != a[f]) conflict[f] = true;
    }
  }
  for (size_t f = 0; f < rule.num_factors(); ++f)
    if (agreed[f] && !conflict[f]) assign[f] = *agreed[f];
  auto taken = [&](const AxisRef& a) {
    for (const auto& fa : assign)
      for (const AxisRef& u : fa)
        if (overlaps(u, a, mesh)) return true;
    return false;
  };
  // The tensors whose layouts decide: the results, one operand, or every operand in turn.
  std::vector<std::pair<const Value*, const TensorFactors*>> deciding;
  if (!from_operand)
    for (size_t i = 0; i < op.num_results(); ++i) deciding.push_back({op.result(i), &rule.results[i]});
  else if (*from_operand == kEveryOperand)
    for (size_t i = 0; i < op.operands().size(); ++i) {
      if (op.operand(i)->type().is_tensor()) deciding.push_back({op.operand(i), &rule.operands[i]});
    }
  else
    deciding.push_back({op.operand(*from_operand), &rule.operands[*from_operand]});
  for (const auto& [value, factors] : deciding) {
    FactorAxes a = read(value, *factors, regroup);
    for (size_t f = 0; f < a.size(); ++f) {
      if (rule.kinds[f] != FactorKind::kPassThrough || !assign[f].empty()) continue;
      for (const AxisRef& ax : a[f]) {
        if (taken(ax)) break;
        assign[f].push_back(ax);
      }
    }
  }
  for (size_t i = 0; i < op.operands().size(); ++i) {
    FactorAxes a = read(op.operand(i), rule.operands[i]);
    for (size_t f = 0; f < a.size(); ++f)
      if (rule.kinds[f] == FactorKind::kReduction && a[f].size() > assign[f].size() && assign[f].empty()) {
        std::vector<AxisRef> keep;
        for (const AxisRef& ax : a[f]) {
          if (taken(ax)) break;
          keep.push_back(ax);
        }
        assign[f] = keep;
      }
  }
  legalize(rule, mesh, assign);
  return assign;
}


// Each factor as the first tensor in `order` that splits it: its axes up to the first one another
// factor holds, and of that one the part no factor holds (the sub-axis that makes two conflicting
// layouts agree: "x" against "x":(2)2 gives "x":(1)2; "z", "x":(2)2 against "z":(2)2 gives
// "z":(1)2, their common prefix). Reductions are filled the same way, so a contraction split may
// give way to a result dimension split by the same axis.
FactorAxes assign_in_order(const Op& op, const FactorRule& rule, const Mesh& mesh, const ShardingMap& sm,
                           const std::vector<size_t>& order) {
  FactorAxes assign(rule.num_factors());
  std::vector<AxisRef> used;
  for (size_t t : order) {
    auto [value, factors] = tensor_at(op, rule, t);
    if (!value->type().is_tensor()) continue;
    const Sharding& s = sm.at(value);
    if (s.mesh != mesh.name) continue;
    FactorAxes a(rule.num_factors());
    for (size_t d = 0; d < factors->size() && d < s.dims.size(); ++d) project_dim(s.dims[d].axes, (*factors)[d], rule, mesh, a);
    for (size_t f = 0; f < a.size(); ++f) {
      if (!assign[f].empty()) continue;
      for (const AxisRef& ax : a[f]) {
        std::optional<AxisRef> free = free_part(ax, used, mesh);
        if (!free) break;
        assign[f].push_back(*free);
        used.push_back(*free);
        if (!(*free == ax)) break;
      }
    }
  }
  legalize(rule, mesh, assign);
  return assign;
}

}  // namespace tessera::spmd
