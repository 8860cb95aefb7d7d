// The structural parser: modules, functions, blocks, regions, SSA names and the generic op form.
// Pretty op forms are in parse_ops.cpp.
#include "stablehlo/parser.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "ir/shape_polymorphic.h"
#include "ir/shape_rules.h"
#include "stablehlo/import_gspmd.h"
#include "stablehlo/parser_impl.h"
#include "support/strings.h"

namespace tessera::stablehlo {
namespace {

std::string types_text(const std::vector<ir::Type>& types) {
  return ir::shape_rules::types_string(types);
}

std::optional<ir::OpKind> op_kind_of(const std::string& name) {
  if (name == "return" || name == "func.return" || name == "stablehlo.return" || name == "sdy.return")
    return ir::OpKind::Return;
  if (name == "call") return ir::OpKind::Call;  // func's prefix is implied inside func.func
  if (name == "chlo.tan") return ir::OpKind::Tan;  // CHLO's tan is StableHLO's (docs/CHLO.md)
  if (name == "stablehlo.dot") return ir::OpKind::DotGeneral;  // read_dot below
  if (name == "sdy.named_computation") return ir::OpKind::Call;  // of the function its body becomes
  return ir::parse_op_kind(name);
}

// stablehlo.dot (the spec's first example; StableHLO deprecates it for dot_general) is the
// dot_general that contracts lhs's last dimension with rhs's first, on operands of rank 1 or 2:
// vector·vector, matrix·vector, vector·matrix, matrix·matrix. It is read as that dot_general (its
// precision_config kept), and prints as one.
void read_dot(const Lexer& lx, Location at, OpText& op) {
  if (op.operands.size() != 2)
    lx.error_at(at, fmt::format("stablehlo.dot takes 2 operands, got {}", op.operands.size()));
  const ir::DotDims* written = op.attrs.find<ir::DotDims>("dot_dimension_numbers");
  if (written != nullptr && !(*written == ir::DotDims{}))
    lx.error_at(at, "stablehlo.dot has no dimension numbers: write stablehlo.dot_general");
  for (size_t i = 0; i < 2; ++i) {
    int64_t rank = op.operands[i]->type().rank();
    if (rank != 1 && rank != 2)
      lx.error_at(at, fmt::format("stablehlo.dot: {} has rank {}, but dot takes vectors and matrices (rank 1 or 2)",
                                  i == 0 ? "lhs" : "rhs", rank));
  }
  ir::DotDims d;
  d.lhs_contracting = {op.operands[0]->type().rank() - 1};
  d.rhs_contracting = {0};
  op.attrs.set("dot_dimension_numbers", d);
}

// Older StableHLO (and JAX exports up to early 2024) wrote the generic form's list attributes as
// 1-D dense tensors (`slice_sizes = dense<[1, 4]> : tensor<2xi64>`, `window_reversal =
// dense<false> : tensor<2xi1>`) where today's writes `array<i64: 1, 4>` / `array<i1: ...>`; both
// mean the same list. Such a literal is read as the list (an integer list, or the array<i1> text
// bool lists are kept as), so the rules see one form. Literal-valued attributes are not listed.
void read_legacy_lists(ir::AttrMap& attrs) {
  static const char* const kIntLists[] = {
      "slice_sizes",    "window_dimensions", "window_strides",   "base_dilations",  "window_dilations",
      "lhs_dilation",   "rhs_dilation",      "broadcast_dimensions", "permutation", "dimensions",
      "start_indices",  "limit_indices",     "strides",          "edge_padding_low", "edge_padding_high",
      "interior_padding", "fft_length"};
  auto as_list = [](const ir::Literal& lit) -> std::optional<std::vector<int64_t>> {
    const ir::Type& t = lit.type();
    // Older exports wrote a one-entry list as a scalar (`dimensions = dense<1> : tensor<i64>`).
    if (t.rank() > 1 || !(ir::is_integer(t.element) || ir::is_bool(t.element))) return std::nullopt;
    std::vector<int64_t> v;
    for (int64_t i = 0; i < t.num_elements(); ++i) v.push_back(lit.get_int(i));
    return v;
  };
  for (const char* name : kIntLists)
    if (const auto* lit = attrs.find<ir::Literal>(name))
      if (auto v = as_list(*lit); v && ir::is_integer(lit->type().element)) attrs.set(name, *v);
  if (const auto* lit = attrs.find<ir::Literal>("window_reversal"))
    if (auto v = as_list(*lit); v && ir::is_bool(lit->type().element)) {
      std::vector<std::string> words;
      for (int64_t b : *v) words.push_back(b != 0 ? "true" : "false");
      attrs.set("window_reversal", ir::Opaque{words.empty() ? std::string("array<i1>")
                                                            : "array<i1: " + support::join(words, ", ") + ">"});
    }
}

}  // namespace

void Parser::bind(const std::string& name, std::vector<ir::Value*> values, Location at) {
  for (const auto& scope : scopes_)
    if (scope.count(name)) lx.error_at(at, fmt::format("duplicate definition of %{}", name));
  scopes_.back()[name] = std::move(values);
}

ir::Value* Parser::use_value() {
  lx.skip_space();
  Location at = lx.location();
  lx.expect("%");
  std::string name = lx.suffix_id();
  std::optional<int64_t> index;
  if (!lx.rest().empty() && lx.rest()[0] == '#') {
    lx.expect("#");
    index = lx.integer();
  }
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
    auto it = scope->find(name);
    if (it == scope->end()) continue;
    const auto& values = it->second;
    if (!index) {
      if (values.size() != 1)
        lx.error_at(at, fmt::format("%{} has {} results; name one as %{}#i", name, values.size(), name));
      return values[0];
    }
    if (*index < 0 || *index >= static_cast<int64_t>(values.size()))
      lx.error_at(at, fmt::format("%{} has {} results, so %{}#{} does not exist", name,
                                  values.size(), name, *index));
    return values[static_cast<size_t>(*index)];
  }
  lx.error_at(at, fmt::format("use of undefined value %{}", name));
}

