// FragmentPipeline (fragment_pipeline.h): the whole step rewritten for a pipeline (the microbatch
// sums in order, zero-bubble's split), the plan cut from it, the fragment -> action map and
// `compile`. The run of the compiled lists is in fragment_pipeline_run.cpp.
#include "mpmd/fragment_pipeline.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <fmt/ranges.h>

#include "schedule/schedule.h"
#include "support/error.h"

namespace tessera::mpmd {

using schedule::Action;
using schedule::ActionKind;
using schedule::Payload;
using schedule::Schedule;
using support::fail;

std::string FragmentRole::to_string() const {
  if (kind == Kind::kGlue) return "glue";
  return fmt::format("{}(mb {}, vs {})", "?FBW"[static_cast<int>(kind)], microbatch, virtual_stage);  // by Kind
}

namespace {

// Unmarks the ops of `whole` that sum cotangents of different microbatches (they become glue) and
// rebuilds those that only feed each other and the results as one chain in microbatch order,
// ((g0 + g1) + g2) + …, at the end. Returns how many ops it unmarked.
size_t separate_microbatch_sums(ir::Function& whole) {
  std::unordered_set<const ir::Op*> unmarked;
  auto counter = [](const ir::Op& op) { return op.attrs().get_or<int64_t>(kCallCounterAttr, -1); };
  for (const auto& op : whole.body().ops()) {
    if (op->kind() != ir::OpKind::Add || !op->attrs().get_or<bool>(kTransposeAttr, false)) continue;
    int64_t c = counter(*op);
    if (c < 0) continue;
    bool across = false;
    for (const ir::Value* v : op->operands()) {
      const ir::Op* def = v->defining_op();
      if (def == nullptr) continue;
      if (unmarked.count(def)) across = true;
      else if (def->attrs().get_or<bool>(kTransposeAttr, false) && counter(*def) >= 0 && counter(*def) != c)
        across = true;
    }
    if (!across) continue;
    strip_marks(*op);
    unmarked.insert(op.get());
  }
  // The sums that only feed each other and the results (a gradient's sum over microbatches) are
  // rebuilt at the end of the function as one chain per result in microbatch order, ((g0 + g1) + g2)
  // + …: every built-in schedule runs the backwards of a virtual stage in that order, so each term
  // is added as soon as it exists and a stage holds one partial sum instead of M terms; the order
  // is also nn::TrainingStep::accumulate's. (autodiff sums in reverse program order, g3 + g2 first,
  // which would keep every term until the last microbatch's backward.) At the end they also do not
  // cut a transpose into pieces. A sum that some other op reads stays where it is.
  ir::Op* ret = whole.body().terminator();
  std::unordered_set<const ir::Op*> moved = unmarked;
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& op : whole.body().ops()) {
      if (op.get() == ret || moved.count(op.get())) continue;
      for (const ir::Value* v : outer_uses(*op))
        if (v->defining_op() && moved.erase(v->defining_op())) changed = true;
    }
  }
  std::vector<std::unique_ptr<ir::Op>> ops = whole.body().take_ops();
  std::vector<std::unique_ptr<ir::Op>> old;  // the moved sums, dropped once the chains are built
  for (auto& op : ops) {
    if (op.get() == ret) continue;
    if (moved.count(op.get())) old.push_back(std::move(op));
    else whole.body().append(std::move(op));
  }
  for (const auto& root : old) {
    // A moved sum is read by other moved sums or by the return: one the return does not read is
    // rebuilt as part of another's chain.
    std::vector<size_t> reads;  // the return's operands that are this sum
    for (size_t i = 0; i < ret->operands().size(); ++i)
      if (ret->operand(i) == root->result(0)) reads.push_back(i);
    if (reads.empty()) continue;
    std::vector<std::pair<int64_t, ir::Value*>> terms;  // (microbatch, value), in the sum's order
    std::function<void(ir::Value*)> collect = [&](ir::Value* v) {
      const ir::Op* def = v->defining_op();
      if (def && moved.count(def)) {
        for (ir::Value* x : def->operands()) collect(x);
        return;
      }
      terms.emplace_back(def ? counter(*def) : -1, v);
    };
    collect(root->result(0));
    std::stable_sort(terms.begin(), terms.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    ir::Value* acc = terms[0].second;
    for (size_t i = 1; i < terms.size(); ++i)
      acc = whole.body()
                .append(std::make_unique<ir::Op>(ir::OpKind::Add, std::vector<ir::Value*>{acc, terms[i].second},
                                                 std::vector<ir::Type>{root->result(0)->type()}))
                ->result(0);
    for (size_t i : reads) ret->set_operand(i, acc);
  }
  for (auto& op : ops)
    if (op) whole.body().append(std::move(op));  // the return
  return unmarked.size();
}

using CallKey = std::tuple<std::string, int64_t>;  // a transpose call: (name, call counter)

std::optional<CallKey> transpose_key(const ir::Op& op) {
  auto o = origin_of(op);
  if (!o || !o->transpose || o->call_counter < 0) return std::nullopt;
  return CallKey{o->name, o->call_counter};
}

// Zero-bubble's split of each transpose of a call: its input-gradient part (BI) is what the values
// it hands to another named computation depend on, so the previous virtual stage waits for it and
// it runs first; the rest (W) only feeds the parameter gradients and can fill a bubble later. W is
// marked kWeightAttr and moved right after BI's last op, so each part is one run of ops; each
// transposed op is in exactly one part: nothing is recomputed. Returns how many ops it marked.
size_t split_backward(ir::Function& whole) {
  ir::Op* ret = whole.body().terminator();
  std::vector<ir::Op*> ops;
  for (const auto& op : whole.body().ops())
    if (op.get() != ret) ops.push_back(op.get());
  std::unordered_map<const ir::Op*, size_t> position;
  std::vector<std::optional<CallKey>> key(ops.size());
  for (size_t p = 0; p < ops.size(); ++p) {
    position[ops[p]] = p;
    key[p] = transpose_key(*ops[p]);
  }
  // Seeds of BI: transpose ops whose value another named computation reads. Then BI is closed over
  // the dependencies inside the same call, walking backwards in program order.
  std::vector<bool> input_part(ops.size(), false);
  for (size_t p = 0; p < ops.size(); ++p) {
    auto reader = origin_of(*ops[p]);
    if (!reader) continue;
    for (const ir::Value* v : outer_uses(*ops[p])) {
      auto it = v->defining_op() ? position.find(v->defining_op()) : position.end();
      if (it == position.end() || !key[it->second]) continue;
      if (std::get<0>(*key[it->second]) != reader->name) input_part[it->second] = true;
    }
  }
  for (size_t p = ops.size(); p-- > 0;) {
    if (!input_part[p]) continue;
    for (const ir::Value* v : outer_uses(*ops[p])) {
      auto it = v->defining_op() ? position.find(v->defining_op()) : position.end();
      if (it != position.end() && key[it->second] == key[p]) input_part[it->second] = true;
    }
  }
  // W: every other op of a call that has a BI part (a call without one, like the first virtual
  // stage's, whose tokens have no gradient, is all W: its BI action has nothing to run).
  std::map<CallKey, size_t> last_input;  // per call, the position of its BI's last op
  for (size_t p = 0; p < ops.size(); ++p)
    if (key[p] && input_part[p]) last_input[*key[p]] = p;
  size_t marked = 0;
  std::vector<bool> weight(ops.size(), false);
  for (size_t p = 0; p < ops.size(); ++p)
    if (key[p] && !input_part[p]) {
      ops[p]->attrs().set(kWeightAttr, true);
      weight[p] = true;
      marked++;
    }
  // Each call's W ops that come before its BI's last op move to right after it, in program order;
  // glue reading a moved value (e.g. the constraint autodiff puts on a gradient's layout) moves
  // with it, after the latest such call's BI. They only move later, so their operands are still
  // defined before them; no op they pass may read them. An op's place: (the position it goes
  // right after, whether it moved, its position).
  std::vector<std::tuple<size_t, bool, size_t>> place(ops.size());
  for (size_t p = 0; p < ops.size(); ++p) {
    size_t at = p;
    if (weight[p] && last_input.count(*key[p])) at = std::max(p, last_input.at(*key[p]));
    for (const ir::Value* v : outer_uses(*ops[p])) {
      auto it = v->defining_op() ? position.find(v->defining_op()) : position.end();
      if (it == position.end() || std::get<0>(place[it->second]) <= p) continue;  // not moved past p
      TESSERA_CHECK(!key[p] || weight[p],
                    "@{}: op {} reads a weight-gradient value of another call before that call's input gradient ends",
                    whole.name(), p);
      if (!key[p]) at = std::max(at, std::get<0>(place[it->second]));
    }
    place[p] = {at, at > p, p};
  }
  std::vector<size_t> order(ops.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return place[a] < place[b]; });
  std::vector<std::unique_ptr<ir::Op>> taken = whole.body().take_ops();
  std::unordered_map<const ir::Op*, std::unique_ptr<ir::Op>> owner;
  for (auto& op : taken) owner[op.get()] = std::move(op);
  for (size_t p : order) whole.body().append(std::move(owner.at(ops[p])));
  whole.body().append(std::move(owner.at(ret)));
  return marked;
}

}  // namespace

