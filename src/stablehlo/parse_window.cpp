// stablehlo.convolution's text: its dimension numbers (`[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`,
// also inside `#stablehlo.conv<...>`, whose `raw` field form is read too) and its pretty form
// `stablehlo.convolution(%a, %b) dim_numbers = ..., window = {stride = [..], pad = [[..]],
// lhs_dilate = [..], rhs_dilate = [..], reverse = [..]} {attrs} : (t, t) -> t`, read into the
// attributes the generic form carries (window_strides, padding, lhs_dilation, rhs_dilation,
// window_reversal, dimension_numbers).
#include "stablehlo/parser_impl.h"

namespace tessera::stablehlo {
namespace {

// One operand's layout in convolution dimension numbers: `[b, 0, 1, f]` with the two letters
// `first` and `second` and the spatial dimensions numbered 0..n-1, each once.
void conv_layout(Lexer& lx, char first, char second, int64_t& a, int64_t& b,
                 std::vector<int64_t>& spatial) {
  Location at = lx.location();
  lx.expect("[");
  std::vector<int64_t> positions;  // positions[k] = where spatial dimension k stands
  bool seen_a = false, seen_b = false;
  int64_t pos = 0;
  lx.list_until("]", [&] {
    lx.skip_space();
    Location el = lx.location();
    if (lx.is_number_next()) {
      int64_t k = lx.integer();
      if (k < 0 || k > 64) lx.error_at(el, fmt::format("spatial dimension number {} is out of range", k));
      if (positions.size() <= static_cast<size_t>(k)) positions.resize(static_cast<size_t>(k) + 1, -1);
      if (positions[static_cast<size_t>(k)] >= 0)
        lx.error_at(el, fmt::format("spatial dimension {} appears twice", k));
      positions[static_cast<size_t>(k)] = pos;
    } else {
      std::string id = lx.identifier();
      bool is_a = id == std::string(1, first), is_b = id == std::string(1, second);
      if (!is_a && !is_b)
        lx.error_at(el, fmt::format("expected '{}', '{}' or a spatial dimension number, got '{}'", first, second, id));
      bool& seen = is_a ? seen_a : seen_b;
      if (seen) lx.error_at(el, fmt::format("'{}' appears twice", id));
      seen = true;
      (is_a ? a : b) = pos;
    }
    ++pos;
  });
  if (!seen_a || !seen_b) lx.error_at(at, fmt::format("a layout needs '{}' and '{}'", first, second));
  for (size_t k = 0; k < positions.size(); ++k)
    if (positions[k] < 0) lx.error_at(at, fmt::format("spatial dimension {} is missing", k));
  spatial = positions;
}

// `raw input_batch_dimension = 0, input_spatial_dimensions = [1, 2], ...>` (the text after `<raw`).
ir::ConvDims parse_raw_conv_dims(Lexer& lx) {
  ir::ConvDims d;
  if (lx.try_consume(">")) return d;
  do {
    Location at = lx.location();
    std::string k = lx.identifier();
    lx.expect("=");
    if (k == "input_batch_dimension") d.input_batch = lx.integer();
    else if (k == "input_feature_dimension") d.input_feature = lx.integer();
    else if (k == "input_spatial_dimensions") d.input_spatial = parse_int_list(lx);
    else if (k == "kernel_input_feature_dimension") d.kernel_input_feature = lx.integer();
    else if (k == "kernel_output_feature_dimension") d.kernel_output_feature = lx.integer();
    else if (k == "kernel_spatial_dimensions") d.kernel_spatial = parse_int_list(lx);
    else if (k == "output_batch_dimension") d.output_batch = lx.integer();
    else if (k == "output_feature_dimension") d.output_feature = lx.integer();
    else if (k == "output_spatial_dimensions") d.output_spatial = parse_int_list(lx);
    else lx.error_at(at, fmt::format("unknown convolution dimension field '{}'", k));
  } while (lx.try_consume(","));
  lx.expect(">");
  return d;
}

}  // namespace

ir::ConvDims parse_conv_dims(Lexer& lx) {
  ir::ConvDims d;
  conv_layout(lx, 'b', 'f', d.input_batch, d.input_feature, d.input_spatial);
  lx.expect("x");
  conv_layout(lx, 'i', 'o', d.kernel_input_feature, d.kernel_output_feature, d.kernel_spatial);
  lx.expect("->");
  conv_layout(lx, 'b', 'f', d.output_batch, d.output_feature, d.output_spatial);
  return d;
}


ir::ConvDims parse_conv_attr(Lexer& lx) {
  lx.expect("<");
  if (lx.try_consume("raw")) return parse_raw_conv_dims(lx);
  ir::ConvDims d = parse_conv_dims(lx);
  lx.expect(">");
  return d;
}

void parse_convolution(Parser& p, OpText& op) {
  p.lx.expect("(");
  op.operands = p.use_values();
  p.lx.expect(")");
  p.lx.expect("dim_numbers");
  p.lx.expect("=");
  op.attrs.set("dimension_numbers", parse_conv_dims(p.lx));
  p.lx.expect(",");
  p.lx.expect("window");
  p.lx.expect("=");
  p.lx.expect("{");
  p.lx.list_until("}", [&] {
    p.lx.skip_space();
    Location at = p.lx.location();
    std::string key = p.lx.identifier();
    p.lx.expect("=");
    if (key == "stride") {
      op.attrs.set("window_strides", parse_int_list(p.lx));
    } else if (key == "lhs_dilate") {
      op.attrs.set("lhs_dilation", parse_int_list(p.lx));
    } else if (key == "rhs_dilate") {
      op.attrs.set("rhs_dilation", parse_int_list(p.lx));
    } else if (key == "pad") {
      std::vector<int64_t> values;
      int64_t rows = 0;
      p.lx.expect("[");
      if (!p.lx.try_consume("]")) {
        do {
          Location row = p.lx.location();
          std::vector<int64_t> pair = parse_int_list(p.lx);
          if (pair.size() != 2) p.lx.error_at(row, "each padding entry is [low, high]");
          values.insert(values.end(), pair.begin(), pair.end());
          ++rows;
        } while (p.lx.try_consume(","));
        p.lx.expect("]");
      }
      op.attrs.set("padding", ir::Literal::from_ints(ir::Type(ir::ElementType::i64, {rows, 2}), values));
    } else if (key == "reverse") {
      std::string text;
      p.lx.expect("[");
      if (!p.lx.try_consume("]")) {
        do {
          p.lx.skip_space();
          Location el = p.lx.location();
          bool v = false;
          if (p.lx.try_consume("true") || p.lx.try_consume("1")) v = true;
          else if (!(p.lx.try_consume("false") || p.lx.try_consume("0")))
            p.lx.error_at(el, "expected true or false");
          text += std::string(text.empty() ? "" : ", ") + (v ? "true" : "false");
        } while (p.lx.try_consume(","));
        p.lx.expect("]");
      }
      op.attrs.set("window_reversal", ir::Opaque{text.empty() ? "array<i1>" : "array<i1: " + text + ">"});
    } else {
      p.lx.error_at(at, fmt::format("unknown convolution window field '{}'", key));
    }
  });
  p.parse_optional_attrs(op);
  p.parse_trailing_types(op);
}

}  // namespace tessera::stablehlo