std::vector<ir::Value*> Parser::use_values() {
  std::vector<ir::Value*> out;
  if (lx.peek() != '%') return out;
  do out.push_back(use_value());
  while (lx.peek() == ',' && (lx.try_consume(","), true) && lx.peek() == '%');
  return out;
}

void Parser::check_operand_types(const OpText& op, const std::vector<ir::Type>& types) {
  std::string_view name = ir::spelling(op.kind);
  if (types.size() != op.operands.size())
    lx.error_at(op.loc, fmt::format("{} has {} operands, but its type lists {}", name,
                                    op.operands.size(), types.size()));
  for (size_t i = 0; i < types.size(); ++i)
    if (op.operands[i]->type() != types[i])
      lx.error_at(op.loc, fmt::format("{}: operand {} has type {}, but the op's type says {}", name,
                                      i, ir::to_string(op.operands[i]->type()),
                                      ir::to_string(types[i])));
}

void Parser::parse_trailing_types(OpText& op) {
  lx.expect(":");
  if (lx.peek() == '(') {
    std::vector<ir::Type> ins, outs;
    parse_function_type(lx, ins, outs);
    check_operand_types(op, ins);
    op.result_types = outs;
    return;
  }
  std::vector<ir::Type> list = parse_type_list(lx);
  if (list.size() == 1 && op.operands.size() != 1) {
    check_operand_types(op, std::vector<ir::Type>(op.operands.size(), list[0]));
  } else {
    check_operand_types(op, list);
  }
  // Returns and checks produce nothing: their type list describes operands only.
  if (op.kind != ir::OpKind::Return && !ir::has_trait(op.kind, ir::kCheck)) op.result_types = list;
}

void Parser::parse_optional_attrs(OpText& op) {
  if (lx.peek() != '{') return;
  for (const auto& [k, v] : parse_attr_dict(lx)) op.attrs.set(k, v);
}

std::vector<std::pair<std::string, ir::Type>> Parser::parse_arg_decls() {
  std::vector<std::pair<std::string, ir::Type>> out;
  lx.expect("(");
  if (lx.try_consume(")")) return out;
  do {
    lx.expect("%");
    std::string name = lx.suffix_id();
    lx.expect(":");
    out.emplace_back(name, parse_type(lx));
  } while (lx.try_consume(","));
  lx.expect(")");
  return out;
}

