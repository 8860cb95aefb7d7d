// The fragmentation pass (rules in fragments.h): give every op a mesh, group consecutive ops into
// fragments, then build each fragment as a function of its own module, importing what it uses from
// outside — parameters, values of earlier fragments (a transfer when on another mesh), and cheap
// values, which are cloned in.
#include "mpmd/fragments.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/ranges.h>

#include "interp/interpreter.h"
#include "ir/clone.h"
#include "spmd/propagate.h"
#include "support/error.h"

namespace tessera::mpmd {

using ir::Op;
using ir::OpKind;
using ir::Value;
using support::fail;

const ir::Function& Fragment::fn() const { return *module->find_function(function); }

std::string Fragment::describe() const {
  return fmt::format("fragment {} ({})", index, origin ? origin->to_string() : std::string("glue"));
}

namespace {

class Cutter {
 public:
  Cutter(const ir::Module& module, const ir::Function& whole, const std::vector<MeshSpec>& meshes,
         const Assignment& assignment, const FragmentOptions& options)
      : module_(module), whole_(whole), assignment_(assignment), options_(options) {
    plan_.meshes = meshes;
  }

  FragmentPlan run() {
    check_meshes();
    for (const MeshSpec& m : plan_.meshes)  // the layouts fragment boundaries take (rule 7)
      if (!m.spmd_mesh.empty()) {
        layouts_ = spmd::propagate(module_, whole_);
        break;
      }
    collect();
    assign_named();
    assign_unnamed();
    group();
    build();
    return std::move(plan_);
  }

 private:
  const ir::Module& module_;
  const ir::Function& whole_;
  const Assignment& assignment_;
  FragmentOptions options_;
  FragmentPlan plan_;

  std::vector<const Op*> ops_;  // top level, program order, the return left out
  std::unordered_map<const Op*, size_t> position_;
  std::unordered_map<const Value*, std::vector<size_t>> users_;  // op positions, program order
  std::unordered_set<const Op*> cheap_;
  std::vector<std::optional<size_t>> mesh_;  // per op position
  std::vector<std::string> param_reader_;    // who fixed a parameter's mesh, for messages
  std::vector<size_t> fragment_of_;          // per op position
  std::optional<spmd::ShardingMap> layouts_;  // the whole step propagated, with spmd meshes only

  // Rule 7: a boundary value's layout on `mesh`: the whole step's propagated sharding, closed and
  // without pending reductions, when it is on that mesh's spmd mesh; none otherwise.
  std::optional<ir::Sharding> layout(const Value* v, size_t mesh) const {
    if (!layouts_ || !layouts_->values.count(v)) return std::nullopt;
    ir::Sharding s = layouts_->at(v);
    if (s.mesh != plan_.meshes[mesh].spmd_mesh) return std::nullopt;
    s.unreduced.clear();
    s.unreduced_kind = ir::ReductionKind::kSum;
    for (ir::DimSharding& d : s.dims) {
      d.open = false;
      d.priority.reset();
    }
    return s;
  }

  bool is_param(const Value* v) const { return v->defining_op() == nullptr && v->owner_block() == &whole_.body(); }
  bool is_cheap(const Value* v) const { return v->defining_op() && cheap_.count(v->defining_op()); }
  const std::string& mesh_name(size_t m) const { return plan_.meshes[m].name; }

  std::string describe(size_t pos) const {
    const Op& op = *ops_[pos];
    auto o = origin_of(op);
    return fmt::format("op {} ({}{})", pos, op.name(), o ? " of named computation '" + o->to_string() + "'" : "");
  }

