// Element-wise ops linear in a partial-sum operand keep the partial sum instead of summing it
// first (#18). Pieces P_i partial over axes U (their sum over U is the value P):
//   add(P, Q)  = partial(P_i + Q_i)            both partial over U: nothing moves;
//   add(P, R)  = partial(P_i + R·[first on U]) R not partial: it is masked, kept on the first
//                device along U and zero elsewhere (reshard's way of making a whole value
//                partial), so the pieces still sum to P + R; subtract alike, either side;
//   negate(P)  = partial(-P_i).
// Not multiply, though P_i · R sums to P · R in exact arithmetic: a piece that is 0 (the other
// devices' share of a masked or staged value) times an infinite R is NaN, where P · R is an
// infinity. Ops not linear in the operand (tanh, maximum, multiply) sum it first: the generic
// path. This way is a candidate the cost model weighs against the generic path's best, taken
// only where it moves fewer bytes: a partial result that must end whole is summed once, after
// the op, which is never dearer than summing the partial operands before it.
#include "spmd/partitioner.h"

#include <algorithm>

#include "spmd/mesh_math.h"

namespace tessera::spmd::partition_detail {

namespace {

bool linear_kind(OpKind k) {
  return k == OpKind::Add || k == OpKind::Subtract || k == OpKind::Negate;
}

// v's layout's partial axes when its pieces are partial sums (not max or min).
std::vector<AxisRef> summed_axes(const Sharding& s, size_t rank) {
  Sharding n = normalized(s, rank);
  return n.unreduced_kind == ir::ReductionKind::kSum ? n.unreduced : std::vector<AxisRef>{};
}

}  // namespace

int64_t Partitioner::bring_bytes(const Value* v, const Sharding& want) {
  auto rank = static_cast<size_t>(v->type().rank());
  Sharding key = normalized(want, rank);
  if (key == normalized(sm_.at(v), rank)) return 0;
  auto made = made_.find(v);
  if (made != made_.end() && std::any_of(made->second.begin(), made->second.end(), [&](const auto& m) { return m.first == key; }))
    return 0;
  return memo_reshard_bytes(v, sm_.at(v), want);
}

bool Partitioner::partial_linear(const Op& op, Builder& b, int64_t standard) {
  if (!linear_kind(op.kind()) || op.num_results() != 1 || !op.regions().empty()) return false;
  const Value* r = op.result(0);
  const Type& type = r->type();
  if (!type.is_tensor() || type.element == ir::ElementType::i1) return false;
  const auto rank = static_cast<size_t>(type.rank());
  const Sharding result = normalized(sm_.at(r), rank);
  const Mesh& mesh = gm_.mesh(result.mesh);
  if (is_maximal(mesh)) return false;
  for (const Value* v : op.operands())
    if (!v->type().is_tensor() || v->type().shape != type.shape || sm_.at(v).mesh != result.mesh) return false;
  // The partial axes to keep: the result's, or an operand's.
  std::vector<std::vector<AxisRef>> candidates = {summed_axes(result, rank)};
  for (const Value* v : op.operands()) candidates.push_back(summed_axes(sm_.at(v), rank));
  // The layout the op leaves for keeping `u`, and its operands' layout: the result's dimensions,
  // partial over u.
  auto leaves = [&](const std::vector<AxisRef>& u) {
    Sharding partial = result;
    partial.unreduced = u;
    partial.unreduced_kind = ir::ReductionKind::kSum;
    return partial;
  };
  std::optional<std::vector<AxisRef>> best;
  int64_t best_bytes = standard;
  for (const auto& u : candidates) {
    if (u.empty()) continue;
    bool free = true;  // an axis cannot both split a dimension and hold partial sums
    for (const auto& d : result.dims)
      for (const AxisRef& a : d.axes)
        for (const AxisRef& x : u) free &= !overlaps(a, x, mesh);
    if (!free) continue;
    int64_t bytes = reshard_bytes(ctx_, type, leaves(u), result);
    for (const Value* v : op.operands()) bytes += bring_bytes(v, leaves(u));
    if (bytes < best_bytes) best_bytes = bytes, best = u;
  }
  if (!best) return false;
  std::vector<Tensor> operands;
  for (size_t i = 0; i < op.operands().size(); ++i) {
    ctx_.forced_by = fmt::format("operand {}", i);
    operands.push_back(get(op.operand(i), leaves(*best)));
  }
  Tensor out = emit(op, b, operands, {local_type(type, leaves(*best))}, nullptr)[0];
  ctx_.forced_by = "result 0";
  local_.insert_or_assign(r, reshard(ctx_, out, type, leaves(*best), sm_.at(r)));
  return true;
}

}  // namespace tessera::spmd::partition_detail