ir::Block& Parser::parse_region(OpText& op, const std::vector<std::pair<std::string, ir::Type>>* args) {
  Lexer::NestingGuard guard(lx, "regions");
  auto block = std::make_unique<ir::Block>();
  scopes_.emplace_back();
  lx.skip_space();
  Location at = lx.location();
  lx.expect("{");
  std::vector<std::pair<std::string, ir::Type>> decls;
  if (args == nullptr && lx.try_consume("^")) {
    lx.suffix_id();
    if (lx.peek() == '(') decls = parse_arg_decls();
    lx.expect(":");
    args = &decls;
  }
  if (args != nullptr)
    for (const auto& [name, type] : *args) bind(name, {block->add_argument(type)}, at);
  parse_block_body(*block);
  lx.expect("}");
  scopes_.pop_back();
  op.regions.push_back(std::move(block));
  return *op.regions.back();
}

ir::Function& Parser::parse_outlined_body(const std::string& name, Location at,
                                          const std::vector<std::pair<std::string, ir::Type>>& args) {
  Lexer::NestingGuard guard(lx, "regions");
  ir::Function& fn = module.add_function(fmt::format("\x01outlined.{}", outlined_.size()));
  fn.is_public = false;
  fn.loc = ir::SourceLoc{at.line, at.column};
  outlined_.emplace_back(&fn, name);
  auto outer = std::move(scopes_);  // isolated from above: the caller's values are not in scope
  scopes_.assign(1, {});
  lx.skip_space();
  Location body_at = lx.location();
  lx.expect("{");
  for (const auto& [arg, type] : args) bind(arg, {fn.add_parameter(type)}, body_at);
  parse_block_body(fn.body());
  lx.expect("}");
  scopes_ = std::move(outer);
  return fn;
}

void Parser::name_outlined() {
  if (outlined_.empty()) return;
  std::map<std::string, std::string> names;  // temporary -> final
  for (auto& [fn, base] : outlined_) {
    std::string name = base;
    for (int i = 0; module.find_function(name) != nullptr; ++i) name = fmt::format("{}_{}", base, i);
    names[fn->name()] = name;
    fn->rename(name);
  }
  std::function<void(ir::Block&)> visit = [&](ir::Block& b) {
    for (const auto& op : b.ops()) {
      if (op->kind() == ir::OpKind::Call)
        if (auto it = names.find(op->attrs().get_or<std::string>("callee", "")); it != names.end())
          op->attrs().set("callee", it->second);
      for (const auto& r : op->regions()) visit(*r);
    }
  };
  for (const auto& f : module.functions) visit(f->body());
}

void Parser::parse_generic(OpText& op) {
  lx.expect("(");
  op.operands = use_values();
  lx.expect(")");
  if (lx.try_consume("<")) {  // MLIR properties: <{...}>
    for (const auto& [k, v] : parse_attr_dict(lx)) op.attrs.set(k, v);
    lx.expect(">");
  }
  if (lx.try_consume("(")) {
    do parse_region(op);
    while (lx.try_consume(","));
    lx.expect(")");
  }
  parse_optional_attrs(op);
  read_legacy_lists(op.attrs);
  // func.call's callee is a symbol reference (`callee = @f`), kept as the function's name.
  if (const auto* callee = op.attrs.find<ir::Opaque>("callee"); callee && callee->text.starts_with("@"))
    op.attrs.set("callee", callee->text.substr(1));
  lx.expect(":");
  std::vector<ir::Type> ins, outs;
  parse_function_type(lx, ins, outs);
  check_operand_types(op, ins);
  op.result_types = outs;
}

