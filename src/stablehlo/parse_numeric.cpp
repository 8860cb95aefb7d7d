// The pretty forms of issue #17's numeric ops (package B), read back:
// `stablehlo.fft %x, type = FFT, length = [4] : (t) -> t`.
#include "ir/fft.h"
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

}  // namespace tessera::stablehlo
