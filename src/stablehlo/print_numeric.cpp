// The pretty forms of issue #17's numeric ops (package B), as stablehlo-opt prints them:
// `stablehlo.fft %x, type = FFT, length = [4] : (t) -> t`. Each falls back to the generic form when
// an attribute its form spells is missing or malformed.
#include "ir/fft.h"
#include "stablehlo/print_internal.h"

namespace tessera::stablehlo::print_impl {

using ir::Op;

void fft(Printer& p, const Op& op) {
  auto type = ir::fft_type_of(op.attrs());
  const auto* length = op.attrs().find<std::vector<int64_t>>("fft_length");
  if (!type || !length) return generic(p, op);
  p << op.name() << " ";
  p.value(op.operand(0));
  p << ", type = " << ir::to_string(*type) << ", length = " << int_list(*length)
    << except(op, {"fft_type", "fft_length"}) << " : ";
  p.functional_type(op);
}

}  // namespace tessera::stablehlo::print_impl
