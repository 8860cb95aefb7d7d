// The factor rule of every op (see factor_rule.h). Dimensions an op reads or writes whole (sliced,
// padded, reversed, concatenated, gathered from) get no factor; collectives, calls and the
// harness ops have none at all, so they are boundaries of propagation and see whole values.
#include <algorithm>
#include <numeric>

#include "ir/ragged_dot.h"
#include "spmd/factor_rule.h"

namespace tessera::spmd::factor_rules {

namespace {

using ir::Op;
using ir::OpKind;
using Ints = std::vector<int64_t>;

const Ints& ints(const Op& op, const std::string& name) {
  static const Ints none;
  const Ints* v = op.attrs().find<Ints>(name);
  return v ? *v : none;
}

bool contains(const Ints& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The rule skeleton: every dimension present, none with factors yet.
FactorRule blank(const Op& op) {
  FactorRule r;
  for (ir::Value* v : op.operands()) r.operands.emplace_back(static_cast<size_t>(v->type().rank()));
  for (ir::Value* v : op.results()) r.results.emplace_back(static_cast<size_t>(v->type().rank()));
  return r;
}

// One factor per dimension of result 0, shared by the dimensions of the same size of every operand
// and result of the same rank (scalar operands have none).
FactorRule same_shape(const Op& op) {
  FactorRule r = blank(op);
  const auto& shape = op.result(0)->type().shape;
  auto shares = [&](const ir::Value* v, size_t d) {
    const auto& s = v->type().shape;
    return s.size() == shape.size() && s[d] == shape[d];
  };
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    int f = r.add(shape[d]);
    for (size_t i = 0; i < op.operands().size(); ++i)
      if (shares(op.operand(i), d)) r.operands[i][d] = {f};
    for (size_t i = 0; i < op.num_results(); ++i)
      if (shares(op.result(i), d)) r.results[i][d] = {f};
  }
  return r;
}

// Like same_shape, but dimensions in `whole` get no factor.
FactorRule same_shape_except(const Op& op, const std::vector<bool>& whole) {
  FactorRule r = same_shape(op);
  for (size_t d = 0; d < whole.size(); ++d) {
    if (!whole[d]) continue;
    for (auto& t : r.operands)
      if (d < t.size()) t[d].clear();
    for (auto& t : r.results)
      if (d < t.size()) t[d].clear();
  }
  return r;
}

FactorRule none(const Op& op) { return blank(op); }

}  // namespace

// Leaves: a constant or iota is produced piecewise (the partitioner slices or offsets it).
FactorRule rule_Constant(const Op& op) { return same_shape(op); }
FactorRule rule_Iota(const Op& op) { return same_shape(op); }
FactorRule rule_ReplicaId(const Op& op) { return none(op); }
FactorRule rule_PartitionId(const Op& op) { return none(op); }

// Elementwise: y[i] = f(x[i], ...); scalar operands (clamp's bounds, select's predicate) are whole.
#define ELEMENTWISE(e) \
  FactorRule rule_##e(const Op& op) { return same_shape(op); }
ELEMENTWISE(Negate) ELEMENTWISE(Abs) ELEMENTWISE(Sign) ELEMENTWISE(Exponential)
ELEMENTWISE(ExponentialMinusOne) ELEMENTWISE(Log) ELEMENTWISE(LogPlusOne) ELEMENTWISE(Tanh)
ELEMENTWISE(Logistic) ELEMENTWISE(Sqrt) ELEMENTWISE(Rsqrt) ELEMENTWISE(Sine) ELEMENTWISE(Cosine)
ELEMENTWISE(Floor) ELEMENTWISE(Ceil) ELEMENTWISE(RoundNearestEven) ELEMENTWISE(RoundNearestAfz)
ELEMENTWISE(IsFinite) ELEMENTWISE(Not) ELEMENTWISE(Convert)
ELEMENTWISE(Add) ELEMENTWISE(Subtract) ELEMENTWISE(Multiply) ELEMENTWISE(Divide)
ELEMENTWISE(Remainder) ELEMENTWISE(Power) ELEMENTWISE(Maximum) ELEMENTWISE(Minimum)
ELEMENTWISE(Atan2) ELEMENTWISE(And) ELEMENTWISE(Or) ELEMENTWISE(Xor) ELEMENTWISE(ShiftLeft)
ELEMENTWISE(ShiftRightLogical) ELEMENTWISE(ShiftRightArithmetic) ELEMENTWISE(Compare)
ELEMENTWISE(Clamp) ELEMENTWISE(Select)
// More elementwise ops (#17).
ELEMENTWISE(Tan) ELEMENTWISE(Cbrt) ELEMENTWISE(Popcnt) ELEMENTWISE(CountLeadingZeros)
ELEMENTWISE(ReducePrecision) ELEMENTWISE(Complex) ELEMENTWISE(Real) ELEMENTWISE(Imag)
ELEMENTWISE(Erf) ELEMENTWISE(Erfc) ELEMENTWISE(ErfInv) ELEMENTWISE(Lgamma) ELEMENTWISE(Digamma)
ELEMENTWISE(BesselI1e) ELEMENTWISE(Sinh) ELEMENTWISE(Cosh) ELEMENTWISE(Asin) ELEMENTWISE(Acos)
ELEMENTWISE(Atan) ELEMENTWISE(Asinh) ELEMENTWISE(Acosh) ELEMENTWISE(Atanh) ELEMENTWISE(Square)
ELEMENTWISE(Conj) ELEMENTWISE(IsInf) ELEMENTWISE(IsPosInf) ELEMENTWISE(IsNegInf)
ELEMENTWISE(NextAfter) ELEMENTWISE(Mulhi) ELEMENTWISE(Polygamma) ELEMENTWISE(Zeta)
#undef ELEMENTWISE

// bitcast_convert: the shared dimensions are elementwise; a dimension added or removed by a change
// of bit width is whole.
FactorRule rule_BitcastConvert(const Op& op) {
  FactorRule r = blank(op);
  const auto& in = op.operand(0)->type().shape;
  const auto& out = op.result(0)->type().shape;
  for (size_t d = 0; d < std::min(in.size(), out.size()); ++d) {
    if (in[d] != out[d] || in[d] == 1) continue;
    int f = r.add(in[d]);
    r.operands[0][d] = {f};
    r.results[0][d] = {f};
  }
  return r;
}

// y[..., i_dims[k], ...] = x[..., i_k, ...]: operand dimension k is result dimension dims[k]
// unless it is expanded from size 1.
FactorRule rule_BroadcastInDim(const Op& op) {
  FactorRule r = blank(op);
  const auto& in = op.operand(0)->type().shape;
  const auto& out = op.result(0)->type().shape;
  const Ints& dims = ints(op, "broadcast_dimensions");
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    int f = r.add(out[d]);
    r.results[0][d] = {f};
    for (size_t k = 0; k < dims.size(); ++k)
      if (dims[k] == static_cast<int64_t>(d) && in[k] == out[d]) r.operands[0][k] = {f};
  }
  return r;
}

