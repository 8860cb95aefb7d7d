// Types from StableHLO text: element types, tensor<...> (dynamic dimensions, #stablehlo.bounds,
// !quant.uniform quantized element types), tokens, tuples and futures, type lists and function types.
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "ir/quantize.h"
#include "stablehlo/parse_attrs.h"
#include "support/memory.h"
#include "support/strings.h"

namespace tessera::stablehlo {

using ir::ElementType;

ElementType parse_element_type(Lexer& lx) {
  Location at = lx.location();
  lx.skip_space();
  at = lx.location();
  std::string name;
  if (lx.try_consume("complex")) {
    lx.expect("<");
    name = "complex<" + lx.identifier() + ">";
    lx.expect(">");
  } else {
    name = lx.identifier();
  }
  auto e = ir::parse_element_type(name);
  if (!e) lx.error_at(at, fmt::format("unknown element type '{}'", name));
  return *e;
}

namespace {

// `#stablehlo.bounds<8, ?>`: one entry per dimension, a bound only where the dimension is '?'.
std::vector<int64_t> parse_bounds(Lexer& lx, const std::vector<int64_t>& shape) {
  lx.skip_space();
  Location at = lx.location();
  if (!lx.try_consume("#stablehlo.bounds")) lx.error("the only tensor encoding read is #stablehlo.bounds<...>");
  lx.expect("<");
  std::vector<int64_t> bounds;
  lx.list_until(">", [&] {
    if (lx.try_consume("?")) bounds.push_back(ir::kDynamic);
    else bounds.push_back(lx.integer());
  });
  if (bounds.size() != shape.size())
    lx.error_at(at, fmt::format("#stablehlo.bounds has {} entries for a tensor of rank {}", bounds.size(), shape.size()));
  for (size_t d = 0; d < shape.size(); ++d) {
    if (bounds[d] < 0 && bounds[d] != ir::kDynamic)
      lx.error_at(at, fmt::format("#stablehlo.bounds: bound {} of dimension {} is negative", bounds[d], d));
    if (bounds[d] != ir::kDynamic && shape[d] != ir::kDynamic)
      lx.error_at(at, fmt::format("#stablehlo.bounds: dimension {} is static ({}), so its bound must be '?'", d, shape[d]));
  }
  return bounds;
}

// After "!quant.uniform": "<i8<-127:127>:f32:1, {0.1:-30, 0.5}>" (spec.md, QuantizedTensorElementType),
// with the element type's constraints (C1-C11) checked; the tensor's (C12, C13) are checked by
// parse_type, which knows the shape.
ir::Quantization parse_quantization(Lexer& lx) {
  lx.expect("<");
  ir::Quantization q;
  lx.skip_space();
  Location at = lx.location();
  {
    // MLIR's quant dialect writes unsigned storage as u8 (and reads ui8 too).
    std::string name = lx.identifier();
    if (name.size() > 1 && name[0] == 'u' && std::isdigit(static_cast<unsigned char>(name[1]))) name.insert(1, "i");
    auto e = ir::parse_element_type(name);
    if (!e) lx.error_at(at, fmt::format("unknown element type '{}'", name));
    q.storage = *e;
  }
  if (!ir::is_integer(q.storage))
    lx.error_at(at, fmt::format("!quant.uniform: {}", ir::quantization_error(q)));
  q.storage_min = ir::integer_min(q.storage);
  q.storage_max = ir::integer_max(q.storage);
  if (lx.try_consume("<")) {
    q.storage_min = lx.integer();
    lx.expect(":");
    q.storage_max = lx.integer();
    lx.expect(">");
  }
  lx.expect(":");
  q.expressed = parse_element_type(lx);
  if (lx.try_consume(":")) q.axis = lx.integer();
  lx.expect(",");
  bool braces = lx.try_consume("{");
  do {
    lx.skip_space();
    Location scale_at = lx.location();
    std::string t = lx.number_text();
    char* end = nullptr;
    double scale = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size()) lx.error_at(scale_at, fmt::format("'{}' is not a scale", t));
    q.scales.push_back(scale);
    q.zero_points.push_back(lx.try_consume(":") ? lx.integer() : 0);  // the zero point defaults to 0
  } while (braces && lx.try_consume(","));
  if (braces) lx.expect("}");
  lx.expect(">");
  if (std::string why = ir::quantization_error(q); !why.empty())
    lx.error_at(at, fmt::format("!quant.uniform: {}", why));
  return q;
}

// The members of tuple<...> or !stablehlo.future<...>, after the '<': "T, T>" or ">".
std::vector<ir::Type> parse_member_types(Lexer& lx) {
  Lexer::NestingGuard guard(lx, "tuple types");
  std::vector<ir::Type> members;
  if (lx.try_consume(">")) return members;
  do members.push_back(parse_type(lx));
  while (lx.try_consume(","));
  lx.expect(">");
  return members;
}

}  // namespace

