// The StableHLO + Shardy text printer: ir::Module in, text out, as stablehlo-opt and JAX write it.
//
// Ops print in StableHLO's pretty forms where it has one (`stablehlo.add %0, %1 : tensor<4xf32>`)
// and otherwise in MLIR's generic form with properties (`"stablehlo.all_reduce"(%0) <{...}> ({
// ... }) : (...) -> ...`); values are named the way MLIR's printer names them (%arg0, %0, %0#1,
// %cst and %c for constants, %iterArg for while-loop arguments); literals print as MLIR's dense
// attributes, floats digit for digit as MLIR writes them. The parser reads all of it back, so
// print(parse(print(m))) == print(m).
#pragma once

#include <string>

#include "ir/module.h"

namespace tessera::stablehlo {

// The whole module, ending in a newline.
std::string print(const ir::Module& module);

// `#sdy.sharding<@m, [{"data"}, {}]>`
std::string print(const ir::Sharding& sharding);
// `sdy.mesh @m = <["data"=4, "model"=2]>`
std::string print(const ir::Mesh& mesh);
// `tensor<8x4xf32>`
std::string print(const ir::Type& type);
// `dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>`
std::string print(const ir::Literal& literal);
// An attribute value as it stands in a generic op's attribute dictionary, e.g.
// `#stablehlo.channel_handle<handle = 1, type = 1>` or `array<i64: 0, 1>`. `name` decides the
// few cases where the value alone does not (`mhlo.num_partitions` is an i32).
std::string print_attribute(const ir::Attribute& attribute, const std::string& name = "");
// One float element of type `type` from its bit pattern, as MLIR prints it: `1.000000e+00`,
// `3.14159274`, `0x7FC00000`.
std::string print_float(ir::ElementType type, uint64_t bits);

}  // namespace tessera::stablehlo