// reshape: walk both shapes major to minor, cutting them into common factors; a dimension merged
// from several factors lists them all (splitting sharded dimensions makes sub-axes). Where the two
// shapes share no factor boundary the dimensions involved stay whole.
FactorRule rule_Reshape(const Op& op) {
  FactorRule r = blank(op);
  const auto& in = op.operand(0)->type().shape;
  const auto& out = op.result(0)->type().shape;
  // An array without elements has no factors to share (and a size-0 dimension divides nothing).
  auto empty = [](const std::vector<int64_t>& s) { return std::find(s.begin(), s.end(), 0) != s.end(); };
  if (empty(in) || empty(out)) return r;
  size_t i = 0, j = 0;
  int64_t ri = 0, rj = 0;  // what is left of in[i] and out[j]
  auto skip_ones = [&] {
    while (i < in.size() && ri == 0) ri = in[i] == 1 ? (++i, 0) : in[i];
    while (j < out.size() && rj == 0) rj = out[j] == 1 ? (++j, 0) : out[j];
  };
  skip_ones();
  while (i < in.size() && j < out.size()) {
    int64_t size;
    if (ri % rj == 0) {
      size = rj;
    } else if (rj % ri == 0) {
      size = ri;
    } else {
      break;  // no common boundary: the rest stays whole
    }
    int f = r.add(size);
    r.operands[0][i].push_back(f);
    r.results[0][j].push_back(f);
    ri /= size;
    rj /= size;
    if (ri == 1) ri = 0, ++i;
    if (rj == 1) rj = 0, ++j;
    skip_ones();
  }
  if (i < in.size() || j < out.size()) {
    // Dimensions touched by the unmatched tail lose their factors: they must be whole.
    for (size_t d = i; d < in.size(); ++d) r.operands[0][d].clear();
    for (size_t d = j; d < out.size(); ++d) r.results[0][d].clear();
  }
  return r;
}

