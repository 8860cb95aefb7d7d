// Malformed StableHLO text: each input gives one ParseError with line:column and a message that
// says what is wrong, never a crash. The corpus covers the list: unterminated region,
// unknown op, operand count, type mismatch, dense literal size, undefined value, duplicate
// definition, bad sharding syntax, missing mesh axis, truncated file; and more.
#include <gtest/gtest.h>

#include "stablehlo/parser.h"

namespace tessera::stablehlo {
namespace {

struct Bad {
  std::string name;
  std::string text;
  std::string message;  // the whole error, "t.mlir:line:col: ..."
};

void PrintTo(const Bad& b, std::ostream* os) { *os << b.name; }

const std::string kAdd =
    "func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n"
    "  %0 = stablehlo.add %a, %b : tensor<4xf32>\n"
    "  return %0 : tensor<4xf32>\n"
    "}\n";

const std::vector<Bad>& corpus() {
  static const std::vector<Bad> k = {
      {"unterminated_region",
       "func.func @f(%a: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.abs %a : tensor<f32>\n",
       "t.mlir:3:1: unterminated region: expected '}', but the input ends"},
      {"unknown_op",
       "func.func @f(%a: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.frobnicate %a : tensor<f32>\n"
       "  return %0 : tensor<f32>\n}\n",
       "t.mlir:2:8: unknown op 'stablehlo.frobnicate'"},
      {"operand_count",
       "func.func @f(%a: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.add %a : tensor<f32>\n"
       "  return %0 : tensor<f32>\n}\n",
       "t.mlir:2:3: stablehlo.add: expects 2 operands, got 1"},
      {"type_mismatch",
       "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = stablehlo.negate %a : tensor<4xi32>\n"
       "  return %0 : tensor<4xf32>\n}\n",
       "t.mlir:2:3: stablehlo.negate: operand 0 has type tensor<4xf32>, but the op's type says "
       "tensor<4xi32>"},
      {"result_type_mismatch",
       "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
       "  %0 = stablehlo.negate %a : (tensor<4xf32>) -> tensor<3xf32>\n  return %0 : tensor<4xf32>\n}\n",
       "t.mlir:2:3: stablehlo.negate: result types (tensor<3xf32>) do not match the operands, which "
       "give (tensor<4xf32>)"},
      {"dense_size",
       "func.func @f() -> tensor<3xf32> {\n  %0 = stablehlo.constant dense<[1.0, 2.0]> : tensor<3xf32>\n"
       "  return %0 : tensor<3xf32>\n}\n",
       "t.mlir:2:33: dense literal has 2 elements in dimension 0, but tensor<3xf32> has 3"},
      {"dense_nesting",
       "func.func @f() -> tensor<2x2xi32> {\n  %0 = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<2x2xi32>\n"
       "  return %0 : tensor<2x2xi32>\n}\n",
       "t.mlir:2:33: dense literal has 4 elements in dimension 0, but tensor<2x2xi32> has 2"},
      {"dense_range",
       "func.func @f() -> tensor<i8> {\n  %0 = stablehlo.constant dense<300> : tensor<i8>\n"
       "  return %0 : tensor<i8>\n}\n",
       "t.mlir:2:33: 300 does not fit in i8"},
      {"dense_float_for_int",
       "func.func @f() -> tensor<i32> {\n  %0 = stablehlo.constant dense<1.5> : tensor<i32>\n"
       "  return %0 : tensor<i32>\n}\n",
       "t.mlir:2:33: '1.5' is not a value of i32"},
      {"dense_bool",
       "func.func @f() -> tensor<f32> {\n  %0 = stablehlo.constant dense<true> : tensor<f32>\n"
       "  return %0 : tensor<f32>\n}\n",
       "t.mlir:2:33: 'true' is not a value of f32"},
      {"undefined_value",
       "func.func @f(%a: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.abs %b : tensor<f32>\n"
       "  return %0 : tensor<f32>\n}\n",
       "t.mlir:2:22: use of undefined value %b"},
      {"duplicate_definition",
       "func.func @f(%a: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.abs %a : tensor<f32>\n"
       "  %0 = stablehlo.abs %a : tensor<f32>\n  return %0 : tensor<f32>\n}\n",
       "t.mlir:3:3: duplicate definition of %0"},
      {"bad_sharding_syntax",
       "sdy.mesh @m = <[\"x\"=2]>\nfunc.func @f(%a: tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{\"x\"]>}) "
       "-> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n",
       "t.mlir:2:71: expected '}', found ']>}) -> tens'"},
      {"mesh_axis_missing",
       "sdy.mesh @m = <[\"x\"=2]>\nfunc.func @f(%a: tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{\"y\"}]>}) "
       "-> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n",
       "t.mlir:1:1: sharding of argument 0 of @f: dimension 0 names axis \"y\", which is not in mesh "
       "@m (axes: x)"},
      {"mesh_missing",
       "func.func @f(%a: tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{\"x\"}]>}) -> tensor<4xf32> {\n"
       "  return %a : tensor<4xf32>\n}\n",
       "t.mlir:1:1: mesh @m is not declared in the module"},
      {"truncated_file", "func.func @f(%a: tensor<4x", "t.mlir:1:27: expected an identifier, but the input ends"},
      {"truncated_after_op", kAdd.substr(0, 77), "t.mlir:2:8: expected an identifier, but the input ends"},
      {"missing_return",
       "func.func @f(%a: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.abs %a : tensor<f32>\n}\n",
       "t.mlir:3:1: block must end with a return"},
      {"return_types",
       "func.func @f(%a: tensor<f32>) -> tensor<i32> {\n  return %a : tensor<f32>\n}\n",
       "t.mlir:1:11: @f returns (tensor<f32>) but is declared to return (tensor<i32>)"},
      {"unknown_element_type",
       "func.func @f(%a: tensor<4xf31>) -> tensor<4xf31> {\n  return %a : tensor<4xf31>\n}\n",
       "t.mlir:1:27: unknown element type 'f31'"},
      {"bounds_of_another_rank",
       "func.func @f(%a: tensor<?xf32, #stablehlo.bounds<4, 5>>) -> tensor<?xf32> {\n  return %a : tensor<?xf32>\n}\n",
       "t.mlir:1:32: #stablehlo.bounds has 2 entries for a tensor of rank 1"},
      {"unknown_dialect_type",
       "func.func @f(%a: !foo.bar) -> tensor<f32> {\n  return %a : tensor<f32>\n}\n",
       "t.mlir:1:18: unsupported type '!foo.bar'"},
      {"unknown_top_level", "foo.bar @x\n", "t.mlir:1:1: expected 'func.func' or 'sdy.mesh'"},
      {"text_after_module", "module {\n}\n}\n", "t.mlir:3:1: text after the end of the module"},
      {"multi_result_without_index",
       "func.func @f(%a: tensor<f32>) -> tensor<f32> {\n"
       "  %0:2 = stablehlo.optimization_barrier %a, %a : tensor<f32>, tensor<f32>\n"
       "  return %0 : tensor<f32>\n}\n",
       "t.mlir:3:10: %0 has 2 results; name one as %0#i"},
      {"result_index_out_of_range",
       "func.func @f(%a: tensor<f32>) -> tensor<f32> {\n"
       "  %0:2 = stablehlo.optimization_barrier %a, %a : tensor<f32>, tensor<f32>\n"
       "  return %0#2 : tensor<f32>\n}\n",
       "t.mlir:3:10: %0 has 2 results, so %0#2 does not exist"},
      {"result_count",
       "func.func @f(%a: tensor<f32>) -> tensor<f32> {\n  %0:2 = stablehlo.abs %a : tensor<f32>\n"
       "  return %0#0 : tensor<f32>\n}\n",
       "t.mlir:2:3: stablehlo.abs has 1 results, but the text names 2"},
      {"compare_direction",
       "func.func @f(%a: tensor<f32>) -> tensor<i1> {\n"
       "  %0 = stablehlo.compare BIGGER, %a, %a : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
       "  return %0 : tensor<i1>\n}\n",
       "t.mlir:2:25: unknown comparison direction"},
      {"shape_rule_in_generic_form",
       "func.func @f(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
       "  %0 = \"stablehlo.transpose\"(%a) {permutation = array<i64: 0, 0>} : (tensor<2x3xf32>) -> "
       "tensor<2x3xf32>\n  return %0 : tensor<2x3xf32>\n}\n",
       "t.mlir:2:3: stablehlo.transpose: permutation repeats dimension 0"},
      {"duplicate_attribute",
       "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
       "  %0 = \"stablehlo.reverse\"(%a) {dimensions = array<i64: 0>, dimensions = array<i64: 0>} : "
       "(tensor<2xf32>) -> tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n",
       "t.mlir:2:61: attribute 'dimensions' is given twice"},
      {"bad_mesh",
       "sdy.mesh @m = <[\"x\"=2, \"x\"=2]>\n", "t.mlir:1:1: mesh @m: axis \"x\" is declared twice"},
      {"duplicate_function",
       "func.func @f() {\n  return\n}\nfunc.func @f() {\n  return\n}\n",
       "t.mlir:4:11: function @f is defined twice"},
      {"unterminated_string",
       "sdy.mesh @m = <[\"x=2]>\n", "t.mlir:1:17: unterminated string"},
      {"integer_expected",
       "func.func @f(%a: tensor<4xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.slice %a [0:2.5] : "
       "(tensor<4xf32>) -> tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n",
       "t.mlir:2:30: expected an integer, found '2.5'"},
      {"missing_colon",
       "func.func @f(%a: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.abs %a tensor<f32>\n"
       "  return %0 : tensor<f32>\n}\n",
       "t.mlir:2:25: expected ':', found 'tensor<f32>'"},
      {"reduce_body_not_binary",
       "func.func @f(%a: tensor<4xf32>, %c: tensor<f32>) -> tensor<f32> {\n"
       "  %0 = stablehlo.reduce(%a init: %c) applies stablehlo.abs across dimensions = [0] : "
       "(tensor<4xf32>, tensor<f32>) -> tensor<f32>\n  return %0 : tensor<f32>\n}\n",
       "t.mlir:2:46: 'stablehlo.abs' is not a binary elementwise op"},
      // Regions the kernels run with the types the op gives them (while C1-C2, reduce C6,
      // manual_computation's pieces): a mismatch is the module's error, not the interpreter's.
      {"while_body_type",
       "func.func @f(%a: tensor<4xf32>, %i: tensor<i32>) -> tensor<4xf32> {\n"
       "  %0:2 = stablehlo.while(%x = %a, %n = %i) : tensor<4xf32>, tensor<i32>\n"
       "  cond {\n    %c = stablehlo.constant dense<true> : tensor<i1>\n    stablehlo.return %c : tensor<i1>\n"
       "  } do {\n    %s = stablehlo.slice %x [0:3] : (tensor<4xf32>) -> tensor<3xf32>\n"
       "    stablehlo.return %s, %n : tensor<3xf32>, tensor<i32>\n  }\n  return %0#0 : tensor<4xf32>\n}\n",
       "t.mlir:2:3: @f: op 0 (stablehlo.while): its body returns (tensor<3xf32>, tensor<i32>) but the loop "
       "carries (tensor<4xf32>, tensor<i32>) (C2)"},
      {"while_cond_result",
       "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
       "  %0 = stablehlo.while(%x = %a) : tensor<4xf32>\n"
       "  cond {\n    %c = stablehlo.constant dense<1> : tensor<i32>\n    stablehlo.return %c : tensor<i32>\n"
       "  } do {\n    stablehlo.return %x : tensor<4xf32>\n  }\n  return %0 : tensor<4xf32>\n}\n",
       "t.mlir:2:3: @f: op 0 (stablehlo.while): its cond returns (tensor<i32>), not tensor<i1> (C1)"},
      {"reduce_body_type",
       "func.func @f(%a: tensor<4xf32>, %c: tensor<f32>) -> tensor<f32> {\n"
       "  %0 = stablehlo.reduce(%a init: %c) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>\n"
       "    reducer(%x: tensor<i32>, %y: tensor<i32>) {\n      %s = stablehlo.add %x, %y : tensor<i32>\n"
       "      stablehlo.return %s : tensor<i32>\n    }\n  return %0 : tensor<f32>\n}\n",
       "t.mlir:2:3: @f: op 0 (stablehlo.reduce): its body has type (tensor<i32>, tensor<i32>) -> (tensor<i32>), "
       "but its results need (tensor<f32>, tensor<f32>) -> (tensor<f32>) (C6)"},
      {"manual_body_takes_whole_operand",
       "sdy.mesh @m = <[\"a\"=2]>\nfunc.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {\n"
       "  %0 = sdy.manual_computation(%a) in_shardings=[<@m, [{\"a\"}]>] out_shardings=[<@m, [{\"a\"}]>] "
       "manual_axes={\"a\"} (%x: tensor<8xf32>) {\n    sdy.return %x : tensor<8xf32>\n"
       "  } : (tensor<8xf32>) -> tensor<8xf32>\n  return %0 : tensor<8xf32>\n}\n",
       "t.mlir:3:3: @f: op 0 (sdy.manual_computation): its body takes (tensor<8xf32>) but the operands' pieces "
       "along the manual axes are (tensor<4xf32>)"},
      {"manual_body_returns_short_piece",
       "sdy.mesh @m = <[\"a\"=2]>\nfunc.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {\n"
       "  %0 = sdy.manual_computation(%a) in_shardings=[<@m, [{\"a\"}]>] out_shardings=[<@m, [{\"a\"}]>] "
       "manual_axes={\"a\"} (%x: tensor<4xf32>) {\n    %s = stablehlo.slice %x [0:3] : (tensor<4xf32>) -> tensor<3xf32>\n"
       "    sdy.return %s : tensor<3xf32>\n  } : (tensor<8xf32>) -> tensor<8xf32>\n  return %0 : tensor<8xf32>\n}\n",
       "t.mlir:3:3: @f: op 0 (sdy.manual_computation): its body returns (tensor<3xf32>) but the results' pieces "
       "along the manual axes are (tensor<4xf32>)"},
      {"sharding_per_value_count",
       "sdy.mesh @m = <[\"a\"=2]>\nfunc.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {\n"
       "  %0 = stablehlo.add %a, %a {sdy.sharding = #sdy.sharding_per_value<[<@m, [{\"a\"}]>, <@m, [{}]>]>} : "
       "tensor<8xf32>\n  return %0 : tensor<8xf32>\n}\n",
       "t.mlir:3:3: @f: op 0 (stablehlo.add) has 2 result shardings (sdy.sharding_per_value) for 1 results"},
      {"nested_manual_axis",
       "sdy.mesh @m = <[\"a\"=2]>\nfunc.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {\n"
       "  %0 = sdy.manual_computation(%a) in_shardings=[<@m, [{\"a\"}]>] out_shardings=[<@m, [{\"a\"}]>] "
       "manual_axes={\"a\"} (%x: tensor<4xf32>) {\n"
       "    %1 = sdy.manual_computation(%x) in_shardings=[<@m, [{\"a\"}]>] out_shardings=[<@m, [{\"a\"}]>] "
       "manual_axes={\"a\"} (%y: tensor<2xf32>) {\n      sdy.return %y : tensor<2xf32>\n"
       "    } : (tensor<4xf32>) -> tensor<4xf32>\n    sdy.return %1 : tensor<4xf32>\n"
       "  } : (tensor<8xf32>) -> tensor<8xf32>\n  return %0 : tensor<8xf32>\n}\n",
       "t.mlir:4:5: @f: op 0 (sdy.manual_computation) makes axis 'a' manual inside a manual_computation that "
       "already does"},
      // select_and_scatter's select compares two elements (C9); the kernel called it with two.
      {"select_region_arity",
       "func.func @f(%a: tensor<4xf32>, %s: tensor<2xf32>, %c: tensor<f32>) -> tensor<4xf32> {\n"
       "  %0 = \"stablehlo.select_and_scatter\"(%a, %s, %c) ({\n  ^bb0(%x: tensor<f32>):\n"
       "    %p = stablehlo.compare GE, %x, %x : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
       "    stablehlo.return %p : tensor<i1>\n  }, {\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
       "    %q = stablehlo.add %x, %y : tensor<f32>\n    stablehlo.return %q : tensor<f32>\n"
       "  }) {window_dimensions = array<i64: 2>, window_strides = array<i64: 2>} : "
       "(tensor<4xf32>, tensor<2xf32>, tensor<f32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n",
       "t.mlir:2:3: @f: op 0 (stablehlo.select_and_scatter): its select has type (tensor<f32>) -> (tensor<i1>), "
       "but the operand needs (tensor<f32>, tensor<f32>) -> (tensor<i1>) (C9)"},
      // A scattered result larger than its operand, and one over a group of another width.
      {"reduce_scatter_grows",
       "func.func @f(%a: tensor<4x0xf32>) -> tensor<4x4xf32> {\n"
       "  %0 = \"stablehlo.reduce_scatter\"(%a) ({\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
       "    %q = stablehlo.add %x, %y : tensor<f32>\n    stablehlo.return %q : tensor<f32>\n"
       "  }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, scatter_dimension = 1 : i64} : "
       "(tensor<4x0xf32>) -> tensor<4x4xf32>\n  return %0 : tensor<4x4xf32>\n}\n",
       "t.mlir:2:3: stablehlo.reduce_scatter: result tensor<4x4xf32> is not operand tensor<4x0xf32> scattered "
       "over a group along dimension 1"},
      {"all_gather_group_width",
       "func.func @f(%a: tensor<4x2xf32>) -> tensor<4x8xf32> {\n"
       "  %0 = \"stablehlo.all_gather\"(%a) {all_gather_dim = 1 : i64, replica_groups = dense<[[0, 1, 3]]> : "
       "tensor<1x3xi64>} : (tensor<4x2xf32>) -> tensor<4x8xf32>\n  return %0 : tensor<4x8xf32>\n}\n",
       "t.mlir:2:3: stablehlo.all_gather: result tensor<4x8xf32> is not operand tensor<4x2xf32> gathered "
       "from a group along dimension 1"},
      // Paddings near 2^63 wrapped the window count in 64 bits (to a 0-row result the op accepted).
      {"window_padding_overflow",
       "func.func @f(%a: tensor<4xf32>, %c: tensor<f32>) -> tensor<0xf32> {\n"
       "  %0 = \"stablehlo.reduce_window\"(%a, %c) ({\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n"
       "    %q = stablehlo.add %x, %y : tensor<f32>\n    stablehlo.return %q : tensor<f32>\n"
       "  }) {padding = dense<[[9223372036854775807, 2]]> : tensor<1x2xi64>, window_dimensions = array<i64: 5>, "
       "window_strides = array<i64: 1>} : (tensor<4xf32>, tensor<f32>) -> tensor<0xf32>\n"
       "  return %0 : tensor<0xf32>\n}\n",
       "t.mlir:2:3: window dimension 0 has more windows than a 64-bit size holds (its "
       "padding or dilation is too large)"},
      // Shardy's propagation ops: a group's values are laid out alike, so they share a shape; a
      // barrier open both ways is no barrier.
      {"sharding_group_shapes",
       "func.func @f(%a: tensor<8xf32>, %b: tensor<4xf32>) -> tensor<8xf32> {\n"
       "  sdy.sharding_group %a group_id=1 : tensor<8xf32>\n  sdy.sharding_group %b group_id=1 : tensor<4xf32>\n"
       "  return %a : tensor<8xf32>\n}\n",
       "t.mlir:3:3: @f: op 1 (sdy.sharding_group) puts a tensor<4xf32> into sharding group 1, whose values are "
       "tensor<8xf32>"},
      {"barrier_both_ways",
       "func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {\n"
       "  %0 = sdy.propagation_barrier %a allowed_direction=BOTH : tensor<8xf32>\n  return %0 : tensor<8xf32>\n}\n",
       "t.mlir:2:3: sdy.propagation_barrier: allowed_direction is BOTH; it must be FORWARD, BACKWARD or NONE"},
      // Shardy's priorities are decimal integers that fit: p9999999999999999999 wrapped around.
      {"priority_overflow",
       "sdy.mesh @m = <[\"x\"=2]>\nfunc.func @f(%a: tensor<8xf32> {sdy.sharding = #sdy.sharding<@m, [{\"x\"}p9999999999999999999]>}) -> tensor<8xf32> {\n"
       "  return %a : tensor<8xf32>\n}\n",
       "t.mlir:2:73: expected an integer priority after 'p', found 'p9999999999999999999'"},
      // A manual computation's body is isolated from above too (one reading %a crashed `tessera
      // run`), and its layouts are all on one mesh.
      {"manual_computation_reads_outside",
       "sdy.mesh @m = <[\"a\"=2]>\nfunc.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
       "  %0 = sdy.manual_computation(%a) in_shardings=[<@m, [{}]>] out_shardings=[<@m, [{}]>] manual_axes={} (%b: tensor<4xf32>) {\n"
       "    %1 = stablehlo.add %a, %b : tensor<4xf32>\n    sdy.return %1 : tensor<4xf32>\n"
       "  } : (tensor<4xf32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n",
       "t.mlir:3:3: @f: op 0 (sdy.manual_computation): its body reads a tensor<4xf32> defined outside it; the body "
       "of a manual computation sees only its arguments (pass the value as an operand)"},
      {"manual_computation_two_meshes",
       "sdy.mesh @m = <[\"a\"=2]>\nsdy.mesh @n = <[\"a\"=4]>\nfunc.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
       "  %0 = sdy.manual_computation(%a) in_shardings=[<@m, [{}]>] out_shardings=[<@n, [{}]>] manual_axes={} (%b: tensor<4xf32>) {\n"
       "    sdy.return %b : tensor<4xf32>\n"
       "  } : (tensor<4xf32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n",
       "t.mlir:4:3: @f: op 0 (sdy.manual_computation): its in and out shardings name meshes @m and @n; they must "
       "all be on one mesh"},
      // A named computation is isolated from above: its body sees only its own arguments.
      {"named_computation_reads_outside",
       "func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {\n"
       "  %0 = sdy.named_computation<\"g\">(%a) (%b: tensor<8xf32>) {\n"
       "    %1 = stablehlo.add %a, %b : tensor<8xf32>\n    sdy.return %1 : tensor<8xf32>\n"
       "  } : (tensor<8xf32>) -> tensor<8xf32>\n  return %0 : tensor<8xf32>\n}\n",
       "t.mlir:3:24: use of undefined value %a"},
      {"named_computation_shardings",
       "sdy.mesh @m = <[\"x\"=2]>\nfunc.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {\n"
       "  %0 = sdy.named_computation<\"g\">(%a) in_shardings=[<@m, [{}]>, <@m, [{}]>] (%b: tensor<8xf32>) {\n"
       "    sdy.return %b : tensor<8xf32>\n  } : (tensor<8xf32>) -> tensor<8xf32>\n  return %0 : tensor<8xf32>\n}\n",
       "t.mlir:3:39: sdy.named_computation<\"g\">: 2 in_shardings for 1 operands"},
      {"named_computation_sharding_rank",
       "sdy.mesh @m = <[\"x\"=2]>\nfunc.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {\n"
       "  %0 = sdy.named_computation<\"g\">(%a) in_shardings=[<@m, [{\"x\"}, {}]>] (%b: tensor<8xf32>) {\n"
       "    sdy.return %b : tensor<8xf32>\n  } : (tensor<8xf32>) -> tensor<8xf32>\n  return %0 : tensor<8xf32>\n}\n",
       "t.mlir:3:39: sdy.named_computation<\"g\">: sharding of in_shardings[0]: has 2 dimension shardings for "
       "tensor<8xf32> of rank 1"},
      {"named_computation_argument_type",
       "func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {\n"
       "  %0 = sdy.named_computation<\"g\">(%a) (%b: tensor<4xf32>) {\n"
       "    sdy.return %b : tensor<4xf32>\n  } : (tensor<8xf32>) -> tensor<8xf32>\n  return %0 : tensor<8xf32>\n}\n",
       "t.mlir:2:39: sdy.named_computation<\"g\">: argument 0 of its body is tensor<4xf32>, but operand 0 is "
       "tensor<8xf32>"},
  };
  return k;
}

class ParserError : public ::testing::TestWithParam<Bad> {};

TEST_P(ParserError, OneLineWithLocation) {
  std::string message = "<no error>";
  try {
    parse(GetParam().text, "t.mlir");
  } catch (const ParseError& e) {
    message = e.what();
  }
  EXPECT_EQ(message, GetParam().message);
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Corpus, ParserError, ::testing::ValuesIn(corpus()),
                         [](const auto& info) { return info.param.name; });

TEST(Parser, CorpusIsLargeEnough) { EXPECT_GE(corpus().size(), 30u); }

TEST(Parser, EveryPrefixOfAValidFileFailsCleanly) {
  // Truncation anywhere gives a ParseError, never a crash or another exception type.
  for (size_t n = 0; n + 1 < kAdd.size(); ++n) {  // the last character is the final newline
    try {
      parse(kAdd.substr(0, n), "t.mlir");
    } catch (const ParseError&) {
      continue;
    }
    if (n > 0) ADD_FAILURE() << "prefix of " << n << " characters parsed";
  }
  EXPECT_NO_THROW(parse(kAdd, "t.mlir"));
}

}  // namespace
}  // namespace tessera::stablehlo
