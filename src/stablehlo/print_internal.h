// The printer's internals, shared by its files: the SSA names of a function, the Printer that
// writes lines and regions with MLIR's indentation, and the text of attributes and literals.
//
// printer.cpp owns module, function and region layout and value naming; print_ops.cpp holds one
// print rule per op; print_attrs.cpp and print_literal.cpp write attribute values.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "ir/module.h"

namespace tessera::stablehlo::print_impl {

// ---- Attribute text (print_attrs.cpp, print_literal.cpp) ----

std::string quoted(std::string_view s);                // "text" with MLIR's escapes
std::string symbol(std::string_view name);             // @name, or @"odd name"
std::string keyword_or_string(std::string_view s);     // name, or "odd name"
std::string int_list(const std::vector<int64_t>& v);   // [1, 2]
std::string sharding_body(const ir::Sharding& s);      // <@m, [{"a"}, {}]>
std::string sharding_list(const ir::ShardingList& l);  // [<@m, ...>, <@m, ...>]
std::string axis_names(const ir::AxisNames& names);    // {"a", "b"}
std::string axis_ref_list(const std::vector<ir::AxisRef>& refs);  // {"a", "b":(1)2}
std::string conv_dims_text(const ir::ConvDims& d);  // [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]
std::string dense(const ir::Literal& literal);         // dense<...> : tensor<...>
// `name = value`, or just `name` for a set unit attribute; empty for an unset one.
std::string named_attribute(const std::string& name, const ir::Attribute& value);
// ` {a = 1 : i64, b}` over the attributes `keep` accepts; empty when none is left.
template <typename Keep>
std::string attr_dict(const ir::AttrMap& attrs, Keep keep) {
  std::string out;
  for (const auto& [name, value] : attrs) {
    if (!keep(name)) continue;
    std::string entry = named_attribute(name, value);
    if (entry.empty()) continue;
    out += out.empty() ? " {" : ", ";
    out += entry;
  }
  return out.empty() ? out : out + "}";
}
// The attributes a pretty form does not spell itself.
std::string attr_dict_except(const ir::AttrMap& attrs,
                             std::initializer_list<std::string_view> elided);

// ---- SSA names (printer.cpp) ----

// Names every value of a function the way MLIR's printer does: entry arguments %argN, results
// %N in op order, constants %cst (floats, complex) and %c (integers, bools), while-loop arguments
// %iterArg, name clashes suffixed _K. A region is numbered after the whole region that holds it,
// continuing that region's counters; sibling regions restart from the same point.
class Names {
 public:
  explicit Names(const ir::Function& fn);
  std::string use(const ir::Value* v) const;  // %0, %0#1, %arg2, %cst_1
  std::string def(const ir::Op& op) const;    // %0, %0:2

 private:
  struct State;
  void number_region(const ir::Block& block, State state);
  std::unordered_map<const ir::Op*, std::string> op_names_;
  std::unordered_map<const ir::Value*, std::string> arg_names_;
  std::unordered_set<std::string> used_;  // names in scope while numbering
};

// ---- The line printer (printer.cpp) ----

class Printer {
 public:
  Printer(std::string& out, const Names& names, int indent)
      : out_(out), names_(names), indent_(indent) {}

  Printer& operator<<(std::string_view s) {
    out_ += s;
    return *this;
  }
  void newline();  // a line break and the current indentation (MLIR's printNewline)

  void value(const ir::Value* v) { out_ += names_.use(v); }
  void values(const std::vector<ir::Value*>& vs, size_t from = 0);  // %a, %b
  void types(const std::vector<ir::Type>& ts);                      // t1, t2
  void functional_type(const ir::Op& op);                           // (t1, t2) -> t3
  void block_argument(const ir::Value* arg);                        // %a: t
  // `{`, the block's ops one level deeper, `}` at the current indentation. With entry_arguments
  // the block's `^bb0(...):` header is printed too.
  void region(const ir::Block& block, bool entry_arguments);
  void op(const ir::Op& op);  // one op on its own line(s)

 private:
  std::string& out_;
  const Names& names_;
  int indent_;
};

// The op's text after `%r = `: its rule from print_ops.cpp.
void print_op_body(Printer& p, const ir::Op& op);

// Shared by the rule files (print_ops.cpp).
void generic(Printer& p, const ir::Op& op);  // MLIR's generic form
// The op's attributes but `elided`, as a trailing ` {...}` (nothing when none is left).
std::string except(const ir::Op& op, std::initializer_list<std::string_view> elided);
// `t` when every operand type equals the result type, else `(t1, t2) -> t3`.
void same_operands_and_result_type(Printer& p, const ir::Op& op);

// The pretty forms of the ops added for what JAX exports (#17) (print_more_ops.cpp).
void reduce_precision(Printer& p, const ir::Op& op);
void chlo_form(Printer& p, const ir::Op& op);
void top_k(Printer& p, const ir::Op& op);
void cholesky(Printer& p, const ir::Op& op);

// Shape polymorphism (print_dynamic.cpp).
void get_dimension_size(Printer& p, const ir::Op& op);
void dynamic_iota(Printer& p, const ir::Op& op);
// The pretty forms of issue #17's numeric ops (print_numeric.cpp).
void fft(Printer& p, const ir::Op& op);
void rng(Printer& p, const ir::Op& op);
void rng_bit_generator(Printer& p, const ir::Op& op);

// Tokens, tuples and composite (print_effects.cpp).
void result_type_form(Printer& p, const ir::Op& op);  // after_all, create_token, tuple
void get_tuple_element(Printer& p, const ir::Op& op);
void composite(Printer& p, const ir::Op& op);
void probe_form(Printer& p, const ir::Op& op);  // interpreter.probe, check.expect_serialized_eq
void scan_form(Printer& p, const ir::Op& op);   // chlo.scan
// Shardy's ops (print_sdy_ops.cpp).
void sharding_op(Printer& p, const ir::Op& op);  // sharding_constraint, reshard
void sdy_all_gather(Printer& p, const ir::Op& op);
void sdy_all_slice(Printer& p, const ir::Op& op);
void sdy_reduce_scatter(Printer& p, const ir::Op& op);
void sdy_all_reduce(Printer& p, const ir::Op& op);
void sdy_all_to_all(Printer& p, const ir::Op& op);
void sdy_collective_permute(Printer& p, const ir::Op& op);
void manual_computation(Printer& p, const ir::Op& op);
void propagation_barrier(Printer& p, const ir::Op& op);
void data_flow_edge(Printer& p, const ir::Op& op);
void sharding_group(Printer& p, const ir::Op& op);

}  // namespace tessera::stablehlo::print_impl
