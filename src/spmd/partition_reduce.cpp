// A reduce that no all_reduce combines (JAX's argmax and argmin: a (value, index) pair reduce)
// split along a reduced dimension, run by pieces as XLA's SPMD partitioner does: each device
// reduces its piece with the same body, the partial results are all-gathered along the
// reduced dimension's axes into a new leading dimension (in device order, so the pieces fold left
// to right as the unsharded row-major fold does), and the same reduce runs once more over that
// dimension. Only the small partial results travel, never the operands. Which bodies make this
// equal to the unsharded fold bit for bit, with the pieces (and the padding of an uneven split)
// starting from the order's identity and the inits folded once by the final reduce, is
// select_reduce.cpp's proof.
#include "spmd/partitioner.h"

#include <algorithm>

#include "ir/builder_window.h"
#include "spmd/identities.h"
#include "support/error.h"

namespace tessera::spmd::partition_detail {

// The one split reduction factor of a reduce run by pieces under `assign`: it must be the
// reduce's major-most reduced dimension (a dimension of size 1 has no factor and no order), so
// that the devices' pieces, in order, are consecutive runs of the row-major fold. nullopt where
// the reduce combines by all_reduce, cannot go by pieces, splits no reduction or splits several.
std::optional<size_t> Partitioner::pieces_factor(const Op& op, const FactorRule& rule, const FactorAxes& assign) const {
  if (op.kind() != OpKind::Reduce || !result_combiners(op).empty() || pieces_order(op) == PiecesOrder::kNone)
    return std::nullopt;
  std::optional<size_t> split;
  for (size_t f = 0; f < rule.num_factors(); ++f) {
    if (rule.kinds[f] != FactorKind::kReduction || assign[f].empty()) continue;
    if (split) return std::nullopt;
    split = f;
  }
  if (!split) return std::nullopt;
  std::vector<int64_t> dims = op.attrs().get<std::vector<int64_t>>("dimensions");
  std::sort(dims.begin(), dims.end());
  const auto& shape = op.operand(0)->type().shape;
  for (int64_t d : dims) {
    if (shape[static_cast<size_t>(d)] == 1) continue;
    const auto& factors = rule.operands[0][static_cast<size_t>(d)];
    return factors.size() == 1 && factors[0] == static_cast<int>(*split) ? split : std::nullopt;
  }
  return std::nullopt;
}

namespace {

// Result layout `s` with a new leading dimension split by `axes` (or whole, for none).
Sharding stacked(Sharding s, const std::vector<AxisRef>& axes) {
  ir::DimSharding d;
  d.axes = axes;
  s.dims.insert(s.dims.begin(), d);
  return s;
}

Type stacked_type(const Type& t, int64_t pieces) {
  std::vector<int64_t> shape = {pieces};
  shape.insert(shape.end(), t.shape.begin(), t.shape.end());
  return t.with_shape(shape);
}

}  // namespace

// The bytes per device of all-gathering result i's partial results, laid out as `s` with the
// reduction's `axes` as a new leading dimension.
int64_t Partitioner::partials_bytes(const Op& op, size_t i, const Sharding& s, const std::vector<AxisRef>& axes,
                                    const Mesh& mesh) {
  const Type& t = op.result(i)->type();
  return reshard_bytes(ctx_, stacked_type(t, shard_count(mesh, axes)), stacked(s, axes), stacked(s, {}));
}

void Partitioner::reduce_by_pieces(const Op& op, const FactorRule& rule, const FactorAxes& assign, size_t factor,
                                   const Mesh& mesh, Builder& b) {
  pieces_refused_ = false;
  const std::vector<AxisRef>& axes = assign[factor];
  const int64_t pieces = shard_count(mesh, axes);
  const size_t n = op.num_results();
  const bool uneven = rule.sizes[factor] % pieces != 0;
  std::vector<Tensor> inits;
  for (size_t k = 0; k < n; ++k) {
    ctx_.forced_by = fmt::format("operand {}", n + k);
    inits.push_back(get(op.operand(n + k), replicated(mesh.name, 0)));
  }
  // The pieces start from the order's identity and the index init; the final reduce from the
  // reduce's own inits, which so count once, first, as unsharded (select_reduce.cpp).
  std::vector<Tensor> starts = inits;
  starts[0] = ir::extreme(inits[0], pieces_order(op) == PiecesOrder::kLargest);
  std::vector<Tensor> operands;
  for (size_t k = 0; k < n; ++k) {
    const Value* v = op.operand(k);
    Sharding want = compose(rule.operands[k], rule, assign, mesh);
    ctx_.forced_by = fmt::format("operand {}", k);
    size_t first = info_.report.collectives.size();
    Tensor t = get(v, want);
    flag_full_gathers(op, k, rule, first, {});
    // Padding rows hold the starts, which never change the fold (select_reduce.cpp).
    if (uneven)
      if (auto mask = valid_mask(ctx_, b, v->type(), want))
        t = ir::select(*mask, t, ir::broadcast_to(starts[k], t.shape()));
    operands.push_back(t);
  }
  operands.insert(operands.end(), starts.begin(), starts.end());
  std::vector<Sharding> have;
  std::vector<Type> types;
  for (size_t k = 0; k < n; ++k) {
    have.push_back(compose(rule.results[k], rule, assign, mesh));
    types.push_back(local_type(op.result(k)->type(), have.back()));
  }
  std::vector<Tensor> mine = emit(op, b, operands, types, &assign);
  // Each device's partial results, stacked along a new leading dimension in device order.
  std::vector<Tensor> partials;
  for (size_t k = 0; k < n; ++k) {
    ctx_.forced_by = fmt::format("result {} (the devices' partial results, stacked)", k);
    std::vector<int64_t> one = {1};
    one.insert(one.end(), types[k].shape.begin(), types[k].shape.end());
    partials.push_back(reshard(ctx_, ir::reshape(mine[k], one), stacked_type(op.result(k)->type(), pieces),
                               stacked(have[k], axes), stacked(have[k], {})));
  }
  partials.insert(partials.end(), inits.begin(), inits.end());
  ir::AttrMap attrs = op.attrs();
  attrs.set("dimensions", std::vector<int64_t>{0});
  std::vector<Tensor> results = emit(op, b, partials, types, nullptr, &attrs);
  for (size_t k = 0; k < n; ++k) {
    TESSERA_CHECK(results[k].type() == types[k], "{}: local result {} is {}, expected {}", describe(op), k,
                  ir::to_string(results[k].type()), ir::to_string(types[k]));
    ctx_.forced_by = fmt::format("result {}", k);
    local_.insert_or_assign(op.result(k), reshard(ctx_, results[k], op.result(k)->type(), have[k], sm_.at(op.result(k))));
  }
}

}  // namespace tessera::spmd::partition_detail