FragmentPipeline::FragmentPipeline(ir::Module& module, const ir::Function& step,
                                   std::vector<std::string> virtual_stages, int64_t stages,
                                   FragmentPipelineOptions options)
    : options_(std::move(options)), names_(std::move(virtual_stages)), stages_(stages) {
  const auto n = static_cast<int64_t>(names_.size());
  if (stages < 1) fail("pipeline of @{}: {} stages; a pipeline needs at least one", step.name(), stages);
  if (n == 0 || n % stages != 0)
    fail("pipeline of @{}: {} virtual stages ({}) cannot be spread evenly over {} stages", step.name(), n,
         fmt::join(names_, ", "), stages);
  ir::Function& whole = whole_step(module, step, options_.wrt, step.name() + "_pipeline", options_.remat);
  whole_ = &whole;
  try {  // a refused program leaves the module as it was
    separate_microbatch_sums(whole);
    if (options_.split_backward) split_backward(whole);

    // Every named computation is a virtual stage, called with counters 0 … M−1.
    std::map<std::string, std::set<int64_t>> counters;
    for (const auto& op : whole.body().ops()) {
      auto o = origin_of(*op);
      if (!o || o->transpose) continue;
      if (std::find(names_.begin(), names_.end(), o->name) == names_.end())
        fail("pipeline of @{}: named computation '{}' is not one of the virtual stages ({}); every named computation "
             "of a pipelined step is a virtual stage",
             step.name(), o->name, fmt::join(names_, ", "));
      if (o->call_counter < 0)
        fail("pipeline of @{}: virtual stage '{}' is called without a call counter; a stage is called once per "
             "microbatch with call_counter = microbatch (scan_calls or named_call with a counter)",
             step.name(), o->name);
      counters[o->name].insert(o->call_counter);
    }
    for (const std::string& name : names_) {
      auto it = counters.find(name);
      if (it == counters.end()) fail("pipeline of @{}: virtual stage '{}' is never called", step.name(), name);
      const std::set<int64_t>& got = it->second;
      if (microbatches_ == 0) microbatches_ = static_cast<int64_t>(got.size());
      auto m = static_cast<int64_t>(got.size());
      if (m != microbatches_ || *got.rbegin() != m - 1)
        fail("pipeline of @{}: virtual stage '{}' is called with counters {}, but '{}' with 0 … {}; every virtual "
             "stage is called once per microbatch",
             step.name(), name, fmt::join(got, ", "), names_[0], microbatches_ - 1);
    }

    std::vector<MeshSpec> meshes;
    int64_t devices = 1;
    if (!options_.stage_mesh.empty()) {
      const ir::Mesh* mesh = module.find_mesh(options_.stage_mesh);
      if (mesh == nullptr) fail("pipeline of @{}: stage mesh @{} is not in the module", step.name(), options_.stage_mesh);
      devices = mesh->num_devices();
    }
    for (int64_t s = 0; s < stages; ++s) meshes.push_back({fmt::format("pp{}", s), devices, options_.stage_mesh});
    Assignment assignment;
    for (int64_t v = 0; v < n; ++v) assignment[names_[v]] = fmt::format("pp{}", v % stages);
    FragmentOptions fo;
    fo.glue_joins = false;
    plan_ = fragment(module, whole, meshes, assignment, fo);

    for (const Fragment& f : plan_.fragments) {
      FragmentRole r;
      if (f.origin) {
        r.kind = !f.origin->transpose ? FragmentRole::Kind::kForward
                 : f.origin->weight   ? FragmentRole::Kind::kWeight
                                      : FragmentRole::Kind::kBackward;
        r.microbatch = f.origin->call_counter;
        r.virtual_stage = std::find(names_.begin(), names_.end(), f.origin->name) - names_.begin();
      }
      roles_.push_back(r);
    }
    compile_fragments();
  } catch (...) {
    module.remove_function(whole);
    throw;
  }
}

