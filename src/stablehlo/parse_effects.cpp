// Pretty forms of tokens, tuples and composite (the forms print_effects.cpp writes):
//   stablehlo.after_all %a, %b : !stablehlo.token        stablehlo.create_token : !stablehlo.token
//   stablehlo.tuple %a, %b : tuple<tensor<2xf32>, tensor<i64>>
//   stablehlo.get_tuple_element %t[0] : (tuple<...>) -> tensor<2xf32>
//   stablehlo.composite "my.op" %a {decomposition = @f} : (tensor<f32>) -> tensor<f32>
//   interpreter.probe %x, probe_id = "id" : tensor<2xf32>   (check.expect_serialized_eq alike)
// The operand types of the first three are implied by the result type; the shape rule checks them.
#include "ir/scan.h"
#include "stablehlo/parser_impl.h"

namespace tessera::stablehlo {

void parse_result_type_form(Parser& p, OpText& op) {
  op.operands = p.use_values();
  p.parse_optional_attrs(op);
  p.lx.expect(":");
  op.result_types = {parse_type(p.lx)};
}

void parse_get_tuple_element(Parser& p, OpText& op) {
  op.operands = {p.use_value()};
  p.lx.expect("[");
  op.attrs.set("index", p.lx.integer());
  p.lx.expect("]");
  p.parse_optional_attrs(op);
  p.parse_trailing_types(op);
}

void parse_composite(Parser& p, OpText& op) {
  p.lx.skip_space();
  if (p.lx.peek() != '"') p.lx.error("expected the composite's name as a string");
  op.attrs.set("name", p.lx.string_literal());
  op.operands = p.use_values();
  p.parse_optional_attrs(op);
  p.parse_trailing_types(op);
}

// `interpreter.probe %x, probe_id = "id" : t`, `check.expect_serialized_eq %x, probe_id = "id", iter = 1 : t`.
void parse_probe(Parser& p, OpText& op) {
  op.operands = {p.use_value()};
  p.lx.expect(",");
  p.lx.expect("probe_id");
  p.lx.expect("=");
  op.attrs.set("probe_id", p.lx.string_literal());
  if (p.lx.try_consume(",")) {
    p.lx.expect("iter");
    p.lx.expect("=");
    op.attrs.set("iter", p.lx.integer());
  }
  p.parse_optional_attrs(op);
  p.parse_trailing_types(op);
}

// chlo.scan(%x, %y) inits(%c) dimension=0 [attributes {is_reverse = true}] {^bb0(...): ...} :
// (types) -> (types); the segment sizes MLIR keeps as attributes are set from the lists read.
void parse_scan(Parser& p, OpText& op) {
  p.lx.expect("(");
  op.operands = p.use_values();
  p.lx.expect(")");
  p.lx.expect("inits");
  p.lx.expect("(");
  std::vector<ir::Value*> inits = p.use_values();
  p.lx.expect(")");
  auto inputs = static_cast<int64_t>(op.operands.size());
  op.operands.insert(op.operands.end(), inits.begin(), inits.end());
  p.lx.expect("dimension");
  p.lx.expect("=");
  op.attrs.set("dimension", p.lx.integer());
  if (p.lx.try_consume("attributes")) {
    for (const auto& [name, value] : parse_attr_dict(p.lx)) op.attrs.set(name, value);
  }
  op.attrs.set("operandSegmentSizes", ir::segment_sizes_attr({inputs, static_cast<int64_t>(inits.size())}));
  p.parse_region(op);
  Location at = p.lx.location();
  p.parse_trailing_types(op);
  auto carries = static_cast<int64_t>(inits.size());
  if (static_cast<int64_t>(op.result_types.size()) < carries)
    p.lx.error_at(at, fmt::format("chlo.scan has {} inits but its type lists {} results", carries,
                                  op.result_types.size()));
  op.attrs.set("resultSegmentSizes",
               ir::segment_sizes_attr({static_cast<int64_t>(op.result_types.size()) - carries, carries}));
}

}  // namespace tessera::stablehlo
