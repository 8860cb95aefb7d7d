// Sharding propagation (see propagate.h).
#include "spmd/propagate.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "spmd/factor_rule.h"
#include "spmd/mesh_math.h"
#include "support/error.h"

namespace tessera::spmd {

using ir::AxisRef;
using ir::Op;
using ir::OpKind;
using ir::Sharding;
using ir::Value;

const Sharding& ShardingMap::at(const Value* v) const {
  auto it = values.find(v);
  TESSERA_CHECK(it != values.end(), "value without a sharding");
  return it->second;
}

namespace {

void walk(const ir::Block& b, const std::function<void(const Op&)>& f) {
  for (const auto& op : b.ops()) {
    f(*op);
    if (op->kind() == OpKind::ManualComputation) continue;  // its body is local
    for (const auto& r : op->regions()) walk(*r, f);
  }
}

void find_meshes(const ir::Sharding& s, const ir::Module& m, std::string& out) {
  if (!out.empty() || s.mesh.empty()) return;
  const ir::Mesh* mesh = m.find_mesh(s.mesh);
  if (mesh && !is_maximal(*mesh)) out = s.mesh;
}

Sharding open_sharding(size_t rank) {
  Sharding s;
  s.dims.resize(rank);
  for (auto& d : s.dims) d.open = true;
  return s;
}

// Round of an op by op priority: 0 element-wise and layout, 1 contractions and reductions, 2 rest.
int op_round(const Op& op) {
  if (ir::has_trait(op.kind(), ir::kElementwise)) return 0;
  switch (op.kind()) {
    case OpKind::ShardingConstraint: case OpKind::BroadcastInDim: case OpKind::Transpose:
    case OpKind::Convert: case OpKind::OptimizationBarrier: case OpKind::While: case OpKind::If:
    case OpKind::Case: case OpKind::PropagationBarrier: case OpKind::DataFlowEdge:
      return 0;
    case OpKind::DotGeneral: case OpKind::Reduce: case OpKind::Convolution:
      return 1;
    default:
      return 2;
  }
}

class Propagator {
 public:
  Propagator(const ir::Module& m, const ir::Function& fn) : m_(m), fn_(fn) {}

  ShardingMap run() {
    mesh_ = function_mesh(m_, fn_);
    seed();
    std::vector<const Op*> ops;
    walk(fn_.body(), [&](const Op& op) {
      ops.push_back(&op);
      if (op.kind() == OpKind::ShardingGroup) groups_[op.attrs().get<int64_t>("group_id")].push_back(op.operand(0));
    });
    for (int64_t level : priority_levels()) {
      level_ = level;
      for (int round = 0; round <= 2; ++round) {
        for (int sweep = 0; sweep < 64; ++sweep) {
          bool changed = false;
          for (const Op* op : ops)
            if (op_round(*op) <= round) changed |= step(*op);
          for (auto it = ops.rbegin(); it != ops.rend(); ++it)
            if (op_round(**it) <= round) changed |= step(**it);
          for (const auto& [id, members] : groups_) changed |= step_group(members);
          if (!changed) break;
        }
      }
    }
    // Close everything; unreached values are replicated on the function's mesh.
    for (auto& [v, s] : map_.values) {
      if (s.mesh.empty()) s.mesh = mesh_;
      for (auto& d : s.dims) {
        d.open = false;
        d.priority.reset();
      }
    }
    return std::move(map_);
  }

 private:
  std::vector<int64_t> priority_levels() const {
    std::set<int64_t> levels;
    for (const auto& [v, s] : map_.values)
      for (const auto& d : s.dims)
        if (d.priority) levels.insert(*d.priority);
    std::vector<int64_t> out(levels.begin(), levels.end());
    out.push_back(INT64_MAX);  // dimensions without priority come last
    return out;
  }

  void set(const Value* v, std::optional<Sharding> s, const std::string& what) {
    size_t rank = static_cast<size_t>(v->type().rank());
    if (!s) {
      map_.values.emplace(v, open_sharding(rank));
      return;
    }
    const ir::Mesh& mesh = m_.mesh(s->mesh);
    if (!is_maximal(mesh)) ir::validate(*s, mesh, v->type(), what);
    map_.values[v] = *s;
  }

