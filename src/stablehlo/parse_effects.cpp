// Pretty forms of tokens, tuples and composite (the forms print_effects.cpp writes):
//   stablehlo.after_all %a, %b : !stablehlo.token        stablehlo.create_token : !stablehlo.token
//   stablehlo.tuple %a, %b : tuple<tensor<2xf32>, tensor<i64>>
//   stablehlo.get_tuple_element %t[0] : (tuple<...>) -> tensor<2xf32>
//   stablehlo.composite "my.op" %a {decomposition = @f} : (tensor<f32>) -> tensor<f32>
//   interpreter.probe %x, probe_id = "id" : tensor<2xf32>   (check.expect_serialized_eq alike)
// The operand types of the first three are implied by the result type; the shape rule checks them.
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

}  // namespace tessera::stablehlo