  void check_meshes() {
    if (plan_.meshes.empty()) fail("fragment @{}: the program has no meshes", whole_.name());
    std::set<std::string> names;
    for (const MeshSpec& m : plan_.meshes) {
      if (!names.insert(m.name).second) fail("fragment @{}: mesh '{}' is declared twice", whole_.name(), m.name);
      if (m.devices < 1) fail("mesh '{}' has {} devices; a mesh needs at least one", m.name, m.devices);
      if (m.spmd_mesh.empty()) {
        if (m.devices != 1)
          fail("mesh '{}' has {} devices but no spmd mesh to shard its fragments over", m.name, m.devices);
        continue;
      }
      const ir::Mesh* sm = module_.find_mesh(m.spmd_mesh);
      if (sm == nullptr) fail("mesh '{}': spmd mesh @{} is not in module", m.name, m.spmd_mesh);
      if (sm->num_devices() != m.devices)
        fail("mesh '{}' has {} devices, but its spmd mesh @{} has {}", m.name, m.devices, m.spmd_mesh,
             sm->num_devices());
    }
    std::vector<std::string> named;  // in program order
    for (const auto& op : whole_.body().ops())
      if (auto o = origin_of(*op); o && std::find(named.begin(), named.end(), o->name) == named.end())
        named.push_back(o->name);
    for (const auto& [name, mesh] : assignment_) {
      if (!names.count(mesh))
        fail("assignment: named computation '{}' is assigned to mesh '{}', which is not one of the program's "
             "meshes ({})", name, mesh, fmt::join(names, ", "));
      if (std::find(named.begin(), named.end(), name) == named.end())
        fail("assignment: @{} has no named computation '{}' (it has: {})", whole_.name(), name, fmt::join(named, ", "));
    }
  }

  void collect() {
    const Op* ret = whole_.body().terminator();
    TESSERA_CHECK(ret && ret->kind() == OpKind::Return, "@{} has no return", whole_.name());
    for (const auto& op : whole_.body().ops()) {
      if (op.get() == ret) continue;
      position_[op.get()] = ops_.size();
      for (const Value* v : outer_uses(*op)) users_[v].push_back(ops_.size());
      ops_.push_back(op.get());
      static constexpr OpKind kSources[] = {OpKind::Constant, OpKind::Iota, OpKind::SdyConstant};
      static constexpr OpKind kShapers[] = {OpKind::BroadcastInDim, OpKind::Reshape, OpKind::Convert,
                                            OpKind::Transpose};
      bool source = std::find(std::begin(kSources), std::end(kSources), op->kind()) != std::end(kSources);
      bool shaper = std::find(std::begin(kShapers), std::end(kShapers), op->kind()) != std::end(kShapers) &&
                    std::all_of(op->operands().begin(), op->operands().end(), [&](const Value* v) { return is_cheap(v); });
      if (source || shaper) cheap_.insert(op.get());
    }
    mesh_.assign(ops_.size(), std::nullopt);
    plan_.parameter_mesh.assign(whole_.num_parameters(), std::nullopt);
    param_reader_.assign(whole_.num_parameters(), "");
    for (size_t i = 0; i < whole_.num_parameters(); ++i) plan_.parameter_types.push_back(whole_.parameter(i)->type());
  }

  std::string param_name(size_t i) const {
    return fmt::format("parameter %arg{} ({}) of @{}", i, ir::to_string(whole_.parameter(i)->type()), whole_.name());
  }

  // Rules 1 and 3.
  void assign_named() {
    std::map<std::string, size_t> index;
    for (size_t m = 0; m < plan_.meshes.size(); ++m) index[plan_.meshes[m].name] = m;
    for (size_t pos = 0; pos < ops_.size(); ++pos) {
      if (cheap_.count(ops_[pos])) continue;
      auto o = origin_of(*ops_[pos]);
      if (!o) continue;
      auto it = assignment_.find(o->name);
      if (it == assignment_.end()) {
        std::vector<std::string> assigned;
        for (const auto& [name, mesh] : assignment_) assigned.push_back(name + " -> " + mesh);
        fail("named computation '{}' of @{} has no mesh: the assignment has {}", o->name, whole_.name(),
             assigned.empty() ? std::string("nothing") : fmt::format("only {}", fmt::join(assigned, ", ")));
      }
      size_t m = index.at(it->second);
      mesh_[pos] = m;
      if (o->transpose) continue;  // homes come from the forward (rule 3)
      for (const Value* v : outer_uses(*ops_[pos]))
        if (is_param(v)) home(static_cast<size_t>(v->index()), m, fmt::format("named computation '{}'", o->name));
    }
  }

