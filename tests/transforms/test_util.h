// Helpers for the simplify tests: build a one-function module, simplify it, and read back its
// printed body; evaluate programs before and after simplify on fixed inputs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/builder.h"

namespace tessera::transforms::testing {

using Body = std::function<std::vector<ir::Tensor>(ir::FunctionBuilder&)>;

// Builds @f from `body` in a module with mesh @m = <["x"=2, "y"=2]>, simplifies it, verifies the
// module and returns the printed body of @f (without the function's indentation).
std::string simplified(const Body& body);

// The printed body of @name in `m`.
std::string body_of(const ir::Module& m, const std::string& name);

// Fixed, varied inputs for f's parameters: floats in [-2, 2), integers in [-8, 8), from `seed`.
std::vector<ir::Literal> sample_inputs(const ir::Function& f, uint32_t seed);

// Evaluates @name on sample inputs, simplifies it, verifies `m`, evaluates again: the results must
// be bitwise equal. Returns the number of ops of @name's body before and after.
std::pair<size_t, size_t> expect_same_results(ir::Module& m, const std::string& name);

}  // namespace tessera::transforms::testing