// y[perm(i)] = x[i]: result dimension d is operand dimension perm[d].
FactorRule rule_Transpose(const Op& op) {
  FactorRule r = blank(op);
  const auto& in = op.operand(0)->type().shape;
  const Ints& perm = ints(op, "permutation");
  std::vector<int> f(in.size(), -1);
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != 1) r.operands[0][d] = {f[d] = r.add(in[d])};
  for (size_t d = 0; d < perm.size(); ++d)
    if (f[static_cast<size_t>(perm[d])] >= 0) r.results[0][d] = {f[static_cast<size_t>(perm[d])]};
  return r;
}

// slice: dimensions taken whole pass through; sliced ones are whole.
FactorRule rule_Slice(const Op& op) {
  const auto& in = op.operand(0)->type().shape;
  const Ints& start = ints(op, "start_indices");
  const Ints& limit = ints(op, "limit_indices");
  const Ints& strides = ints(op, "strides");
  std::vector<bool> whole(in.size());
  for (size_t d = 0; d < in.size(); ++d)
    whole[d] = start[d] != 0 || limit[d] != in[d] || (!strides.empty() && strides[d] != 1);
  return same_shape_except(op, whole);
}

// dynamic_slice: dimensions read whole pass through, the others are whole.
FactorRule rule_DynamicSlice(const Op& op) {
  const auto& in = op.operand(0)->type().shape;
  const Ints& sizes = ints(op, "slice_sizes");
  std::vector<bool> whole(in.size());
  for (size_t d = 0; d < in.size(); ++d) whole[d] = sizes[d] != in[d];
  return same_shape_except(op, whole);
}

// dynamic_update_slice: the operand and result share every dimension; the update joins those it
// covers entirely; the others are whole.
FactorRule rule_DynamicUpdateSlice(const Op& op) {
  const auto& in = op.operand(0)->type().shape;
  const auto& upd = op.operand(1)->type().shape;
  std::vector<bool> whole(in.size());
  for (size_t d = 0; d < in.size(); ++d) whole[d] = upd[d] != in[d];
  return same_shape_except(op, whole);
}

// concatenate: every dimension but the concatenated one is shared.
FactorRule rule_Concatenate(const Op& op) {
  std::vector<bool> whole(static_cast<size_t>(op.result(0)->type().rank()));
  whole[static_cast<size_t>(op.attrs().get<int64_t>("dimension"))] = true;
  FactorRule r = blank(op);
  const auto& shape = op.result(0)->type().shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (whole[d] || shape[d] == 1) continue;
    int f = r.add(shape[d]);
    for (auto& t : r.operands) t[d] = {f};
    r.results[0][d] = {f};
  }
  return r;
}

// pad: unpadded dimensions pass through; padded ones are whole.
FactorRule rule_Pad(const Op& op) {
  const auto& in = op.operand(0)->type().shape;
  const Ints& lo = ints(op, "edge_padding_low");
  const Ints& hi = ints(op, "edge_padding_high");
  const Ints& interior = ints(op, "interior_padding");
  std::vector<bool> whole(in.size());
  for (size_t d = 0; d < in.size(); ++d) whole[d] = lo[d] != 0 || hi[d] != 0 || interior[d] != 0;
  return same_shape_except(op, whole);
}

// reverse: reversed dimensions are whole.
FactorRule rule_Reverse(const Op& op) {
  std::vector<bool> whole(static_cast<size_t>(op.result(0)->type().rank()));
  for (int64_t d : ints(op, "dimensions")) whole[static_cast<size_t>(d)] = true;
  return same_shape_except(op, whole);
}