  void seed() {
    for (size_t i = 0; i < fn_.num_parameters(); ++i)
      set(fn_.parameter(i), fn_.arg_sharding(i), fmt::format("argument {} of @{}", i, fn_.name()));
    walk(fn_.body(), [&](const Op& op) {
      for (const auto& r : op.regions())
        for (const auto& a : r->arguments()) set(a.get(), std::nullopt, "");
      const auto* list = op.attrs().find<ir::ShardingList>("sdy.sharding");
      const auto* one = op.attrs().find<Sharding>("sharding");
      const auto* outs = op.attrs().find<ir::ShardingList>("out_shardings");
      const auto* explicit_out = op.attrs().find<Sharding>("out_sharding");
      for (size_t i = 0; i < op.num_results(); ++i) {
        std::optional<Sharding> s;
        if (list && i < list->size()) s = (*list)[i];
        if (one && (op.kind() == OpKind::ShardingConstraint || op.kind() == OpKind::Reshard ||
                    op.kind() == OpKind::DataFlowEdge))
          s = *one;
        if (outs && op.kind() == OpKind::ManualComputation && i < outs->size()) s = (*outs)[i];
        if (explicit_out) s = *explicit_out;  // Shardy's explicit collectives
        set(op.result(i), s, fmt::format("result {} of {} at {}", i, op.name(), where(op)));
      }
    });
    // The operand of sdy.all_reduce / sdy.reduce_scatter is read as Shardy's programs mean it: a
    // partial result, laid out like the output (less the scattered axes), unreduced along the
    // summed axes, and along those a later reduction sums its result over (a chain of reductions
    // over one axis each; taken from the last op back). An op computes it so; a function argument
    // so laid out holds, on each device, one of the summands (Shardy's executable tests hand the
    // devices different ones; a whole array given to `tessera run` is split as the value on the
    // first device and zeros on the others). A value whose layout is written, or another
    // collective's result, keeps its layout, and the op is then an identity on it. Sums only: the
    // runtime does not split an array into a max's or min's pieces.
    std::vector<const Op*> reductions;
    walk(fn_.body(), [&](const Op& op) {
      if (op.kind() == OpKind::SdyAllReduce || op.kind() == OpKind::SdyReduceScatter) reductions.push_back(&op);
    });
    for (auto it = reductions.rbegin(); it != reductions.rend(); ++it) {
      const Op& op = **it;
      const Value* x = op.operand(0);
      const Op* def = x->defining_op();
      Sharding partial = partial_operand(op);
      const Sharding& result = map_.values.at(op.result(0));
      if (result.unreduced_kind == partial.unreduced_kind)
        for (const AxisRef& a : result.unreduced)
          if (std::find(partial.unreduced.begin(), partial.unreduced.end(), a) == partial.unreduced.end())
            partial.unreduced.push_back(a);
      if (!def) {
        const bool argument = x->owner_block() == &fn_.body();
        if (!argument || partial.unreduced_kind != ir::ReductionKind::kSum || !map_.values.at(x).unreduced.empty()) continue;
      } else if (def->kind() != OpKind::SdyAllReduce && def->kind() != OpKind::SdyReduceScatter &&
                 (def->attrs().has("sdy.sharding") || ir::has_trait(def->kind(), ir::kShardy))) {
        continue;
      }
      map_.values[x] = partial;
    }
    // A declared function result seeds the value returned, where nothing else was written, as
    // open dimensions: the value may still be computed on finer pieces than the result declares
    // (then the return gathers it once, instead of every operand being gathered for it).
    const Op* ret = fn_.body().terminator();
    for (size_t i = 0; ret && i < ret->operands().size(); ++i) {
      auto declared = fn_.result_sharding(i);
      Sharding& s = map_.values.at(ret->operand(i));
      bool unwritten = s.mesh.empty();
      if (!declared || !unwritten || is_maximal(m_.mesh(declared->mesh))) continue;
      s = *declared;
      for (auto& d : s.dims) d.open = true;
    }
  }

  static std::string where(const Op& op) {
    return op.loc.line > 0 ? fmt::format("{}:{}", op.loc.line, op.loc.column) : std::string("(built)");
  }

  // The axes a dimension offers at the current priority level.
  const std::vector<AxisRef>* offered(const ir::DimSharding& d) const {
    static const std::vector<AxisRef> none;
    if (d.priority && *d.priority > level_) return &none;
    if (!d.priority && level_ != INT64_MAX) return &none;
    return &d.axes;
  }