void Parser::parse_op(ir::Block& block) {
  lx.skip_space();
  Location at = lx.location();
  struct Name {
    std::string name;
    size_t count;
    Location loc;
  };
  std::vector<Name> names;
  if (lx.peek() == '%') {
    do {
      lx.skip_space();
      Location n = lx.location();
      lx.expect("%");
      std::string name = lx.suffix_id();
      size_t count = 1;
      if (lx.try_consume(":")) count = static_cast<size_t>(lx.integer());
      names.push_back({name, count, n});
    } while (lx.try_consume(","));
    lx.expect("=");
  }
  lx.skip_space();
  Location name_at = lx.location();
  bool generic = lx.peek() == '"';
  std::string name = generic ? lx.string_literal() : lx.identifier();
  auto kind = op_kind_of(name);
  if (!kind) lx.error_at(name_at, fmt::format("unknown op '{}'", name));
  OpText op{*kind, at, {}, {}, {}, {}, 0};
  for (const Name& n : names) op.expected_results += n.count;
  if (name == "sdy.named_computation") {
    if (generic) lx.error_at(name_at, "sdy.named_computation is read in its pretty form only");
    parse_named_computation(*this, op);
  } else if (generic) {
    parse_generic(op);
    // sort's dimension defaults to -1 (the last), and stablehlo-opt leaves the default out.
    if (op.kind == ir::OpKind::Sort && !op.attrs.has("dimension")) op.attrs.set("dimension", int64_t{-1});
  } else {
    parse_pretty(*this, op);
  }
  if (name == "stablehlo.dot") read_dot(lx, at, op);

  std::vector<ir::Type> operand_types;
  for (const ir::Value* v : op.operands) operand_types.push_back(v->type());
  std::vector<ir::Type> inferred;
  try {
    inferred = ir::infer_result_types(ir::ShapeQuery{op.kind, operand_types, op.attrs, op.result_types});
  } catch (const ParseError&) {
    throw;
  } catch (const support::UserError& e) {
    lx.error_at(at, e.what());
  }
  // A declared type may be less refined than the inferred one ('?' where the operands fix a size,
  // as polymorphic exports write); it is kept as written.
  if (!op.result_types.empty() && !ir::compatible_types(inferred, op.result_types))
    lx.error_at(at, fmt::format("{}: result types ({}) do not match the operands, which give ({})",
                                name, types_text(op.result_types), types_text(inferred)));
  if (!op.result_types.empty()) inferred = op.result_types;
  if (op.expected_results != inferred.size())
    lx.error_at(at, fmt::format("{} has {} results, but the text names {}", name, inferred.size(),
                                op.expected_results));
  auto created = std::make_unique<ir::Op>(op.kind, op.operands, inferred, std::move(op.attrs));
  for (auto& r : op.regions) created->adopt_region(std::move(r));
  created->loc = ir::SourceLoc{at.line, at.column};
  ir::Op* placed = block.append(std::move(created));
  size_t next = 0;
  for (const Name& n : names) {
    std::vector<ir::Value*> values;
    for (size_t i = 0; i < n.count; ++i) values.push_back(placed->result(next++));
    bind(n.name, values, n.loc);
  }
}

void Parser::parse_block_body(ir::Block& block) {
  while (lx.peek() != '}') {
    if (lx.at_end()) lx.error("unterminated region: expected '}', but the input ends");
    parse_op(block);
  }
  const ir::Op* last = block.terminator();
  if (last == nullptr || last->kind() != ir::OpKind::Return)
    lx.error(fmt::format("block must end with a return"));
  for (const auto& o : block.ops())
    if (o.get() != last && o->kind() == ir::OpKind::Return)
      lx.error("return before the end of a block");
}

void Parser::parse_function() {
  lx.skip_space();
  Location at = lx.location();
  bool is_public = true;
  if (lx.try_consume("private")) is_public = false;
  else lx.try_consume("public");
  lx.expect("@");
  std::string name = lx.suffix_id();
  if (module.find_function(name)) lx.error_at(at, fmt::format("function @{} is defined twice", name));
  ir::Function& fn = module.add_function(name);
  fn.is_public = is_public;
  fn.loc = ir::SourceLoc{at.line, at.column};
  scopes_.assign(1, {});
  lx.expect("(");
  lx.list_until(")", [&] {
    lx.skip_space();
    Location a = lx.location();
    lx.expect("%");
    std::string arg = lx.suffix_id();
    lx.expect(":");
    ir::Value* v = fn.add_parameter(parse_type(lx));
    if (lx.peek() == '{') fn.arg_attrs.back() = parse_attr_dict(lx);
    bind(arg, {v}, a);
  });
  if (lx.try_consume("->")) {
    bool paren = lx.try_consume("(");
    if (!(paren && lx.try_consume(")"))) {
      do {
        fn.result_types.push_back(parse_type(lx));
        fn.result_attrs.emplace_back();
        if (paren && lx.peek() == '{') fn.result_attrs.back() = parse_attr_dict(lx);
      } while (paren && lx.try_consume(","));
      if (paren) lx.expect(")");
    }
  }
  if (lx.try_consume("attributes")) parse_attr_dict(lx);  // function attributes are not kept
  lx.expect("{");
  parse_block_body(fn.body());
  lx.expect("}");
  const ir::Op* ret = fn.body().terminator();
  if (ret->operand_types() != fn.result_types)
    lx.error_at(at, fmt::format("@{} returns ({}) but is declared to return ({})", name,
                                types_text(ret->operand_types()), types_text(fn.result_types)));
}