ir::Type parse_type(Lexer& lx) {
  lx.skip_space();
  Location at = lx.location();
  // The kinds that are not tensors: tokens order effects, tuples group values (nested, possibly
  // empty), futures are async_start's results.
  if (lx.try_consume("!")) {
    std::string name = lx.identifier();
    if (name == "stablehlo.token") return ir::Type::token();
    if (name == "stablehlo.future") {
      lx.expect("<");
      return ir::Type::future(parse_member_types(lx));
    }
    lx.error_at(at, fmt::format("unsupported type '!{}'", name));
  }
  if (lx.try_consume("tuple")) {
    lx.expect("<");
    return ir::Type::tuple(parse_member_types(lx));
  }
  if (!lx.try_consume("tensor")) lx.error("expected a tensor type");
  lx.expect("<");
  std::vector<int64_t> shape;
  for (;;) {
    lx.skip_space();
    if (lx.peek() == '?') {  // a dynamic dimension, refined from the inputs before running
      lx.advance_raw(1);
      shape.push_back(ir::kDynamic);
      if (lx.rest().empty() || lx.rest()[0] != 'x') lx.error("expected 'x' after a dimension");
      lx.advance_raw(1);
      continue;
    }
    // Digits only: in "0x4xf32" the 0 is a dimension, not the start of a hex number.
    std::string_view r = lx.rest();
    size_t n = 0;
    while (n < r.size() && std::isdigit(static_cast<unsigned char>(r[n]))) ++n;
    if (n == 0) break;
    if (n > 15) lx.error(fmt::format("dimension '{}' is too large", r.substr(0, n)));
    shape.push_back(std::stoll(std::string(r.substr(0, n))));
    lx.advance_raw(n);
    // The 'x' after a dimension is not an identifier boundary: "2x3xf32".
    if (lx.rest().empty() || lx.rest()[0] != 'x') lx.error("expected 'x' after a dimension");
    lx.advance_raw(1);
  }
  lx.skip_space();
  Location element_at = lx.location();
  std::shared_ptr<const ir::Quantization> quant;
  if (lx.try_consume("!quant.uniform")) {
    ir::Quantization q = parse_quantization(lx);
    int64_t rank = static_cast<int64_t>(shape.size());
    int64_t size = q.axis && *q.axis < rank ? shape[static_cast<size_t>(*q.axis)] : -1;
    if (size == ir::kDynamic) size = -1;  // checked once refined
    if (std::string why = ir::quantization_error(q, rank, size); !why.empty())
      lx.error_at(element_at, fmt::format("!quant.uniform: {}", why));
    quant = std::make_shared<const ir::Quantization>(std::move(q));
  }
  ElementType e = quant ? quant->storage : parse_element_type(lx);
  std::vector<int64_t> bounds;
  if (lx.try_consume(",")) bounds = parse_bounds(lx, shape);
  lx.expect(">");
  ir::Type type(e, std::move(shape));
  type.bounds = std::move(bounds);
  type.quant = std::move(quant);
  if (!type.is_static()) return type;  // no byte size yet; checked when refined
  // Element counts and byte sizes are int64 everywhere: a shape past that is refused here, where
  // its location is known, rather than wrapping later.
  if (!support::checked_bytes(type.shape, ir::info(e).bytes))
    lx.error_at(at, fmt::format("{} is too large: its size in bytes does not fit in 64 bits", ir::to_string(type)));
  return type;
}

std::vector<ir::Type> parse_type_list(Lexer& lx) {
  std::vector<ir::Type> out;
  bool paren = lx.try_consume("(");
  if (paren && lx.try_consume(")")) return out;
  do out.push_back(parse_type(lx));
  while (lx.try_consume(","));
  if (paren) lx.expect(")");
  return out;
}

void parse_function_type(Lexer& lx, std::vector<ir::Type>& inputs, std::vector<ir::Type>& outputs) {
  lx.expect("(");
  inputs.clear();
  if (!lx.try_consume(")")) {
    do inputs.push_back(parse_type(lx));
    while (lx.try_consume(","));
    lx.expect(")");
  }
  lx.expect("->");
  outputs = parse_type_list(lx);
}

}  // namespace tessera::stablehlo
