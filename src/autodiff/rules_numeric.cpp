// Gradient (VJP), forward-mode (JVP) and vmap rules of issue #17's numeric ops (package B):
// stablehlo.fft.
//
// fft always has a complex operand or result, and complex values are not differentiated here
// (is_differentiable is float-only: their cotangents would need conjugation). JAX's transpose rules
// (FFT ↔ IFFT scaled by the transform size, RFFT ↔ IRFFT with the doubled middle entries) need
// complex cotangents, so both modes refuse by name until they exist. vmap puts the batch in front:
// the transform acts on trailing dimensions only.
#include "autodiff/jvp_rules.h"
#include "autodiff/rules.h"
#include "autodiff/vmap_rules.h"

namespace tessera::autodiff {

namespace {
constexpr const char* kFftRefusal =
    "its operand or result is complex, and complex values are not differentiated (their cotangents "
    "need conjugation)";
}  // namespace

void vjp_Fft(VjpContext& c) { refuse(c.op, kFftRefusal); }
void jvp_Fft(JvpContext& c) { refuse(c.op, kFftRefusal); }
void vmap_Fft(VmapContext& c) { c.set(0, c.again({c.bx(0)})[0]); }

}  // namespace tessera::autodiff
