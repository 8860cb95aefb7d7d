// Pictures of a layout: which device holds which block of an array, as a text grid for a terminal
// and as SVG, in the manner of jax.debug.visualize_array_sharding.
//
// A 2-D array is drawn as a grid of its blocks: one row per distinct range of dimension 0 that some
// device holds, one column per distinct range of dimension 1; a cell names every device holding
// that block (several when an axis replicates it). A 1-D array is one row of blocks, a scalar one
// cell. The ranges come from the same piece boxes the runtime splits arrays by (layout.h), so the
// picture is what runs: uneven dimensions show their shorter last block, sub-axes and device
// orders of the mesh are taken into account. Arrays of rank 3 and more are refused with a
// UserError, as JAX does; unreduced axes (each block a partial sum) are said under the grid.
#pragma once

#include <string>

#include "ir/module.h"

namespace tessera::runtime {

// "[{"data"}, {}]", with replicated={...} and unreduced={...} when present.
std::string sharding_text(const ir::Sharding& sharding);

// "x: tensor<8x4xf32> [{"data"}, {}] on @m ["data"=4]": the title the pictures are given.
std::string layout_title(const std::string& name, const ir::Type& type, const ir::Sharding& sharding,
                         const ir::Mesh& mesh);

// The grid as text, headed by `title` (e.g. "%arg0: tensor<8x4xf32> [{"data"}, {}] on @m ...").
std::string sharding_grid(const std::string& title, const ir::Type& type, const ir::Sharding& sharding,
                          const ir::Mesh& mesh);

// The same picture as a standalone SVG document: block sizes proportional to their extents (with
// a minimum so that labels fit), each block filled by its devices' colour.
std::string sharding_svg(const std::string& title, const ir::Type& type, const ir::Sharding& sharding,
                         const ir::Mesh& mesh);

}  // namespace tessera::runtime
