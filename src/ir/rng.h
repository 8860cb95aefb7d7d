// stablehlo.rng_bit_generator and stablehlo.rng: their enum attributes, kept as the text
// `#stablehlo<rng_algorithm DEFAULT|THREE_FRY|PHILOX>` and `#stablehlo<rng_distribution
// UNIFORM|NORMAL>` (Opaque attributes, as fft_type is), and their builders. Shared by the shape
// rules (rng.cpp), the kernels (interp/kernels_rng.cpp), the printer and the parser.
#pragma once

#include <optional>
#include <string_view>

#include "ir/builder.h"

namespace tessera::ir {

enum class RngAlgorithm { kDefault, kThreeFry, kPhilox };
enum class RngDistribution { kUniform, kNormal };

// nullopt when the attribute is absent or names no algorithm (distribution).
std::optional<RngAlgorithm> rng_algorithm_of(const AttrMap& attrs);
std::optional<RngAlgorithm> parse_rng_algorithm(std::string_view name);  // "THREE_FRY", ...
std::string_view to_string(RngAlgorithm a);
Opaque rng_algorithm_attr(RngAlgorithm a);
std::optional<RngDistribution> rng_distribution_of(const AttrMap& attrs);
std::optional<RngDistribution> parse_rng_distribution(std::string_view name);  // "UNIFORM", "NORMAL"
std::string_view to_string(RngDistribution d);
Opaque rng_distribution_attr(RngDistribution d);

// output_state, output (of type `output`) from a 1-D ui64 state.
std::vector<Tensor> rng_bit_generator(const Tensor& state, RngAlgorithm algorithm, Type output);
// A draw of `result`'s type (its shape given again as the i64 tensor `shape`).
Tensor rng(const Tensor& a, const Tensor& b, const Tensor& shape, RngDistribution distribution, Type result);

}  // namespace tessera::ir
