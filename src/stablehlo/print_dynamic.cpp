// Pretty forms of get_dimension_size and dynamic_iota, as stablehlo-opt prints them:
// `stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>` and
// `stablehlo.dynamic_iota %shape, dim = 0 : (tensor<2xi64>) -> tensor<4x5xi64>`. (The other dynamic
// ops reuse broadcast_in_dim's and the operands-only forms of print_ops.cpp.) Each falls back to the
// generic form when its integer attribute is missing.
#include "stablehlo/print_internal.h"

namespace tessera::stablehlo::print_impl {

namespace {

void operand_and_dim(Printer& p, const ir::Op& op, const char* attribute) {
  const auto* dim = op.attrs().find<int64_t>(attribute);
  if (!dim || op.operands().size() != 1) return generic(p, op);
  p << op.name() << " ";
  p.value(op.operand(0));
  p << ", dim = " << std::to_string(*dim) << except(op, {attribute}) << " : ";
  p.functional_type(op);
}

}  // namespace

void get_dimension_size(Printer& p, const ir::Op& op) { operand_and_dim(p, op, "dimension"); }
void dynamic_iota(Printer& p, const ir::Op& op) { operand_and_dim(p, op, "iota_dimension"); }

}  // namespace tessera::stablehlo::print_impl