  using Tensors = std::vector<std::pair<const Value*, const TensorFactors*>>;

  // One op: merge each factor's candidates and extend the open dimensions. Returns whether
  // anything changed.
  bool step(const Op& op) {
    FactorRule rule = factor_rule(op);
    if (rule.num_factors() == 0) return false;
    Tensors tensors;
    for (size_t i = 0; i < op.operands().size(); ++i) tensors.push_back({op.operand(i), &rule.operands[i]});
    for (size_t i = 0; i < op.num_results(); ++i) tensors.push_back({op.result(i), &rule.results[i]});
    if (op.kind() == OpKind::While) {
      // Region arguments and the body's returned values are laid out like the loop's values.
      for (const auto& r : op.regions())
        for (size_t i = 0; i < r->arguments().size(); ++i) tensors.push_back({r->argument(i), &rule.results[i]});
      const Op* ret = op.region(1).terminator();
      for (size_t i = 0; ret && i < ret->operands().size(); ++i) tensors.push_back({ret->operand(i), &rule.results[i]});
    }
    if (op.kind() == OpKind::If || op.kind() == OpKind::Case)  // each branch returns results alike
      for (const auto& r : op.regions())
        for (size_t i = 0; i < r->terminator()->operands().size(); ++i)
          tensors.push_back({r->terminator()->operand(i), &rule.results[i]});
    // A propagation barrier reads layouts on one side and writes them on the other. A broadcast's
    // operand does not lay out its much larger result: the result takes its users' layout, and the
    // operand is gathered (it is small) rather than the result being re-laid out.
    std::vector<bool> reads(tensors.size(), true), writes(tensors.size(), true);
    if (op.kind() == OpKind::BroadcastInDim &&
        op.result(0)->type().num_elements() >= 2 * op.operand(0)->type().num_elements())
      reads[0] = false;
    if (op.kind() == OpKind::PropagationBarrier) {
      const auto& dir = op.attrs().get<std::string>("allowed_direction");
      if (dir == "NONE") return false;
      bool forward = dir == "FORWARD";  // operand to result; else BACKWARD, result to operand
      reads = {forward, !forward};
      writes = {!forward, forward};
    }
    return flow(rule, tensors, reads, writes);
  }

  // A sharding group: its values are laid out alike, as if one identity op joined them.
  bool step_group(const std::vector<const Value*>& members) {
    FactorRule rule;
    const auto& shape = members[0]->type().shape;
    TensorFactors factors(shape.size());
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != 1) factors[d] = {rule.add(shape[d])};
    if (rule.num_factors() == 0) return false;
    Tensors tensors;
    for (const Value* v : members) tensors.push_back({v, &factors});
    std::vector<bool> all(tensors.size(), true);
    return flow(rule, tensors, all, all);
  }

  // The tensors of one op (or group) under its rule: the factor candidates of those it reads,
  // merged, extend the open dimensions of those it writes.
  bool flow(const FactorRule& rule, const Tensors& tensors, const std::vector<bool>& reads,
            const std::vector<bool>& writes) {
    // An op placed on one device (a maximal mesh) is a barrier: layouts do not flow through it.
    for (auto& [v, tf] : tensors) {
      const Sharding& s = map_.values.at(v);
      if (!s.mesh.empty() && is_maximal(m_.mesh(s.mesh))) return false;
    }
    // The op's mesh: the first one a tensor names.
    std::string mesh_name;
    for (auto& [v, tf] : tensors)
      if (!map_.values.at(v).mesh.empty()) {
        mesh_name = map_.values.at(v).mesh;
        break;
      }
    if (mesh_name.empty()) return false;
    const ir::Mesh& mesh = m_.mesh(mesh_name);
    if (is_maximal(mesh)) return false;

    // Candidates per factor, merged as they come.
    std::vector<std::optional<std::vector<AxisRef>>> merged(rule.num_factors());
    for (size_t t = 0; t < tensors.size(); ++t) {
      auto [v, tf] = tensors[t];
      if (!reads[t]) continue;
      const Sharding& s = map_.values.at(v);
      if (s.mesh != mesh_name || s.dims.size() != tf->size()) continue;
      FactorAxes axes(rule.num_factors());
      for (size_t d = 0; d < tf->size(); ++d) project_dim(*offered(s.dims[d]), (*tf)[d], rule, mesh, axes);
      for (size_t f = 0; f < rule.num_factors(); ++f) {
        bool present = false;
        for (size_t d = 0; d < tf->size(); ++d)
          present |= std::find((*tf)[d].begin(), (*tf)[d].end(), static_cast<int>(f)) != (*tf)[d].end();
        if (!present) continue;
        if (!merged[f]) {
          merged[f] = axes[f];
          continue;
        }
        merged[f] = merge(*merged[f], axes[f]);
      }
    }
    FactorAxes result(rule.num_factors());
    for (size_t f = 0; f < rule.num_factors(); ++f)
      if (merged[f]) result[f] = *merged[f];
    drop_reused_axes(result, mesh);

    bool changed = false;
    for (size_t t = 0; t < tensors.size(); ++t) {
      auto [v, tf] = tensors[t];
      if (!writes[t]) continue;
      Sharding& s = map_.values.at(v);
      if (!s.mesh.empty() && s.mesh != mesh_name) continue;
      for (size_t d = 0; d < tf->size(); ++d) {
        if (!s.dims[d].open) continue;
        std::vector<AxisRef> axes = compose_dim((*tf)[d], rule, result, mesh);
        const auto& cur = s.dims[d].axes;
        if (axes.size() <= cur.size() || !std::equal(cur.begin(), cur.end(), axes.begin())) continue;
        if (uses_any(s, d, axes, mesh)) continue;
        s.mesh = mesh_name;
        s.dims[d].axes = axes;
        changed = true;
      }
    }
    return changed;
  }