void Parser::parse_module() {
  while (!lx.at_end() && lx.peek() != '}') {
    lx.skip_space();
    Location at = lx.location();
    if (lx.try_consume("sdy.mesh")) {
      lx.expect("@");
      std::string name = lx.suffix_id();
      lx.expect("=");
      lx.try_consume("#sdy.mesh");  // the attribute's full spelling, as Shardy's tests also write it
      try {
        module.add_mesh(parse_mesh_body(lx, name));
      } catch (const ParseError&) {
        throw;
      } catch (const support::UserError& e) {
        lx.error_at(at, e.what());
      }
    } else if (lx.try_consume("func.func")) {
      parse_function();
    } else if (lx.peek() == '"') {
      parse_generic_function();
    } else if (lx.try_consume("#")) {  // a location alias, `#loc1 = loc(...)`, read as space
      lx.suffix_id();
      lx.expect("=");
    } else {
      lx.error("expected 'func.func' or 'sdy.mesh'");
    }
  }
}

void Parser::parse_top_level(bool verify) {
  lx.skip_space();
  Location at = lx.location();
  while (lx.try_consume("#")) {  // location aliases may also precede the module
    lx.suffix_id();
    lx.expect("=");
  }
  if (lx.try_consume("module")) {
    lx.skip_space();
    if (lx.try_consume("@")) module.name = lx.suffix_id();
    if (lx.try_consume("attributes")) module.attrs = parse_attr_dict(lx);
    lx.expect("{");
    parse_module();
    lx.expect("}");
    while (lx.try_consume("#")) {  // and follow it
      lx.suffix_id();
      lx.expect("=");
    }
    if (!lx.at_end()) lx.error("text after the end of the module");
  } else if (lx.peek() == '"') {
    parse_generic_module();
    if (!lx.at_end()) lx.error("text after the end of the module");
  } else {
    parse_module();
    if (!lx.at_end()) lx.error("unexpected '}'");
  }
  name_outlined();
  // GSPMD's mhlo.sharding strings become a mesh and sdy shardings here, once, so every consumer of
  // a parsed module sees Shardy's form (import_gspmd.h).
  import_sdy_round_trip(module, lx.file());
  import_gspmd_shardings(module, lx.file());
  if (!verify) return;
  try {
    ir::verify(module);
  } catch (const ParseError&) {
    throw;
  } catch (const ir::VerifyError& e) {
    Location op_at = at;
    if (e.loc.line > 0) op_at.line = e.loc.line, op_at.column = e.loc.column;
    lx.error_at(op_at, e.what());
  } catch (const support::UserError& e) {
    lx.error_at(at, e.what());
  }
}

