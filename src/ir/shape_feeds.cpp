// Shape rules of the streaming ops, stablehlo.infeed and stablehlo.outfeed (the spec's "Streaming
// communication"): infeed's results are its payload values then a token (C1-C3), outfeed takes
// values and a token and gives a token. The config strings are implementation-defined (Tessera
// keeps them and reads nothing from them). infeed's optional `layout` is not in the spec; the
// StableHLO dialect's verifier checks it (an array holding one array of integers per payload
// value), and so does this rule, with messages that say so. The reader keeps `layout` as its text
// (ir::Opaque), so the rule reads that text.
#include <algorithm>
#include <cctype>

#include "ir/shape_rules.h"

namespace tessera::ir::shape_rules {
namespace {

using Types = std::vector<Type>;

// The config string, which the spec's inputs table (I2, I3) makes a string constant.
void check_config(const ShapeQuery& q, std::string_view name, std::string_view label) {
  if (q.attrs.has(name) && q.attrs.find<std::string>(name) == nullptr) reject(q, "{} must be a string ({})", name, label);
}

// The text of an array attribute, read as a list of elements, each element's text (brackets kept).
struct ArrayText {
  std::string_view text;
  size_t at = 0;
  void space() {
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
  }
  bool eat(char c) {
    space();
    if (at < text.size() && text[at] == c) {
      ++at;
      return true;
    }
    return false;
  }
  // One element: a bracketed list or a word (up to the next ',' or ']' at depth 0).
  std::string_view element() {
    space();
    size_t start = at;
    int depth = 0;
    for (; at < text.size(); ++at) {
      char c = text[at];
      if (c == '[' || c == '(' || c == '<' || c == '{') ++depth;
      else if ((c == ']' || c == ')' || c == '>' || c == '}') && depth > 0) --depth;
      else if ((c == ',' || c == ']') && depth == 0) break;
    }
    std::string_view e = text.substr(start, at - start);
    while (!e.empty() && std::isspace(static_cast<unsigned char>(e.back()))) e.remove_suffix(1);
    return e;
  }
  // The elements of `[a, b, ...]`; nullopt when the text is not one bracketed list.
  static std::optional<std::vector<std::string_view>> split(std::string_view text) {
    ArrayText a{text};
    if (!a.eat('[')) return std::nullopt;
    std::vector<std::string_view> out;
    if (!a.eat(']')) {
      do out.push_back(a.element());
      while (a.eat(','));
      if (!a.eat(']')) return std::nullopt;
    }
    a.space();
    if (a.at != text.size()) return std::nullopt;
    return out;
  }
};

// An integer attribute's text: `3`, `-1`, `3 : i64`.
bool integer_text(std::string_view t) {
  size_t colon = t.find(':');
  if (colon != std::string_view::npos) t = t.substr(0, colon);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  if (!t.empty() && t[0] == '-') t.remove_prefix(1);
  return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

void check_layout(const ShapeQuery& q, size_t payloads) {
  if (!q.attrs.has("layout")) return;
  const auto* text = q.attrs.find<Opaque>("layout");
  std::optional<std::vector<std::string_view>> entries = text ? ArrayText::split(text->text) : std::nullopt;
  if (!entries) reject(q, "layout must be an array (of one array of integers per payload value)");
  if (entries->size() != payloads)
    reject(q, "layout has {} entries but the op has {} payload values (one per result but the token)",
           entries->size(), payloads);
  for (size_t i = 0; i < entries->size(); ++i) {
    std::optional<std::vector<std::string_view>> dims = ArrayText::split((*entries)[i]);
    if (!dims) reject(q, "layout entry {} is {}, not an array of integers", i, (*entries)[i]);
    for (std::string_view d : *dims)
      if (!integer_text(d)) reject(q, "layout entry {} holds {}, which is not an integer", i, d);
  }
}

}  // namespace

// results = payload values, then a token; the values come from the infeed.
Types infer_Infeed(const ShapeQuery& q) {
  if (!q.operands[0].is_token()) reject(q, "operand is {}, not a token (I1)", to_string(q.operands[0]));
  check_config(q, "infeed_config", "I2");
  if (q.declared.empty()) reject(q, "has no results; the last result is the token (C1)");
  for (size_t i = 0; i + 1 < q.declared.size(); ++i)
    if (!q.declared[i].is_tensor())
      reject(q, "result {} is {}, not a tensor: every result but the last is a payload value (C2)", i,
             to_string(q.declared[i]));
  const Type& last = q.declared.back();
  if (!last.is_token())
    reject(q, "result {} is {}, not a token: the last result is the token (C3)", q.declared.size() - 1, to_string(last));
  check_layout(q, q.declared.size() - 1);
  return {q.declared.begin(), q.declared.end()};
}

// (inputs..., token) -> token; the inputs go to the outfeed.
Types infer_Outfeed(const ShapeQuery& q) {
  if (q.operands.empty()) reject(q, "has no operands; the last operand is the token (I2)");
  for (size_t i = 0; i + 1 < q.operands.size(); ++i)
    if (!q.operands[i].is_tensor())
      reject(q, "input {} is {}, not a tensor: every operand but the last is a value to write (I1)", i,
             to_string(q.operands[i]));
  const Type& last = q.operands.back();
  if (!last.is_token())
    reject(q, "operand {} is {}, not a token: the last operand is the token (I2)", q.operands.size() - 1,
           to_string(last));
  check_config(q, "outfeed_config", "I3");
  return {Type::token()};
}

}  // namespace tessera::ir::shape_rules