  // Agreeing candidates: the longer; disagreeing: the longest common prefix.
  static std::vector<AxisRef> merge(const std::vector<AxisRef>& a, const std::vector<AxisRef>& b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    if (n == a.size()) return b;
    if (n == b.size()) return a;
    return {a.begin(), a.begin() + static_cast<ptrdiff_t>(n)};
  }

  // An axis serves one factor of an op: a later factor that names it again loses it.
  static void drop_reused_axes(FactorAxes& axes, const ir::Mesh& mesh) {
    std::vector<AxisRef> used;
    for (auto& fa : axes) {
      size_t keep = 0;
      while (keep < fa.size() && std::none_of(used.begin(), used.end(), [&](const AxisRef& u) {
               return overlaps(u, fa[keep], mesh);
             }))
        ++keep;
      fa.erase(fa.begin() + static_cast<ptrdiff_t>(keep), fa.end());
      used.insert(used.end(), fa.begin(), fa.end());
    }
  }

  // Whether another dimension of s already uses one of `axes`.
  static bool uses_any(const Sharding& s, size_t dim, const std::vector<AxisRef>& axes, const ir::Mesh& mesh) {
    for (size_t d = 0; d < s.dims.size(); ++d) {
      if (d == dim) continue;
      for (const AxisRef& a : s.dims[d].axes)
        for (const AxisRef& b : axes)
          if (overlaps(a, b, mesh)) return true;
    }
    for (const AxisRef& a : s.replicated)
      for (const AxisRef& b : axes)
        if (overlaps(a, b, mesh)) return true;
    return false;
  }

  const ir::Module& m_;
  const ir::Function& fn_;
  ShardingMap map_;
  std::map<int64_t, std::vector<const Value*>> groups_;  // sdy.sharding_group's members by group_id
  std::string mesh_;
  int64_t level_ = INT64_MAX;
};

}  // namespace

Sharding partial_operand(const Op& op) {
  Sharding s = op.attrs().get<Sharding>("out_sharding");
  const Sharding& axes = op.attrs().get<Sharding>("reduction_axes");
  for (size_t d = 0; d < axes.dims.size(); ++d)
    for (const AxisRef& a : axes.dims[d].axes) {
      if (op.kind() == OpKind::SdyReduceScatter && d < s.dims.size()) {
        auto& dims = s.dims[d].axes;
        dims.erase(std::remove(dims.begin(), dims.end(), a), dims.end());
      }
      s.unreduced.push_back(a);
    }
  s.unreduced_kind = ir::ReductionKind::kSum;
  if (const auto* kind = op.attrs().find<std::string>("reduction_kind"); kind && !s.unreduced.empty())
    s.unreduced_kind = ir::reduction_kind(*kind).value_or(ir::ReductionKind::kSum);  // verified by the shape rule
  for (auto& d : s.dims) d.open = false;
  return s;
}

