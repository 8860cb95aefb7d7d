// Combining gradient all-reduces: many small all_reduces (one per gradient in a data-parallel step)
// cost a latency each; one all_reduce of their concatenation costs it once. The pass merges
// all_reduces of the local program that reduce over the same groups with the same combiner and
// element type, whenever no result is read before the last of them runs: their operands are
// flattened and concatenated, reduced once, and sliced back. Results are bit for bit the same
// (each element is still folded over the same devices in the same order).
#pragma once

#include "ir/module.h"
#include "spmd/report.h"

namespace tessera::spmd {

// Merges the combinable all_reduces of `fn`'s body; updates `report` (one record per merged
// all_reduce, its origin listing what it serves). Returns the number of all_reduces removed.
int combine_all_reduces(ir::Module& module, ir::Function& fn, Report& report);

}  // namespace tessera::spmd
