// Helpers for printer tests: build a one-function module and read back the lines of its body.
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "ir/builder.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo::testing {

// The body of the first function in `text` (the lines between `func.func` and its closing brace),
// with the function's four spaces of indentation removed.
inline std::string function_body(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside) {
      inside = line.rfind("  func.func", 0) == 0;
      continue;
    }
    if (line == "  }") break;
    out += (line.rfind("    ", 0) == 0 ? line.substr(4) : line) + "\n";
  }
  return out;
}

// Builds @f with `body` in a module (with mesh @m = <["x"=2, "y"=2]> for Shardy ops) and returns
// its printed body.
template <typename Body>
std::string print_body(Body&& body) {
  ir::Module m("t");
  m.add_mesh({"m", {{"x", 2}, {"y", 2}}, {}});
  ir::build_function(m, "f", std::forward<Body>(body));
  return function_body(print(m));
}

}  // namespace tessera::stablehlo::testing
