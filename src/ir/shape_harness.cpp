// Shape rules of calls and of the test harness ops of StableHLO's interpreter tests (check.*,
// interpreter.run_parallel). Calls take their result types from the text; whether the callee
// exists and agrees is checked by verify(), which sees the module.
#include "ir/shape_polymorphic.h"
#include "ir/shape_rules.h"
#include "ir/effects.h"

namespace tessera::ir::shape_rules {
namespace {

using Types = std::vector<Type>;

Types declared_only(const ShapeQuery& q) { return {q.declared.begin(), q.declared.end()}; }

Types compares_two(const ShapeQuery& q) {
  // A '?' dimension compares with any size (a dynamic value with the static one expected).
  const Type& a = q.operands[0];
  const Type& b = q.operands[1];
  if (a != b && !compatible_types(std::span(&a, 1), std::span(&b, 1)) && !compatible_types(std::span(&b, 1), std::span(&a, 1)))
    reject(q, "compares {} with {}", to_string(q.operands[0]), to_string(q.operands[1]));
  return {};
}

Types compares_constant(const ShapeQuery& q) {
  const Literal* v = q.attrs.find<Literal>("value");
  if (v == nullptr) reject(q, "has no expected value");
  if (v->type() != q.operands[0])
    reject(q, "compares {} with a constant of {}", to_string(q.operands[0]), to_string(v->type()));
  return {};
}

}  // namespace

Types infer_Call(const ShapeQuery& q) {
  if (q.attrs.find<std::string>("callee") == nullptr) reject(q, "has no callee");
  return declared_only(q);
}
Types infer_CustomCall(const ShapeQuery& q) {
  const std::string* target = q.attrs.find<std::string>("call_target_name");
  if (target == nullptr) reject(q, "has no call_target_name");
  // GSPMD's sharding annotation and the placement annotations: the identity, so the one result is
  // the one operand's type.
  if (is_identity_target(*target)) {
    if (q.operands.size() != 1) reject(q, "@{} takes 1 operand, got {}", *target, q.operands.size());
    return {q.operands[0]};
  }
  return declared_only(q);
}
Types infer_RunParallel(const ShapeQuery& q) {
  const SymbolGrid* g = q.attrs.find<SymbolGrid>("programs");
  if (g == nullptr || g->rows.empty() || g->rows[0].empty()) reject(q, "has no programs");
  for (const auto& row : g->rows)
    if (row.size() != g->rows[0].size())
      reject(q, "programs rows have {} and {} entries", g->rows[0].size(), row.size());
  return declared_only(q);
}
Types infer_ExpectEqConst(const ShapeQuery& q) { return compares_constant(q); }
Types infer_ExpectAlmostEqConst(const ShapeQuery& q) { return compares_constant(q); }
Types infer_ExpectEq(const ShapeQuery& q) { return compares_two(q); }
Types infer_ExpectAlmostEq(const ShapeQuery& q) { return compares_two(q); }
Types infer_ExpectClose(const ShapeQuery& q) { return compares_two(q); }

}  // namespace tessera::ir::shape_rules
