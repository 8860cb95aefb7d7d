// Internal to the parser: the state shared by the structural parser (parser.cpp) and the per-op
// pretty-form rules (parse_ops.cpp).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/module.h"
#include "stablehlo/lexer.h"
#include "stablehlo/parse_attrs.h"

namespace tessera::stablehlo {

// An op as read from text, before it is created.
struct OpText {
  ir::OpKind kind;
  Location loc;
  std::vector<ir::Value*> operands;
  ir::AttrMap attrs;
  std::vector<ir::Type> result_types;  // empty: inferred by the shape rule
  std::vector<std::unique_ptr<ir::Block>> regions;
  size_t expected_results = 0;         // how many names the text bound
};

class Parser {
 public:
  Parser(Lexer& lx, ir::Module& module) : lx(lx), module(module) { lx.module = &module; }

  void parse_top_level(bool verify);

  // Used by the op rules.
  ir::Value* use_value();
  // Comma-separated uses; stops (without consuming) at anything that is not '%'.
  std::vector<ir::Value*> use_values();
  // Checks that the text's operand types match the values' types.
  void check_operand_types(const OpText& op, const std::vector<ir::Type>& types);
  // "{ [^bb0(%a: t, ...):] ops }" into a new region of `op`. With `args` the block's arguments
  // were declared outside the braces (pretty forms) and are bound here.
  ir::Block& parse_region(OpText& op,
                          const std::vector<std::pair<std::string, ir::Type>>* args = nullptr);
  // "(%a: t, %b: t)" block-argument declarations.
  std::vector<std::pair<std::string, ir::Type>> parse_arg_decls();
  // ": t", ": t, t" or ": (t, t) -> t" after a pretty op: operand types are checked, result
  // types recorded. A single type stands for every operand and the result.
  void parse_trailing_types(OpText& op);
  // Pretty ops may carry an attribute dictionary before the colon.
  void parse_optional_attrs(OpText& op);
  // A private function for the body of an op isolated from above (sdy.named_computation), named
  // after `name` once the module is read (`name`, else `name_0`, `name_1`, ...; the calls' callee
  // follows). Its body is read from "{ ... }" with the arguments `args` and no outer value in
  // scope; returns the function and the name its calls use until then.
  ir::Function& parse_outlined_body(const std::string& name, Location at,
                                    const std::vector<std::pair<std::string, ir::Type>>& args);

  Lexer& lx;
  ir::Module& module;

 private:
  void parse_module();
  void parse_function();
  // MLIR's generic forms of the module and of func.func (parse_generic_func.cpp):
  // "builtin.module"() <{sym_name = ...}> ({...}) {attrs} : () -> () and
  // "func.func"() <{function_type = ..., sym_name = ..., arg_attrs = [...]}> ({^bb0(...): ...}) : () -> ().
  void parse_generic_module();
  void parse_generic_function();
  void parse_block_body(ir::Block& block);
  void parse_op(ir::Block& block);
  void parse_generic(OpText& op);
  void bind(const std::string& name, std::vector<ir::Value*> values, Location at);

  // After the module is read: gives each outlined function its name and its calls that name.
  void name_outlined();

  std::vector<std::map<std::string, std::vector<ir::Value*>>> scopes_;
  std::vector<std::pair<ir::Function*, std::string>> outlined_;  // and the name it asked for
};

// Reads the pretty form of `op.kind` (after the op name). Defined in parse_ops.cpp, one rule per
// row of ops.def.
void parse_pretty(Parser& p, OpText& op);
// Tokens, tuples and composite (parse_effects.cpp): after_all, create_token and tuple read
// `op %a, %b : <result type>`.
void parse_result_type_form(Parser& p, OpText& op);
void parse_get_tuple_element(Parser& p, OpText& op);
void parse_composite(Parser& p, OpText& op);
void parse_probe(Parser& p, OpText& op);  // interpreter.probe, check.expect_serialized_eq
void parse_scan(Parser& p, OpText& op);   // chlo.scan
// The check dialect (parse_check.cpp): expect_eq_const / expect_almost_eq_const, and expect_eq /
// expect_almost_eq / expect_close with their keyword arguments.
void parse_expect_const(Parser& p, OpText& op);
void parse_check_form(Parser& p, OpText& op);
// stablehlo.convolution's pretty form (parse_window.cpp).
void parse_convolution(Parser& p, OpText& op);
// get_dimension_size's and dynamic_iota's `%x, dim = 0`; dynamic_broadcast_in_dim's
// `%x, %dims, dims = [..]` (parse_dynamic.cpp).
void parse_dim_form(Parser& p, OpText& op);
void parse_dynamic_broadcast_in_dim(Parser& p, OpText& op);
// The pretty forms of issue #17's numeric ops (parse_numeric.cpp).
void parse_fft(Parser& p, OpText& op);
void parse_rng(Parser& p, OpText& op);
void parse_rng_bit_generator(Parser& p, OpText& op);
// The sdy ops' pretty forms (parse_sdy_ops.cpp).
void parse_sharded_value(Parser& p, OpText& op);  // sharding_constraint, reshard
void parse_sdy_all_gather(Parser& p, OpText& op);
void parse_sdy_all_slice(Parser& p, OpText& op);
void parse_sdy_reduce_scatter(Parser& p, OpText& op);
void parse_sdy_all_reduce(Parser& p, OpText& op);
void parse_sdy_all_to_all(Parser& p, OpText& op);
void parse_sdy_collective_permute(Parser& p, OpText& op);
void parse_propagation_barrier(Parser& p, OpText& op);
void parse_data_flow_edge(Parser& p, OpText& op);
void parse_sharding_group(Parser& p, OpText& op);
void parse_manual_computation(Parser& p, OpText& op);
void parse_named_computation(Parser& p, OpText& op);  // a call of an outlined function
// Shared by the rule files: optional attributes, then the trailing types; values, then
// `<keyword> =` (use_values stops at the first word that is not a value, after consuming the
// comma before it).
void finish(Parser& p, OpText& op);
void values_and_keyword(Parser& p, OpText& op, const char* keyword);

}  // namespace tessera::stablehlo
