// The message of the UserError that reading a StableHLO text throws (stablehlo::parse verifies the
// module too), for tests of shape rules' and verifiers' messages.
#pragma once

#include <string>

#include "common/error_of.h"
#include "stablehlo/parser.h"

namespace tessera::testing {

// e.what() of the error parsing `text` (named t.mlir in messages) throws, or "<no error>".
inline std::string parse_error(const std::string& text) {
  return error_of([&] { stablehlo::parse(text, "t.mlir"); });
}

}  // namespace tessera::testing
