// The mixture-of-experts MLP of moe.h: routing (top-1 or top-2 by compares), slots by a prefix sum,
// capacity, dispatch and combine as dot_generals, and the per-expert SwiGLU as batched dot_generals.
#include "nn/moe.h"

#include <cmath>
#include <utility>

#include "support/error.h"

namespace tessera::nn {

using ir::ComparisonDirection;
using ir::DotDims;
using ir::Literal;
using ir::Type;

namespace {

// y [G, S] broadcast to [G, S, n].
Tensor over_last(const Tensor& y, int64_t n) {
  std::vector<int64_t> shape = y.shape();
  shape.push_back(n);
  return ir::broadcast_in_dim(y, shape, {0, 1});
}

Tensor as(const Tensor& pred, ir::ElementType t) { return ir::convert(pred, t); }

// The one-hot [G, S, E] (type of p) of each token's argmax over E, the lowest index among ties.
Tensor argmax_one_hot(const Tensor& p) {
  ir::Builder& b = p.builder();
  int64_t e = p.shape()[2];
  Tensor index = b.iota(Type(ir::ElementType::i32, p.shape()), 2);
  Tensor is_max = ir::compare(p, over_last(ir::reduce_max(p, {2}), e), ComparisonDirection::EQ);
  Tensor none = ir::broadcast_to(b.scalar(ir::ElementType::i32, double(e)), p.shape());
  Tensor first = ir::reduce_min(ir::select(is_max, index, none), {2});
  return as(ir::compare(index, over_last(first, e), ComparisonDirection::EQ), p.element());
}

// For each token, the number of earlier tokens of its group with mask 1 at each expert:
// mask [G, S, E] -> [G, S, E], a dot with the strictly lower-triangular [S, S] (t < s).
Tensor earlier(const Tensor& mask) {
  int64_t s = mask.shape()[1];
  Literal before(Type(mask.element(), {s, s}));
  for (int64_t t = 0; t < s; ++t)
    for (int64_t u = t + 1; u < s; ++u) before.set_double(t * s + u, 1);
  Tensor counts = ir::dot_general(mask, mask.builder().constant(before), DotDims{{}, {}, {1}, {0}});  // [G, E, S]
  return ir::transpose(counts, {0, 2, 1});
}

// [G, S, E, C]: mask [G, S, E] times the one-hot [G, S, C] of slot [G, S] (none when slot >= C).
Tensor dispatch_of(const Tensor& mask, const Tensor& slot, int64_t capacity) {
  ir::Builder& b = mask.builder();
  const std::vector<int64_t>& m = mask.shape();
  std::vector<int64_t> shape = {m[0], m[1], m[2], capacity};
  Tensor c = b.iota(Type(mask.element(), {m[0], m[1], capacity}), 2);
  Tensor at = as(ir::compare(c, over_last(slot, capacity), ComparisonDirection::EQ), mask.element());
  return ir::broadcast_in_dim(mask, shape, {0, 1, 2}) * ir::broadcast_in_dim(at, shape, {0, 1, 3});
}

// The sharding of layout.tokens' dimension 0 (the batch axes) without the expert axis.
ir::DimSharding groups_without_expert(const MoeLayout& l) {
  ir::DimSharding d;
  for (const ir::AxisRef& a : l.tokens.dims.at(0).axes)
    if (a.name != l.expert_axis) d.axes.push_back(a);
  return d;
}

ir::Sharding with_dims(const MoeLayout& l, std::vector<ir::DimSharding> dims) {
  return ir::Sharding{l.tokens.mesh, std::move(dims), {}, {}};
}

}  // namespace

int64_t moe_capacity(int64_t tokens_per_group, int64_t experts, int64_t top_k, double capacity_factor) {
  if (experts < 1) support::fail("nn::moe: {} experts; expected at least 1", experts);
  if (top_k != 1 && top_k != 2) support::fail("nn::moe: top-k routing with k = {}; expected 1 or 2", top_k);
  if (top_k > experts) support::fail("nn::moe: top-{} routing over {} expert", top_k, experts);
  if (!(capacity_factor > 0) || !std::isfinite(capacity_factor))
    support::fail("nn::moe: capacity factor {}; expected a positive number", capacity_factor);
  double c = std::ceil(capacity_factor * double(top_k) * double(tokens_per_group) / double(experts));
  return std::min<int64_t>(tokens_per_group, std::max<int64_t>(1, c >= 9e18 ? tokens_per_group : int64_t(c)));
}

MoeOutput moe(const Tensor& x, const MoeWeights& w, int64_t top_k, double capacity_factor,
              const std::optional<MoeLayout>& layout, bool with_aux) {
  if (x.rank() != 3 || w.router.rank() != 2 || w.router.shape()[0] != x.shape()[2])
    support::fail("nn::moe: x must be [G, S, M] and the router [M, E], got {} and {}", to_string(x.type()),
                  to_string(w.router.type()));
  const int64_t G = x.shape()[0], S = x.shape()[1], M = x.shape()[2], E = w.router.shape()[1];
  for (const Tensor* t : {&w.gate, &w.up, &w.down}) {
    bool down = t == &w.down;
    if (t->rank() != 3 || t->shape()[0] != E || t->shape()[down ? 2 : 1] != M ||
        t->shape()[down ? 1 : 2] != w.gate.shape()[2])
      support::fail("nn::moe: expert weights must be gate, up [E={}, M={}, F] and down [E, F, M], got {}, {} and {}", E,
                    M, to_string(w.gate.type()), to_string(w.up.type()), to_string(w.down.type()));
  }
  const int64_t C = moe_capacity(S, E, top_k, capacity_factor);
  const ir::ElementType wide = reduction_type(x.element());

  // Routing, in the wide type.
  Tensor probs = softmax_last(ir::matmul(cast(x, wide), cast(w.router, wide)));  // [G, S, E]
  Tensor mask1 = argmax_one_hot(probs);
  Tensor gate1 = ir::reduce_sum(probs * mask1, {2});  // [G, S]
  Tensor slot1 = ir::reduce_sum(earlier(mask1) * mask1, {2});
  Tensor dispatch1 = dispatch_of(mask1, slot1, C);
  auto weighted = [](const Tensor& d, const Tensor& g) { return d * ir::broadcast_in_dim(g, d.shape(), {0, 1}); };
  auto routed = [&]() -> std::pair<Tensor, Tensor> {  // dispatch and combine [G, S, E, C]
    if (top_k == 1) return {dispatch1, weighted(dispatch1, gate1)};
    // probs <= 1, so minus 2 at the first choice leaves the argmax of the others.
    Tensor mask2 = argmax_one_hot(probs - 2.0 * mask1);
    Tensor gate2 = ir::reduce_sum(probs * mask2, {2});
    Tensor firsts = ir::broadcast_in_dim(ir::reduce_sum(mask1, {1}), probs.shape(), {0, 2});  // [G, S, E]
    Tensor slot2 = ir::reduce_sum((earlier(mask2) + firsts) * mask2, {2});
    Tensor dispatch2 = dispatch_of(mask2, slot2, C);
    Tensor total = gate1 + gate2;
    return {dispatch1 + dispatch2, weighted(dispatch1, gate1 / total) + weighted(dispatch2, gate2 / total)};
  };
  auto [dispatch, combine] = routed();

  // Switch's load-balancing loss over all G * S tokens.
  std::optional<Tensor> aux;
  if (with_aux) {
    double tokens = double(G * S);
    Tensor fraction = ir::reduce_sum(mask1, {0, 1}) / tokens, mean_prob = ir::reduce_sum(probs, {0, 1}) / tokens;
    aux = ir::sum(fraction * mean_prob) * double(E);
  }

  // Dispatch, the experts, combine, in x's type.
  const ir::ElementType t = x.element();
  std::optional<ir::Sharding> by_group_in, by_expert_in, by_expert_out, by_group;
  if (layout) {
    ir::DimSharding rest = groups_without_expert(*layout), expert{ir::AxisRef(layout->expert_axis)};
    by_group_in = with_dims(*layout, {layout->tokens.dims.at(0), {}, {}, {}});  // [G, E, C, M]
    by_expert_in = with_dims(*layout, {rest, expert, {}, {}});
    by_expert_out = with_dims(*layout, {expert, rest, {}, {}});  // [E, G, C, M]
    by_group = with_dims(*layout, {{}, layout->tokens.dims.at(0), {}, {}});
  }
  auto laid = [](const Tensor& v, const std::optional<ir::Sharding>& s) { return s ? ir::constrain(v, *s) : v; };
  // Dispatched where the tokens are, then moved to the experts' devices: constrained to the groups'
  // layout first, or the partitioner would move the operands (gathering x) to compute it split by E.
  Tensor in = laid(laid(ir::dot_general(cast(dispatch, t), x, DotDims{{0}, {0}, {1}, {1}}), by_group_in),
                   by_expert_in);  // [G, E, C, M]
  DotDims per_expert{{1}, {0}, {3}, {1}};  // batch E, contracting M: [E, G, C, F]
  Tensor h = ir::dot_general(in, w.gate, per_expert);
  Tensor act = h * ir::logistic(h) * ir::dot_general(in, w.up, per_expert);
  Tensor out = laid(ir::dot_general(act, w.down, DotDims{{0}, {0}, {3}, {1}}), by_expert_out);  // [E, G, C, M]
  Tensor y = ir::dot_general(cast(combine, t), laid(out, by_group), DotDims{{0}, {1}, {2, 3}, {0, 2}});  // [G, S, M]
  return {y, aux};
}

}  // namespace tessera::nn
