// Loops with several results (part of fusion.cpp's plan, for exec::Executable's blocks): a value
// that an element-wise loop stores only because the block returns it (AdamW's new moments m and v,
// which the parameter's update reads again) is computed inside the loop of the root that reads it
// anyway, and stored from there as an extra result of that root's step. Its own loop, and the
// passes that wrote it and read it back, are gone: AdamW's update of p, m and v becomes one pass
// over p, m, v and the gradient instead of three. The value is a *rider* of that root: inlined (no
// step of its own), defined at the root's step, stored after each block's instructions have run
// (so a buffer the loop reads in place may take it). The interpreter runs one result per op and
// never asks for riders.
#pragma once

#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/module.h"

namespace tessera::exec {

// At most this many riders per root (their registers and destinations live on the stack).
inline constexpr size_t kMaxRiders = 4;

struct Riders {
  std::unordered_map<const ir::Op*, std::vector<const ir::Op*>> of_root;  // in block order
  std::unordered_map<const ir::Op*, const ir::Op*> root_of;
};

// Chooses riders in `block`: an op that runs its own element-wise loop (`loop_root`) becomes a rider
// of root R when the readers of its result that read it in place inside loops all belong to R's
// loop alone (through ops inlined into R), R runs an element-wise loop over the same shape and has
// no rider's role itself, every other reader (the return, ops after R) comes after R, and no region
// reads it. Riders are added to `inlined` and to `riders` as they are chosen (`loop_root` may ask
// both: a rider is a stored value for every loop but its root's).
void choose_riders(const ir::Block& block, const std::unordered_map<const ir::Value*, std::vector<const ir::Op*>>& readers,
                   const std::unordered_set<const ir::Value*>& region_reads,
                   const std::function<bool(const ir::Op&)>& loop_root, std::unordered_set<const ir::Op*>& inlined,
                   Riders& riders);

// Whether the loop of `root` reads `v` other than element i at element i: through a view, or at
// another shape. Such a v's buffer must not take one of the loop's results.
bool strided_read(const ir::Op& root, const ir::Value* v, const std::unordered_set<const ir::Op*>& inlined);

}  // namespace tessera::exec