FragmentPipeline::FragmentPipeline(FragmentPlan plan, FragmentPipelineOptions options)
    : options_(std::move(options)), stages_(static_cast<int64_t>(plan.meshes.size())), plan_(std::move(plan)) {
  if (options_.ranks) fail("a fragment plan runs in one process; stages on ranks are for a pipeline made from a step");
  roles_.resize(plan_.fragments.size());
  compile_fragments();
}

std::string FragmentPipeline::summary() const {
  return plan_.summary([&](size_t f) { return fmt::format("  [{}]", roles_[f].to_string()); });
}

std::optional<std::pair<size_t, size_t>> first_split_action(const Schedule& s) {
  for (size_t st = 0; st < s.actions.size(); ++st)
    for (size_t k = 0; k < s.actions[st].size(); ++k)
      if (s.actions[st][k].kind == ActionKind::kBackwardInput || s.actions[st][k].kind == ActionKind::kBackwardWeight)
        return std::make_pair(st, k);
  return std::nullopt;
}

std::string instruction_place(const Schedule& s, size_t stage, int64_t step) {
  if (step < 0) return fmt::format("stage {} (glue)", stage);
  return schedule::describe_at(s, static_cast<int64_t>(stage), step);
}

namespace {

// What a SEND or RECV carries in the plan: (payload, microbatch, virtual stage, from mesh, to mesh).
using Key = std::tuple<Payload, int64_t, int64_t, int64_t, int64_t>;

// The abstract execution behind compile().
class Compiler {
 public:
  Compiler(const FragmentPlan& plan, const std::vector<FragmentRole>& roles, const Schedule& s)
      : plan_(plan), roles_(roles), s_(s) {}

