// Shape rules of the probe ops of StableHLO's interpreter tests: interpreter.probe returns its
// operand (and writes it to a file), check.expect_serialized_eq compares a value with what a probe
// wrote (no results).
#include "ir/shape_rules.h"

namespace tessera::ir::shape_rules {

namespace {

void require_probe_id(const ShapeQuery& q) {
  const std::string* id = q.attrs.find<std::string>("probe_id");
  if (id == nullptr || id->empty()) reject(q, "has no probe_id");
  if (!q.operands[0].is_tensor()) reject(q, "operand is {}, not a tensor", to_string(q.operands[0]));
}

}  // namespace

std::vector<Type> infer_Probe(const ShapeQuery& q) {
  require_probe_id(q);
  return {q.operands[0]};
}

std::vector<Type> infer_ExpectSerializedEq(const ShapeQuery& q) {
  require_probe_id(q);
  if (q.attrs.get_or<int64_t>("iter", 0) < 0) reject(q, "iter = {} is negative", q.attrs.get<int64_t>("iter"));
  return {};
}

}  // namespace tessera::ir::shape_rules
