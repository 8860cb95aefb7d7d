// Shape rules of reductions, contractions, control flow, collectives and Shardy ops.
#include <algorithm>
#include <set>

#include "ir/shape_rules.h"
#include "support/strings.h"

namespace tessera::ir::shape_rules {
namespace {

using Types = std::vector<Type>;

Types same_as_operands(const ShapeQuery& q) { return {q.operands.begin(), q.operands.end()}; }

// Group size from replica_groups (its column count); 0 when there are no groups.
int64_t group_size(const ShapeQuery& q) {
  const IntMatrix* g = q.attrs.find<IntMatrix>("replica_groups");
  return g ? g->cols : 0;
}

int64_t dim_attr(const ShapeQuery& q, const std::string& name, int64_t rank) {
  const int64_t* d = q.attrs.find<int64_t>(name);
  if (d == nullptr) reject(q, "has no '{}' attribute", name);
  check_dimension(q, name, *d, rank);
  return *d;
}


}  // namespace

Types infer_Reduce(const ShapeQuery& q) {
  size_t n = q.operands.size();
  if (n == 0 || n % 2 != 0) reject(q, "expects N inputs and N init values; got {} operands", n);
  size_t k = n / 2;
  const auto* dims = q.attrs.find<std::vector<int64_t>>("dimensions");
  if (dims == nullptr) reject(q, "has no 'dimensions' attribute");
  const Type& first = q.operands[0];
  std::set<int64_t> reduced;
  for (int64_t d : *dims) {
    check_dimension(q, "dimensions", d, first.rank());
    if (!reduced.insert(d).second) reject(q, "dimensions repeats {}", d);
  }
  Types out;
  for (size_t i = 0; i < k; ++i) {
    const Type& in = q.operands[i];
    const Type& init = q.operands[k + i];
    if (in.shape != first.shape)
      reject(q, "input {} has shape {}, input 0 has {}", i, to_string(in), to_string(first));
    if (init.rank() != 0 || init.element != in.element)
      reject(q, "init value {} has type {}, must be a scalar of {} (input {}'s element type)", i,
             to_string(init), spelling(in.element), i);
    std::vector<int64_t> shape;
    for (int64_t d = 0; d < in.rank(); ++d)
      if (!reduced.count(d)) shape.push_back(in.shape[static_cast<size_t>(d)]);
    out.push_back(in.with_shape(shape));
  }
  return out;
}

Types infer_DotGeneral(const ShapeQuery& q) {
  const Type& lhs = q.operands[0];
  const Type& rhs = q.operands[1];
  const auto* dn = q.attrs.find<DotDims>("dot_dimension_numbers");
  if (dn == nullptr) reject(q, "has no dot_dimension_numbers");
  if (dn->lhs_batch.size() != dn->rhs_batch.size() ||
      dn->lhs_contracting.size() != dn->rhs_contracting.size())
    reject(q, "lhs and rhs list different numbers of batch or contracting dimensions");
  auto check_pairs = [&](const std::vector<int64_t>& l, const std::vector<int64_t>& r,
                         std::string_view what) {
    for (size_t i = 0; i < l.size(); ++i) {
      check_dimension(q, fmt::format("lhs {} dimension", what), l[i], lhs.rank());
      check_dimension(q, fmt::format("rhs {} dimension", what), r[i], rhs.rank());
      int64_t a = lhs.shape[static_cast<size_t>(l[i])], b = rhs.shape[static_cast<size_t>(r[i])];
      if (a != b)
        reject(q, "{} dimension {} of lhs {} has size {}, but dimension {} of rhs {} has size {}",
               what, l[i], to_string(lhs), a, r[i], to_string(rhs), b);
    }
  };
  check_pairs(dn->lhs_batch, dn->rhs_batch, "batch");
  check_pairs(dn->lhs_contracting, dn->rhs_contracting, "contracting");
  // A dimension is a batch or a contracting dimension once (C3, C4): read twice, it would be
  // contracted with itself.
  auto check_unique = [&](const std::vector<int64_t>& batch, const std::vector<int64_t>& contracting,
                          std::string_view side, std::string_view c) {
    std::vector<int64_t> all = batch;
    all.insert(all.end(), contracting.begin(), contracting.end());
    std::sort(all.begin(), all.end());
    if (auto dup = std::adjacent_find(all.begin(), all.end()); dup != all.end())
      reject(q, "{} dimension {} is listed twice among the batch and contracting dimensions ({})", side, *dup, c);
  };
  check_unique(dn->lhs_batch, dn->lhs_contracting, "lhs", "C3");
  check_unique(dn->rhs_batch, dn->rhs_contracting, "rhs", "C4");
  check_precision_config(q);
  auto free_dims = [](const Type& t, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    std::vector<int64_t> out;
    for (int64_t d = 0; d < t.rank(); ++d)
      if (std::find(a.begin(), a.end(), d) == a.end() && std::find(b.begin(), b.end(), d) == b.end())
        out.push_back(t.shape[static_cast<size_t>(d)]);
    return out;
  };
  std::vector<int64_t> shape;
  for (int64_t d : dn->lhs_batch) shape.push_back(lhs.shape[static_cast<size_t>(d)]);
  for (int64_t s : free_dims(lhs, dn->lhs_batch, dn->lhs_contracting)) shape.push_back(s);
  for (int64_t s : free_dims(rhs, dn->rhs_batch, dn->rhs_contracting)) shape.push_back(s);
  ElementType e = lhs.element;
  // C13 asks for one element type; a written result type takes mixed ones too, as XLA's dots and
  // JAX's preferred_element_type do (an i8 weight times bf16 activations into bf16).
  if (!q.declared.empty()) {
    e = q.declared[0].element;
  } else if (rhs.element != lhs.element) {
    reject(q, "operands have element types {} and {} (C13)", spelling(lhs.element), spelling(rhs.element));
  }
  return {Type(e, shape)};
}

Types infer_While(const ShapeQuery& q) { return same_as_operands(q); }
// if and case: the result types are the branches' (the verifier checks each branch's return
// against them, C2-C4), so they are read from the written types.
Types infer_If(const ShapeQuery& q) {
  if (q.operands.size() != 1 || q.operands[0] != Type(ElementType::i1, {}))
    reject(q, "pred must be tensor<i1>, not {}", q.operands.empty() ? "nothing" : to_string(q.operands[0]));
  return {q.declared.begin(), q.declared.end()};
}
Types infer_Case(const ShapeQuery& q) {
  if (q.operands.size() != 1 || q.operands[0] != Type(ElementType::i32, {}))
    reject(q, "index must be tensor<i32>, not {}", q.operands.empty() ? "nothing" : to_string(q.operands[0]));
  return {q.declared.begin(), q.declared.end()};
}
Types infer_OptimizationBarrier(const ShapeQuery& q) { return same_as_operands(q); }
Types infer_Return(const ShapeQuery&) { return {}; }

Types infer_AllReduce(const ShapeQuery& q) { return same_as_operands(q); }

// The group size depends on the collective's mode and on the process grid (with a channel and
// without global ids a group spans every partition), so a written result type is checked only for
// being a whole multiple along the dimension; without one the size is replica_groups' width.
Type gathered(const ShapeQuery& q, const Type& t, int64_t d, size_t i, bool scatter) {
  auto dim = static_cast<size_t>(d);
  if (const IntMatrix* g = q.attrs.find<IntMatrix>("replica_groups"); g && g->rows == 0 && g->cols > 0)
    reject(q, "replica_groups has groups of {} and no group", g->cols);
  if (i < q.declared.size()) {
    const Type& want = q.declared[i];
    bool ok = want.element == t.element && want.rank() == t.rank();
    for (size_t k = 0; ok && k < t.shape.size(); ++k) ok = k == dim || want.shape[k] == t.shape[k];
    if (ok) {
      int64_t big = scatter ? t.shape[dim] : want.shape[dim];
      int64_t small = scatter ? want.shape[dim] : t.shape[dim];
      ok = small > 0 ? big > 0 && big % small == 0 : big == 0;
      // Without a channel the groups are replica_groups' rows, so a full row's width is the
      // group size (with one, it depends on the grid: checked when the op runs).
      const IntMatrix* g = q.attrs.find<IntMatrix>("replica_groups");
      const auto* channel = q.attrs.find<ChannelHandle>("channel_handle");
      bool rows_full = g && g->rows > 0 && std::find(g->values.begin(), g->values.end(), -1) == g->values.end();
      if (ok && rows_full && (channel == nullptr || channel->handle <= 0)) ok = big == small * g->cols;
    }
    if (!ok)
      reject(q, "result {} is not operand {} {} a group along dimension {}", to_string(want),
             to_string(t), scatter ? "scattered over" : "gathered from", d);
    return want;
  }
  std::vector<int64_t> shape = t.shape;
  int64_t& size = shape[dim];
  int64_t n = group_size(q);
  if (n == 0) declared_result(q, i);
  if (scatter) {
    if (size % n != 0)
      reject(q, "scatter dimension {} of {} does not divide by the group size {}", d, to_string(t), n);
    size /= n;
  } else {
    size *= n;
  }
  return t.with_shape(shape);
}

Types infer_AllGather(const ShapeQuery& q) {
  Types out;
  for (size_t i = 0; i < q.operands.size(); ++i) {
    const Type& t = q.operands[i];
    out.push_back(gathered(q, t, dim_attr(q, "all_gather_dim", t.rank()), i, false));
  }
  return out;
}

Types infer_ReduceScatter(const ShapeQuery& q) {
  const Type& t = q.operands[0];
  return {gathered(q, t, dim_attr(q, "scatter_dimension", t.rank()), 0, true)};
}

Types infer_AllToAll(const ShapeQuery& q) {
  Types out;
  for (const Type& in : q.operands) {
    int64_t split = dim_attr(q, "split_dimension", in.rank());
    int64_t concat = dim_attr(q, "concat_dimension", in.rank());
    const int64_t* count = q.attrs.find<int64_t>("split_count");
    if (count == nullptr || *count < 1) reject(q, "needs a positive split_count");
    Type t = in;
    if (t.shape[static_cast<size_t>(split)] % *count != 0)
      reject(q, "split dimension {} of {} does not divide by split_count {}", split, to_string(in),
             *count);
    t.shape[static_cast<size_t>(split)] /= *count;
    t.shape[static_cast<size_t>(concat)] *= *count;
    out.push_back(t);
  }
  return out;
}

Types infer_CollectivePermute(const ShapeQuery& q) {
  const IntMatrix* pairs = q.attrs.find<IntMatrix>("source_target_pairs");
  if (pairs == nullptr || (pairs->rows > 0 && pairs->cols != 2))
    reject(q, "needs source_target_pairs of shape Nx2");
  return {q.operands[0]};
}
// With has_dynamic_root the last operand lists, per data operand, the group position of its root.
Types infer_CollectiveBroadcast(const ShapeQuery& q) {
  if (q.operands.empty()) reject(q, "expects at least one operand");
  if (!q.attrs.get_or<bool>("has_dynamic_root", false)) return same_as_operands(q);
  const Type& roots = q.operands.back();
  auto data = static_cast<int64_t>(q.operands.size()) - 1;
  if (data < 1 || roots.rank() != 1 || roots.shape[0] != data || !is_integer(roots.element))
    reject(q, "has_dynamic_root needs a last operand of {} integer roots, got {}", data,
           to_string(roots));
  return {q.operands.begin(), q.operands.end() - 1};
}
Types infer_CollectiveReduce(const ShapeQuery& q) { return {q.operands[0]}; }

Types infer_ShardingConstraint(const ShapeQuery& q) {
  if (!q.attrs.has("sharding")) reject(q, "has no sharding");
  return {q.operands[0]};
}
Types infer_Reshard(const ShapeQuery& q) {
  if (!q.attrs.has("sharding")) reject(q, "has no sharding");
  return {q.operands[0]};
}
Types infer_ManualComputation(const ShapeQuery& q) {
  const auto* in = q.attrs.find<ShardingList>("in_shardings");
  const auto* out = q.attrs.find<ShardingList>("out_shardings");
  if (in == nullptr || out == nullptr) reject(q, "needs in_shardings and out_shardings");
  if (in->size() != q.operands.size())
    reject(q, "has {} in_shardings for {} operands", in->size(), q.operands.size());
  if (out->size() != q.declared.size())
    reject(q, "has {} out_shardings for {} results", out->size(), q.declared.size());
  return {q.declared.begin(), q.declared.end()};
}


// Shardy's explicit collectives: on the global value each is the identity (it moves the layout from
// the operand's to out_sharding). Which axes the mesh has is the verifier's to check (it sees the
// module); here the ranks: out_sharding and the per-dimension axis lists have one entry per
// dimension, and all_to_all's dimensions are in range.
namespace {

const Sharding& sharding_attr(const ShapeQuery& q, const std::string& name) {
  const Sharding* s = q.attrs.find<Sharding>(name);
  if (s == nullptr) reject(q, "has no '{}' attribute", name);
  return *s;
}

Types layout_change(const ShapeQuery& q, std::initializer_list<const char*> per_dim) {
  const Type& t = q.operands[0];
  const Sharding& out = sharding_attr(q, "out_sharding");
  if (static_cast<int64_t>(out.dims.size()) != t.rank())
    reject(q, "out_sharding has {} dimensions for {}", out.dims.size(), to_string(t));
  for (const char* name : per_dim) {
    const Sharding& axes = sharding_attr(q, name);
    if (static_cast<int64_t>(axes.dims.size()) != t.rank())
      reject(q, "{} has {} entries for {}", name, axes.dims.size(), to_string(t));
  }
  return {t};
}

}  // namespace

Types infer_SdyAllGather(const ShapeQuery& q) { return layout_change(q, {"gathering_axes"}); }
Types infer_SdyAllSlice(const ShapeQuery& q) { return layout_change(q, {"slicing_axes"}); }
Types infer_SdyAllReduce(const ShapeQuery& q) {
  const Sharding& axes = sharding_attr(q, "reduction_axes");
  if (axes.dims.size() != 1) reject(q, "reduction_axes must be one list of axes");
  if (const auto* kind = q.attrs.find<std::string>("reduction_kind"); kind && !reduction_kind(*kind))
    reject(q, "reduction_kind '{}' is not sum, max or min", *kind);
  return layout_change(q, {});
}
Types infer_SdyReduceScatter(const ShapeQuery& q) { return layout_change(q, {"reduction_axes"}); }
Types infer_SdyAllToAll(const ShapeQuery& q) {
  Types out = layout_change(q, {});
  const Sharding& params = sharding_attr(q, "params");
  const IntMatrix* dims = q.attrs.find<IntMatrix>("param_dims");
  if (dims == nullptr || (dims->rows > 0 && dims->cols != 2))
    reject(q, "needs param_dims of shape Nx2 (source and target dimension of each parameter)");
  if (params.dims.empty() || static_cast<int64_t>(params.dims.size()) != dims->rows)
    reject(q, "has {} parameter axis lists and {} parameter dimension pairs", params.dims.size(),
           dims->rows);
  for (const auto& row : dims->to_rows()) {
    check_dimension(q, "param_dims", row[0], q.operands[0].rank());
    check_dimension(q, "param_dims", row[1], q.operands[0].rank());
    if (row[0] == row[1]) reject(q, "a parameter moves axes from dimension {} to itself", row[0]);
  }
  return out;
}
Types infer_SdyCollectivePermute(const ShapeQuery& q) { return layout_change(q, {}); }
Types infer_SdyConstant(const ShapeQuery& q) {
  const Literal* v = q.attrs.find<Literal>("value");
  if (v == nullptr) reject(q, "has no 'value' attribute");
  return {v->type()};
}
// A barrier that lets layouts through both ways would be no barrier (Shardy refuses BOTH too).
Types infer_PropagationBarrier(const ShapeQuery& q) {
  const auto* dir = q.attrs.find<std::string>("allowed_direction");
  if (dir == nullptr) reject(q, "has no allowed_direction (FORWARD, BACKWARD or NONE)");
  if (*dir != "FORWARD" && *dir != "BACKWARD" && *dir != "NONE")
    reject(q, "allowed_direction is {}; it must be FORWARD, BACKWARD or NONE", *dir);
  return {q.operands[0]};
}
Types infer_DataFlowEdge(const ShapeQuery& q) { return {q.operands[0]}; }
Types infer_ShardingGroup(const ShapeQuery& q) {
  const int64_t* id = q.attrs.find<int64_t>("group_id");
  if (id == nullptr) reject(q, "has no group_id");
  return {};
}

}  // namespace tessera::ir::shape_rules