  CompiledSchedule run() {
    index();
    CompiledSchedule out;
    out.stages.resize(static_cast<size_t>(s_.stages));
    out_ = &out;
    pos_.assign(out.stages.size(), 0);
    sub_.assign(out.stages.size(), 0);
    blocked_.assign(out.stages.size(), "");
    // Copies of parameters for another mesh (fragments.h rule 3's exception) go when the run starts.
    for (size_t t = 0; t < plan_.transfers.size(); ++t)
      if (plan_.values[plan_.transfers[t].value].parameter) post(plan_.transfers[t].from, t, -1);
    for (;;) {
      bool progress = false, done = true;
      for (size_t st = 0; st < out.stages.size(); ++st) {
        progress |= run_glue(st);
        while (pos_[st] < s_.actions[st].size() && advance(st)) {
          progress = true;
          run_glue(st);
        }
        if (pos_[st] < s_.actions[st].size() || glue_left(st)) done = false;
      }
      if (done) break;
      if (!progress) deadlock();
    }
    for (size_t f = 0; f < plan_.fragments.size(); ++f)
      TESSERA_CHECK(ran_[f], "fragment {} ({}) was never run by schedule '{}'", f, label(f), s_.name);
    return out;
  }

 private:
  const FragmentPlan& plan_;
  const std::vector<FragmentRole>& roles_;
  const Schedule& s_;
  CompiledSchedule* out_ = nullptr;

