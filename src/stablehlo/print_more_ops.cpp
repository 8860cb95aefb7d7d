// Pretty forms of the ops added for what JAX exports (#17): reduce_precision's format, CHLO's
// `op %x : t -> t`, chlo.top_k's `(%x, k = 2)` and cholesky's `lower = ...`. Each falls back to the
// generic form when an attribute its form spells is missing.
#include "stablehlo/print_internal.h"

namespace tessera::stablehlo::print_impl {

using ir::Op;

// `stablehlo.reduce_precision %x, format = e5m10 : tensor<4xf32>`
void reduce_precision(Printer& p, const Op& op) {
  const auto* e = op.attrs().find<int64_t>("exponent_bits");
  const auto* m = op.attrs().find<int64_t>("mantissa_bits");
  if (!e || !m || *e < 0 || *m < 0) return generic(p, op);
  p << op.name() << " ";
  p.value(op.operand(0));
  p << ", format = e" << std::to_string(*e) << "m" << std::to_string(*m)
    << except(op, {"exponent_bits", "mantissa_bits"}) << " : ";
  same_operands_and_result_type(p, op);
}

// CHLO's form: `chlo.erf %x : tensor<4xf32> -> tensor<4xf32>`, `chlo.next_after %x, %y : t, t -> t`.
void chlo_form(Printer& p, const Op& op) {
  p << op.name() << " ";
  p.values(op.operands());
  p << except(op, {}) << " : ";
  p.types(op.operand_types());
  p << " -> " << ir::to_string(op.result()->type());
}

// `chlo.top_k(%x, k = 2) : tensor<3x4xf32> -> (tensor<3x2xf32>, tensor<3x2xi32>)`
void top_k(Printer& p, const Op& op) {
  const auto* k = op.attrs().find<int64_t>("k");
  if (!k || op.num_results() != 2) return generic(p, op);
  p << op.name() << "(";
  p.value(op.operand(0));
  p << ", k = " << std::to_string(*k);
  if (const auto* stable = op.attrs().find<bool>("is_stable")) p << ", is_stable = " << (*stable ? "true" : "false");
  p << ")" << except(op, {"k", "is_stable"}) << " : " << ir::to_string(op.operand(0)->type()) << " -> ("
    << ir::to_string(op.result(0)->type()) << ", " << ir::to_string(op.result(1)->type()) << ")";
}

// `stablehlo.cholesky %a, lower = true : tensor<3x3xf32>`
void cholesky(Printer& p, const Op& op) {
  const auto* lower = op.attrs().find<bool>("lower");
  p << op.name() << " ";
  p.value(op.operand(0));
  if (lower) p << ", lower = " << (*lower ? "true" : "false");
  p << except(op, {"lower"}) << " : ";
  same_operands_and_result_type(p, op);
}

}  // namespace tessera::stablehlo::print_impl