  void home(size_t param, size_t mesh, const std::string& reader) {
    auto& slot = plan_.parameter_mesh[param];
    if (!slot) {
      slot = mesh;
      param_reader_[param] = reader;
    } else if (*slot != mesh) {
      fail("{} is read by {} on mesh '{}' and by {} on mesh '{}'; parameters never move between meshes: give "
           "each mesh its own parameter", param_name(param), param_reader_[param], mesh_name(*slot), reader,
           mesh_name(mesh));
    }
  }

  // Rule 4.
  void assign_unnamed() {
    std::vector<size_t> only_returned;
    for (size_t pos = ops_.size(); pos-- > 0;) {
      if (mesh_[pos] || cheap_.count(ops_[pos])) continue;
      std::optional<size_t> m;
      std::optional<size_t> first_param;
      for (const Value* v : outer_uses(*ops_[pos])) {
        if (!is_param(v)) continue;
        auto p = static_cast<size_t>(v->index());
        const auto& h = plan_.parameter_mesh[p];
        if (!h) continue;
        if (m && *m != *h)
          fail("{} reads {} (on mesh '{}') and {} (on mesh '{}'); parameters never move between meshes",
               describe(pos), param_name(*first_param), mesh_name(*m), param_name(p), mesh_name(*h));
        m = h;
        first_param = p;
      }
      if (!m) {  // the first consumer in program order (users_ lists positions in order)
        size_t first = ops_.size();
        for (const Value* r : ops_[pos]->results())
          for (size_t u : users_[r])
            if (mesh_[u] && u < first) first = u;
        if (first < ops_.size()) m = mesh_[first];
      }
      if (!m) {
        only_returned.push_back(pos);
        continue;
      }
      settle(pos, *m);
    }
    std::reverse(only_returned.begin(), only_returned.end());
    for (size_t pos : only_returned) {
      std::optional<size_t> m;
      for (const Value* v : outer_uses(*ops_[pos])) {
        if (is_param(v)) m = plan_.parameter_mesh[static_cast<size_t>(v->index())];
        else if (v->defining_op() && position_.count(v->defining_op())) m = mesh_[position_.at(v->defining_op())];
        if (m) break;
      }
      settle(pos, m.value_or(0));
    }
  }

  void settle(size_t pos, size_t mesh) {
    mesh_[pos] = mesh;
    for (const Value* v : outer_uses(*ops_[pos]))
      if (is_param(v) && !plan_.parameter_mesh[static_cast<size_t>(v->index())])
        home(static_cast<size_t>(v->index()), mesh, describe(pos));
  }

  // Rule 5.
  void group() {
    fragment_of_.assign(ops_.size(), 0);
    Fragment* cur = nullptr;
    for (size_t pos = 0; pos < ops_.size(); ++pos) {
      if (cheap_.count(ops_[pos])) continue;
      auto o = origin_of(*ops_[pos]);
      size_t m = *mesh_[pos];
      bool joins = cur && cur->mesh == m &&
                   (options_.glue_joins ? (!o || !cur->origin || *cur->origin == *o)
                                        : (o && cur->origin && *cur->origin == *o));
      if (!joins) {
        plan_.fragments.emplace_back();
        cur = &plan_.fragments.back();
        cur->index = plan_.fragments.size() - 1;
        cur->mesh = m;
      }
      if (o && !cur->origin) cur->origin = o;
      cur->ops.push_back(pos);
      fragment_of_[pos] = cur->index;
    }
  }

  // Rule 6: the fragment functions.
  struct Building {
    ir::Function* fn = nullptr;
    ir::ValueMap map;
    std::set<size_t> outputs;  // value ids
  };
  std::vector<Building> building_;
  std::unordered_map<const Value*, size_t> value_id_;
  std::vector<const Value*> values_by_id_;
  std::map<size_t, size_t> param_value_;  // step parameter -> value id, for rule 3's exception
  std::map<std::pair<size_t, size_t>, size_t> transfer_of_;  // (value, destination mesh) -> transfer