  std::map<std::tuple<FragmentRole::Kind, int64_t, int64_t>, std::vector<size_t>> by_action_;  // (kind, mb, vs)
  std::vector<std::vector<size_t>> glue_;                                        // per mesh, program order
  std::map<std::pair<size_t, size_t>, size_t> transfer_;                         // (value, to) -> transfer
  std::vector<std::optional<Key>> cover_;  // per transfer: the SEND/RECV pair that carries it
  std::vector<bool> ran_, posted_;
  std::set<std::pair<size_t, size_t>> here_;  // (value, mesh): received there
  std::vector<size_t> pos_, sub_;
  std::vector<std::string> blocked_;  // per stage: what it waits for, for the deadlock message

  std::string label(size_t f) const { return plan_.fragments[f].describe(); }
  std::string where(size_t st, int64_t step) const { return instruction_place(s_, st, step); }
  size_t mesh_of(size_t value) const {
    const PlanValue& v = plan_.values[value];
    return v.parameter ? *plan_.parameter_mesh[*v.parameter] : plan_.fragments[v.producer].mesh;
  }

  void index() {
    glue_.resize(plan_.meshes.size());
    for (size_t f = 0; f < plan_.fragments.size(); ++f) {
      const FragmentRole& r = roles_[f];
      if (r.kind == FragmentRole::Kind::kGlue) glue_[plan_.fragments[f].mesh].push_back(f);
      else by_action_[{r.kind, r.microbatch, r.virtual_stage}].push_back(f);
    }
    std::set<Key> sends;
    for (size_t st = 0; st < s_.actions.size(); ++st)
      for (const Action& a : s_.actions[st])
        if (a.kind == ActionKind::kSend)
          sends.insert({a.payload, a.microbatch, a.virtual_stage, static_cast<int64_t>(st), s_.peer(a)});
    for (size_t t = 0; t < plan_.transfers.size(); ++t) {
      const Transfer& tr = plan_.transfers[t];
      transfer_[{tr.value, tr.to}] = t;
      std::optional<Key> key;
      if (!plan_.values[tr.value].parameter) {
        const FragmentRole& r = roles_[plan_.values[tr.value].producer];
        if (r.kind != FragmentRole::Kind::kGlue) {
          Key k{r.kind == FragmentRole::Kind::kForward ? Payload::kActivation : Payload::kGradient, r.microbatch,
                r.virtual_stage, static_cast<int64_t>(tr.from), static_cast<int64_t>(tr.to)};
          if (sends.count(k)) key = k;
        }
      }
      cover_.push_back(key);
    }
    ran_.assign(plan_.fragments.size(), false);
    posted_.assign(plan_.transfers.size(), false);
  }
  void post(size_t st, size_t t, int64_t step) {
    posted_[t] = true;
    const Transfer& tr = plan_.transfers[t];
    out_->stages[st].push_back({Instruction::Kind::kPost, 0, tr.value, tr.to, step});
    (cover_[t] ? out_->scheduled_transfers : out_->direct_transfers)++;
  }

