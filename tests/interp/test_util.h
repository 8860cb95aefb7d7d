// Shared by the interpreter tests: the tolerances (stated once, here), building and evaluating a
// one-function program, literals from values or random draws, and element-by-element comparison.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "interp/interpreter.h"
#include "ir/builder.h"

namespace tessera::interp::testing {

using ir::ElementType;
using ir::Literal;
using ir::Tensor;
using ir::Type;

// |got - want| <= abs + rel * |want| for floats (each part of a complex number); integers and bools
// compare exactly. Our transcendental kernels compute in double and round once; the NumPy oracles
// do the same (in float64, then cast), so f32/f64 differ at most by library ulps and f16/bf16 by one
// extra rounding through f32.
struct Tolerance {
  double rel, abs;
};
inline Tolerance tolerance_for(ElementType e) {
  switch (e) {
    case ElementType::f64:
    case ElementType::c128: return {1e-12, 1e-14};
    case ElementType::f32:
    case ElementType::c64: return {2e-6, 1e-6};
    case ElementType::f16: return {2e-3, 1e-3};
    case ElementType::bf16: return {1e-2, 1e-2};
    default: return {0, 0};
  }
}
// The worked example's loss against NumPy (float64) — DESIGN.md's bar for "same numbers".
inline constexpr double kLossRelTolerance = 1e-6;

using Body = std::function<std::vector<Tensor>(ir::FunctionBuilder&, const std::vector<Tensor>&)>;

// Builds @f(args' types...) from body into `module`, verifies it, and evaluates it on args.
std::vector<Literal> run_in(ir::Module& module, std::vector<Literal> args, const Body& body,
                            Options options = {});
std::vector<Literal> run(std::vector<Literal> args, const Body& body, Options options = {});
// As run, for a body with one result.
Literal run1(std::vector<Literal> args, const std::function<Tensor(const std::vector<Tensor>&)>& body,
             Options options = {});

// One op of `kind` on args (its result type from the shape rule), evaluated.
Literal apply(ir::OpKind kind, std::vector<Literal> args, ir::AttrMap attrs = {});

Literal lit(Type type, std::vector<double> values);
Literal ints(Type type, std::vector<int64_t> values);
Literal scalar_of(ElementType e, double v);

// Value ranges for random literals (bools are random in every domain).
enum class Domain {
  Any,       // floats in [-4, 4]; signed ints in [-50, 50]; unsigned in [0, 100]
  Positive,  // floats in [0.1, 5]; ints in [1, 50]
  Small,     // floats in [-0.9, 0.9]; ints in [0, 6] (exponents)
  Halves,    // multiples of 0.5 in [-6, 6] (rounding ties)
  Shift,     // ints in [0, 15]
  Special,   // floats: random values mixed with 0, -0, inf, -inf and NaN
};
Literal random_literal(Type type, uint64_t seed, Domain domain = Domain::Any);

// Element-by-element comparison with the type's tolerance; types must match. Reports the first
// mismatches with their indices.
::testing::AssertionResult close(const Literal& got, const Literal& want);
// Bitwise equality (NaN payloads and the sign of zero included).
::testing::AssertionResult same(const Literal& got, const Literal& want);

std::string describe(const Literal& x);

// The message of the UserError that f throws, or "<no error>" (tessera::testing::error_of).
std::string message_of(const std::function<void()>& f);  // "tensor<3xf32> [1, 2, 3]"

}  // namespace tessera::interp::testing