// gather: the batch dimensions of the indices are the result's batch dimensions; operand
// dimensions taken whole by the slices are the result's offset dimensions; the rest is whole.
FactorRule rule_Gather(const Op& op) {
  FactorRule r = blank(op);
  const auto& dn = op.attrs().get<ir::GatherDims>("dimension_numbers");
  const Ints& sizes = ints(op, "slice_sizes");
  const auto& operand = op.operand(0)->type().shape;
  const auto& indices = op.operand(1)->type().shape;
  const auto& out = op.result(0)->type().shape;
  size_t next_batch = 0, next_offset = 0;
  std::vector<size_t> offset_operand_dims;
  for (size_t d = 0; d < operand.size(); ++d)
    if (!contains(dn.collapsed_slice_dims, static_cast<int64_t>(d)) &&
        !contains(dn.operand_batching_dims, static_cast<int64_t>(d)))
      offset_operand_dims.push_back(d);
  for (size_t d = 0; d < out.size(); ++d) {
    bool offset = contains(dn.offset_dims, static_cast<int64_t>(d));
    if (offset) {
      size_t od = offset_operand_dims.at(next_offset++);
      if (sizes[od] == operand[od] && out[d] != 1) {
        int f = r.add(out[d]);
        r.results[0][d] = {f};
        r.operands[0][od] = {f};
      }
      continue;
    }
    size_t id = next_batch++;
    if (static_cast<int64_t>(id) >= dn.index_vector_dim) ++id;
    if (out[d] == 1 || id >= indices.size()) continue;
    int f = r.add(out[d]);
    r.results[0][d] = {f};
    r.operands[1][id] = {f};
    for (size_t k = 0; k < dn.start_indices_batching_dims.size(); ++k)
      if (dn.start_indices_batching_dims[k] == static_cast<int64_t>(id))
        r.operands[0][static_cast<size_t>(dn.operand_batching_dims[k])] = {f};
  }
  return r;
}

// scatter: operand and result share the dimensions the update windows cover entirely; the
// scattered-into dimensions are whole. When updates are added (the body is an add), the scatter
// dimensions of the updates and the batch dimensions of the indices are a reduction: each device
// adds its own updates and the partial results are summed (the partitioner counts the operand
// once).
FactorRule rule_Scatter(const Op& op) {
  FactorRule r = blank(op);
  size_t n = op.num_results();
  const auto& dn = op.attrs().get<ir::ScatterDims>("scatter_dimension_numbers");
  const auto& operand = op.operand(0)->type().shape;
  const auto& indices = op.operand(n)->type().shape;
  const auto& update = op.operand(n + 1)->type().shape;
  size_t next_window = 0;
  for (size_t d = 0; d < operand.size(); ++d) {
    if (contains(dn.inserted_window_dims, static_cast<int64_t>(d)) ||
        contains(dn.input_batching_dims, static_cast<int64_t>(d)))
      continue;
    size_t ud = static_cast<size_t>(dn.update_window_dims.at(next_window++));
    if (update[ud] != operand[d] || operand[d] == 1 ||
        contains(dn.scatter_dims_to_operand_dims, static_cast<int64_t>(d)))
      continue;
    int f = r.add(operand[d]);
    for (size_t k = 0; k < n; ++k) {
      r.operands[k][d] = {f};
      r.results[k][d] = {f};
      r.operands[n + 1 + k][ud] = {f};
    }
  }
  bool adds = n == 1 && ir::region_combiner(op) == OpKind::Add && dn.input_batching_dims.empty();
  if (!adds) return r;
  size_t id = 0;
  for (size_t ud = 0; ud < update.size(); ++ud) {
    if (contains(dn.update_window_dims, static_cast<int64_t>(ud))) continue;
    if (static_cast<int64_t>(id) == dn.index_vector_dim) ++id;
    if (id < indices.size() && indices[id] == update[ud] && update[ud] != 1) {
      int f = r.add(update[ud], FactorKind::kReduction);
      r.operands[n][id] = {f};
      r.operands[n + 1][ud] = {f};
    }
    ++id;
  }
  return r;
}

// reduce: kept dimensions pass through; reduced ones are reduction factors of every input.
FactorRule rule_Reduce(const Op& op) {
  FactorRule r = blank(op);
  size_t n = op.num_results();
  const Ints& dims = ints(op, "dimensions");
  const auto& in = op.operand(0)->type().shape;
  size_t out_d = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    bool reduced = contains(dims, static_cast<int64_t>(d));
    int f = in[d] == 1 ? -1 : r.add(in[d], reduced ? FactorKind::kReduction : FactorKind::kPassThrough);
    if (f >= 0)
      for (size_t k = 0; k < n; ++k) r.operands[k][d] = {f};
    if (!reduced) {
      if (f >= 0)
        for (size_t k = 0; k < n; ++k) r.results[k][out_d] = {f};
      ++out_d;
    }
  }
  return r;
}