std::string function_mesh(const ir::Module& module, const ir::Function& fn) {
  std::string out;
  for (size_t i = 0; i < fn.num_parameters(); ++i)
    if (auto s = fn.arg_sharding(i)) find_meshes(*s, module, out);
  for (size_t i = 0; i < fn.result_types.size(); ++i)
    if (auto s = fn.result_sharding(i)) find_meshes(*s, module, out);
  walk(fn.body(), [&](const Op& op) {
    if (const auto* list = op.attrs().find<ir::ShardingList>("sdy.sharding"))
      for (const auto& s : *list) find_meshes(s, module, out);
    if (const auto* s = op.attrs().find<Sharding>("sharding")) find_meshes(*s, module, out);
    if (const auto* list = op.attrs().find<ir::ShardingList>("in_shardings"))
      for (const auto& s : *list) find_meshes(s, module, out);
  });
  if (out.empty())
    for (const auto& m : module.meshes)
      if (!is_maximal(m)) return m.name;
  return out;
}

int64_t devices_needed(const ir::Module& module, const ir::Function& fn) {
  std::set<std::string> names;
  std::set<const ir::Function*> seen;
  auto add = [&](const Sharding& s) {
    if (!s.mesh.empty()) names.insert(s.mesh);
  };
  std::function<void(const ir::Function&)> visit_fn;
  std::function<void(const ir::Block&)> visit = [&](const ir::Block& b) {
    for (const auto& op : b.ops()) {
      const ir::AttrMap& a = op->attrs();
      for (const char* k : {"sdy.sharding", "in_shardings", "out_shardings"})
        if (const auto* list = a.find<ir::ShardingList>(k))
          for (const Sharding& s : *list) add(s);
      for (const char* k : {"sharding", "out_sharding"})
        if (const auto* s = a.find<Sharding>(k)) add(*s);
      if (const auto* callee = a.find<std::string>("callee"); callee && op->kind() == OpKind::Call)
        if (const ir::Function* f = module.find_function(*callee)) visit_fn(*f);
      for (const auto& r : op->regions()) visit(*r);
    }
  };
  visit_fn = [&](const ir::Function& f) {
    if (!seen.insert(&f).second) return;
    for (size_t i = 0; i < f.num_parameters(); ++i)
      if (auto s = f.arg_sharding(i)) add(*s);
    for (size_t i = 0; i < f.result_types.size(); ++i)
      if (auto s = f.result_sharding(i)) add(*s);
    visit(f.body());
  };
  visit_fn(fn);
  if (std::string own = function_mesh(module, fn); !own.empty()) names.insert(own);
  int64_t n = 1;
  for (const std::string& name : names) {
    const ir::Mesh* m = module.find_mesh(name);
    if (m == nullptr) continue;
    if (!is_maximal(*m)) n = std::max(n, m->num_devices());
    else n = std::max(n, m->device_ids[0] + 1);
  }
  return n;
}

ShardingMap propagate(const ir::Module& module, const ir::Function& fn) {
  return Propagator(module, fn).run();
}

void annotate(ir::Function& fn, const ShardingMap& map) {
  for (size_t i = 0; i < fn.num_parameters(); ++i) fn.arg_attrs[i].set("sdy.sharding", map.at(fn.parameter(i)));
  std::function<void(ir::Block&)> visit = [&](ir::Block& b) {
    for (const auto& op : b.ops()) {
      if (op->kind() == OpKind::DataFlowEdge) {  // its layout is its own attribute, as Shardy keeps it
        op->attrs().set("sharding", map.at(op->result(0)));
      } else if (op->num_results() > 0 && op->kind() != OpKind::ShardingConstraint &&
                 op->kind() != OpKind::Reshard && op->kind() != OpKind::ManualComputation) {
        ir::ShardingList list;
        for (Value* r : op->results()) list.push_back(map.at(r));
        op->attrs().set("sdy.sharding", list);
      }
      if (op->kind() == OpKind::ManualComputation) continue;
      for (const auto& r : op->regions()) visit(*r);
    }
  };
  visit(fn.body());
  const Op* ret = fn.body().terminator();
  for (size_t i = 0; ret && i < ret->operands().size(); ++i)
    if (!fn.result_sharding(i)) fn.set_result_sharding(i, map.at(ret->operand(i)));
}

}  // namespace tessera::spmd
