// Gradient (VJP), forward-mode (JVP) and vmap rules of issue #17's numeric ops (package B):
// stablehlo.fft, stablehlo.rng_bit_generator and stablehlo.rng.
//
// fft always has a complex operand or result, and complex values are not differentiated here
// (is_differentiable is float-only: their cotangents would need conjugation). JAX's transpose rules
// (FFT ↔ IFFT scaled by the transform size, RFFT ↔ IRFFT with the doubled middle entries) need
// complex cotangents, so both modes refuse by name until they exist. vmap puts the batch in front:
// the transform acts on trailing dimensions only.
#include "autodiff/constants.h"
#include "autodiff/jvp_rules.h"
#include "autodiff/rules.h"
#include "autodiff/vmap_rules.h"
#include "ir/rng.h"

namespace tessera::autodiff {

namespace {
constexpr const char* kFftRefusal =
    "its operand or result is complex, and complex values are not differentiated (their cotangents "
    "need conjugation)";
}  // namespace

void vjp_Fft(VjpContext& c) { refuse(c.op, kFftRefusal); }
void jvp_Fft(JvpContext& c) { refuse(c.op, kFftRefusal); }
void vmap_Fft(VmapContext& c) { c.set(0, c.again({c.bx(0)})[0]); }

// rng_bit_generator's only operand is its integer state: nothing flows in either mode (a float
// output holds random bits, a function of no float).
void vjp_RngBitGenerator(VjpContext&) {}
void jvp_RngBitGenerator(JvpContext&) {}

namespace {
constexpr const char* kRngRefusal =
    "its numbers are random draws; their dependence on the bounds a and b is not differentiated";

// Example b of operand i (batched at 0), or the shared operand.
Tensor example(VmapContext& c, size_t i, int64_t b) {
  if (!c.batched(i)) return c.x(i);
  const Tensor& x = c.x(i);
  std::vector<int64_t> start(x.shape().size(), 0), limit = x.shape();
  start[0] = b;
  limit[0] = b + 1;
  std::vector<int64_t> shape(x.shape().begin() + 1, x.shape().end());
  return ir::reshape(ir::slice(x, start, limit), shape);
}

// The per-example results stacked along a new dimension 0.
Tensor stacked(const std::vector<Tensor>& ys) {
  std::vector<Tensor> rows;
  for (const Tensor& y : ys) {
    std::vector<int64_t> shape = y.shape();
    shape.insert(shape.begin(), 1);
    rows.push_back(ir::reshape(y, shape));
  }
  return ir::concatenate(rows, 0);
}

// The op again on example b's operands, at the op's source position (rng keys its draws by it).
std::vector<Tensor> again_for(VmapContext& c, int64_t b) {
  std::vector<Tensor> xs;
  for (size_t i = 0; i < c.num_operands(); ++i) xs.push_back(example(c, i, b));
  std::vector<ir::Type> types;
  for (size_t k = 0; k < c.op.num_results(); ++k) types.push_back(c.result_type(k));
  std::vector<Tensor> ys = c.again(xs, std::nullopt, types);
  ys[0].value()->defining_op()->loc = c.op.loc;
  return ys;
}

// A loop over the examples: each example's state (bounds) gives its own numbers, as vmap of a
// function evaluated per example does.
void loop(VmapContext& c) {
  std::vector<std::vector<Tensor>> per(c.op.num_results());
  for (int64_t b = 0; b < c.batch(); ++b) {
    std::vector<Tensor> ys = again_for(c, b);
    for (size_t k = 0; k < ys.size(); ++k) per[k].push_back(ys[k]);
  }
  for (size_t k = 0; k < per.size(); ++k) c.set(k, stacked(per[k]));
}
}  // namespace

void vmap_RngBitGenerator(VmapContext& c) { loop(c); }

// d rng(a, b) is refused when a gradient could reach the bounds (they are computed from the
// parameters); bounds made of constants receive none.
void vjp_Rng(VjpContext& c) {
  if (!c.has_cotangent(0) || !is_differentiable(c.y(0).type())) return;
  if (!made_of_constants(c.x(0).value()) || !made_of_constants(c.x(1).value())) refuse(c.op, kRngRefusal);
}
void jvp_Rng(JvpContext& c) {
  if (c.has_tangent(0) || c.has_tangent(1)) refuse(c.op, kRngRefusal);
}
void vmap_Rng(VmapContext& c) {
  if (c.batched(2)) c.fail("its shape operand is batched; a result shape must be the same for every example");
  loop(c);
}

}  // namespace tessera::autodiff
