// Shape rules of the ops that talk past their process: the streaming ops stablehlo.infeed and
// stablehlo.outfeed (the spec's "Streaming communication") and the point-to-point ops
// stablehlo.send and stablehlo.recv. infeed's and recv's results are payload values then a token
// (infeed C1-C3), outfeed and send take values and a token and give a token. The config strings are
// implementation-defined (Tessera keeps them and reads nothing from them). infeed's optional
// `layout` is not in the spec; the StableHLO dialect's verifier checks it (an array holding one
// array of integers per payload value), and so does this rule, with messages that say so. The
// reader keeps `layout` as its text (ir::Opaque), so the rule reads that text. send and recv check
// their channel (C5: its type agrees with is_host_transfer) and source_target_pairs (C1-C4; the
// upper bound of C4 is the process grid's, known only when the op runs).
#include <algorithm>
#include <cctype>

#include "ir/shape_rules.h"

namespace tessera::ir::shape_rules {
namespace {

using Types = std::vector<Type>;

// The config string, which the spec's inputs table (I2, I3) makes a string constant.
void check_config(const ShapeQuery& q, std::string_view name, std::string_view label) {
  if (q.attrs.has(name) && q.attrs.find<std::string>(name) == nullptr)
    reject(q, "{} must be a string ({})", name, label);
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
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  return !t.empty() && std::all_of(t.begin(), t.end(), digit);
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

// Payload values (tensors) then a token: infeed's results (C1-C3) and recv's.
void check_payload_then_token(const ShapeQuery& q, const char* c1, const char* c2, const char* c3) {
  if (q.declared.empty()) reject(q, "has no results; the last result is the token{}", c1);
  for (size_t i = 0; i + 1 < q.declared.size(); ++i)
    if (!q.declared[i].is_tensor())
      reject(q, "result {} is {}, not a tensor: every result but the last is a payload value{}", i,
             to_string(q.declared[i]), c2);
  const Type& last = q.declared.back();
  if (!last.is_token())
    reject(q, "result {} is {}, not a token: the last result is the token{}", q.declared.size() - 1, to_string(last),
           c3);
}

// Values (tensors) then a token: outfeed's operands (I1, I2) and send's.
void check_values_then_token(const ShapeQuery& q) {
  if (q.operands.empty()) reject(q, "has no operands; the last operand is the token (I2)");
  for (size_t i = 0; i + 1 < q.operands.size(); ++i)
    if (!q.operands[i].is_tensor())
      reject(q, "input {} is {}, not a tensor: every operand but the last is a value to {} (I1)", i,
             to_string(q.operands[i]), q.kind == OpKind::Send ? "send" : "write");
  const Type& last = q.operands.back();
  if (!last.is_token())
    reject(q, "operand {} is {}, not a token: the last operand is the token (I2)", q.operands.size() - 1,
           to_string(last));
}

std::string_view channel_type_name(int64_t t) {
  switch (t) {
    case 1: return "DEVICE_TO_DEVICE";
    case 2: return "DEVICE_TO_HOST";
    case 3: return "HOST_TO_DEVICE";
    default: return "CHANNEL_TYPE_INVALID";
  }
}

// send's and recv's channel and pairs. `first` is the label of channel_id (I3 for send, I2 for recv).
void check_channel(const ShapeQuery& q, int first) {
  const auto* channel = q.attrs.find<ChannelHandle>("channel_handle");
  if (channel == nullptr)
    reject(q, "has no channel_handle = #stablehlo.channel_handle<handle = ..., type = ...> (I{}, I{})", first,
           first + 1);
  if (q.attrs.has("is_host_transfer") && q.attrs.find<bool>("is_host_transfer") == nullptr)
    reject(q, "is_host_transfer must be true or false (I{})", first + 2);
  bool host = q.attrs.get_or<bool>("is_host_transfer", false);
  // The spec names DEVICE_TO_HOST for both ops; StableHLO's own recv from the host is HOST_TO_DEVICE.
  bool fits = host ? channel->type == 2 || (q.kind == OpKind::Recv && channel->type == 3) : channel->type == 1;
  if (!fits)
    reject(q, "channel type {} ({}) does not fit is_host_transfer = {}: it must be {} (C5)", channel->type,
           channel_type_name(channel->type), host,
           host ? (q.kind == OpKind::Recv ? "DEVICE_TO_HOST (2) or HOST_TO_DEVICE (3)" : "DEVICE_TO_HOST (2)")
                : "DEVICE_TO_DEVICE (1)");
  if (!q.attrs.has("source_target_pairs")) return;
  const auto* pairs = q.attrs.find<IntMatrix>("source_target_pairs");
  if (pairs == nullptr) reject(q, "source_target_pairs must be a 2-dimensional integer tensor (I{})", first + 3);
  if (pairs->cols != 2)
    reject(q, "source_target_pairs is {}x{}; each pair is [source, target] (C1)", pairs->rows, pairs->cols);
  for (int64_t r = 0; r < pairs->rows; ++r)
    for (int64_t c = 0; c < 2; ++c) {
      int64_t v = pairs->values[static_cast<size_t>(r * 2 + c)];
      if (v < 0) reject(q, "source_target_pairs[{}] = [{}, {}] names process {} (C4)", r,
                        pairs->values[static_cast<size_t>(r * 2)], pairs->values[static_cast<size_t>(r * 2 + 1)], v);
      for (int64_t e = 0; e < r; ++e)
        if (pairs->values[static_cast<size_t>(e * 2 + c)] == v)
          reject(q, "source_target_pairs[{}] and [{}] have the same {} {} ({})", e, r, c == 0 ? "source" : "target", v,
                 c == 0 ? "C2" : "C3");
    }
}

}  // namespace

// results = payload values, then a token; the values come from the infeed.
Types infer_Infeed(const ShapeQuery& q) {
  if (!q.operands[0].is_token()) reject(q, "operand is {}, not a token (I1)", to_string(q.operands[0]));
  check_config(q, "infeed_config", "I2");
  check_payload_then_token(q, " (C1)", " (C2)", " (C3)");
  check_layout(q, q.declared.size() - 1);
  return {q.declared.begin(), q.declared.end()};
}

// (inputs..., token) -> token; the inputs go to the outfeed.
Types infer_Outfeed(const ShapeQuery& q) {
  check_values_then_token(q);
  check_config(q, "outfeed_config", "I3");
  return {Type::token()};
}

// (inputs..., token) -> token; the inputs go to the channel's other end.
Types infer_Send(const ShapeQuery& q) {
  check_values_then_token(q);
  check_channel(q, 3);
  return {Type::token()};
}

// token -> (payload values..., token), from the channel's other end. The spec numbers no constraint
// on the results' kinds; they are infeed's.
Types infer_Recv(const ShapeQuery& q) {
  if (!q.operands[0].is_token()) reject(q, "operand is {}, not a token (I1)", to_string(q.operands[0]));
  check_channel(q, 2);
  check_payload_then_token(q, "", "", "");
  return {q.declared.begin(), q.declared.end()};
}

}  // namespace tessera::ir::shape_rules