// dot_general: batch dimensions pass through, free dimensions of each side pass to the result,
// contracting dimensions are reductions.
FactorRule rule_DotGeneral(const Op& op) {
  FactorRule r = blank(op);
  const auto& dd = op.attrs().get<ir::DotDims>("dot_dimension_numbers");
  const auto& lhs = op.operand(0)->type().shape;
  const auto& rhs = op.operand(1)->type().shape;
  size_t out_d = 0;
  for (size_t k = 0; k < dd.lhs_batch.size(); ++k, ++out_d) {
    auto l = static_cast<size_t>(dd.lhs_batch[k]), rr = static_cast<size_t>(dd.rhs_batch[k]);
    if (lhs[l] == 1) continue;
    int f = r.add(lhs[l]);
    r.operands[0][l] = {f};
    r.operands[1][rr] = {f};
    r.results[0][out_d] = {f};
  }
  auto free_dims = [&](size_t side, const auto& shape, const Ints& batch, const Ints& contracting) {
    for (size_t d = 0; d < shape.size(); ++d) {
      if (contains(batch, static_cast<int64_t>(d)) || contains(contracting, static_cast<int64_t>(d))) continue;
      if (shape[d] != 1) {
        int f = r.add(shape[d]);
        r.operands[side][d] = {f};
        r.results[0][out_d] = {f};
      }
      ++out_d;
    }
  };
  free_dims(0, lhs, dd.lhs_batch, dd.lhs_contracting);
  free_dims(1, rhs, dd.rhs_batch, dd.rhs_contracting);
  for (size_t k = 0; k < dd.lhs_contracting.size(); ++k) {
    auto l = static_cast<size_t>(dd.lhs_contracting[k]), rr = static_cast<size_t>(dd.rhs_contracting[k]);
    if (lhs[l] == 1) continue;
    int f = r.add(lhs[l], FactorKind::kReduction);
    r.operands[0][l] = {f};
    r.operands[1][rr] = {f};
  }
  return r;
}

// chlo.ragged_dot: as dot_general, except that the ragged dimension, the rhs group dimension and
// group_sizes' group dimension stay whole (a device's piece of them would be read with its local
// positions against global group boundaries). group_sizes' other dimensions (when it is not [g])
// share the lhs dimensions that index them.
FactorRule rule_RaggedDot(const Op& op) {
  FactorRule r = blank(op);
  const auto& dims = op.attrs().get<ir::RaggedDotDims>("ragged_dot_dimension_numbers");
  auto checked = ir::ragged_dot_layout(op.operand(0)->type(), op.operand(1)->type(), op.operand(2)->type(), dims);
  const auto& l = std::get<ir::RaggedDotLayout>(checked);  // the verifier has checked the constraints
  const ir::DotDims& dd = dims.dot;
  const auto& lhs = op.operand(0)->type().shape;
  const auto& rhs = op.operand(1)->type().shape;
  auto whole = [&](int64_t d) { return d == l.ragged; };
  std::vector<int> of_lhs(lhs.size(), -1);  // the factor of each lhs dimension (-1: none)
  size_t out_d = l.mode == ir::RaggedDotLayout::Mode::kContracting ? 1 : 0;
  for (size_t k = 0; k < dd.lhs_batch.size(); ++k, ++out_d) {
    auto a = static_cast<size_t>(dd.lhs_batch[k]), b = static_cast<size_t>(dd.rhs_batch[k]);
    if (lhs[a] == 1 || whole(dd.lhs_batch[k])) continue;
    int f = of_lhs[a] = r.add(lhs[a]);
    r.operands[0][a] = r.operands[1][b] = r.results[0][out_d] = {f};
  }
  for (int64_t d : l.lhs_free) {
    auto a = static_cast<size_t>(d);
    if (lhs[a] != 1 && !whole(d)) r.operands[0][a] = r.results[0][out_d] = {of_lhs[a] = r.add(lhs[a])};
    ++out_d;
  }
  for (int64_t d : l.rhs_free) {
    auto b = static_cast<size_t>(d);
    if (rhs[b] != 1) r.operands[1][b] = r.results[0][out_d] = {r.add(rhs[b])};
    ++out_d;
  }
  for (size_t k = 0; k < dd.lhs_contracting.size(); ++k) {
    auto a = static_cast<size_t>(dd.lhs_contracting[k]), b = static_cast<size_t>(dd.rhs_contracting[k]);
    if (lhs[a] == 1 || whole(dd.lhs_contracting[k])) continue;
    int f = of_lhs[a] = r.add(lhs[a], FactorKind::kReduction);
    r.operands[0][a] = r.operands[1][b] = {f};
  }
  for (size_t k = 0; k < l.prefix.size() && !l.broadcast; ++k) {
    int f = of_lhs[static_cast<size_t>(l.prefix[k])];
    if (f >= 0) r.operands[2][k] = {f};
  }
  return r;
}

