// Factor rules, Shardy's model of how an op's dimensions correspond.
//
// A rule names the op's factors (each with a size) and says, for every dimension of every operand
// and result, which factors it is made of, major to minor. A factor shared by operands and results
// is pass-through (sharding it splits the work); one that appears only in operands is a reduction
// (sharding it leaves partial results to be summed); a dimension with no factor must be whole on
// every device (the op reads or writes all of it: a sliced, padded or concatenated dimension). A
// reshape splits and merges dimensions, so one dimension may be several factors; that is where
// sub-axes come from. One rule per row of ops.def (rule_<Op>), so a missing rule does not link.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/module.h"

namespace tessera::spmd {

enum class FactorKind : uint8_t { kPassThrough, kReduction };

// The factors of each dimension of one tensor.
using TensorFactors = std::vector<std::vector<int>>;

struct FactorRule {
  std::vector<int64_t> sizes;
  std::vector<FactorKind> kinds;
  std::vector<TensorFactors> operands, results;

  // Appends a factor and returns its index.
  int add(int64_t size, FactorKind kind = FactorKind::kPassThrough);
  size_t num_factors() const { return sizes.size(); }
};

// Whether op k's factor rule is still pending (it refuses by name; factor_rules_pending.cpp).
bool factor_rule_pending(ir::OpKind k);

// The rule of `op`, with every dimension of its operands and results present (perhaps factorless).
FactorRule factor_rule(const ir::Op& op);

// Axes per factor. Projection reads a tensor's sharding as factor axes; composition writes factor
// axes back as a dimension's axes.
using FactorAxes = std::vector<std::vector<ir::AxisRef>>;

// Each factor's axes as dimension `axes` split over `factors` (major to minor). Axes that do not
// fit (they would split a factor unevenly where it is merged with others) end the projection.
// With `regroup` (a proposal for a reshape, not a reading of the layout as it is), an axis that
// overflows a factor of a merged dimension is cut at the factor's boundary by their common
// divisor ("x"=6 over a factor of 4: "x":(1)2 here), and an axis (or the rest of one) that shares
// no divisor with what is left of the factor waits for the next factor while later axes fill this
// one: [{"x", "y"}] (x=6, y=4096) over factors 4 and 6144 becomes 4: "x":(1)2, "y":(1)2 and 6144:
// "x":(2)3, "y":(2)2048, as Shardy regroups overflow axes. Every factor but the dimension's last
// then holds exactly its size or ends the projection, so the pieces stay contiguous; the layout
// this composes to orders the axes differently from `axes` (a reshard, one piece per device).
void project_dim(const std::vector<ir::AxisRef>& axes, const std::vector<int>& factors,
                 const FactorRule& rule, const ir::Mesh& mesh, FactorAxes& out, bool regroup = false);
// The axes of a dimension made of `factors`; a factor that is not fully split ends the list
// (minor factors cannot be split below a partly split major one). `complete` reports whether
// every factor with axes made it in.
std::vector<ir::AxisRef> compose_dim(const std::vector<int>& factors, const FactorRule& rule,
                                     const FactorAxes& axes, const ir::Mesh& mesh, bool* complete = nullptr);

namespace factor_rules {
#define OP(e, spelling, arity, traits) FactorRule rule_##e(const ir::Op& op);
#include "ir/ops.def"
#undef OP
}  // namespace factor_rules

}  // namespace tessera::spmd