namespace {

// MLIR's type and attribute aliases, `!name = type` and `#name = attribute` on their own lines
// before the module, stand for their text wherever `!name` or `#name` is written (location
// aliases, `#loc...`, are left to the parser, which reads locations as space). Each definition's
// line is kept, empty, so that lines keep their numbers. Nothing is copied when the text defines
// no alias.
std::optional<std::string> expand_aliases(std::string_view text) {
  // Most text has none: a line starting `!` or `#` but `#loc` is looked for before any copying.
  bool candidate = false;
  for (size_t at = 0; at < text.size() && !candidate;) {
    size_t i = text.find_first_not_of(" \t", at);
    if (i == std::string_view::npos) break;
    candidate = (text[i] == '!' || text[i] == '#') && text.substr(i + 1, 3) != "loc";
    at = text.find('\n', i);
    if (at == std::string_view::npos) break;
    ++at;
  }
  if (!candidate) return std::nullopt;
  std::vector<std::pair<std::string, std::string>> aliases;  // "!name" -> text
  std::string out;
  size_t pos = 0;
  bool any = false;
  while (pos < text.size()) {
    size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, end - pos);
    size_t i = line.find_first_not_of(" \t");
    bool defined = false;
    if (i != std::string_view::npos && (line[i] == '!' || line[i] == '#') && line.substr(i + 1, 3) != "loc") {
      size_t n = i + 1;
      while (n < line.size() && (is_identifier_char(line[n]) || line[n] == '-')) ++n;
      size_t eq = line.find_first_not_of(" \t", n);
      if (n > i + 1 && eq != std::string_view::npos && line[eq] == '=' && (eq + 1 == line.size() || line[eq + 1] != '=')) {
        std::string_view body = line.substr(eq + 1);
        size_t b = body.find_first_not_of(" \t");
        body = b == std::string_view::npos ? std::string_view() : body.substr(b);
        while (!body.empty() && (body.back() == ' ' || body.back() == '\r')) body.remove_suffix(1);
        aliases.emplace_back(std::string(line.substr(i, n - i)), std::string(body));
        defined = any = true;
      }
    }
    if (!defined) out.append(line);
    if (end < text.size()) out += '\n';
    pos = end + 1;
  }
  if (!any) return std::nullopt;
  // A name is matched whole (#a is not the start of #ab). An alias's text may use aliases defined
  // before it: those are expanded in it first.
  for (size_t k = 0; k < aliases.size(); ++k)
    for (size_t j = 0; j < k; ++j) {
      std::string& body = aliases[k].second;
      for (size_t at = body.find(aliases[j].first); at != std::string::npos; at = body.find(aliases[j].first, at)) {
        size_t after = at + aliases[j].first.size();
        if (after < body.size() && (is_identifier_char(body[after]) || body[after] == '-')) {
          at = after;
          continue;
        }
        body.replace(at, aliases[j].first.size(), aliases[j].second);
        at += aliases[j].second.size();
      }
    }
  std::string expanded;
  expanded.reserve(out.size());
  for (size_t at = 0; at < out.size();) {
    char c = out[at];
    if (c == '!' || c == '#') {
      size_t n = at + 1;
      while (n < out.size() && (is_identifier_char(out[n]) || out[n] == '-')) ++n;
      std::string_view name(out.data() + at, n - at);
      auto it = std::find_if(aliases.begin(), aliases.end(), [&](const auto& a) { return a.first == name; });
      if (it != aliases.end()) {
        expanded += it->second;
        at = n;
        continue;
      }
      expanded.append(name);
      at = n;
      continue;
    }
    expanded += c;
    ++at;
  }
  return expanded;
}

}  // namespace

std::unique_ptr<ir::Module> parse(std::string_view text, const std::string& file, int first_line, bool verify) {
  auto module = std::make_unique<ir::Module>();
  std::optional<std::string> expanded = expand_aliases(text);
  if (expanded) text = *expanded;
  Lexer lx(text, file, first_line);
  Parser p(lx, *module);
  p.parse_top_level(verify);
  return module;
}

std::vector<Piece> split_pieces(std::string_view text) {
  std::vector<Piece> out;
  Piece current;
  size_t start = 0;
  bool in_parts = false;  // split-file: the text before the first part (RUN lines) is dropped
  int line = 1;
  for (size_t pos = 0; pos < text.size(); ++line) {
    size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view l = text.substr(pos, end - pos);
    bool part = l.rfind("//--- ", 0) == 0;
    if (part || l.rfind("// -----", 0) == 0) {
      current.text = text.substr(start, pos - start);
      if (!part || in_parts) out.push_back(current);
      in_parts = in_parts || part;
      current = Piece{part ? std::string(l.substr(6)) : "", line + 1, {}};
      start = std::min(end + 1, text.size());
    }
    pos = end + 1;
  }
  current.text = text.substr(start);
  out.push_back(current);
  return out;
}

}  // namespace tessera::stablehlo
