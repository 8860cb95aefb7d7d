// Pretty forms of the shape-polymorphism ops (after the op name):
//   stablehlo.get_dimension_size %x, dim = 0 {attrs} : (tensor<?x4xf32>) -> tensor<i32>
//   stablehlo.dynamic_iota %shape, dim = 0 {attrs} : (tensor<2xi64>) -> tensor<4x5xi64>
//   stablehlo.dynamic_broadcast_in_dim %x, %dims, dims = [2, 1] {known_...} : (t, t) -> t
// dynamic_reshape, dynamic_pad and real_dynamic_slice are operands then types (the common form);
// dynamic_gather is read in the generic form only, as stablehlo-opt prints it; dynamic_conv reads
// convolution's pretty form (parse_window.cpp) or the generic one.
#include "stablehlo/parse_attrs.h"
#include "stablehlo/parser_impl.h"

namespace tessera::stablehlo {

void parse_dim_form(Parser& p, OpText& op) {
  values_and_keyword(p, op, "dim");
  op.attrs.set(op.kind == ir::OpKind::DynamicIota ? "iota_dimension" : "dimension", p.lx.integer());
  finish(p, op);
}

void parse_dynamic_broadcast_in_dim(Parser& p, OpText& op) {
  values_and_keyword(p, op, "dims");
  op.attrs.set("broadcast_dimensions", parse_int_list(p.lx));
  finish(p, op);
}

}  // namespace tessera::stablehlo
