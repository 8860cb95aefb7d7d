// Pretty op forms, one rule per row of ops.def. Most ops use the common form
// `op %a, %b {attrs} : types`; the rest read their own syntax (compare's direction, slice's
// ranges, reduce's `applies`, while's cond/do, Shardy's sharding literals) and fill in the same
// attributes the generic form would carry.
#include <array>
#include <optional>

#include "ir/shape_rules.h"
#include "stablehlo/parser_impl.h"
#include "support/strings.h"

namespace tessera::stablehlo {
namespace {

using ir::OpKind;

void common(Parser& p, OpText& op) {
  // func.return and optimization_barrier write their attributes before their values.
  p.parse_optional_attrs(op);
  // optimization_barrier of nothing prints as `stablehlo.optimization_barrier()`.
  if (op.kind == OpKind::OptimizationBarrier && p.lx.peek() == '(') {
    p.lx.expect("(");
    p.lx.expect(")");
    return;
  }
  op.operands = p.use_values();
  p.parse_optional_attrs(op);
  if (op.kind == OpKind::Return && p.lx.peek() != ':') return;  // `return` with no values
  p.parse_trailing_types(op);
}

// "name = [1, 2]" after a comma.
void keyword_ints(Parser& p, OpText& op, const char* keyword, const char* attr) {
  p.lx.expect(",");
  p.lx.expect(keyword);
  p.lx.expect("=");
  op.attrs.set(attr, parse_int_list(p.lx));
}

// `true` or `false`.
bool keyword_bool(Parser& p) {
  p.lx.skip_space();
  Location at = p.lx.location();
  std::string word = p.lx.identifier();
  if (word != "true" && word != "false") p.lx.error_at(at, fmt::format("expected true or false, found '{}'", word));
  return word == "true";
}

void constant(Parser& p, OpText& op) {
  // StableHLO's constant parser also takes the op's generic body: `() {value = dense<...>} : () -> t`.
  if (p.lx.try_consume("(")) {
    p.lx.expect(")");
    p.parse_optional_attrs(op);
    p.lx.skip_space();
    Location at = p.lx.location();
    p.parse_trailing_types(op);
    const ir::Literal* value = op.attrs.find<ir::Literal>("value");
    if (value == nullptr) p.lx.error_at(at, "a constant needs a value = dense<...> attribute");
    if (op.result_types.size() != 1 || op.result_types[0] != value->type())
      p.lx.error_at(at, fmt::format("constant: the value is {}, but the type says ({})", ir::to_string(value->type()),
                                    ir::shape_rules::types_string(op.result_types)));
    return;
  }
  p.parse_optional_attrs(op);
  p.lx.expect("dense");
  ir::Literal value = parse_dense(p.lx);
  op.result_types = {value.type()};
  op.attrs.set("value", std::move(value));
}

void iota(Parser& p, OpText& op) {
  p.lx.expect("dim");
  p.lx.expect("=");
  op.attrs.set("iota_dimension", p.lx.integer());
  finish(p, op);
}

void compare(Parser& p, OpText& op) {
  Location at = p.lx.location();
  auto dir = ir::parse_comparison_direction(p.lx.identifier());
  if (!dir) p.lx.error_at(at, "unknown comparison direction");
  op.attrs.set("comparison_direction", *dir);
  p.lx.expect(",");
  op.operands = p.use_values();
  if (op.operands.size() == 2 && p.lx.peek() != ':' && p.lx.peek() != '{') {
    // The values list consumed the comma before the comparison type.
    Location t = p.lx.location();
    auto type = ir::parse_compare_type(p.lx.identifier());
    if (!type) p.lx.error_at(t, "unknown comparison type");
    op.attrs.set("compare_type", *type);
  }
  finish(p, op);
}

// `op %x, dims = [...] : types`: broadcast_in_dim, transpose and reverse, each keeping the list
// in its own attribute.
template <const char* Attribute>
void operand_and_dims(Parser& p, OpText& op) {
  op.operands = {p.use_value()};
  keyword_ints(p, op, "dims", Attribute);
  finish(p, op);
}
constexpr char kBroadcastDimensions[] = "broadcast_dimensions", kPermutation[] = "permutation",
               kDimensions[] = "dimensions";

void slice(Parser& p, OpText& op) {
  op.operands = {p.use_value()};
  std::vector<int64_t> start, limit, strides;
  p.lx.expect("[");
  p.lx.list_until("]", [&] {
    start.push_back(p.lx.integer());
    p.lx.expect(":");
    limit.push_back(p.lx.integer());
    strides.push_back(p.lx.try_consume(":") ? p.lx.integer() : 1);
  });
  op.attrs.set("start_indices", start);
  op.attrs.set("limit_indices", limit);
  op.attrs.set("strides", strides);
  finish(p, op);
}

// Operands, then ", keyword = ..." clauses: the values list stops at the first non-value.
void values_then(Parser& p, OpText& op) {
  op.operands = p.use_values();
}

void dynamic_slice(Parser& p, OpText& op) {
  values_then(p, op);
  p.lx.expect("sizes");
  p.lx.expect("=");
  op.attrs.set("slice_sizes", parse_int_list(p.lx));
  finish(p, op);
}

void concatenate(Parser& p, OpText& op) {
  values_then(p, op);
  p.lx.expect("dim");
  p.lx.expect("=");
  op.attrs.set("dimension", p.lx.integer());
  finish(p, op);
}

void pad(Parser& p, OpText& op) {
  values_then(p, op);
  for (auto [keyword, attr] : {std::pair{"low", "edge_padding_low"}, {"high", "edge_padding_high"},
                               {"interior", "interior_padding"}}) {
    if (std::string_view(keyword) != "low") p.lx.expect(",");
    p.lx.expect(keyword);
    p.lx.expect("=");
    op.attrs.set(attr, parse_int_list(p.lx));
  }
  finish(p, op);
}

// "[0, 1] x [2]"
void dims_pair(Parser& p, std::vector<int64_t>& lhs, std::vector<int64_t>& rhs) {
  p.lx.expect("=");
  lhs = parse_int_list(p.lx);
  p.lx.expect("x");
  rhs = parse_int_list(p.lx);
}

// "[DEFAULT, HIGHEST]" as "[#stablehlo<precision DEFAULT>, #stablehlo<precision HIGHEST>]"; text
// that is not such a list of words is kept as it is.
std::string generic_precision_list(const std::string& text) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return text;
  std::vector<std::string> words;
  std::string inner = text.substr(1, text.size() - 2), word;
  for (char c : inner + ",") {
    if (c == ',') {
      if (word.empty() || word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != std::string::npos) return text;
      words.push_back("#stablehlo<precision " + word + ">");
      word.clear();
    } else if (c != ' ') {
      word += c;
    }
  }
  return "[" + support::join(words, ", ") + "]";
}

void dot_general(Parser& p, OpText& op) {
  values_then(p, op);
  ir::DotDims d;
  bool first = true;
  while (p.lx.peek() != ':' && p.lx.peek() != '{') {
    if (!first) p.lx.expect(",");
    first = false;
    Location at = p.lx.location();
    std::string key = p.lx.identifier();
    if (key == "batching_dims") {
      dims_pair(p, d.lhs_batch, d.rhs_batch);
    } else if (key == "contracting_dims") {
      dims_pair(p, d.lhs_contracting, d.rhs_contracting);
    } else if (key == "precision" || key == "algorithm") {
      p.lx.expect("=");
      // `precision = [...]`, `algorithm = <...>`: any other opening (the fuzzer's stray byte) would
      // be kept and printed, and not read back.
      char open = key == "precision" ? '[' : '<';
      p.lx.expect(std::string(1, open));
      std::string text = open + p.lx.balanced_until(open == '[' ? ']' : '>');
      // The pretty `precision = [DEFAULT, HIGHEST]` is kept as the generic form's
      // `[#stablehlo<precision DEFAULT>, #stablehlo<precision HIGHEST>]`, so both forms read into one
      // attribute and print alike.
      if (key == "precision") text = generic_precision_list(text);
      op.attrs.set(key == "precision" ? "precision_config" : "algorithm", ir::Opaque{text});
    } else {
      p.lx.error_at(at, fmt::format("unknown dot_general clause '{}'", key));
    }
  }
  op.attrs.set("dot_dimension_numbers", d);
  finish(p, op);
}

// stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [1] : (...) -> ...
// or, with any body, the form JAX prints for argmax (one `(lhs, rhs)` pair of scalar arguments
// per input; the block's arguments are every lhs, then every rhs):
// stablehlo.reduce(%a init: %b), (%c init: %d) across dimensions = [1] {attrs} : (...) -> (...)
//     reducer(%x: t, %y: t) (%z: u, %w: u) { ... stablehlo.return ... }
void reduce(Parser& p, OpText& op) {
  std::vector<ir::Value*> inputs, inits;
  do {
    p.lx.expect("(");
    inputs.push_back(p.use_value());
    p.lx.expect("init");
    p.lx.expect(":");
    inits.push_back(p.use_value());
    p.lx.expect(")");
  } while (p.lx.try_consume(","));
  op.operands = inputs;
  op.operands.insert(op.operands.end(), inits.begin(), inits.end());
  if (!p.lx.try_consume("applies")) {
    p.lx.expect("across");
    p.lx.expect("dimensions");
    p.lx.expect("=");
    op.attrs.set("dimensions", parse_int_list(p.lx));
    finish(p, op);
    p.lx.skip_space();
    Location at = p.lx.location();
    p.lx.expect("reducer");
    std::vector<std::pair<std::string, ir::Type>> lhs, rhs;
    while (p.lx.peek() == '(') {
      Location pair_at = p.lx.location();
      auto pair = p.parse_arg_decls();
      if (pair.size() != 2)
        p.lx.error_at(pair_at, fmt::format("a reducer argument pair has {} arguments, not 2", pair.size()));
      lhs.push_back(pair[0]);
      rhs.push_back(pair[1]);
    }
    if (lhs.size() != inputs.size())
      p.lx.error_at(at, fmt::format("the reducer declares {} argument pairs for {} inputs", lhs.size(),
                                    inputs.size()));
    lhs.insert(lhs.end(), rhs.begin(), rhs.end());
    p.parse_region(op, &lhs);
    return;
  }
  p.lx.skip_space();
  Location body_at = p.lx.location();
  std::string body = p.lx.identifier();
  auto kind = ir::parse_op_kind(body);
  if (!kind || !ir::has_trait(*kind, ir::kElementwise) || ir::info(*kind).arity != 2)
    p.lx.error_at(body_at, fmt::format("'{}' is not a binary elementwise op", body));
  p.lx.expect("across");
  p.lx.expect("dimensions");
  p.lx.expect("=");
  op.attrs.set("dimensions", parse_int_list(p.lx));
  finish(p, op);
  // The body: one scalar op per input on (accumulator, element).
  auto region = std::make_unique<ir::Block>();
  std::vector<ir::Value*> lhs, rhs;
  for (ir::Value* init : inits) lhs.push_back(region->add_argument(init->type()));
  for (ir::Value* init : inits) rhs.push_back(region->add_argument(init->type()));
  std::vector<ir::Value*> results;
  for (size_t i = 0; i < inits.size(); ++i) {
    auto combine = std::make_unique<ir::Op>(*kind, std::vector<ir::Value*>{lhs[i], rhs[i]},
                                            std::vector<ir::Type>{inits[i]->type()});
    results.push_back(region->append(std::move(combine))->result());
  }
  region->append(std::make_unique<ir::Op>(OpKind::Return, results, std::vector<ir::Type>{}));
  op.regions.push_back(std::move(region));
}

// stablehlo.while(%a = %init, ...) : types cond { ... } do { ... }
void while_loop(Parser& p, OpText& op) {
  std::vector<std::pair<std::string, ir::Type>> args;
  p.lx.expect("(");
  p.lx.list_until(")", [&] {
    p.lx.expect("%");
    std::string name = p.lx.suffix_id();
    p.lx.expect("=");
    ir::Value* init = p.use_value();
    op.operands.push_back(init);
    args.emplace_back(name, init->type());
  });
  if (p.lx.peek() == ':') p.parse_trailing_types(op);
  if (p.lx.try_consume("attributes")) p.parse_optional_attrs(op);
  p.lx.expect("cond");
  p.parse_region(op, &args);
  p.lx.expect("do");
  p.parse_region(op, &args);
}

void select(Parser& p, OpText& op) {
  op.operands = p.use_values();
  p.parse_optional_attrs(op);
  if (op.operands.size() == 3 && p.lx.peek() == ':') {
    Location at = p.lx.location();
    p.lx.expect(":");
    if (p.lx.peek() != '(') {  // ": pred_type, value_type"
      std::vector<ir::Type> list = parse_type_list(p.lx);
      if (list.size() != 2) p.lx.error_at(at, "expected the predicate's type and the values' type");
      p.check_operand_types(op, {list[0], list[1], list[1]});
      op.result_types = {list[1]};
      return;
    }
    p.lx.reset(at);
  }
  p.parse_trailing_types(op);
}

// call @f(%a) : (t) -> t  and  stablehlo.custom_call @target(%a) {attrs} : (t) -> t
template <const char* Attribute>
void call_form(Parser& p, OpText& op) {
  p.lx.expect("@");
  op.attrs.set(Attribute, p.lx.suffix_id());
  p.lx.expect("(");
  op.operands = p.use_values();
  p.lx.expect(")");
  finish(p, op);
}
constexpr char kCallee[] = "callee", kTarget[] = "call_target_name";

// More elementwise ops (#17).
// stablehlo.complex %re, %im : tensor<2xcomplex<f32>> (the operands' type is the parts' type), or a
// functional type.
void complex(Parser& p, OpText& op) {
  op.operands = p.use_values();
  p.parse_optional_attrs(op);
  p.lx.skip_space();
  if (p.lx.peek() == ':' && op.operands.size() == 2) {
    Location at = p.lx.location();
    p.lx.expect(":");
    if (p.lx.peek() != '(') {
      ir::Type t = parse_type(p.lx);
      if (!ir::is_complex(t.element)) p.lx.error_at(at, "expected a complex result type");
      ir::Type part = t.with_element(ir::real_type(t.element));
      p.check_operand_types(op, {part, part});
      op.result_types = {t};
      return;
    }
    p.lx.reset(at);
  }
  p.parse_trailing_types(op);
}

// stablehlo.reduce_precision %x, format = e5m10 : tensor<4xf32>
void reduce_precision(Parser& p, OpText& op) {
  op.operands = {p.use_value()};
  p.lx.expect(",");
  p.lx.expect("format");
  p.lx.expect("=");
  p.lx.skip_space();
  Location at = p.lx.location();
  std::string format = p.lx.identifier();
  size_t m = format.find('m');
  auto digits = [](std::string_view s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
  };
  if (format.size() < 4 || format[0] != 'e' || m == std::string::npos ||
      !digits(std::string_view(format).substr(1, m - 1)) || !digits(std::string_view(format).substr(m + 1)) ||
      m > 4 || format.size() - m > 4)
    p.lx.error_at(at, fmt::format("expected a format eXmY (exponent and mantissa bits), found '{}'", format));
  op.attrs.set("exponent_bits", static_cast<int64_t>(std::stoll(format.substr(1, m - 1))));
  op.attrs.set("mantissa_bits", static_cast<int64_t>(std::stoll(format.substr(m + 1))));
  finish(p, op);
}

// CHLO's form: `chlo.erf %x {attrs} : tensor<4xf32> -> tensor<4xf32>` (operand types, then the
// result's after `->`); the StableHLO form `: t` reads too.
void chlo_form(Parser& p, OpText& op) {
  common(p, op);
  if (p.lx.try_consume("->")) op.result_types = {parse_type(p.lx)};
}

// `chlo.top_k(%x, k = 2) {attrs} : tensor<3x4xf32> -> (tensor<3x2xf32>, tensor<3x2xi32>)`, with an
// optional `, is_stable = true` after k.
void top_k(Parser& p, OpText& op) {
  p.lx.expect("(");
  op.operands = {p.use_value()};
  p.lx.expect(",");
  p.lx.expect("k");
  p.lx.expect("=");
  op.attrs.set("k", p.lx.integer());
  if (p.lx.try_consume(",")) {
    p.lx.expect("is_stable");
    p.lx.expect("=");
    op.attrs.set("is_stable", keyword_bool(p));
  }
  p.lx.expect(")");
  p.parse_optional_attrs(op);
  p.lx.expect(":");
  p.check_operand_types(op, {parse_type(p.lx)});
  p.lx.expect("->");
  op.result_types = parse_type_list(p.lx);
}

// `stablehlo.cholesky %a, lower = true : tensor<3x3xf32>`
void cholesky(Parser& p, OpText& op) {
  op.operands = {p.use_value()};
  // `lower` has a default (false), and stablehlo-opt writes it only when it is set.
  if (p.lx.try_consume(",")) {
    p.lx.expect("lower");
    p.lx.expect("=");
    op.attrs.set("lower", keyword_bool(p));
  }
  finish(p, op);
}

using Rule = void (*)(Parser&, OpText&);

constexpr Rule rule_for(OpKind k) {
  switch (k) {
    case OpKind::Constant: return constant;
    case OpKind::Iota: return iota;
    case OpKind::Compare: return compare;
    case OpKind::BroadcastInDim: return operand_and_dims<kBroadcastDimensions>;
    case OpKind::Transpose: return operand_and_dims<kPermutation>;
    case OpKind::Reverse: return operand_and_dims<kDimensions>;
    case OpKind::Slice: return slice;
    case OpKind::DynamicSlice: return dynamic_slice;
    case OpKind::Concatenate: return concatenate;
    case OpKind::Pad: return pad;
    case OpKind::DotGeneral: return dot_general;
    case OpKind::Reduce: return reduce;
    case OpKind::Convolution:
    case OpKind::DynamicConv: return parse_convolution;
    case OpKind::While: return while_loop;
    case OpKind::TopK: return top_k;
    case OpKind::Cholesky: return cholesky;
    case OpKind::GetDimensionSize:
    case OpKind::DynamicIota: return parse_dim_form;
    case OpKind::DynamicBroadcastInDim: return parse_dynamic_broadcast_in_dim;
    case OpKind::Fft: return parse_fft;
    case OpKind::Rng: return parse_rng;
    case OpKind::RngBitGenerator: return parse_rng_bit_generator;
    case OpKind::Select: return select;
    case OpKind::AfterAll:
    case OpKind::CreateToken:
    case OpKind::Tuple: return parse_result_type_form;
    case OpKind::GetTupleElement: return parse_get_tuple_element;
    case OpKind::Composite: return parse_composite;
    case OpKind::Scan: return parse_scan;
    case OpKind::Probe:
    case OpKind::ExpectSerializedEq: return parse_probe;
    case OpKind::ShardingConstraint:
    case OpKind::Reshard: return parse_sharded_value;
    case OpKind::ManualComputation: return parse_manual_computation;
    case OpKind::SdyAllGather: return parse_sdy_all_gather;
    case OpKind::SdyAllSlice: return parse_sdy_all_slice;
    case OpKind::SdyReduceScatter: return parse_sdy_reduce_scatter;
    case OpKind::SdyAllReduce: return parse_sdy_all_reduce;
    case OpKind::SdyAllToAll: return parse_sdy_all_to_all;
    case OpKind::SdyCollectivePermute: return parse_sdy_collective_permute;
    case OpKind::SdyConstant: return constant;
    case OpKind::PropagationBarrier: return parse_propagation_barrier;
    case OpKind::DataFlowEdge: return parse_data_flow_edge;
    case OpKind::ShardingGroup: return parse_sharding_group;
    case OpKind::Call: return call_form<kCallee>;
    case OpKind::CustomCall: return call_form<kTarget>;
    case OpKind::ExpectEqConst:
    case OpKind::ExpectAlmostEqConst: return parse_expect_const;
    case OpKind::ExpectEq:
    case OpKind::ExpectAlmostEq:
    case OpKind::ExpectClose: return parse_check_form;
    // More elementwise ops (#17); Tan also reads chlo.tan's form.
    case OpKind::Complex: return complex;
    case OpKind::ReducePrecision: return reduce_precision;
    case OpKind::Tan:
    case OpKind::Erf: case OpKind::Erfc: case OpKind::ErfInv: case OpKind::Lgamma:
    case OpKind::Digamma: case OpKind::BesselI1e: case OpKind::Sinh: case OpKind::Cosh:
    case OpKind::Asin: case OpKind::Acos: case OpKind::Atan: case OpKind::Asinh:
    case OpKind::Acosh: case OpKind::Atanh: case OpKind::Square: case OpKind::Conj:
    case OpKind::IsInf: case OpKind::IsPosInf: case OpKind::IsNegInf:
    case OpKind::NextAfter:
    case OpKind::Mulhi:
    case OpKind::Polygamma:
    case OpKind::Zeta: return chlo_form;
    default: return common;
  }
}

// The table, expanded from ops.def.
constexpr std::array<Rule, ir::kNumOpKinds> kRules = {
#define OP(e, spelling, arity, traits) rule_for(OpKind::e),
#include "ir/ops.def"
#undef OP
};

}  // namespace

void finish(Parser& p, OpText& op) {
  p.parse_optional_attrs(op);
  p.parse_trailing_types(op);
}

void values_and_keyword(Parser& p, OpText& op, const char* keyword) {
  op.operands = p.use_values();
  p.lx.expect(keyword);
  p.lx.expect("=");
}

void parse_pretty(Parser& p, OpText& op) { kRules[static_cast<size_t>(op.kind)](p, op); }

}  // namespace tessera::stablehlo
