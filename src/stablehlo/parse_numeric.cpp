// The pretty forms of issue #17's numeric ops (package B), read back:
// `stablehlo.fft %x, type = FFT, length = [4] : (t) -> t`,
// `stablehlo.rng %a, %b, %shape, distribution = UNIFORM : (ta, tb, ts) -> t`,
// `stablehlo.rng_bit_generator %state, algorithm = THREE_FRY : (ts) -> (ts, t)`.
#include "ir/fft.h"
#include "ir/rng.h"
#include "stablehlo/parser_impl.h"

namespace tessera::stablehlo {

void parse_fft(Parser& p, OpText& op) {
  op.operands = {p.use_value()};
  p.lx.expect(",");
  p.lx.expect("type");
  p.lx.expect("=");
  p.lx.skip_space();
  Location at = p.lx.location();
  std::string name = p.lx.identifier();
  auto type = ir::parse_fft_type(name);
  if (!type) p.lx.error_at(at, fmt::format("unknown fft type '{}' (FFT, IFFT, RFFT or IRFFT)", name));
  op.attrs.set("fft_type", ir::fft_type_attr(*type));
  p.lx.expect(",");
  p.lx.expect("length");
  p.lx.expect("=");
  op.attrs.set("fft_length", parse_int_list(p.lx));
  p.parse_optional_attrs(op);
  p.parse_trailing_types(op);
}

// `name = VALUE`, VALUE one of an enum's names
template <typename Parse>
auto parse_enum(Parser& p, const char* name, const char* what, const char* names, Parse parse) {
  p.lx.expect(name);
  p.lx.expect("=");
  p.lx.skip_space();
  Location at = p.lx.location();
  std::string text = p.lx.identifier();
  auto value = parse(text);
  if (!value) p.lx.error_at(at, fmt::format("unknown {} '{}' ({})", what, text, names));
  return *value;
}

void parse_rng(Parser& p, OpText& op) {
  op.operands = {p.use_value()};
  for (int i = 0; i < 2; ++i) {
    p.lx.expect(",");
    op.operands.push_back(p.use_value());
  }
  p.lx.expect(",");
  auto d = parse_enum(p, "distribution", "rng distribution", "UNIFORM or NORMAL", ir::parse_rng_distribution);
  op.attrs.set("rng_distribution", ir::rng_distribution_attr(d));
  p.parse_optional_attrs(op);
  p.parse_trailing_types(op);
}

void parse_rng_bit_generator(Parser& p, OpText& op) {
  op.operands = {p.use_value()};
  p.lx.expect(",");
  auto a = parse_enum(p, "algorithm", "rng algorithm", "DEFAULT, THREE_FRY or PHILOX", ir::parse_rng_algorithm);
  op.attrs.set("rng_algorithm", ir::rng_algorithm_attr(a));
  p.parse_optional_attrs(op);
  p.parse_trailing_types(op);
}

}  // namespace tessera::stablehlo
