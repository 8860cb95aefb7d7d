// exp and logistic of f32 arrays with the bits of the reference kernels (interp/scalar_ops.h:
// float(exp(double(x))) and float(1 / (1 + exp(-double(x))))), several times faster: the loops
// vectorize, and the rare element where a faster exp could round otherwise is computed by the
// reference's expression (exp_internal.h says how that is decided and why it is enough).
#pragma once

#include <cstdint>

namespace tessera::exec {

// z = f(x) for n elements; z may be x. The loops of the best instruction set this CPU has.
void exp_f32(const float* x, float* z, int64_t n);
void logistic_f32(const float* x, float* z, int64_t n);

// The loops of each instruction set, for tests that compare them all with the reference (every
// one gives the reference's bits). Calling one the CPU lacks is an error: ask first.
enum class ExpIsa : uint8_t { kBaseline, kAvx2, kAvx512 };
bool exp_isa_available(ExpIsa isa);
void exp_f32(ExpIsa isa, const float* x, float* z, int64_t n);
void logistic_f32(ExpIsa isa, const float* x, float* z, int64_t n);

}  // namespace tessera::exec
