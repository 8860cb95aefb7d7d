// exp and logistic of f32 arrays with the bits of the reference kernels (interp/scalar_ops.h:
// float(exp(double(x))) and float(1 / (1 + exp(-double(x))))), several times faster: the loops
// vectorize, and the rare element where a faster exp could round otherwise is computed by the
// reference's expression (exp.cpp says how that is decided).
#pragma once

#include <cstdint>

namespace tessera::exec {

void exp_f32(const float* x, float* z, int64_t n);
void logistic_f32(const float* x, float* z, int64_t n);

}  // namespace tessera::exec
