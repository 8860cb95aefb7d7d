// Attributes, dense literals, meshes and shardings from StableHLO/Shardy text (types are in
// parse_types.cpp).
#include "stablehlo/parse_attrs.h"

#include <bit>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "ir/module.h"
#include "support/memory.h"
#include "support/strings.h"

namespace tessera::stablehlo {
namespace {

using ir::ElementType;

// A dense<...> body before its type is known: a nested list or one element.
struct DenseNode {
  Location loc;
  bool is_list = false;
  std::vector<DenseNode> items;
  std::string re, im;  // element text; im set for complex "(re, im)"
};

DenseNode parse_dense_node(Lexer& lx) {
  Lexer::NestingGuard guard(lx, "dense<...> lists");
  DenseNode n;
  lx.skip_space();
  n.loc = lx.location();
  if (lx.try_consume("[")) {
    n.is_list = true;
    if (!lx.try_consume("]")) {
      do n.items.push_back(parse_dense_node(lx));
      while (lx.try_consume(","));
      lx.expect("]");
    }
  } else if (lx.try_consume("(")) {
    n.re = lx.try_consume("true") ? "1" : lx.number_text();
    lx.expect(",");
    n.im = lx.number_text();
    lx.expect(")");
  } else if (lx.try_consume("true")) {
    n.re = "true";
  } else if (lx.try_consume("false")) {
    n.re = "false";
  } else if (lx.peek() == '"') {
    n.re = '"' + lx.string_literal();
  } else {
    n.re = lx.number_text();
  }
  return n;
}

bool is_hex(const std::string& t) {
  size_t s = (t[0] == '-' || t[0] == '+') ? 1 : 0;
  return t.compare(s, 2, "0x") == 0;
}

// The bit pattern of a hex element; it must fit in `bits` bits.
uint64_t parse_bits(Lexer& lx, Location at, const std::string& t, int bits) {
  std::string digits = t.substr(t.find('x') + 1);
  // Hex digits only, at least one (parser_fuzz finding: a bare "0x" made stoull throw
  // std::invalid_argument; stoull would also have read "0x1g" as 0x1).
  if (digits.empty() || digits.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    lx.error_at(at, fmt::format("'{}' is not a hex number", t));
  while (digits.size() > 1 && digits[0] == '0') digits.erase(0, 1);
  uint64_t v = digits.size() > 16 ? ~uint64_t{0} : std::stoull(digits, nullptr, 16);
  if (digits.size() > 16 || (bits < 64 && v >> bits != 0))
    lx.error_at(at, fmt::format("{} does not fit in {} bits", t, bits));
  return v;
}

void set_bits(ir::Literal& lit, int64_t i, uint64_t bits) {
  int bytes = ir::info(lit.element()).bytes;
  std::memcpy(lit.bytes().data() + i * bytes, &bits, static_cast<size_t>(bytes));  // little-endian
}

// A float element's text as a double: decimal (strtod keeps subnormals and overflows to inf), or
// a hex bit pattern of `e` (the part type of a complex number).
double to_double(Lexer& lx, const DenseNode& n, const std::string& t, ElementType e) {
  if (is_hex(t)) {
    uint64_t bits = parse_bits(lx, n.loc, t, ir::info(e).bits);
    if (e == ElementType::f32) return std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (e == ElementType::f64) return std::bit_cast<double>(bits);
    return ir::minifloat_to_double(e, static_cast<uint32_t>(bits));
  }
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) lx.error_at(n.loc, fmt::format("'{}' is not a number", t));
  return v;
}

void set_element(Lexer& lx, ir::Literal& lit, int64_t i, const DenseNode& n) {
  ElementType e = lit.element();
  const std::string& t = n.re;
  if (t.empty() || t[0] == '"') lx.error_at(n.loc, "expected a number");
  if (ir::is_complex(e)) {
    ElementType part = ir::real_type(e);
    lit.set_complex(i, {to_double(lx, n, t, part), n.im.empty() ? 0.0 : to_double(lx, n, n.im, part)});
    return;
  }
  if (!n.im.empty()) lx.error_at(n.loc, fmt::format("complex value for {}", ir::spelling(e)));
  if (t == "true" || t == "false") {
    if (!ir::is_bool(e)) lx.error_at(n.loc, fmt::format("'{}' is not a value of {}", t, ir::spelling(e)));
    lit.set_int(i, t == "true");
    return;
  }
  if (ir::is_float(e)) {
    if (is_hex(t)) {
      set_bits(lit, i, parse_bits(lx, n.loc, t, ir::info(e).bits));
    } else {
      lit.set_double(i, to_double(lx, n, t, e));
    }
    return;
  }
  if (t.find_first_of(".eE") != std::string::npos && !is_hex(t))
    lx.error_at(n.loc, fmt::format("'{}' is not a value of {}", t, ir::spelling(e)));
  int bits = ir::info(e).bits;
  bool negative = t[0] == '-';
  uint64_t magnitude;
  try {
    magnitude = is_hex(t) ? parse_bits(lx, n.loc, t, 64) : std::stoull(negative ? t.substr(1) : t);
  } catch (const std::exception&) {
    lx.error_at(n.loc, fmt::format("integer '{}' is out of range", t));
  }
  // The value must fit the type's width (hex gives a bit pattern of that width).
  bool fits;
  if (is_hex(t)) {
    fits = bits == 64 || magnitude < (uint64_t{1} << bits);
  } else if (ir::is_unsigned_integer(e) || ir::is_bool(e)) {
    fits = !negative && (bits == 64 || magnitude < (uint64_t{1} << bits));
  } else {
    uint64_t limit = uint64_t{1} << (bits - 1);
    fits = negative ? magnitude <= limit : magnitude < limit;
  }
  if (!fits) lx.error_at(n.loc, fmt::format("{} does not fit in {}", t, ir::spelling(e)));
  lit.set_int(i, negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude));
}

void flatten(Lexer& lx, const DenseNode& n, const ir::Type& type, size_t dim,
             std::vector<const DenseNode*>& out) {
  if (dim == type.shape.size()) {
    if (n.is_list) lx.error_at(n.loc, fmt::format("too many nested lists for {}", ir::to_string(type)));
    out.push_back(&n);
    return;
  }
  if (!n.is_list)
    lx.error_at(n.loc, fmt::format("expected a list for dimension {} of {}", dim, ir::to_string(type)));
  if (static_cast<int64_t>(n.items.size()) != type.shape[dim])
    lx.error_at(n.loc, fmt::format("dense literal has {} elements in dimension {}, but {} has {}",
                                   n.items.size(), dim, ir::to_string(type), type.shape[dim]));
  for (const DenseNode& item : n.items) flatten(lx, item, type, dim + 1, out);
}

ir::IntMatrix to_matrix(Lexer& lx, Location at, const ir::Literal& lit) {
  if (lit.shape().size() != 2 || !ir::is_integer(lit.element()))
    lx.error_at(at, fmt::format("expected a 2-D integer tensor, got {}", ir::to_string(lit.type())));
  ir::IntMatrix m{lit.shape()[0], lit.shape()[1], {}};
  for (int64_t i = 0; i < lit.num_elements(); ++i) m.values.push_back(lit.get_int(i));
  return m;
}

ir::AxisRef parse_axis_ref(Lexer& lx) {
  std::string name = lx.string_literal();
  if (!lx.try_consume(":")) return ir::AxisRef(name);
  lx.expect("(");
  int64_t pre = lx.integer();
  lx.expect(")");
  int64_t size = lx.integer();
  return ir::AxisRef(name, ir::SubAxis{pre, size});
}

std::vector<ir::AxisRef> parse_axis_refs(Lexer& lx) {
  std::vector<ir::AxisRef> out;
  lx.expect("{");
  if (lx.try_consume("}")) return out;
  do out.push_back(parse_axis_ref(lx));
  while (lx.try_consume(","));
  lx.expect("}");
  return out;
}

// Text of an attribute value kept verbatim: up to the next ',' or '}' outside brackets.
std::string raw_value(Lexer& lx) {
  lx.skip_space();
  std::string out;
  for (;;) {
    char c = lx.peek();
    if (c == '\0' || c == ',' || c == '}') break;
    if (c == '(' || c == '[' || c == '{' || c == '<') {
      lx.expect(std::string(1, c));
      char close = c == '(' ? ')' : c == '[' ? ']' : c == '{' ? '}' : '>';
      out += c + lx.balanced_until(close);
    } else if (c == '"') {
      out += lx.string_token();
    } else {
      std::string_view r = lx.rest();
      size_t n = 0;
      while (n < r.size() && !std::strchr(",}([{<\" \n\t\r", r[n])) ++n;
      if (n == 0) lx.error(fmt::format("unexpected '{}'", c));
      out += r.substr(0, n);
      lx.advance_raw(n);
    }
    // Any space the lexer skips separates words, tabs too (parser_fuzz finding: `#sdy.sha<TAB>rding`
    // was kept as "#sdy.sharding", which then printed and re-parsed as a different attribute).
    if (char s = lx.rest().empty() ? '\0' : lx.rest()[0]; s == ' ' || s == '\n' || s == '\t' || s == '\r') {
      lx.skip_space();
      char next = lx.peek();
      if (next != ',' && next != '}' && next != '\0') out += ' ';
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.empty()) lx.error("expected an attribute value");
  return out;
}

}  // namespace

ir::Literal parse_dense(Lexer& lx) {
  lx.expect("<");
  DenseNode root;
  lx.skip_space();
  root.loc = lx.location();
  bool empty = lx.try_consume(">");
  if (!empty) {
    root = parse_dense_node(lx);
    lx.expect(">");
  }
  lx.expect(":");
  lx.skip_space();
  Location type_at = lx.location();
  ir::Type type = parse_type(lx);
  if (!type.is_static()) lx.error_at(type_at, fmt::format("a dense literal needs a static type, not {}", ir::to_string(type)));
  ir::Literal lit(type);
  if (empty) {
    if (lit.num_elements() != 0)
      lx.error_at(root.loc, fmt::format("empty dense literal for {}", ir::to_string(type)));
    return lit;
  }
  if (!root.is_list && !root.re.empty() && root.re[0] == '"') {  // raw little-endian bytes
    const std::string& hex = root.re;
    size_t bytes = lit.bytes().size();
    // One element's bytes stand for all of them (MLIR's hex splat).
    const size_t one = lit.num_elements() > 0 ? bytes / static_cast<size_t>(lit.num_elements()) : bytes;
    const bool splat = lit.num_elements() > 1 && hex.size() == 3 + 2 * one;
    if (splat) bytes = one;
    if (hex.size() != 3 + 2 * bytes || hex.compare(1, 2, "0x") != 0)
      lx.error_at(root.loc, fmt::format("hex dense literal has {} bytes, {} needs {}",
                                        (hex.size() - 3) / 2, ir::to_string(type), bytes));
    // Hex digits only: stoi read "1g" as 1 and threw std::invalid_argument on "gg".
    if (hex.find_first_not_of("0123456789abcdefABCDEF", 3) != std::string::npos)  // `hex` is `"0x...`
      lx.error_at(root.loc, fmt::format("hex dense literal {}\" has a character that is not a hex digit", hex));
    for (size_t i = 0; i < lit.bytes().size(); ++i)
      lit.bytes()[i] = static_cast<std::byte>(std::stoi(hex.substr(3 + 2 * (i % bytes), 2), nullptr, 16));
    return lit;
  }
  if (!root.is_list) {  // splat
    for (int64_t i = 0; i < lit.num_elements(); ++i) set_element(lx, lit, i, root);
    return lit;
  }
  std::vector<const DenseNode*> leaves;
  flatten(lx, root, type, 0, leaves);
  for (size_t i = 0; i < leaves.size(); ++i) set_element(lx, lit, static_cast<int64_t>(i), *leaves[i]);
  return lit;
}

std::vector<int64_t> parse_int_list(Lexer& lx) {
  std::vector<int64_t> out;
  lx.expect("[");
  if (lx.try_consume("]")) return out;
  do out.push_back(lx.integer());
  while (lx.try_consume(","));
  lx.expect("]");
  return out;
}

ir::Attribute parse_attribute(Lexer& lx, const std::string& name) {
  lx.skip_space();
  Location at = lx.location();
  if (lx.try_consume("dense")) {
    ir::Literal lit = parse_dense(lx);
    if (name == "replica_groups" || name == "source_target_pairs" || name == "param_dims")
      return to_matrix(lx, at, lit);
    return lit;
  }
  if (lx.try_consume("#stablehlo.replica_group_mesh_axes")) return parse_replica_group_mesh_axes(lx);
  if (name == "programs" && lx.peek() == '[') {  // [[@f, @g], [@f, @g]]
    ir::SymbolGrid grid;
    lx.expect("[");
    do {
      grid.rows.emplace_back();
      lx.expect("[");
      do {
        lx.expect("@");
        grid.rows.back().push_back(lx.suffix_id());
      } while (lx.try_consume(","));
      lx.expect("]");
    } while (lx.try_consume(","));
    lx.expect("]");
    return grid;
  }
  if (lx.try_consume("array")) {
    lx.expect("<");
    if (!lx.try_consume("i64")) return ir::Opaque{"array<" + lx.balanced_until('>')};
    std::vector<int64_t> v;
    if (lx.try_consume(":")) {
      do v.push_back(lx.integer());
      while (lx.try_consume(","));
    }
    lx.expect(">");
    return v;
  }
  if (lx.try_consume("true")) return true;
  if (lx.try_consume("false")) return false;
  if (lx.peek() == '"') return lx.string_literal();
  if (lx.is_number_next()) {
    std::string t = lx.number_text();
    std::optional<ElementType> e;
    if (lx.try_consume(":")) e = parse_element_type(lx);
    bool is_float_text = t.find_first_of(".eE") != std::string::npos && t.find("0x") == std::string::npos;
    if ((e && ir::is_float(*e)) || (!e && is_float_text)) {
      char* end = nullptr;
      double v = std::strtod(t.c_str(), &end);
      if (std::isinf(v)) lx.error_at(at, fmt::format("'{}' is out of range for f64", t));
      return v;
    }
    if (is_float_text) lx.error_at(at, fmt::format("'{}' is not an integer", t));
    Lexer again(t, lx.file());
    return again.integer();
  }
  if (lx.try_consume("#stablehlo.channel_handle")) {
    ir::ChannelHandle h;
    parse_fields(lx, [&](const std::string& k) {
      if (k == "handle") h.handle = lx.integer();
      else if (k == "type") h.type = lx.integer();
      else return false;
      return true;
    });
    return h;
  }
  if (lx.try_consume("#stablehlo.conv")) return parse_conv_attr(lx);
  if (lx.try_consume("#stablehlo.dot")) {
    ir::DotDims d;
    parse_fields(lx, [&](const std::string& k) {
      if (k == "lhs_batching_dimensions") d.lhs_batch = parse_int_list(lx);
      else if (k == "rhs_batching_dimensions") d.rhs_batch = parse_int_list(lx);
      else if (k == "lhs_contracting_dimensions") d.lhs_contracting = parse_int_list(lx);
      else if (k == "rhs_contracting_dimensions") d.rhs_contracting = parse_int_list(lx);
      else return false;
      return true;
    });
    return d;
  }
  if (lx.try_consume("#chlo.ragged_dot")) {
    ir::RaggedDotDims d;
    parse_fields(lx, [&](const std::string& k) {
      if (k == "lhs_batching_dimensions") d.dot.lhs_batch = parse_int_list(lx);
      else if (k == "rhs_batching_dimensions") d.dot.rhs_batch = parse_int_list(lx);
      else if (k == "lhs_contracting_dimensions") d.dot.lhs_contracting = parse_int_list(lx);
      else if (k == "rhs_contracting_dimensions") d.dot.rhs_contracting = parse_int_list(lx);
      else if (k == "lhs_ragged_dimensions") d.lhs_ragged = parse_int_list(lx);
      else if (k == "rhs_group_dimensions") d.rhs_group = parse_int_list(lx);
      else return false;
      return true;
    });
    return d;
  }
  if (lx.try_consume("#stablehlo.gather")) {
    ir::GatherDims g;
    parse_fields(lx, [&](const std::string& k) {
      if (k == "offset_dims") g.offset_dims = parse_int_list(lx);
      else if (k == "collapsed_slice_dims") g.collapsed_slice_dims = parse_int_list(lx);
      else if (k == "operand_batching_dims") g.operand_batching_dims = parse_int_list(lx);
      else if (k == "start_indices_batching_dims") g.start_indices_batching_dims = parse_int_list(lx);
      else if (k == "start_index_map") g.start_index_map = parse_int_list(lx);
      else if (k == "index_vector_dim") g.index_vector_dim = lx.integer();
      else return false;
      return true;
    });
    return g;
  }
  if (lx.try_consume("#stablehlo.scatter")) {
    ir::ScatterDims s;
    parse_fields(lx, [&](const std::string& k) {
      if (k == "update_window_dims") s.update_window_dims = parse_int_list(lx);
      else if (k == "inserted_window_dims") s.inserted_window_dims = parse_int_list(lx);
      else if (k == "input_batching_dims") s.input_batching_dims = parse_int_list(lx);
      else if (k == "scatter_indices_batching_dims") s.scatter_indices_batching_dims = parse_int_list(lx);
      else if (k == "scatter_dims_to_operand_dims") s.scatter_dims_to_operand_dims = parse_int_list(lx);
      else if (k == "index_vector_dim") s.index_vector_dim = lx.integer();
      else return false;
      return true;
    });
    return s;
  }
  if (lx.try_consume("#stablehlo<comparison_direction")) {
    Location d = lx.location();
    auto dir = ir::parse_comparison_direction(lx.identifier());
    if (!dir) lx.error_at(d, "unknown comparison direction");
    lx.expect(">");
    return *dir;
  }
  if (lx.try_consume("#stablehlo<comparison_type")) {
    Location d = lx.location();
    auto t = ir::parse_compare_type(lx.identifier());
    if (!t) lx.error_at(d, "unknown comparison type");
    lx.expect(">");
    return *t;
  }
  if (lx.try_consume("#sdy.sharding_per_value")) {
    lx.expect("<");
    ir::ShardingList l = parse_sharding_list(lx);
    lx.expect(">");
    return l;
  }
  if (lx.try_consume("#sdy.sharding")) {
    lx.expect("<");
    return parse_sharding_body(lx);
  }
  return ir::Opaque{raw_value(lx)};
}

ir::AttrMap parse_attr_dict(Lexer& lx) {
  ir::AttrMap attrs;
  lx.expect("{");
  if (lx.try_consume("}")) return attrs;
  do {
    lx.skip_space();
    Location at = lx.location();
    std::string name = lx.peek() == '"' ? lx.string_literal() : lx.identifier();
    if (attrs.has(name)) lx.error_at(at, fmt::format("attribute '{}' is given twice", name));
    if (lx.try_consume("=")) {
      attrs.set(name, parse_attribute(lx, name));
    } else {
      attrs.set(name, true);  // a unit attribute
    }
  } while (lx.try_consume(","));
  lx.expect("}");
  return attrs;
}

namespace {

// A mesh written inline in a sharding is declared in the module as Shardy's lift-inlined-meshes
// pass does: an equal mesh the module has already (same axes and device order) is reused, else a
// new one is added under a fresh name.
std::string lift_inline_mesh(Lexer& lx, Location at, ir::Mesh mesh) {
  if (lx.module == nullptr) lx.error_at(at, "a mesh written inline in a sharding is read only inside a module");
  for (const ir::Mesh& m : lx.module->meshes)
    if (m.axes == mesh.axes && m.device_ids == mesh.device_ids) return m.name;
  std::string name = "inlined_mesh";
  for (int i = 0; lx.module->find_mesh(name) != nullptr; ++i) name = fmt::format("inlined_mesh_{}", i);
  mesh.name = name;
  try {
    lx.module->add_mesh(std::move(mesh));
  } catch (const support::UserError& e) {
    lx.error_at(at, e.what());
  }
  return name;
}

}  // namespace

ir::Sharding parse_sharding_body(Lexer& lx) {
  ir::Sharding s;
  lx.skip_space();
  Location at = lx.location();
  if (lx.try_consume("mesh")) {
    s.mesh = lift_inline_mesh(lx, at, parse_mesh_body(lx, ""));
  } else {
    lx.expect("@");
    s.mesh = lx.suffix_id();
  }
  lx.expect(",");
  lx.expect("[");
  if (!lx.try_consume("]")) {
    do {
      ir::DimSharding d;
      lx.expect("{");
      if (!lx.try_consume("}")) {
        do {
          if (lx.try_consume("?")) {
            d.open = true;
            break;
          }
          d.axes.push_back(parse_axis_ref(lx));
        } while (lx.try_consume(","));
        lx.expect("}");
      }
      if (lx.rest().size() > 0 && lx.rest()[0] == 'p') {  // {"x"}p1: no space, no boundary
        lx.advance_raw(1);
        Location at = lx.location();
        std::string_view rest = lx.rest();
        size_t n = 0;
        while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
        std::string digits(rest.substr(0, n));
        // Shardy's priorities are plain decimal integers: p0, p1, ... (no sign, no leading zero).
        if (n == 0 || n > 18 || (n > 1 && digits[0] == '0'))
          lx.error_at(at, fmt::format("expected an integer priority after 'p', found 'p{}'", rest.substr(0, std::max<size_t>(n, 1))));
        lx.advance_raw(n);
        d.priority = std::stoll(digits);
      }
      s.dims.push_back(std::move(d));
    } while (lx.try_consume(","));
    lx.expect("]");
  }
  while (lx.try_consume(",")) {
    Location at = lx.location();
    std::string key = lx.identifier();
    lx.expect("=");
    if (key == "replicated") s.replicated = parse_axis_refs(lx);
    else if (key == "unreduced") {
      // unreduced=max{"x"}: the pieces combine by a max (a sum when no kind is written)
      if (lx.peek() != '{') {
        Location kind_at = lx.location();
        std::string word = lx.identifier();
        auto kind = ir::reduction_kind(word);
        if (!kind) lx.error_at(kind_at, fmt::format("unknown reduction kind '{}' of unreduced axes (sum, max or min)", word));
        s.unreduced_kind = *kind;
      }
      s.unreduced = parse_axis_refs(lx);
      if (s.unreduced.empty()) s.unreduced_kind = ir::ReductionKind::kSum;
    }
    else lx.error_at(at, fmt::format("unknown sharding field '{}'", key));
  }
  lx.expect(">");
  return s;
}

ir::ShardingList parse_sharding_list(Lexer& lx) {
  ir::ShardingList out;
  lx.expect("[");
  if (lx.try_consume("]")) return out;
  do {
    lx.try_consume("#sdy.sharding");  // elements may be written as full attributes
    lx.expect("<");
    out.push_back(parse_sharding_body(lx));
  } while (lx.try_consume(","));
  lx.expect("]");
  return out;
}

ir::AxisNames parse_axis_names(Lexer& lx) {
  ir::AxisNames out;
  lx.expect("{");
  if (lx.try_consume("}")) return out;
  do out.push_back(lx.string_literal());
  while (lx.try_consume(","));
  lx.expect("}");
  return out;
}

std::vector<ir::AxisRef> parse_axis_ref_list(Lexer& lx) { return parse_axis_refs(lx); }

ir::Mesh parse_mesh_body(Lexer& lx, std::string name) {
  ir::Mesh m{std::move(name), {}, {}};
  lx.expect("<");
  lx.expect("[");
  lx.list_until("]", [&] {
    std::string axis = lx.string_literal();
    lx.expect("=");
    m.axes.push_back(ir::MeshAxis{axis, lx.integer()});
  });
  if (lx.try_consume(",")) {
    lx.expect("device_ids");
    lx.expect("=");
    m.device_ids = parse_int_list(lx);
  }
  lx.expect(">");
  return m;
}

}  // namespace tessera::stablehlo