  size_t value_id(const Value* v) {
    auto it = value_id_.find(v);
    if (it != value_id_.end()) return it->second;
    const Op* def = v->defining_op();
    size_t pos = position_.at(def);
    // Results are numbered in program order over the whole step, like the printer's %N.
    size_t number = 0;
    for (size_t p = 0; p < pos; ++p) number += ops_[p]->num_results();
    number += static_cast<size_t>(v->index());
    plan_.values.push_back({fmt::format("%{}", number), v->type(), fragment_of_[pos], std::nullopt});
    values_by_id_.push_back(v);
    return value_id_[v] = plan_.values.size() - 1;
  }

  Value* import(size_t f, const Value* v) {
    Building& b = building_[f];
    if (auto it = b.map.find(v); it != b.map.end()) return it->second;
    Fragment& frag = plan_.fragments[f];
    const Op* def = v->defining_op();
    if (def && cheap_.count(def)) {  // rule 2: a copy of its own
      frag.num_cloned += clone_cheap(v, b.fn->body(), b.map);
      return b.map.at(v);
    }
    std::optional<ir::Sharding> sharding = layout(v, frag.mesh);
    Binding input{Binding::Kind::kValue, 0, {}};
    if (is_param(v)) {
      auto p = static_cast<size_t>(v->index());
      auto& h = plan_.parameter_mesh[p];
      if (!h) h = frag.mesh;  // read only by the transpose (through a simplified cotangent)
      if (*h == frag.mesh) {
        if (std::optional<ir::Sharding> given = whole_.arg_sharding(p)) sharding = given;
        input = {Binding::Kind::kParameter, p, {}};
      } else {  // rule 3's exception: a copy of the value comes from the parameter's mesh
        auto [it, fresh] = param_value_.try_emplace(p, plan_.values.size());
        if (fresh) {
          plan_.values.push_back({fmt::format("%arg{}", p), v->type(), 0, p});
          values_by_id_.push_back(v);
        }
        input.index = it->second;
        add_transfer(input.index, *h, 0, f);
      }
    } else {
      TESSERA_CHECK(def && position_.count(def), "value of @{} defined outside its body", whole_.name());
      input.index = value_id(v);
      size_t producer = fragment_of_[position_.at(def)];
      TESSERA_CHECK(producer < f, "fragment {} reads {} of the later fragment {}", f, plan_.values[input.index].name,
                    producer);
      building_[producer].outputs.insert(input.index);
      add_transfer(input.index, plan_.fragments[producer].mesh, producer, f);
    }
    frag.inputs.push_back(std::move(input));
    return b.map[v] = b.fn->add_parameter(v->type(), sharding);
  }

  // One transfer per (value, destination mesh), none within a mesh.
  void add_transfer(size_t id, size_t from, size_t producer, size_t consumer) {
    size_t to = plan_.fragments[consumer].mesh;
    if (from == to || transfer_of_.count({id, to})) return;
    transfer_of_[{id, to}] = plan_.transfers.size();
    plan_.transfers.push_back({id, from, to, producer, consumer});
  }

  // Clones the op of cheap value v, after those of the cheap values it reads, unless `map` has it
  // already; returns how many ops it cloned.
  static size_t clone_cheap(const Value* v, ir::Block& into, ir::ValueMap& map) {
    if (map.count(v)) return 0;
    size_t n = 1;
    for (const Value* x : v->defining_op()->operands()) n += clone_cheap(x, into, map);
    strip_marks(*ir::clone_op(into, *v->defining_op(), map));
    return n;
  }

