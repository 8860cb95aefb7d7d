// Shape rules of tokens, tuples and the ops that call a function or region: after_all,
// create_token, tuple, get_tuple_element, composite, map, chlo.scan, async_start and async_done.
// The constraints that need the module or a region (composite's decomposition, map's computation,
// scan's body, async_start's body) are checked by verify() (verify.cpp), with the same spec numbers.
#include <algorithm>
#include <cctype>

#include "ir/effects.h"
#include "ir/scan.h"
#include "ir/shape_rules.h"
#include "support/strings.h"

namespace tessera::ir {

namespace {

// `@name` or `@"name"` -> name.
std::optional<std::string> symbol_name(std::string_view text) {
  if (text.size() < 2 || text[0] != '@') return std::nullopt;
  std::string_view name = text.substr(1);
  if (name.size() >= 2 && name.front() == '"' && name.back() == '"') name = name.substr(1, name.size() - 2);
  return std::string(name);
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<std::string> decomposition_of(const AttrMap& attrs) {
  if (const auto* s = attrs.find<std::string>("decomposition")) return *s;
  const auto* o = attrs.find<Opaque>("decomposition");
  return o == nullptr ? std::nullopt : symbol_name(o->text);
}

std::optional<std::vector<std::string>> symbol_list_of(const Attribute& a) {
  const auto* o = std::get_if<Opaque>(&a);
  if (o == nullptr) return std::nullopt;
  std::string_view text = trimmed(o->text);
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return std::nullopt;
  text = trimmed(text.substr(1, text.size() - 2));
  std::vector<std::string> names;
  while (!text.empty()) {
    // A quoted name may hold a comma: the entry ends at the first comma outside quotes.
    size_t end = 0;
    for (bool quoted = false; end < text.size() && (quoted || text[end] != ','); ++end)
      if (text[end] == '"') quoted = !quoted;
    std::optional<std::string> name = symbol_name(trimmed(text.substr(0, end)));
    if (!name) return std::nullopt;
    names.push_back(*name);
    if (end == text.size()) break;
    text = trimmed(text.substr(end + 1));
    if (text.empty()) return std::nullopt;  // a comma with no entry after it
  }
  return names;
}

Opaque symbol_ref(const std::string& name) {
  bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$' || c == '-';
  });
  return Opaque{plain ? "@" + name : "@\"" + name + "\""};
}

namespace shape_rules {
namespace {

using Types = std::vector<Type>;

// The spec's is_namespaced_op_name: "dialect.op", each part non-empty.
bool namespaced(const std::string& name) {
  size_t dot = name.find('.');
  return dot != std::string::npos && dot > 0 && dot + 1 < name.size();
}

}  // namespace

// Every input is a token; the result is a token (spec: after_all's inputs are tokens).
Types infer_AfterAll(const ShapeQuery& q) {
  for (size_t i = 0; i < q.operands.size(); ++i)
    if (!q.operands[i].is_token()) reject(q, "input {} is {}, not a token", i, to_string(q.operands[i]));
  return {Type::token()};
}

Types infer_CreateToken(const ShapeQuery&) { return {Type::token()}; }

// (C1) result = tuple<type(val)...>
Types infer_Tuple(const ShapeQuery& q) {
  return {Type::tuple(std::vector<Type>(q.operands.begin(), q.operands.end()))};
}

Types infer_GetTupleElement(const ShapeQuery& q) {
  const Type& t = q.operands[0];
  if (!t.is_tuple()) reject(q, "operand is {}, not a tuple", to_string(t));
  const int64_t* index = q.attrs.find<int64_t>("index");
  if (index == nullptr) reject(q, "has no index");
  if (*index < 0 || *index >= static_cast<int64_t>(t.elements.size()))
    reject(q, "index {} is outside [0, {}) of {} (C1)", *index, t.elements.size(), to_string(t));
  return {t.elements[static_cast<size_t>(*index)]};  // (C2)
}

// The result types are the decomposition's (C4), which verify() compares with the module.
Types infer_Composite(const ShapeQuery& q) {
  const std::string* name = q.attrs.find<std::string>("name");
  if (name == nullptr) reject(q, "has no name");
  if (!namespaced(*name)) reject(q, "name \"{}\" is not of the form dialect.op (C1)", *name);
  if (!decomposition_of(q.attrs)) reject(q, "has no decomposition function (@name) (C2)");
  return {q.declared.begin(), q.declared.end()};
}

// The result has the inputs' shape (C1) and the computation's element type (C4, checked against
// the region by verify()).
Types infer_Map(const ShapeQuery& q) {
  if (q.operands.empty()) reject(q, "has no inputs (C2)");
  const Type& first = q.operands[0];
  for (size_t i = 0; i < q.operands.size(); ++i) {
    if (!q.operands[i].is_tensor()) reject(q, "input {} is {}, not a tensor", i, to_string(q.operands[i]));
    if (q.operands[i].shape != first.shape)
      reject(q, "input {} is {} but input 0 is {}: shapes differ (C1)", i, to_string(q.operands[i]), to_string(first));
  }
  const auto* dims = q.attrs.find<std::vector<int64_t>>("dimensions");
  std::vector<int64_t> all(first.shape.size());
  for (size_t d = 0; d < all.size(); ++d) all[d] = static_cast<int64_t>(d);
  if (dims == nullptr || *dims != all)
    reject(q, "dimensions must be [{}], every dimension in order (C3)",
           support::join(all, ", "));
  const Type& out = declared_result(q);
  if (out.shape != first.shape)
    reject(q, "result {} does not have the inputs' shape {} (C1)", to_string(out), to_string(first));
  return {out};
}

// chlo.scan: the layout (scan.h) holds, each carry has its init's type, and each output stacks a
// slice of the body's along the scanned dimension (the slices' types are the body's, checked by
// verify()).
Types infer_Scan(const ShapeQuery& q) {
  auto layout = scan_layout(q.attrs, {q.operands.begin(), q.operands.end()}, q.declared.size());
  if (const auto* why = std::get_if<std::string>(&layout)) reject(q, "{}", *why);
  const ScanLayout& l = std::get<ScanLayout>(layout);
  for (size_t k = 0; k < l.outputs; ++k) {
    const Type& out = q.declared[k];
    if (!out.is_tensor() || l.dimension >= out.rank() || out.shape[static_cast<size_t>(l.dimension)] != l.length)
      reject(q, "output {} is {}, which does not stack {} slices along dimension {}", k, to_string(out), l.length,
             l.dimension);
  }
  for (size_t c = 0; c < l.inits; ++c)
    if (q.declared[l.outputs + c] != q.operands[l.inputs + c])
      reject(q, "carry {} is {} but its init is {}", c, to_string(q.declared[l.outputs + c]),
             to_string(q.operands[l.inputs + c]));
  return {q.declared.begin(), q.declared.end()};
}

// async_start: tensors in (I1), a future out, of the body op's results (C4, checked against the
// body by verify()).
Types infer_AsyncStart(const ShapeQuery& q) {
  for (size_t i = 0; i < q.operands.size(); ++i)
    if (!q.operands[i].is_tensor()) reject(q, "operand {} is {}, not a tensor (I1)", i, to_string(q.operands[i]));
  if (q.declared.size() != 1 || q.declared[0].kind != TypeKind::kFuture)
    reject(q, "must return one !stablehlo.future<...>, not ({})", types_string(q.declared));
  return {q.declared[0]};
}

// async_done of future<T> returns T (C1).
Types infer_AsyncDone(const ShapeQuery& q) {
  if (q.operands.size() != 1 || q.operands[0].kind != TypeKind::kFuture)
    reject(q, "operand must be one !stablehlo.future<...>, not ({}) (I1)", types_string(q.operands));
  return q.operands[0].elements;
}

}  // namespace shape_rules
}  // namespace tessera::ir
