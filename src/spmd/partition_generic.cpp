// The partitioner's rule for ops without regions: assign mesh axes to the op's factors, bring
// each operand to the layout that asks for, run the op on local pieces, and fix what local pieces
// change (partial sums, iota offsets, padding of uneven splits); the cost model chooses between
// gathering and the cheaper local gathers and halo exchanges.
#include "spmd/partitioner.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include "ir/builder.h"
#include "ir/clone.h"
#include "spmd/assign.h"
#include "spmd/combine.h"
#include "spmd/factor_rule.h"
#include "spmd/identities.h"
#include "spmd/mesh_math.h"
#include "spmd/propagate.h"
#include "spmd/reshard.h"
#include "spmd/split_reads.h"
#include "support/error.h"

namespace tessera::spmd::partition_detail {

namespace {

// A result's layout `s` with the halo's: split along each exchanged dimension, or partial over
// its axes where a convolution sums over split kernel rows; partial over `partial` too, combined
// by `kind`.
Sharding with_halo(Sharding s, const std::vector<AxisRef>& partial, const std::vector<HaloDim>& halo,
                   ir::ReductionKind kind = ir::ReductionKind::kSum) {
  s.unreduced = partial;
  if (!partial.empty()) s.unreduced_kind = kind;
  for (const HaloDim& h : halo) {
    if (h.kernel_dim >= 0)
      s.unreduced.insert(s.unreduced.end(), h.axes.begin(), h.axes.end());
    else
      s.dims[h.out()].axes = h.axes;
  }
  return s;
}

// How a gather's partial results (a local gather over split indexed dimensions) are combined:
// by the max or min its result is laid out partial by (unreduced=max{...}), the rows a device
// does not hold then set to that reduction's identity, so the pieces need no sum first; else a sum.
ir::ReductionKind partial_kind(const Op& op, const Sharding& result) {
  return op.kind() == OpKind::Gather && !result.unreduced.empty() ? result.unreduced_kind : ir::ReductionKind::kSum;
}

OpKind combiner_for(ir::ReductionKind kind) {
  return kind == ir::ReductionKind::kMax ? OpKind::Maximum : kind == ir::ReductionKind::kMin ? OpKind::Minimum : OpKind::Add;
}

}  // namespace

void Partitioner::generic(const Op& op, Builder& b) {
  std::string mesh_name = op_mesh(op);
  const Mesh& mesh = gm_.mesh(mesh_name);
  FactorRule rule = factor_rule(op);
  if (!is_maximal(mesh) && !replicate_operands_ && op.kind() == OpKind::TopK && top_k_by_pieces(op, b)) return;
  if (is_maximal(mesh) || replicate_operands_) {
    // The whole op on every device; only the maximal mesh's device's result counts.
    std::vector<Tensor> operands;
    for (size_t i = 0; i < op.operands().size(); ++i) {
      const Value* v = op.operand(i);
      ctx_.forced_by = fmt::format("operand {}", i);
      operands.push_back(get(v, replicated(mesh_name, static_cast<size_t>(v->type().rank()))));
    }
    std::vector<Type> types = op.result_types();
    std::vector<Tensor> results = emit(op, b, operands, types, nullptr);
    for (size_t i = 0; i < results.size(); ++i) {
      ctx_.forced_by = fmt::format("result {}", i);
      Sharding have = replicated(mesh_name, static_cast<size_t>(op.result(i)->type().rank()));
      local_.insert_or_assign(op.result(i), reshard(ctx_, results[i], op.result(i)->type(), have, sm_.at(op.result(i))));
    }
    return;
  }
  // An element-wise op whose operands and results all share one layout (no partial axes) runs on
  // the pieces as they are, whatever its rule: its rule has no factor for a dimension of size 1,
  // and would gather such a dimension split by some axis (one real element, on the first shard)
  // only to slice it again.
  if (in_place(op)) {
    std::vector<Tensor> operands;
    for (const Value* v : op.operands()) operands.push_back(local_.at(v));
    std::vector<Type> types;
    for (const Value* r : op.results()) types.push_back(local_type(r->type(), sm_.at(r)));
    std::vector<Tensor> results = emit(op, b, operands, types, nullptr);
    for (size_t i = 0; i < results.size(); ++i) local_.insert_or_assign(op.result(i), results[i]);
    return;
  }
  // A gather's split indexed dimensions and the split dimensions a slice, reverse, pad,
  // concatenate, reduce_window or convolution reads whole may stay split (a local gather, a halo
  // exchange) where the cost model finds that cheaper than gathering them.
  std::vector<IndexedDim> indexed;
  if (op.kind() == OpKind::Gather) indexed = add_indexed_factors(op, rule);
  FactorAxes assign = assignment(op, rule, mesh);
  // Or the layout of one of its operands, or another candidate, where that moves fewer bytes
  // (choose_assignment); ties keep the results' layout.
  int64_t best = -1;
  if (indexed.empty() && op.kind() != OpKind::Slice && op.kind() != OpKind::Reverse && op.kind() != OpKind::Pad &&
      op.kind() != OpKind::ReduceWindow && op.kind() != OpKind::Scatter && op.num_results() > 0)
    best = choose_assignment(op, rule, mesh, assign);
  // A reshape whose layouts split a merged dimension by axes that overflow its factors (x=6 over a
  // dimension merged from 4 and 6144) keeps them cut and regrouped at the factor boundaries,
  // where that moves less than what the plain reading keeps (often nothing: the operand whole).
  if (op.kind() == OpKind::Reshape) {
    if (best < 0) best = cost(op, rule, assign, mesh);
    for (std::optional<size_t> from : {std::optional<size_t>{}, std::optional<size_t>{0}}) {
      if (best == 0) break;
      if (from && sm_.at(op.operand(0)).mesh != mesh.name) continue;
      FactorAxes other = assign_factors(op, rule, mesh, sm_, from, /*regroup=*/true);
      if (other == assign) continue;
      if (int64_t c = cost(op, rule, other, mesh); c < best) best = c, assign = std::move(other);
    }
  }
  // Or, for an op linear in a partial-sum operand, keeping the sum partial (partition_linear.cpp).
  if (best > 0 && partial_linear(op, b, best)) return;
  std::vector<size_t> judged;  // operand 0's dimensions whose gather is the cost model's choice
  cheaper_gather_.clear();
  if (!indexed.empty()) choose_local_gather(op, rule, indexed, assign, mesh, judged);
  std::vector<HaloDim> halo;
  if (op.kind() == OpKind::Slice || op.kind() == OpKind::Reverse || op.kind() == OpKind::Pad ||
      op.kind() == OpKind::Concatenate || op.kind() == OpKind::ReduceWindow || op.kind() == OpKind::Convolution ||
      op.kind() == OpKind::SelectAndScatter)
    halo = choose_halo(op, rule, assign, mesh, judged);
  // (a reduce's combiner per result: its one, or those of a body that combines each result alone)
  std::optional<OpKind> combiner = OpKind::Add;
  std::vector<OpKind> combiners;
  if (op.kind() == OpKind::Reduce) {
    combiners = result_combiners(op);
    combiner = combiners.empty() ? std::nullopt : std::optional<OpKind>(combiners[0]);
  }
  // (an argmax or argmin split along its reduced dimension: reduced by pieces, partial results gathered)
  if (std::optional<size_t> f = combiner ? std::nullopt : pieces_factor(op, rule, assign)) {
    reduce_by_pieces(op, rule, assign, *f, mesh, b);
    return;
  }
  // (one whose split reduced dimensions cannot run by pieces gathers them: no choice of the cost
  // model, so its gathers are warned of)
  pieces_refused_ = false;
  for (size_t f = 0; !combiner && f < rule.num_factors(); ++f)
    pieces_refused_ |= rule.kinds[f] == FactorKind::kReduction && !assign[f].empty();
  std::vector<AxisRef> partial;
  bool uneven_reduction = false;
  for (size_t f = 0; f < rule.num_factors(); ++f) {
    if (rule.kinds[f] != FactorKind::kReduction || assign[f].empty()) continue;
    if (!combiner) {
      assign[f].clear();  // a reduction Tessera cannot combine across devices runs whole
      continue;
    }
    partial.insert(partial.end(), assign[f].begin(), assign[f].end());
    uneven_reduction |= rule.sizes[f] % shard_count(mesh, assign[f]) != 0;
  }
  // (a kernel gradient summed over split kernel rows: their padding must add nothing)
  for (const HaloDim& h : halo)
    if (h.kernel_dim >= 0)
      uneven_reduction |= op.operand(1)->type().shape[static_cast<size_t>(h.kernel_dim)] % h.plan.shards != 0;
  // A reduce split along its reduced dimension reduces each piece from the combiner's identity
  // (its padding holds the identity too) and folds the init in once, below: the init is a
  // runtime value, counted once as unsharded however many devices and padding rows there are.
  // (An init that is a constant equal to the identity, the usual case, needs none of this.)
  // Each result of a reduce of several alike, with its own combiner.
  const size_t n = op.num_results();
  bool fold_init = false;
  for (size_t k = 0; op.kind() == OpKind::Reduce && !partial.empty() && k < n; ++k)
    fold_init |= !identity_constant(combiners[k], op.operand(n + k));
  std::vector<Tensor> operands;
  for (size_t i = 0; i < op.operands().size(); ++i) {
    Value* v = op.operand(i);
    if (fold_init && i >= n) {
      operands.push_back(identity_of(combiners[i - n], get(v, replicated(mesh_name, 0)), b));
      continue;
    }
    Sharding want = compose(rule.operands[i], rule, assign, mesh);
    for (const HaloDim& h : halo) {
      if (h.operand == i) want.dims[h.dim].axes = h.axes;
      if (i == 1 && h.kernel_dim >= 0) want.dims[static_cast<size_t>(h.kernel_dim)].axes = h.axes;
    }
    // A scatter whose updates are split adds into the operand on every device: it must count
    // once in the sum, so it is made partial (whole on the first device, zeros elsewhere).
    if (op.kind() == OpKind::Scatter && i < op.num_results()) want.unreduced = partial;
    ctx_.forced_by = fmt::format("operand {}", i);
    size_t first = info_.report.collectives.size();
    Tensor t = get(v, want);
    flag_full_gathers(op, i, rule, first, judged);
    for (size_t k = first; i == 0 && !cheaper_gather_.empty() && k < info_.report.collectives.size(); ++k)
      if (info_.report.collectives[k].kind == "all_gather") info_.report.collectives[k].avoidable = cheaper_gather_;
    if (uneven_reduction) t = mask_padding(op, i, t, v->type(), want, b);
    operands.push_back(t);
  }
  std::vector<Type> types;
  std::vector<Sharding> have;
  for (size_t i = 0; i < op.num_results(); ++i) {
    Sharding s = with_halo(compose(rule.results[i], rule, assign, mesh), partial, halo, partial_kind(op, sm_.at(op.result(i))));
    const Type& t = op.result(i)->type();
    types.push_back(t.is_tensor() ? t.with_shape(local_shape(t.shape, s, mesh)) : t);
    have.push_back(std::move(s));
  }
  std::optional<LocalIndices> rows;
  if (std::any_of(indexed.begin(), indexed.end(), [&](const IndexedDim& d) { return !assign[static_cast<size_t>(d.factor)].empty(); })) {
    rows = local_indices(ctx_, b, op, operands[1], indexed, assign, operands[0].shape(), mesh);
    operands[1] = rows->indices;
  }
  std::vector<Tensor> results;
  if (!halo.empty() && op.kind() == OpKind::ReduceWindow) {
    ir::AttrMap attrs = halo_window_attrs(op, halo);
    results = emit(op, b, halo_windows(ctx_, op, operands, halo, mesh), types, &assign, &attrs);
  } else if (!halo.empty() && op.kind() == OpKind::SelectAndScatter) {
    results.push_back(halo_select_scatter(ctx_, op, operands, halo, mesh, [&](const std::vector<Tensor>& run, const Type& t) {
      return emit(op, b, run, {t}, &assign)[0];
    }));
  } else if (!halo.empty() && op.kind() == OpKind::Convolution) {
    ir::AttrMap attrs = halo_conv_attrs(op, halo);
    operands[0] = halo_conv_lhs(ctx_, op, operands[0], halo, mesh);
    results = emit(op, b, operands, types, &assign, &attrs);
  } else if (!halo.empty()) {
    ctx_.forced_by = "operand 0";
    results.push_back(halo_op(ctx_, op, operands, halo, mesh));
  } else {
    results = emit(op, b, operands, types, &assign);
  }
  if (rows) results[0] = zero_outside(op, results[0], rows->in_piece, combiner_for(have[0].unreduced_kind));
  for (size_t i = 0; i < results.size(); ++i)
    TESSERA_CHECK(results[i].type() == types[i], "{}: local result {} is {}, expected {}", describe(op), i,
                  ir::to_string(results[i].type()), ir::to_string(types[i]));
  fix_iota(op, results, rule, assign, mesh, b);
  if (fold_init) {
    Tensor index = piece_offset(ctx_, b, mesh, partial, 1);
    Tensor first = ir::compare(index, b.scalar(ir::ElementType::i32, 0), ir::ComparisonDirection::EQ);
    for (size_t k = 0; k < n; ++k) {
      Tensor init = get(op.operand(n + k), replicated(mesh_name, 0));
      Tensor& r = results[k];
      Tensor folded = b.emit1(combiners[k], {r, ir::broadcast_to(init, r.shape())});
      r = ir::select(ir::broadcast_to(first, r.shape()), folded, r);
    }
  }
  for (size_t i = 0; i < results.size(); ++i) {
    ctx_.forced_by = fmt::format("result {}", i);
    local_.insert_or_assign(op.result(i), reshard(ctx_, results[i], op.result(i)->type(), have[i], sm_.at(op.result(i)),
                                   i < combiners.size() ? combiners[i] : combiner.value_or(OpKind::Add)));
  }
}

bool Partitioner::in_place(const Op& op) const {
  if (!ir::has_trait(op.kind(), ir::kElementwise) || !op.regions().empty() || op.num_results() == 0) return false;
  const Value* r = op.result(0);
  if (!r->type().is_tensor()) return false;
  const auto rank = static_cast<size_t>(r->type().rank());
  const Sharding layout = normalized(sm_.at(r), rank);
  if (!layout.unreduced.empty() || is_maximal(gm_.mesh(layout.mesh))) return false;
  auto same = [&](const Value* v) {
    return v->type().is_tensor() && v->type().shape == r->type().shape && normalized(sm_.at(v), rank) == layout;
  };
  const std::vector<Value*> operands = op.operands(), results = op.results();
  return std::all_of(operands.begin(), operands.end(), same) && std::all_of(results.begin(), results.end(), same);
}

// The k largest of a row split in p pieces are among the p·k candidates of the pieces' own top k.
// The candidates come in device order, each piece's in top_k's order (descending, lower index
// first), so the second top_k's stable order keeps the lower global index first among equals, as
// the unsharded op does. Even splits with k within a piece only, and only where top_k is the
// operand's one reader.
bool Partitioner::top_k_by_pieces(const Op& op, Builder& b) {
  const Value* v = op.operand(0);
  const Type& t = v->type();
  auto r = static_cast<size_t>(t.rank());
  if (r == 0 || !t.is_tensor()) return false;
  const Sharding have = normalized(sm_.at(v), r);
  const auto& axes = have.dims[r - 1].axes;
  if (axes.empty() || !have.unreduced.empty()) return false;
  const Mesh& mesh = gm_.mesh(have.mesh);
  int64_t n = t.shape[r - 1], p = shard_count(mesh, axes), k = op.attrs().get<int64_t>("k");
  if (p <= 1 || n % p != 0 || k > n / p || k == 0) return false;
  Sharding whole_last = have;
  whole_last.dims[r - 1].axes.clear();
  // Where the rows are made whole anyway (already, or for another reader of the operand, such as a
  // sort of the same rows), the gather is paid once and the pieces' way would add to it.
  auto made = made_.find(v);
  if (made != made_.end() &&
      std::any_of(made->second.begin(), made->second.end(), [&](const auto& m) { return m.first == whole_last; }))
    return false;
  int readers = 0;
  std::function<void(const ir::Block&)> count = [&](const ir::Block& blk) {
    for (const auto& o : blk.ops()) {
      readers += static_cast<int>(std::count(o->operands().begin(), o->operands().end(), v));
      for (const auto& region : o->regions()) count(*region);
    }
  };
  count(gf_.body());
  if (readers != 1) return false;
  std::vector<int64_t> candidates = t.shape;
  candidates.back() = k * p;
  Type values_type(t.element, candidates), indices_type(ir::ElementType::i32, candidates);
  int64_t by_pieces = reshard_bytes(ctx_, values_type, have, whole_last) + reshard_bytes(ctx_, indices_type, have, whole_last);
  if (by_pieces >= reshard_bytes(ctx_, t, have, whole_last)) return false;
  ctx_.forced_by = "operand 0";
  std::vector<Tensor> mine = ir::top_k(local_.at(v), k);
  Tensor offset = piece_offset(ctx_, b, mesh, axes, n / p);
  Tensor global_index = mine[1] + ir::broadcast_to(offset, mine[1].shape());
  Tensor values = reshard(ctx_, mine[0], values_type, have, whole_last);
  Tensor indices = reshard(ctx_, global_index, indices_type, have, whole_last);
  std::vector<Tensor> best = ir::top_k(values, k);
  // Each winner's global index: the candidate index at its position, by a one-hot mask.
  std::vector<int64_t> hot_shape = best[1].shape();
  hot_shape.push_back(k * p);
  std::vector<int64_t> winners(r), all(r);
  for (size_t d = 0; d < r; ++d) winners[d] = all[d] = static_cast<int64_t>(d);
  all.back() = static_cast<int64_t>(r);
  Tensor hot = ir::compare(b.iota(Type(ir::ElementType::i32, hot_shape), static_cast<int64_t>(r)),
                           ir::broadcast_in_dim(best[1], hot_shape, winners), ir::ComparisonDirection::EQ);
  Tensor spread = ir::broadcast_in_dim(indices, hot_shape, all);
  Tensor picked = ir::reduce_sum(ir::select(hot, spread, ir::broadcast_to(b.scalar(ir::ElementType::i32, 0), hot_shape)),
                                 {static_cast<int64_t>(r)});
  std::vector<Tensor> results = {best[0], picked};
  for (size_t i = 0; i < 2; ++i) {
    ctx_.forced_by = fmt::format("result {}", i);
    local_.insert_or_assign(op.result(i), reshard(ctx_, results[i], op.result(i)->type(), whole_last, sm_.at(op.result(i))));
  }
  return true;
}

// The cost model's price, in bytes per device, of running `op` with `assign` (and `halo`):
// each operand brought to the layout it needs (nothing when that layout is made already), the
// halo exchanged, each result brought from the layout the op leaves to its propagated one.
int64_t Partitioner::cost(const Op& op, const FactorRule& rule, const FactorAxes& candidate, const Mesh& mesh,
             const std::vector<HaloDim>& halo) {
  // A reduce Tessera cannot combine across devices (no combiner per result) runs its reductions
  // whole whatever the candidate splits, as generic() emits it: costed so; unless it goes by
  // pieces (argmax, argmin), whose results are gathered partial results.
  FactorAxes whole;
  std::optional<size_t> by_pieces = pieces_factor(op, rule, candidate);
  if (op.kind() == OpKind::Reduce && result_combiners(op).empty() && !by_pieces) {
    whole = candidate;
    for (size_t f = 0; f < rule.num_factors(); ++f)
      if (rule.kinds[f] == FactorKind::kReduction) whole[f].clear();
  }
  const FactorAxes& assign = whole.empty() ? candidate : whole;
  std::vector<AxisRef> partial;
  for (size_t f = 0; f < rule.num_factors(); ++f)
    if (rule.kinds[f] == FactorKind::kReduction && !by_pieces)
      partial.insert(partial.end(), assign[f].begin(), assign[f].end());
  int64_t bytes = 0;
  for (size_t i = 0; i < op.operands().size(); ++i) {
    const Value* v = op.operand(i);
    auto rank = static_cast<size_t>(v->type().rank());
    Sharding want = normalized(compose(rule.operands[i], rule, assign, mesh), rank);
    for (const HaloDim& h : halo) {
      if (h.operand == i) want.dims[h.dim].axes = h.axes;
      if (i == 1 && h.kernel_dim >= 0) want.dims[static_cast<size_t>(h.kernel_dim)].axes = h.axes;
    }
    bytes += bring_bytes(v, want);
    if (v->type().is_tensor()) bytes += halo_bytes(halo, i, shape_of(v->type(), want), ir::info(v->type().element).bytes);
  }
  for (size_t i = 0; i < op.num_results(); ++i) {
    Sharding s = with_halo(compose(rule.results[i], rule, assign, mesh), partial, halo, partial_kind(op, sm_.at(op.result(i))));
    if (by_pieces) bytes += partials_bytes(op, i, s, assign[*by_pieces], mesh);
    bytes += memo_reshard_bytes(op.result(i), s, sm_.at(op.result(i)));
  }
  return bytes;
}

// Other assignments than the results' layout, where they move fewer bytes (ties keep the
// results'): an element-wise op whose operands agree with each other but not with the result
// reshards the one result, not every operand; a reduce reshards its small result, not its operand;
// a dot_general whose operands and result conflict takes, factor by factor, the layout of the
// tensor put first and a sub-axis of a conflicting axis (both operands then agree without
// gathering either); and a factor left whole replicates the small operands it splits.
int64_t Partitioner::choose_assignment(const Op& op, const FactorRule& rule, const Mesh& mesh, FactorAxes& assign) {
  struct Memo {  // for this op's candidates only
    Partitioner& p;
    explicit Memo(Partitioner& q) : p(q) { p.memoizing_ = true; }
    ~Memo() {
      p.memoizing_ = false;
      p.bytes_memo_.clear();
    }
  } memo(*this);
  int64_t best = cost(op, rule, assign, mesh);
  std::vector<FactorAxes> tried = {assign};
  auto consider = [&](FactorAxes other) {
    if (best == 0 || std::find(tried.begin(), tried.end(), other) != tried.end()) return;
    int64_t c = cost(op, rule, other, mesh);
    tried.push_back(other);
    if (c < best) best = c, assign = std::move(other);
  };
  const size_t n = op.operands().size();
  auto on_mesh = [&](const Value* v) { return v->type().is_tensor() && sm_.at(v).mesh == mesh.name; };
  auto tensor_value = [&](size_t t) -> const Value* { return t < n ? op.operand(t) : op.result(t - n); };
  // Each operand's layout, then every operand's (each factor as the first operand splitting it).
  for (size_t i = 0; i < n; ++i)
    if (on_mesh(op.operand(i))) consider(assign_factors(op, rule, mesh, sm_, i));
  if (n >= 2) consider(assign_factors(op, rule, mesh, sm_, kEveryOperand));
  // Each tensor first, the others after it (results, then operands): bounded to the first
  // kOrdered tensors, so a concatenate of hundreds of operands costs a handful of candidates.
  constexpr size_t kOrdered = 8;
  std::vector<size_t> tensors;
  for (size_t r = 0; r < op.num_results(); ++r) tensors.push_back(n + r);
  for (size_t i = 0; i < n; ++i) tensors.push_back(i);
  for (size_t k = 0; k < tensors.size() && k < kOrdered; ++k) {
    if (!on_mesh(tensor_value(tensors[k]))) continue;
    std::vector<size_t> order = {tensors[k]};
    for (size_t t : tensors)
      if (t != tensors[k]) order.push_back(t);
    consider(assign_in_order(op, rule, mesh, sm_, order));
  }
  // The best with one factor left whole: its operands gathered, where they are small.
  const FactorAxes chosen = assign;
  for (size_t f = 0; f < chosen.size(); ++f) {
    if (chosen[f].empty()) continue;
    FactorAxes other = chosen;
    other[f].clear();
    legalize(rule, mesh, other);
    consider(std::move(other));
  }
  return best;
}

int64_t Partitioner::memo_reshard_bytes(const Value* v, const Sharding& from, const Sharding& to) {
  if (!memoizing_) return reshard_bytes(ctx_, v->type(), from, to);
  for (const auto& [value, f, t, bytes] : bytes_memo_)
    if (value == v && f == from && t == to) return bytes;
  int64_t bytes = reshard_bytes(ctx_, v->type(), from, to);
  bytes_memo_.emplace_back(v, from, to, bytes);
  return bytes;
}

// A gather whose operand keeps its split indexed dimensions gathers locally and sums partial
// results; gathering the operand whole is kept where that moves no more.
void Partitioner::choose_local_gather(const Op& op, const FactorRule& rule, const std::vector<IndexedDim>& indexed,
                         FactorAxes& assign, const Mesh& mesh, std::vector<size_t>& judged) {
  for (const IndexedDim& d : indexed)
    if (!assign[static_cast<size_t>(d.factor)].empty()) judged.push_back(d.dim);
  if (judged.empty()) return;
  FactorAxes whole = assignment(op, factor_rule(op), mesh);
  whole.resize(rule.num_factors());
  int64_t gathered = cost(op, rule, whole, mesh), local = cost(op, rule, assign, mesh);
  if (gathered <= local || !local_gathers_) assign = std::move(whole);
  if (gathered > local && !local_gathers_) {
    judged.clear();
    cheaper_gather_ = fmt::format("a local gather summed after would move {} bytes per device, not {} "
                                  "(PartitionOptions::local_gathers)", local, gathered);
  }
}

// A slice, reverse, pad, concatenate, reduce_window or convolution along dimensions its operand
// arrives split on (by axes no factor uses) is a halo exchange where that moves less than
// gathering them.
std::vector<HaloDim> Partitioner::choose_halo(const Op& op, const FactorRule& rule, const FactorAxes& assign, const Mesh& mesh,
                                 std::vector<size_t>& judged) {
  std::vector<Sharding> have;
  for (const Value* v : op.operands()) have.push_back(normalized(sm_.at(v), static_cast<size_t>(v->type().rank())));
  const Value* r = op.result(0);
  std::vector<HaloDim> halo =
      op.kind() == OpKind::Convolution        ? conv_halo_dims(op, assign, have[0], have[1], mesh)
      : op.kind() == OpKind::SelectAndScatter ? select_scatter_halo_dims(op, assign, have[0], mesh)
                                              : halo_dims(op, rule, assign, have, normalized(sm_.at(r), static_cast<size_t>(r->type().rank())), mesh);
  for (const HaloDim& h : halo) judged.push_back(h.dim);
  if (halo.empty() || cost(op, rule, assign, mesh, halo) >= cost(op, rule, assign, mesh)) return {};
  return halo;
}

// The gathers just made for operand i (report entries from `first` on) that gather a dimension
// the op's rule cannot split while the operand arrives split: a silent full gather, where
// Shardy moves only a halo (slice, pad, concatenate, reverse), gathers locally (gather's indexed
// dimensions) or combines partial results (a reduce Tessera cannot combine).
void Partitioner::flag_full_gathers(const Op& op, size_t i, const FactorRule& rule, size_t first, const std::vector<size_t>& judged) {
  const Value* v = op.operand(i);
  const Sharding have = normalized(sm_.at(v), static_cast<size_t>(v->type().rank()));
  for (size_t k = first; k < info_.report.collectives.size(); ++k) {
    CollectiveRecord& r = info_.report.collectives[k];
    if (r.kind != "all_gather" || !r.avoidable.empty() || r.op == nullptr) continue;
    auto d = static_cast<size_t>(r.op->attrs().get<int64_t>("all_gather_dim"));
    if (d >= have.dims.size() || have.dims[d].axes.empty()) continue;
    // (the cheaper way was judged: operand 0's dimensions, or every exchanged operand's)
    bool exchanged = i == 0 || op.kind() == OpKind::Concatenate || (op.kind() == OpKind::ReduceWindow && i < op.num_results()) ||
                     (op.kind() == OpKind::SelectAndScatter && i == 1);
    if (exchanged && std::find(judged.begin(), judged.end(), d) != judged.end())
      continue;
    const std::vector<int>& factors = rule.operands[i][d];
    // (an argmax or argmin whose major-most reduced dimension, the first reduction factor, arrives
    // split goes by pieces unless the cost model finds gathering the operands cheaper: a judged
    // gather then, not a silent one)
    auto by_pieces = [&](size_t f) {
      if (pieces_refused_) return false;
      for (size_t g = 0; g < f; ++g)
        if (rule.kinds[g] == FactorKind::kReduction) return false;
      return pieces_order(op) != PiecesOrder::kNone;
    };
    bool splittable = std::any_of(factors.begin(), factors.end(), [&](int f) {
      return rule.kinds[static_cast<size_t>(f)] == FactorKind::kPassThrough ||
             (op.kind() != OpKind::Reduce || !result_combiners(op).empty() || by_pieces(static_cast<size_t>(f)));
    });
    if (splittable) continue;
    r.avoidable = fmt::format("silent full gather: {} reads dimension {} of operand {} whole (no rule splits it), "
                              "where a halo exchange, a local gather or combining partial results would move less",
                              op.name(), d, i);
  }
}

// Padding of an uneven split read by a reduction is set to the reduction's identity.
Tensor Partitioner::mask_padding(const Op& op, size_t i, Tensor t, const Type& global, const Sharding& s, Builder& b) {
  bool is_reduce_input = op.kind() == OpKind::Reduce && i < op.num_results();
  // (a scatter-add's updates: padding rows, whatever they hold, must add nothing)
  bool is_updates = op.kind() == OpKind::Scatter && i > op.num_results();
  if (op.kind() != OpKind::DotGeneral && op.kind() != OpKind::Convolution && !is_reduce_input && !is_updates)
    return t;
  auto mask = valid_mask(ctx_, b, global, s);
  if (!mask) return t;
  // (a reduce split along a reduced dimension is partial: its identity, see generic)
  Tensor fill = is_reduce_input ? identity_of(result_combiners(op)[i], t, b) : b.scalar(t.element(), 0);
  return ir::select(*mask, t, ir::broadcast_to(fill, t.shape()));
}

// iota along a split dimension counts from this device's offset.
void Partitioner::fix_iota(const Op& op, std::vector<Tensor>& results, const FactorRule& rule, const FactorAxes& assign,
              const Mesh& mesh, Builder& b) {
  if (op.kind() != OpKind::Iota) return;
  int64_t d = op.attrs().get<int64_t>("iota_dimension");
  const auto& fs = rule.results[0][static_cast<size_t>(d)];
  if (fs.empty() || assign[static_cast<size_t>(fs[0])].empty()) return;
  Tensor& r = results[0];
  Tensor off = piece_offset(ctx_, b, mesh, assign[static_cast<size_t>(fs[0])], r.shape()[static_cast<size_t>(d)]);
  r = r + ir::broadcast_to(ir::convert(off, r.element()), r.shape());
}

// The op again on local operands with local result types; attributes that hold sizes of split
// dimensions are rewritten to the local sizes.
std::vector<Tensor> Partitioner::emit(const Op& op, Builder& b, const std::vector<Tensor>& operands,
                         const std::vector<Type>& types, const FactorAxes* assign, const ir::AttrMap* given) {
  ir::AttrMap attrs = given ? *given : op.attrs();
  attrs.erase("sdy.sharding");
  if (assign) {
    const auto& in = operands.empty() ? std::vector<int64_t>{} : operands[0].shape();
    auto localize = [&](const std::string& name) {
      if (const auto* v = attrs.find<std::vector<int64_t>>(name)) {
        std::vector<int64_t> w = *v;
        for (size_t d = 0; d < w.size() && d < in.size(); ++d)
          if (w[d] == op.operand(0)->type().shape[d]) w[d] = in[d];
        attrs.set(name, w);
      }
    };
    if (op.kind() == OpKind::Slice) localize("limit_indices");
    if (op.kind() == OpKind::DynamicSlice || op.kind() == OpKind::Gather) localize("slice_sizes");
  }
  // A region that reads values from outside (async_start's body reads its operands) reads their
  // local pieces: the operand the op gets, or else the value whole.
  ir::ValueMap map;
  if (!op.regions().empty())
    for (const Value* v : ir::captures_of(op)) {
      auto at = std::find(op.operands().begin(), op.operands().end(), v);
      map[v] = at != op.operands().end()
                   ? operands[static_cast<size_t>(at - op.operands().begin())].value()
                   : get(v, replicated(sm_.at(v).mesh, static_cast<size_t>(v->type().rank()))).value();
    }
  auto fill = [&](Op& copy) {
    for (const auto& region : op.regions()) {
      ir::Block& blk = copy.add_region();
      for (const auto& arg : region->arguments()) map[arg.get()] = blk.add_argument(arg->type());
      for (const auto& inner : region->ops()) ir::clone_op(blk, *inner, map);
    }
  };
  return b.emit_with_regions(op.kind(), operands, std::move(attrs), types, fill);
}

}  // namespace tessera::spmd::partition_detail
