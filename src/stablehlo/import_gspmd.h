// The import of GSPMD shardings (JAX exports made before Shardy): `mhlo.sharding` strings on
// function arguments and results, and `stablehlo.custom_call @Sharding` (with_sharding_constraint),
// become one module mesh and Shardy shardings, as Shardy's own sdy-import-mhlo-shardings does. The
// parser runs it on every module it reads (docs/DESIGN.md, "GSPMD import"), so `tessera run`,
// `tessera partition`, `tessera check` and Session see sdy shardings only.
#pragma once

#include <string>
#include <string_view>

#include "ir/module.h"

namespace tessera::stablehlo {

// Replaces each argument's and result's `mhlo.sharding` by an `sdy.sharding` on a mesh it adds
// (axes "_axis_0", ...; device ids where the devices are not in iota order), and each
// custom_call @Sharding by an sdy.sharding_constraint. A module that already has an sdy.mesh is
// Shardy's: its `mhlo.sharding` strings are dropped and @Sharding calls stay (they run as the
// identity). Errors are ParseErrors at the function or op in `file`, quoting the sharding text.
// shard_map's fences are read too: the ops between SPMDFullToShardShape and SPMDShardToFullShape
// become an sdy.manual_computation over every mesh axis (outline_shard_maps, which the import runs
// once the mesh and the layouts are known).
void import_gspmd_shardings(ir::Module& module, const std::string& file);

// Shardy's round-trip form (sdy attributes as strings in mhlo.frontend_attributes, shard_map as
// xla.sdy.GlobalToLocalShape / a call of the body / xla.sdy.LocalToGlobalShape, result shardings as
// xla.sdy.FuncResultSharding), read back into sdy meshes, shardings, constraints and manual
// computations; the parser runs it before the GSPMD import (import_sdy_round_trip.cpp).
void import_sdy_round_trip(ir::Module& module, const std::string& file);

inline constexpr std::string_view kFullToShardTarget = "SPMDFullToShardShape";
inline constexpr std::string_view kShardToFullTarget = "SPMDShardToFullShape";
void outline_shard_maps(ir::Module& module, const std::string& file);

}  // namespace tessera::stablehlo
