// GSPMD's sharding text (XLA's HloSharding::ToString), as JAX exports made before Shardy carry it in
// `mhlo.sharding` attributes: `{replicated}`, `{maximal device=N}`, `{manual}`, `{unknown}`, and tiled forms
// `{devices=[a,b,...]<devices> [last_tile_dim_replicate | last_tile_dims={...}]}` whose device
// list is explicit (`0,2,1,3`) or an iota (`<=[N]`, `<=[a,b]T(1,0)`: iota(N) reshaped to [a,b],
// transposed by the permutation, then flattened). import_gspmd.cpp turns these into a mesh and
// Shardy shardings; this file only reads the text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::stablehlo {

struct HloSharding {
  enum class Kind { kReplicated, kTiled, kMaximal, kManual, kUnknown };  // kUnknown: `{unknown}`, not yet decided
  Kind kind = Kind::kReplicated;
  // Tiled: the tile counts per tensor dimension, then (when `last_replicated`) the size of the
  // replication group as one more entry; `manual_subgroup` when a last tile dim is manual.
  std::vector<int64_t> tiles;
  bool last_replicated = false;
  bool manual_subgroup = false;
  // The device of each tile, row-major over `tiles`, as an iota when `devices` is empty:
  // iota(product) reshaped to `iota_dims` and transposed by `iota_perm`.
  std::vector<int64_t> devices;
  std::vector<int64_t> iota_dims;
  std::vector<int64_t> iota_perm;
  int64_t maximal_device = 0;

  int64_t num_devices() const;  // the product of `tiles` (1 when not tiled)
  // The device list, row-major over the tiles (the iota expanded).
  std::vector<int64_t> device_list() const;
};

// Reads `text`. A malformed text is a UserError that quotes it and says what was expected where
// (the 1-based character). Tuple shardings (`{{...}, {...}}`) are refused by name.
HloSharding parse_hlo_sharding(std::string_view text);

// `mhlo.sharding "text"` for messages, a text over 80 characters cut there with "...".
std::string quote_hlo_sharding(std::string_view text);

}  // namespace tessera::stablehlo
