// The pretty forms of issue #17's numeric ops (package B), as stablehlo-opt prints them:
// `stablehlo.fft %x, type = FFT, length = [4] : (t) -> t`,
// `stablehlo.rng %a, %b, %shape, distribution = UNIFORM : (ta, tb, ts) -> t`,
// `stablehlo.rng_bit_generator %state, algorithm = THREE_FRY : (ts) -> (ts, t)`. Each falls back to the generic form when
// an attribute its form spells is missing or malformed.
#include "ir/fft.h"
#include "ir/rng.h"
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

void rng(Printer& p, const Op& op) {
  auto d = ir::rng_distribution_of(op.attrs());
  if (!d) return generic(p, op);
  p << op.name() << " ";
  p.value(op.operand(0));
  p << ", ";
  p.value(op.operand(1));
  p << ", ";
  p.value(op.operand(2));
  p << ", distribution = " << ir::to_string(*d) << except(op, {"rng_distribution"}) << " : ";
  p.functional_type(op);
}

void rng_bit_generator(Printer& p, const Op& op) {
  auto a = ir::rng_algorithm_of(op.attrs());
  if (!a) return generic(p, op);
  p << op.name() << " ";
  p.value(op.operand(0));
  p << ", algorithm = " << ir::to_string(*a) << except(op, {"rng_algorithm"}) << " : ";
  p.functional_type(op);
}

}  // namespace tessera::stablehlo::print_impl
