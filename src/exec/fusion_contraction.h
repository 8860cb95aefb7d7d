// Transposes folded into dot_general's GEMM calls (part of fusion.cpp's plan): a transpose whose
// every reader is a dot_general is never materialized, each reader reads its operand through the
// permuted strides; a dot_general whose one reader is a transpose writes its result straight in
// the transpose's order. contraction.h turns the strides into leading dimensions and transpose
// flags (or a copy, when no GEMM reads the layout: a fold is made only when it copies no more
// elements than the unfolded contraction would). A result is folded only where its GEMM calls stay
// those of the unfolded contraction: a layout that needs the C^T form would change its bits (both
// libraries round differently with the operands swapped), unless contraction.h computes that
// product as C^T anyway (into a buffer, then copied); leading dimensions keep them.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "exec/contraction.h"
#include "ir/literal.h"
#include "ir/module.h"

namespace tessera::exec {

using OpSet = std::unordered_set<const ir::Op*>;

// A contraction computed through folded transposes: the dot_general, the arrays its GEMM calls read
// (a folded transpose's operand, or the dot_general's own operand) and the plan, made once.
struct FoldedContraction {
  const ir::Op* dot = nullptr;
  const ir::Value *lhs = nullptr, *rhs = nullptr;
  const ir::Type* result = nullptr;  // the folded op's result (a transpose's, or the dot_general's)
  ContractionPlan plan;
};
using FoldedContractions = std::unordered_map<const ir::Op*, FoldedContraction>;

// Adds to `inlined` the transposes folded into their dot_general readers and the dot_generals
// folded into their transpose reader, and to `folded` the ops that then compute a contraction
// (the readers), with their plans. Only f32 and f64 contractions whose arrays BLAS can index,
// transposes of at least `min_elements` elements, and values not read inside regions (`region_reads`:
// those stay materialized).
void fold_transposes(const ir::Block& block, const std::unordered_map<const ir::Value*, std::vector<const ir::Op*>>& readers,
                     const std::unordered_set<const ir::Value*>& region_reads, int64_t min_elements, OpSet& inlined,
                     FoldedContractions& folded);

// Computes a folded op's contraction into `results`, which comes empty (a fresh result is made)
// or holding the destination. Allocates nothing past the fresh result.
void run_folded(const FoldedContraction& f, const std::function<const ir::Literal&(const ir::Value*)>& value,
                std::vector<ir::Literal>& results);

}  // namespace tessera::exec
