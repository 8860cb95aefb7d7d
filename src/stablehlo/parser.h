// The StableHLO + Shardy text parser: text in, ir::Module out.
//
// It reads what JAX (`jax.jit(f).lower(...).as_text()`), stablehlo-opt and our own printer write:
// `module` with attributes, `func.func` with argument and result attributes, pretty and generic op
// forms, regions with block arguments, multi-result values, dense literals, #stablehlo.* and
// #sdy.* attributes, and `sdy.mesh`. Every error is a ParseError naming file:line:col; a parsed
// module has been checked by each op's shape rule.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/module.h"
#include "stablehlo/lexer.h"

namespace tessera::stablehlo {

// Parses one module (or a bare list of top-level items, wrapped in an unnamed module).
// `first_line` numbers the text's first line, for pieces cut out of a larger file. Without
// `verify`, the module is not checked (for callers that transform it first and verify after).
std::unique_ptr<ir::Module> parse(std::string_view text, const std::string& file = "<input>",
                                  int first_line = 1, bool verify = true);

// A file cut into the pieces a test runner reads separately: at `// -----` lines (the MLIR
// split-input-file convention), or at `//--- name` lines (split-file). Without either, one piece.
struct Piece {
  std::string name;  // "part1.mlir" for split-file pieces; empty otherwise
  int first_line = 1;
  std::string_view text;
};
std::vector<Piece> split_pieces(std::string_view text);

}  // namespace tessera::stablehlo
