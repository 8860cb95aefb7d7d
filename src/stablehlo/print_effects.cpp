// Pretty forms of tokens, tuples and composite, as stablehlo-opt prints them:
//   stablehlo.after_all %a, %b : !stablehlo.token        stablehlo.create_token : !stablehlo.token
//   stablehlo.tuple %a, %b : tuple<tensor<2xf32>, tensor<i64>>
//   stablehlo.get_tuple_element %t[0] : (tuple<tensor<2xf32>, tensor<i64>>) -> tensor<2xf32>
//   stablehlo.composite "my.op" %a {decomposition = @f, version = 1 : i32} : (tensor<f32>) -> tensor<f32>
//   interpreter.probe %x, probe_id = "id" : tensor<2xf32>   (check.expect_serialized_eq alike)
//   chlo.scan(%x) inits(%c) dimension=0 attributes {is_reverse = true} {^bb0(...): ...} : (t, t) -> (t, t)
// Each falls back to the generic form when an attribute its form spells is missing.
#include "ir/scan.h"
#include "stablehlo/print_internal.h"

namespace tessera::stablehlo::print_impl {

using ir::Op;

// after_all, create_token and tuple: `op %a, %b : <result type>`.
void result_type_form(Printer& p, const Op& op) {
  if (op.num_results() != 1) return generic(p, op);
  p << op.name();
  if (!op.operands().empty()) p << " ";
  p.values(op.operands());
  p << except(op, {}) << " : " << ir::to_string(op.result()->type());
}

void get_tuple_element(Printer& p, const Op& op) {
  const auto* index = op.attrs().find<int64_t>("index");
  if (index == nullptr || op.num_results() != 1) return generic(p, op);
  p << op.name() << " ";
  p.value(op.operand(0));
  p << "[" << std::to_string(*index) << "]" << except(op, {"index"}) << " : ";
  p.functional_type(op);
}

void composite(Printer& p, const Op& op) {
  const auto* name = op.attrs().find<std::string>("name");
  if (name == nullptr) return generic(p, op);
  p << op.name() << " " << quoted(*name);
  if (!op.operands().empty()) p << " ";
  p.values(op.operands());
  p << except(op, {"name"}) << " : ";
  p.functional_type(op);
}

// `interpreter.probe %x, probe_id = "id" : t` and `check.expect_serialized_eq %x, probe_id = "id"[,
// iter = 1] : t`.
void probe_form(Printer& p, const Op& op) {
  const auto* id = op.attrs().find<std::string>("probe_id");
  const auto* iter = op.attrs().find<int64_t>("iter");
  if (id == nullptr || op.operands().size() != 1) return generic(p, op);
  p << op.name() << " ";
  p.value(op.operand(0));
  p << ", probe_id = " << quoted(*id);
  if (iter != nullptr) p << ", iter = " << std::to_string(*iter);
  p << except(op, {"probe_id", "iter"}) << " : " << ir::to_string(op.operand(0)->type());
}

void scan_form(Printer& p, const Op& op) {
  auto ins = ir::segment_sizes(op.attrs(), "operandSegmentSizes");
  auto outs = ir::segment_sizes(op.attrs(), "resultSegmentSizes");
  const auto* dimension = op.attrs().find<int64_t>("dimension");
  if (!ins || ins->size() != 2 || static_cast<size_t>((*ins)[0] + (*ins)[1]) != op.operands().size() || !outs ||
      outs->size() != 2 || (*outs)[1] != (*ins)[1] || static_cast<size_t>((*outs)[0] + (*outs)[1]) != op.num_results() ||
      dimension == nullptr || op.regions().size() != 1)
    return generic(p, op);
  auto inputs = static_cast<size_t>((*ins)[0]);
  p << op.name() << "(";
  for (size_t i = 0; i < inputs; ++i) {
    if (i) p << ", ";
    p.value(op.operand(i));
  }
  p << ") inits(";
  p.values(op.operands(), inputs);
  p << ") dimension=" << std::to_string(*dimension);
  std::string rest = except(op, {"dimension", "operandSegmentSizes", "resultSegmentSizes"});
  if (!rest.empty()) p << " attributes" << rest;
  p << " ";
  p.region(op.region(0), true);
  p << " : ";
  p.functional_type(op);
}

}  // namespace tessera::stablehlo::print_impl
