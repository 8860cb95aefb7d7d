// MLIR's generic forms of the module and of functions, which tools write when asked for the
// generic form (mlir-opt --mlir-print-op-generic) and some test suites keep:
//   "builtin.module"() <{sym_name = "m"}> ({ ...functions... }) {attrs} : () -> ()
//   "func.func"() <{function_type = (T, ...) -> (R, ...), sym_name = "f", sym_visibility = "private",
//                   arg_attrs = [{...}, ...], res_attrs = [{...}, ...]}> ({
//   ^bb0(%a: T, ...):
//     ...ops...
//   }) : () -> ()
// They read into the same module as the pretty forms (the properties <{...}> may also be written as
// a trailing attribute dictionary, as older MLIR did).
#include "stablehlo/parser_impl.h"

#include "ir/shape_rules.h"

namespace tessera::stablehlo {
namespace {

// ": () -> ()", the type of the module and function ops themselves.
void expect_unit_type(Lexer& lx) {
  lx.expect(":");
  lx.expect("(");
  lx.expect(")");
  lx.expect("->");
  lx.expect("(");
  lx.expect(")");
}

// `"name"()`: the op's quoted name, which must be `name`, and its empty operand list; returns where
// the op starts.
Location expect_generic_op(Lexer& lx, std::string_view name) {
  lx.skip_space();
  Location at = lx.location();
  std::string found = lx.string_literal();
  if (found != name) lx.error_at(at, fmt::format("expected \"{}\", found \"{}\"", name, found));
  lx.expect("(");
  lx.expect(")");
  return at;
}

// "(T, ...)" after its '(' was consumed.
std::vector<ir::Type> parse_type_tuple_rest(Lexer& lx) {
  std::vector<ir::Type> out;
  if (lx.try_consume(")")) return out;
  do out.push_back(parse_type(lx));
  while (lx.try_consume(","));
  lx.expect(")");
  return out;
}

// [{...}, {...}] (one dictionary per argument or result).
std::vector<ir::AttrMap> parse_dict_list(Lexer& lx) {
  std::vector<ir::AttrMap> out;
  lx.expect("[");
  if (lx.try_consume("]")) return out;
  do out.push_back(parse_attr_dict(lx));
  while (lx.try_consume(","));
  lx.expect("]");
  return out;
}

struct FuncProperties {
  bool has_type = false;
  std::vector<ir::Type> inputs, outputs;
  std::string name;
  bool is_public = true;  // MLIR's default visibility
  std::vector<ir::AttrMap> arg_attrs, res_attrs;
};

// The entries of a property or attribute dictionary "{k = v, ...}" of func.func.
void parse_func_properties(Lexer& lx, FuncProperties& f) {
  lx.expect("{");
  if (lx.try_consume("}")) return;
  do {
    lx.skip_space();
    Location at = lx.location();
    std::string key = lx.peek() == '"' ? lx.string_literal() : lx.identifier();
    lx.expect("=");
    if (key == "function_type") {
      // (T, ...) -> R or -> (R, ...): a single result is not followed by more types here.
      lx.expect("(");
      f.inputs = parse_type_tuple_rest(lx);
      lx.expect("->");
      if (lx.try_consume("(")) f.outputs = parse_type_tuple_rest(lx);
      else f.outputs = {parse_type(lx)};
      f.has_type = true;
    } else if (key == "sym_name") {
      f.name = lx.string_literal();
    } else if (key == "sym_visibility") {
      std::string v = lx.string_literal();
      if (v != "public" && v != "private" && v != "nested")
        lx.error_at(at, fmt::format("unknown sym_visibility \"{}\"", v));
      f.is_public = v == "public";
    } else if (key == "arg_attrs") {
      f.arg_attrs = parse_dict_list(lx);
    } else if (key == "res_attrs") {
      f.res_attrs = parse_dict_list(lx);
    } else {
      parse_attribute(lx, key);  // other function attributes are not kept, as in the pretty form
    }
  } while (lx.try_consume(","));
  lx.expect("}");
}

// Where the region that opens at `open` (just after its '{') ends, past its '}': braces in strings
// do not count. Lines and columns are kept so that later errors still point right.
Location past_braces(const Lexer& lx, Location open) {
  std::string_view text = lx.rest();
  Location at = lx.location();
  int depth = 1;
  size_t i = 0;
  for (; i < text.size() && depth > 0; ++i) {
    char c = text[i];
    if (c == '"') {  // a string: skip to its closing quote
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
      continue;
    }
    if (c == '{') ++depth;
    if (c == '}') --depth;
  }
  if (depth > 0) lx.error_at(open, "unterminated function body");
  for (size_t k = 0; k < i; ++k) {
    if (text[k] == '\n') {
      ++at.line;
      at.column = 1;
    } else {
      ++at.column;
    }
  }
  at.offset += i;
  return at;
}

}  // namespace

void Parser::parse_generic_module() {
  expect_generic_op(lx, "builtin.module");
  auto take = [&](const ir::AttrMap& props) {
    for (const auto& [k, v] : props) {
      if (k == "sym_name") {
        if (const auto* s = props.find<std::string>("sym_name")) module.name = *s;
      } else {
        module.attrs.set(k, v);
      }
    }
  };
  if (lx.try_consume("<")) {
    take(parse_attr_dict(lx));
    lx.expect(">");
  }
  lx.expect("(");
  lx.expect("{");
  parse_module();
  lx.expect("}");
  lx.expect(")");
  if (lx.peek() == '{') take(parse_attr_dict(lx));
  expect_unit_type(lx);
}

void Parser::parse_generic_function() {
  Location at = expect_generic_op(lx, "func.func");
  FuncProperties f;
  if (lx.try_consume("<")) {
    parse_func_properties(lx, f);
    lx.expect(">");
  }
  // The body comes before a trailing attribute dictionary; read the body's text position, then
  // the dictionary, so that the function's type is known before its body is parsed.
  lx.expect("(");
  Location body = lx.location();
  lx.skip_space();
  lx.expect("{");
  lx.reset(past_braces(lx, body));
  lx.expect(")");
  if (lx.peek() == '{') parse_func_properties(lx, f);
  expect_unit_type(lx);
  Location after = lx.location();
  if (!f.has_type) lx.error_at(at, "func.func has no function_type");
  if (f.name.empty()) lx.error_at(at, "func.func has no sym_name");
  if (module.find_function(f.name)) lx.error_at(at, fmt::format("function @{} is defined twice", f.name));
  if (!f.arg_attrs.empty() && f.arg_attrs.size() != f.inputs.size())
    lx.error_at(at, fmt::format("@{} has {} arg_attrs for {} arguments", f.name, f.arg_attrs.size(), f.inputs.size()));
  if (!f.res_attrs.empty() && f.res_attrs.size() != f.outputs.size())
    lx.error_at(at, fmt::format("@{} has {} res_attrs for {} results", f.name, f.res_attrs.size(), f.outputs.size()));

  ir::Function& fn = module.add_function(f.name);
  fn.is_public = f.is_public;
  fn.loc = ir::SourceLoc{at.line, at.column};
  fn.result_types = f.outputs;
  fn.result_attrs = f.res_attrs.empty() ? std::vector<ir::AttrMap>(f.outputs.size()) : f.res_attrs;
  scopes_.assign(1, {});
  lx.reset(body);
  lx.expect("{");
  lx.skip_space();
  Location block_at = lx.location();
  std::vector<std::pair<std::string, ir::Type>> decls;
  if (lx.try_consume("^")) {
    lx.suffix_id();
    if (lx.peek() == '(') decls = parse_arg_decls();
    lx.expect(":");
  }
  if (decls.size() != f.inputs.size())
    lx.error_at(block_at, fmt::format("@{}'s entry block has {} arguments, but its function_type has {}", f.name,
                                      decls.size(), f.inputs.size()));
  for (size_t i = 0; i < decls.size(); ++i) {
    if (decls[i].second != f.inputs[i])
      lx.error_at(block_at, fmt::format("@{}'s entry block argument {} is {}, but its function_type says {}", f.name, i,
                                        ir::to_string(decls[i].second), ir::to_string(f.inputs[i])));
    ir::Value* v = fn.add_parameter(f.inputs[i]);
    if (!f.arg_attrs.empty()) fn.arg_attrs.back() = f.arg_attrs[i];
    bind(decls[i].first, {v}, block_at);
  }
  parse_block_body(fn.body());
  lx.expect("}");
  lx.reset(after);
  const ir::Op* ret = fn.body().terminator();
  if (ret->operand_types() != fn.result_types)
    lx.error_at(at, fmt::format("@{} returns ({}) but is declared to return ({})", f.name,
                                ir::shape_rules::types_string(ret->operand_types()),
                                ir::shape_rules::types_string(fn.result_types)));
}

}  // namespace tessera::stablehlo
