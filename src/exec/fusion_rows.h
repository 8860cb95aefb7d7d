// Row groups (for exec::Executable's function block): consecutive steps that each work on the same
// rows, run one tile of rows at a time, every step over the tile in turn, so a row stays in cache
// from the first step that reads it to the last. A softmax over the last dimension is such a run
// of steps: the row max (a reduce), the exp of x minus it (a fused loop), the row sum (a reduce),
// the division (a fused loop); its gradient, a log-softmax and a cross-entropy are others. Run step
// by step, each pass reads the whole tensor from memory again; run tile by tile, once.
//
// The group is found from the steps' shapes and reads alone (never from op names): over rows
// P = [d0, ..., dk] of `len` elements each, a member is
//   - an element-wise step (a fused loop's root, or an op the fused loop can compute) whose result
//     is P ++ [len] (kFull) or P (kRow),
//   - a reduce of the last dimension of a P ++ [len] value into P (kReduceRows), or of all of it
//     into a scalar (kReduceAll: folded in row-major order, tile after tile);
// and every value a member reads that another member of the group computes is read at the rows
// of the tile alone: in place at its own shape, or a P value broadcast along the last dimension.
// Steps in between that read nothing the group computes run before its tiles; steps that do (the
// loss's scalar, say) run after them. Each member computes every element with the instructions of
// its own fused loop (fusion_program.h) and each reduce folds every row in its order (fold.h), so
// the results have the bits of the steps run one after the other, and of the reference.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "exec/fusion.h"
#include "ir/literal.h"
#include "ir/module.h"

namespace tessera::exec {

enum class RowRole : uint8_t { kFull, kRow, kReduceRows, kReduceAll };

struct RowMember {
  uint32_t step = 0;  // in the block's steps
  const ir::Op* op = nullptr;
  RowRole role = RowRole::kFull;
};

struct RowGroup {
  uint32_t first = 0, last = 0;  // the steps it spans (the first and the last member)
  int64_t rows = 0, len = 0;     // rows P (their count) of len elements
  std::vector<RowMember> members;
  std::vector<uint32_t> before, after;  // the other steps it spans: run before the tiles, or after
  int32_t profile = -1;                 // the executable's profile key for the group's time
};

// A step as find_row_groups sees it: its op, and whether it may run out of its place (an op of
// the fused loops' kinds, a reduce or a constant: no effects, nothing returned).
struct RowStep {
  const ir::Op* op = nullptr;
  bool movable = false;
};

// At most this many members per group (their programs live on the stack).
inline constexpr size_t kMaxRowMembers = 32;

// The row groups of a block's steps, in order, none overlapping (none when the environment has
// TESSERA_ROW_GROUPS=0).
std::vector<RowGroup> find_row_groups(const MultiResultPlan& plan, std::span<const RowStep> steps);

// Runs the members of `g` over its rows, tile by tile (tiles spread over the free threads; a
// member that reduces everything folds in order after them). `dests`: each member's results in order (its riders after its own),
// where they go. `value` gives every other value the members read.
void run_row_group(const MultiResultPlan& plan, const RowGroup& g,
                   const std::function<const ir::Literal&(const ir::Value*)>& value, std::span<ir::Literal* const> dests);

}  // namespace tessera::exec