  // Whether fragment f can run on stage st now. A value the stage could only get later in its own
  // list is a UserError when `strict` (an action); otherwise (glue) it just waits.
  bool ready(size_t st, size_t f, int64_t step, bool strict) {
    for (const Binding& b : plan_.fragments[f].inputs) {
      if (b.kind != Binding::Kind::kValue) continue;
      const PlanValue& v = plan_.values[b.index];
      size_t from = mesh_of(b.index);
      if (from == st) {
        if (ran_[v.producer]) continue;
        if (roles_[v.producer].kind == FragmentRole::Kind::kGlue || !strict) {
          blocked_[st] = fmt::format("{}: {} waits for {} from {} on this stage", where(st, step), label(f), v.name,
                                     label(v.producer));
          return false;
        }
        fail("schedule '{}': {}: {} needs {} ({}), computed by {} = {} on this stage, which has not run yet: the "
             "schedule orders them against the program's dependencies",
             s_.name, where(st, step), label(f), v.name, ir::to_string(v.type), label(v.producer),
             roles_[v.producer].to_string());
      }
      if (here_.count({b.index, st})) continue;
      auto it = transfer_.find({b.index, st});
      if (it == transfer_.end())
        fail("{}: {} needs {} from stage {} ({}), and the plan has no transfer that brings it", where(st, step),
             label(f), v.name, from, v.parameter ? std::string("a parameter") : label(v.producer));
      size_t t = it->second;
      if (cover_[t] && strict)
        fail("schedule '{}': {}: {} needs {} from stage {} ({} = {}), and no earlier RECV on this stage brought it",
             s_.name, where(st, step), label(f), v.name, from, label(v.producer), roles_[v.producer].to_string());
      if (!posted_[t]) {
        blocked_[st] = fmt::format("{}: {} waits for {} from stage {}", where(st, step), label(f), v.name, from);
        return false;
      }
    }
    return true;
  }

  void execute(size_t st, size_t f, int64_t step) {
    for (const Binding& b : plan_.fragments[f].inputs) {
      if (b.kind != Binding::Kind::kValue || mesh_of(b.index) == st || here_.count({b.index, st})) continue;
      here_.insert({b.index, st});
      out_->stages[st].push_back({Instruction::Kind::kWait, 0, b.index, mesh_of(b.index), step});
    }
    out_->stages[st].push_back({Instruction::Kind::kRun, f, 0, 0, step});
    ran_[f] = true;
    for (size_t id : plan_.fragments[f].outputs)
      for (size_t t = 0; t < plan_.transfers.size(); ++t)
        if (plan_.transfers[t].value == id && !cover_[t]) post(st, t, step);
  }

  bool glue_left(size_t st) const {
    for (size_t g : glue_[st])
      if (!ran_[g]) return true;
    return false;
  }

  // The action glue run now belongs to: the compute action the stage ran last, when it is the one
  // just before (a gradient's sum over microbatches right after the B that made its term), so that
  // its time is that action's, in the measured bubble as in the replay fed with action times.
  int64_t glue_step(size_t st) const {
    if (pos_[st] == 0 && sub_[st] == 0) return -1;
    const size_t k = sub_[st] > 0 ? pos_[st] : pos_[st] - 1;
    return s_.actions[st][k].is_compute() ? static_cast<int64_t>(k) : -1;
  }

  bool run_glue(size_t st) {
    bool any = false;
    for (bool again = true; again;) {
      again = false;
      for (size_t g : glue_[st])
        if (!ran_[g] && ready(st, g, -1, false)) {
          execute(st, g, glue_step(st));
          any = again = true;
        }
    }
    return any;
  }