// while: each loop-carried value keeps its layout through the loop (operand i, result i and the
// regions' argument i share every dimension).
FactorRule rule_While(const Op& op) {
  FactorRule r = blank(op);
  for (size_t i = 0; i < op.num_results(); ++i) {
    const auto& shape = op.result(i)->type().shape;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1) continue;
      int f = r.add(shape[d]);
      r.operands[i][d] = {f};
      r.results[i][d] = {f};
    }
  }
  return r;
}

// if and case: result i and every branch's returned value i share every dimension, so the branches
// are partitioned alike (propagate.cpp ties the returned values); the predicate or index is a
// scalar, the same on every device.
FactorRule rule_If(const Op& op) {
  FactorRule r = blank(op);
  for (size_t i = 0; i < op.num_results(); ++i) {
    const auto& shape = op.result(i)->type().shape;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != 1) r.results[i][d] = {r.add(shape[d])};
  }
  return r;
}
FactorRule rule_Case(const Op& op) { return rule_If(op); }

// optimization_barrier: result i is operand i.
FactorRule rule_OptimizationBarrier(const Op& op) { return rule_While(op); }
FactorRule rule_Return(const Op& op) { return none(op); }

// Collectives act on whole local values: boundaries.
FactorRule rule_AllReduce(const Op& op) { return none(op); }
FactorRule rule_AllGather(const Op& op) { return none(op); }
FactorRule rule_ReduceScatter(const Op& op) { return none(op); }
FactorRule rule_AllToAll(const Op& op) { return none(op); }
FactorRule rule_CollectivePermute(const Op& op) { return none(op); }
FactorRule rule_CollectiveBroadcast(const Op& op) { return none(op); }
FactorRule rule_CollectiveReduce(const Op& op) { return none(op); }

// A sharding constraint passes layouts both ways; a reshard fixes its result's and passes none.
FactorRule rule_ShardingConstraint(const Op& op) { return same_shape(op); }
FactorRule rule_Reshard(const Op& op) { return none(op); }
FactorRule rule_ManualComputation(const Op& op) { return none(op); }
// Shardy's explicit collectives are layout boundaries (as reshard is); sdy.constant is a constant.
FactorRule rule_SdyAllGather(const Op& op) { return none(op); }
FactorRule rule_SdyAllSlice(const Op& op) { return none(op); }
FactorRule rule_SdyAllReduce(const Op& op) { return none(op); }
FactorRule rule_SdyReduceScatter(const Op& op) { return none(op); }
FactorRule rule_SdyAllToAll(const Op& op) { return none(op); }
FactorRule rule_SdyCollectivePermute(const Op& op) { return none(op); }
FactorRule rule_SdyConstant(const Op& op) { return same_shape(op); }
// The propagation ops are identities (a barrier's direction and a group's members are
// propagate.cpp's business).
FactorRule rule_PropagationBarrier(const Op& op) { return same_shape(op); }
FactorRule rule_DataFlowEdge(const Op& op) { return same_shape(op); }
FactorRule rule_ShardingGroup(const Op& op) { return none(op); }

FactorRule rule_Call(const Op& op) { return none(op); }
FactorRule rule_RunParallel(const Op& op) { return none(op); }
FactorRule rule_ExpectEqConst(const Op& op) { return none(op); }
FactorRule rule_ExpectAlmostEqConst(const Op& op) { return none(op); }
FactorRule rule_ExpectEq(const Op& op) { return none(op); }
FactorRule rule_ExpectAlmostEq(const Op& op) { return none(op); }
FactorRule rule_ExpectClose(const Op& op) { return none(op); }

}  // namespace tessera::spmd::factor_rules
