// Shared by the autodiff tests: the tolerances of the gradient checks (stated once, here),
// deterministic pseudo-random f64 inputs, evaluation helpers, and the lists that together must
// account for every row of ops.def (checked in vjp_fd_test.cpp): ops checked against finite
// differences there, collectives checked by their adjoint identity, ops without a gradient and ops
// whose gradient is refused.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "autodiff/reverse.h"
#include <cmath>

#include "interp/interpreter.h"
#include "ir/builder.h"

namespace tessera::autodiff::testing {

using ir::Literal;
using ir::OpKind;
using ir::Tensor;
using ir::Type;

// A gradient entry g passes against its finite-difference estimate e when
// |g - e| <= kAbsTolerance + kRelTolerance * |e|. Central differences in f64 with h = 1e-6 are
// accurate to about 1e-9 on these small, smooth problems.
inline constexpr double kRelTolerance = 1e-6;
inline constexpr double kAbsTolerance = 1e-6;
// That rule, written so that a NaN on either side never passes.
inline bool within_fd_tolerance(double g, double e) {
  return std::abs(g - e) <= kAbsTolerance + kRelTolerance * std::abs(e);
}
// Forward and reverse mode agree when |<J v, u> - <v, J^T u>| <= kIdentityTolerance * (1 + |<J v, u>|):
// the same math evaluated in a different order, in f64.
inline constexpr double kIdentityTolerance = 1e-10;

// Uniform values in [lo, hi] from a fixed seed; with lo < 0 < hi, none closer to 0 than 0.2 (away
// from the kinks of abs, sign and division). `dyadic`: multiples of 2^-10 (exact in f32).
Literal random_f64(const std::vector<int64_t>& shape, uint64_t seed, double lo = -2, double hi = 2,
                   bool dyadic = false);
Literal ints(Type type, std::vector<int64_t> values);

// The UserError message that f throws, or "<no error>" (tessera::testing::error_of).
std::string message_of(const std::function<void()>& f);

// <a, b> over every entry.
double dot(const Literal& a, const Literal& b);

// A loop of three iterations carrying (i32 counter, tanh of x).
std::vector<Tensor> tanh_loop(const Tensor& x);

// Ops that appear in the function (regions included).
bool contains_op(const ir::Function& f, OpKind kind);

// The accounting of ops.def (each defined beside the test that checks it).
std::vector<OpKind> adjoint_checked_ops();  // collective_adjoint_test.cpp
std::vector<OpKind> refused_ops();          // refusal_test.cpp

}  // namespace tessera::autodiff::testing
