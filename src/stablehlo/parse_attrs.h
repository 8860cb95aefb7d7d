// Readers for types, attributes, dense literals, meshes and shardings: the pieces of StableHLO and
// Shardy text below the level of ops. Shared by the op parsers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/type.h"
#include "stablehlo/lexer.h"

namespace tessera::stablehlo {

ir::ElementType parse_element_type(Lexer& lx);
ir::Type parse_type(Lexer& lx);  // tensor<2x3xf32>
std::vector<ir::Type> parse_type_list(Lexer& lx);  // "t, t" or "(t, t)"
// "(a, b) -> c" or "(a, b) -> (c, d)".
void parse_function_type(Lexer& lx, std::vector<ir::Type>& inputs, std::vector<ir::Type>& outputs);

// After "dense": "<...> : tensor<...>" (the type is read too).
ir::Literal parse_dense(Lexer& lx);
// "[1, 2, 3]" as integers.
std::vector<int64_t> parse_int_list(Lexer& lx);
// Convolution dimension numbers: "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]".
// After "#stablehlo.conv": "<[b, 0, 1, f]x...>" or "<raw input_batch_dimension = 0, ...>".
ir::ConvDims parse_conv_dims(Lexer& lx);
ir::ConvDims parse_conv_attr(Lexer& lx);

// One attribute value; `name` decides the kind where the text alone does not (replica_groups is
// an integer matrix, not a tensor literal). Unknown forms are kept as ir::Opaque.
ir::Attribute parse_attribute(Lexer& lx, const std::string& name);
// "{a = 1 : i64, b}" (a missing value is the unit attribute, read as true).
ir::AttrMap parse_attr_dict(Lexer& lx);

// After "<": "@m, [{...}, ...], replicated={...}>".
ir::Sharding parse_sharding_body(Lexer& lx);
// After "sdy.mesh @name =": "<["x"=2, "y"=4]>" or with ", device_ids=[...]".
ir::Mesh parse_mesh_body(Lexer& lx, std::string name);

// `<key = value, ...>` inside #stablehlo.dot<...> and friends, `field(key)` reading each value and
// saying whether it knows the key (a comma may end the list, as StableHLO's struct attribute
// parser allows).
template <typename F>
void parse_fields(Lexer& lx, F&& field) {
  lx.expect("<");
  if (lx.try_consume(">")) return;
  do {
    if (lx.peek() == '>') break;
    lx.skip_space();
    Location at = lx.location();
    std::string key = lx.identifier();
    lx.expect("=");
    if (!field(key)) lx.error_at(at, fmt::format("unknown field '{}'", key));
  } while (lx.try_consume(","));
  lx.expect(">");
}
// After "#stablehlo.replica_group_mesh_axes": the dense replica groups it stands for
// (parse_replica_groups.cpp).
ir::IntMatrix parse_replica_group_mesh_axes(Lexer& lx);
// "[<@m, [...]>, <@m, [...]>]".
ir::ShardingList parse_sharding_list(Lexer& lx);
// {"a", "b"}: axis names of manual_axes.
ir::AxisNames parse_axis_names(Lexer& lx);
// {"a", "b":(1)2}: axis references, sub-axes included (Shardy's explicit collectives).
std::vector<ir::AxisRef> parse_axis_ref_list(Lexer& lx);

}  // namespace tessera::stablehlo
