// Dispatch over the rule table, and projection of shardings onto factors and back.
#include "spmd/factor_rule.h"

#include <numeric>

#include "ir/quantize.h"
#include "spmd/mesh_math.h"
#include "support/error.h"

namespace tessera::spmd {

int FactorRule::add(int64_t size, FactorKind kind) {
  sizes.push_back(size);
  kinds.push_back(kind);
  return static_cast<int>(sizes.size()) - 1;
}

FactorRule factor_rule(const ir::Op& op) {
  ir::refuse_unlowered_quantized(op, "partitioner (sharding propagation)");
  FactorRule r;
  switch (op.kind()) {
#define OP(e, spelling, arity, traits) \
  case ir::OpKind::e:                  \
    r = factor_rules::rule_##e(op);    \
    break;
#include "ir/ops.def"
#undef OP
  }
  // Every dimension present, so callers index without checks.
  r.operands.resize(op.operands().size());
  r.results.resize(op.num_results());
  for (size_t i = 0; i < op.operands().size(); ++i)
    r.operands[i].resize(static_cast<size_t>(op.operand(i)->type().rank()));
  for (size_t i = 0; i < op.num_results(); ++i)
    r.results[i].resize(static_cast<size_t>(op.result(i)->type().rank()));
  return r;
}

namespace {

// project_dim's regrouping (see factor_rule.h): each factor, major to minor, takes from the axes
// not yet placed, in order, the largest part of each that divides what is left of the factor (its
// major digits: gcd(left, size)); an axis sharing no divisor with it is passed over for the next
// factor. (After a cut, the rest of the axis shares no divisor with what is left: gcd(a/g, b/g) = 1.)
void regroup_dim(std::vector<ir::AxisRef> pool, const std::vector<int>& factors, const FactorRule& rule,
                 const ir::Mesh& mesh, FactorAxes& out) {
  for (int f : factors) {
    int64_t remaining = rule.sizes[static_cast<size_t>(f)];
    auto& fa = out[static_cast<size_t>(f)];
    for (size_t k = 0; k < pool.size() && remaining > 1;) {
      const int64_t size = ir::axis_ref_size(pool[k], mesh);
      const int64_t g = std::gcd(remaining, size);
      if (g == 1) {
        ++k;
      } else if (g == size) {
        fa.push_back(pool[k]);
        pool.erase(pool.begin() + static_cast<ptrdiff_t>(k));
      } else {
        auto [major, minor] = split_axis(pool[k], g, mesh);
        fa.push_back(major);
        pool[k++] = minor;
      }
      remaining /= g;
    }
    if (remaining > 1) return;  // partly split: minor factors get nothing
  }
}

}  // namespace

void project_dim(const std::vector<ir::AxisRef>& axes, const std::vector<int>& factors,
                 const FactorRule& rule, const ir::Mesh& mesh, FactorAxes& out, bool regroup) {
  bool single = factors.size() == 1;
  if (regroup && !single) return regroup_dim(axes, factors, rule, mesh, out);
  std::vector<ir::AxisRef> queue = axes;  // an axis split between two factors leaves its minor part
  size_t i = 0;
  for (int f : factors) {
    int64_t remaining = rule.sizes[static_cast<size_t>(f)];
    auto& fa = out[static_cast<size_t>(f)];
    while (remaining > 1 && i < queue.size()) {
      const ir::AxisRef ref = queue[i];
      int64_t size = ir::axis_ref_size(ref, mesh);
      if (remaining % size == 0) {
        fa.push_back(ref);
        ++i;
        remaining /= size;
      } else if (single) {  // uneven: the pieces are padded
        fa.push_back(ref);
        ++i;
        remaining = 1;
      } else if (size % remaining == 0) {
        auto [major, minor] = split_axis(ref, remaining, mesh);
        fa.push_back(major);
        queue[i] = minor;
        remaining = 1;
      } else {
        return;  // the axis does not fit this factor: the rest of the dimension cannot be read
      }
    }
    if (remaining > 1) return;  // partly split: minor factors get nothing
  }
}

std::vector<ir::AxisRef> compose_dim(const std::vector<int>& factors, const FactorRule& rule,
                                     const FactorAxes& axes, const ir::Mesh& mesh, bool* complete) {
  std::vector<ir::AxisRef> out;
  bool open = true, all = true;
  for (int f : factors) {
    const auto& fa = axes[static_cast<size_t>(f)];
    if (fa.empty()) {
      open = open && rule.sizes[static_cast<size_t>(f)] == 1;
      continue;
    }
    if (!open) {
      all = false;
      continue;
    }
    out.insert(out.end(), fa.begin(), fa.end());
    int64_t n = shard_count(mesh, fa), size = rule.sizes[static_cast<size_t>(f)];
    if (n != size) {
      if (size % n != 0 && factors.size() > 1) all = false;  // uneven inside a merged dimension
      open = false;
    }
  }
  if (complete) *complete = all;
  return merge_sub_axes(out, mesh);
}

}  // namespace tessera::spmd