  void build() {
    building_.resize(plan_.fragments.size());
    for (Fragment& frag : plan_.fragments) {
      frag.module = std::make_shared<ir::Module>(whole_.name());
      const MeshSpec& mesh = plan_.meshes[frag.mesh];
      if (!mesh.spmd_mesh.empty()) frag.module->add_mesh(module_.mesh(mesh.spmd_mesh));
      frag.function = fmt::format("fragment{}_{}", frag.index, mesh.name);
      if (frag.origin) frag.function += fmt::format("_{}", sanitize(frag.origin->to_string()));
      building_[frag.index].fn = &frag.module->add_function(frag.function);
    }
    for (size_t pos = 0; pos < ops_.size(); ++pos) {
      if (cheap_.count(ops_[pos])) continue;
      size_t f = fragment_of_[pos];
      for (const Value* v : outer_uses(*ops_[pos])) import(f, v);
      // Fragments do not need the marks (here and in clone_cheap): their origin says it once.
      strip_marks(*ir::clone_op(building_[f].fn->body(), *ops_[pos], building_[f].map));
    }
    const Op* ret = whole_.body().terminator();
    for (const Value* v : ret->operands()) {
      if (is_param(v)) {
        plan_.results.push_back({Binding::Kind::kParameter, static_cast<size_t>(v->index()), {}});
      } else if (is_cheap(v)) {
        plan_.results.push_back({Binding::Kind::kConstant, 0, evaluate_cheap(v)});
      } else {
        size_t id = value_id(v);
        building_[plan_.values[id].producer].outputs.insert(id);
        plan_.results.push_back({Binding::Kind::kValue, id, {}});
      }
    }
    for (Fragment& frag : plan_.fragments) {
      Building& b = building_[frag.index];
      std::vector<Value*> results;
      for (size_t id : b.outputs) {
        frag.outputs.push_back(id);
        results.push_back(b.map.at(value_of(id)));
      }
      b.fn->set_results(results);
      for (size_t k = 0; k < frag.outputs.size(); ++k)
        if (auto s = layout(value_of(frag.outputs[k]), frag.mesh)) b.fn->set_result_sharding(k, *s);
      try {
        ir::verify(*frag.module);
      } catch (const support::UserError& e) {
        fail("fragment {} on mesh '{}' ({}): {}", frag.index, mesh_name(frag.mesh),
             frag.origin ? frag.origin->to_string() : std::string("unnamed ops"), e.what());
      }
    }
  }

  const Value* value_of(size_t id) const { return values_by_id_.at(id); }

  static std::string sanitize(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') out += c;
      else if (c == '#') out += '_';
    }
    if (s.find("ᵀ") != std::string::npos) out += "_T";
    return out;
  }

  // A cheap value returned by the step: computed once here (it needs no mesh).
  ir::Literal evaluate_cheap(const Value* v) {
    ir::Module scratch;
    ir::Function& fn = scratch.add_function("cheap");
    ir::ValueMap map;
    clone_cheap(v, fn.body(), map);
    fn.set_results({map.at(v)});
    return interp::evaluate(fn, {}).at(0);
  }
};

}  // namespace

FragmentPlan fragment(const ir::Module& module, const ir::Function& whole, const std::vector<MeshSpec>& meshes,
                      const Assignment& assignment, const FragmentOptions& options) {
  return Cutter(module, whole, meshes, assignment, options).run();
}

std::string FragmentPlan::summary(const std::function<std::string(size_t)>& note) const {
  std::string out;
  for (const Fragment& f : fragments) {
    std::vector<std::string> ins, outs;
    for (const Binding& b : f.inputs)
      ins.push_back(b.kind == Binding::Kind::kParameter ? fmt::format("%arg{}", b.index) : values[b.index].name);
    for (size_t id : f.outputs) outs.push_back(values[id].name);
    out += fmt::format("fragment {} on {}: {} — {} ops{}; in ({}) out ({}){}\n", f.index, meshes[f.mesh].name,
                       f.origin ? f.origin->to_string() : std::string("unnamed"), f.num_ops(),
                       f.num_cloned ? fmt::format(" + {} cloned", f.num_cloned) : std::string(),
                       fmt::join(ins, ", "), fmt::join(outs, ", "), note ? note(f.index) : std::string());
  }
  for (const Transfer& t : transfers)
    out += fmt::format("transfer {} {}: {} -> {} ({} -> fragment {})\n", values[t.value].name,
                       ir::to_string(values[t.value].type), meshes[t.from].name, meshes[t.to].name,
                       values[t.value].parameter ? std::string("parameter") : fmt::format("fragment {}", t.producer),
                       t.consumer);
  return out;
}

size_t FragmentPlan::count(size_t mesh, ir::OpKind kind) const {
  size_t n = 0;
  for (const Fragment& f : fragments)
    if (f.mesh == mesh)
      for (const auto& op : f.fn().body().ops()) n += op->kind() == kind;
  return n;
}

}  // namespace tessera::mpmd