  // Runs stage st's next action (or what is left of it); false when it has to wait.
  bool advance(size_t st) {
    const auto step = static_cast<int64_t>(pos_[st]);
    const Action& a = s_.actions[st][pos_[st]];
    if (a.kind == ActionKind::kSend || a.kind == ActionKind::kRecv) {
      bool send = a.kind == ActionKind::kSend;
      Key key = send ? Key{a.payload, a.microbatch, a.virtual_stage, static_cast<int64_t>(st), s_.peer(a)}
                     : Key{a.payload, a.microbatch, a.virtual_stage, s_.peer(a), static_cast<int64_t>(st)};
      std::vector<size_t> carried;
      for (size_t t = 0; t < plan_.transfers.size(); ++t)
        if (cover_[t] == key) carried.push_back(t);
      if (!send)
        for (size_t t : carried)
          if (!posted_[t]) {
            blocked_[st] = fmt::format("{} waits for {}", where(st, step), plan_.values[plan_.transfers[t].value].name);
            return false;
          }
      for (size_t t : carried) {
        const Transfer& tr = plan_.transfers[t];
        if (send) {
          if (!ran_[tr.producer])
            fail("schedule '{}': {} sends {}, but {} that computes it has not run on this stage", s_.name,
                 where(st, step), plan_.values[tr.value].name, label(tr.producer));
          post(st, t, step);
        } else if (here_.insert({tr.value, st}).second) {  // glue may have taken it already
          out_->stages[st].push_back({Instruction::Kind::kWait, 0, tr.value, tr.from, step});
        }
      }
      pos_[st]++;
      return true;
    }
    // F runs the forward fragments; BI the transpose's (its input-gradient part when split), W the
    // weight-gradient part, B both.
    std::vector<size_t> frags;
    auto add = [&](FragmentRole::Kind kind) {
      auto it = by_action_.find({kind, a.microbatch, a.virtual_stage});
      if (it != by_action_.end()) frags.insert(frags.end(), it->second.begin(), it->second.end());
    };
    if (a.kind == ActionKind::kForward) add(FragmentRole::Kind::kForward);
    if (a.kind == ActionKind::kBackward || a.kind == ActionKind::kBackwardInput) add(FragmentRole::Kind::kBackward);
    if (a.kind == ActionKind::kBackward || a.kind == ActionKind::kBackwardWeight) add(FragmentRole::Kind::kWeight);
    for (; sub_[st] < frags.size(); sub_[st]++) {
      size_t f = frags[sub_[st]];
      if (!ready(st, f, step, true)) return false;
      execute(st, f, step);
    }
    sub_[st] = 0;
    pos_[st]++;
    return true;
  }

  [[noreturn]] void deadlock() {
    std::vector<std::string> stuck;
    for (size_t st = 0; st < pos_.size(); ++st)
      if (pos_[st] < s_.actions[st].size() || glue_left(st)) stuck.push_back(blocked_[st]);
    fail("schedule '{}' cannot finish on this program: {}", s_.name, fmt::join(stuck, "; "));
  }
};

}  // namespace

CompiledSchedule FragmentPipeline::compile(const Schedule& s) const {
  const auto n = static_cast<int64_t>(names_.size());
  if (s.stages != stages_ || s.virtual_per_stage * stages_ != n)
    fail("schedule '{}' has {} stages x {} virtual stages, but the program's {} virtual stages ({}) are cut for {} "
         "stages x {}",
         s.name, s.stages, s.virtual_per_stage, n, fmt::join(names_, ", "), stages_, n / stages_);
  if (s.microbatches != microbatches_)
    fail("schedule '{}' has {} microbatches, but the program calls each virtual stage {} times (call counters 0 … {})",
         s.name, s.microbatches, microbatches_, microbatches_ - 1);
  if (const auto at = first_split_action(s); at && !options_.split_backward)
    fail("schedule '{}': {}: the transposes of the whole step are not split into input- and weight-gradient "
         "parts; make the pipeline with split_backward, or use a schedule with whole backwards (gpipe, 1f1b, "
         "interleaved)",
         s.name, schedule::describe_at(s, static_cast<int64_t>(at->first), static_cast<int64_t>(at->second)));
  schedule::validate(s);
  return Compiler(plan_, roles_, s).run();
}

namespace {

RunInputs whole_inputs(const std::vector<ir::Literal>& parameters) {
  RunInputs in;
  for (const ir::Literal& p : parameters) in.parameters.push_back(whole_buffer(p));
  return in;
}

}  // namespace

FragmentPipelineRun FragmentPipeline::run(const Schedule& schedule, const std::vector<ir::Literal>& parameters) const {
  return run(compile(schedule), schedule, whole_inputs(parameters));
}

FragmentPipelineRun FragmentPipeline::run(const std::vector<ir::Literal>& parameters) const {
  Schedule none;
  none.name = "program order";
  none.stages = stages_;
  none.actions.resize(plan_.meshes.size());
  const std::vector<FragmentRole> glue(plan_.fragments.size());
  return run(Compiler(plan_, glue, none).run(), none, whole_inputs(parameters));
}

}  // namespace tessera::mpmd
