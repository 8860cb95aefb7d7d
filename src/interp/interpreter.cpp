// The interpreter's driver: argument checks, running blocks op by op through the kernel table,
// regions, and the scalar bodies of reduce, scatter and the reducing collectives.
//
// Values live in a Scope per block, so a region sees its own values and those around its op. Each
// op's kernel is looked up in a table expanded from ops.def; its results are checked against the
// op's declared types, so a kernel bug surfaces where it happens instead of three ops later.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <unordered_map>

#include "interp/kernels.h"
#include "ir/quantize.h"
#include "support/strings.h"

namespace tessera::interp {
namespace {

using ir::Literal;

constexpr std::array<Kernel, ir::kNumOpKinds> kKernels = {
#define OP(e, spelling, arity, traits) &eval_##e,
#include "ir/ops.def"
#undef OP
};

// A scalar literal of `type` holding element i of x (converted when the types differ).
Literal element_as(const Literal& x, int64_t i, const ir::Type& type) {
  Literal s(type);
  convert_element(x, i, s, 0);
  return s;
}

// Records in `last` that op `at` of the block reads every value that `op` or its regions read,
// unless an op that runs later reads it too.
void note_use(const ir::Value* v, size_t at, std::unordered_map<const ir::Value*, size_t>& last) {
  auto [it, added] = last.try_emplace(v, at);
  if (!added) it->second = std::max(it->second, at);
}
void note_uses(const ir::Op& op, size_t at, std::unordered_map<const ir::Value*, size_t>& last) {
  for (const ir::Value* v : op.operands()) note_use(v, at, last);
  for (const auto& region : op.regions())
    for (const auto& inner : region->ops()) note_uses(*inner, at, last);
}

// For each op of a block, the values of the block (its arguments and op results) that no later op
// reads: run_block drops them once that op has run, so a step's memory holds only live values and
// malloc hands freed buffers to the next ops instead of faulting in fresh pages (DESIGN.md §6).
// An inlined op (FusionPlan) reads its operands where its readers run, so its uses count there.
// Small blocks (reduction bodies, run once per element) skip the analysis: it would cost more than
// they hold.
constexpr size_t kFreeAfterOps = kMinPlannedBlockOps;
std::vector<std::vector<const ir::Value*>> dead_after(const ir::Block& block, const FusionPlan* plan) {
  std::vector<std::vector<const ir::Value*>> dead;
  const auto& ops = block.ops();
  if (ops.size() < kFreeAfterOps) return dead;
  // Where each op runs: an inlined op where the last of its readers runs (readers come later).
  std::vector<size_t> runs_at(ops.size());
  std::unordered_map<const ir::Value*, size_t> last;
  for (size_t i = ops.size(); i-- > 0;) {
    runs_at[i] = i;
    if (plan && plan->inlined(*ops[i])) {
      runs_at[i] = 0;
      for (size_t r = 0; r < ops[i]->num_results(); ++r) {
        auto it = last.find(ops[i]->result(r));
        if (it != last.end()) runs_at[i] = std::max(runs_at[i], it->second);
      }
    }
    // Readers are visited before their producers, so `last` already holds where they run.
    for (const ir::Value* v : ops[i]->operands()) note_use(v, runs_at[i], last);
    for (const auto& region : ops[i]->regions())
      for (const auto& inner : region->ops()) note_uses(*inner, i, last);
  }
  dead.resize(ops.size());
  // A value nothing reads dies after the op that defines it (arguments: after the first op).
  auto mark = [&](const ir::Value* v, size_t defined) {
    auto it = last.find(v);
    dead[it != last.end() ? it->second : defined].push_back(v);
  };
  for (const auto& a : block.arguments()) mark(a.get(), 0);
  for (size_t i = 0; i < ops.size(); ++i)
    for (size_t r = 0; r < ops[i]->num_results(); ++r) mark(ops[i]->result(r), runs_at[i]);
  return dead;
}

// Registered once at start-up (exec) and read by every device thread; tests switch it.
std::atomic<FusionPlanner>& fusion_planner() {
  static std::atomic<FusionPlanner> planner{nullptr};
  return planner;
}

// The block's results: its return's operands, moved out of `scope` where this block owns the value
// and no later operand of the return names it again (copied otherwise).
Results take_returned(const ir::Op& ret, Scope& scope) {
  Results out;
  const auto& operands = ret.operands();
  for (size_t i = 0; i < operands.size(); ++i) {
    auto it = scope.values.find(operands[i]);
    bool again = std::find(operands.begin() + static_cast<long>(i) + 1, operands.end(), operands[i]) != operands.end();
    if (it != scope.values.end() && !again) out.push_back(std::move(it->second));
    else out.push_back(scope.lookup(operands[i]));
  }
  return out;
}

}  // namespace

Kernel kernel(ir::OpKind kind) { return kKernels[static_cast<size_t>(kind)]; }

void check_results(const ir::Op& op, const Results& results) {
  TESSERA_CHECK(results.size() == op.num_results(), "{} kernel gave {} results for {}", op.name(),
                results.size(), op.num_results());
  for (size_t i = 0; i < results.size(); ++i)
    TESSERA_CHECK(results[i].type() == op.result(i)->type(), "{} kernel gave {} for result {} of {}",
                  op.name(), to_string(results[i].type()), i, to_string(op.result(i)->type()));
}

const Literal& Scope::lookup(const ir::Value* v) const {
  for (const Scope* s = this; s != nullptr; s = s->parent) {
    auto it = s->values.find(v);
    if (it != s->values.end()) return it->second;
  }
  TESSERA_CHECK(false, "value of type {} used before it is computed", to_string(v->type()));
  __builtin_unreachable();
}

EvalContext::EvalContext(const ir::Op& o, const Scope& scope, const RunState& s)
    : op(o), state(s), scope_(scope) {
  for (const ir::Value* v : op.operands()) looked_up_.push_back(&scope.lookup(v));
  operands_ = looked_up_;
}

EvalContext::EvalContext(const ir::Op& o, std::span<const Literal* const> operands, const Scope& scope,
                         const RunState& s)
    : op(o), state(s), scope_(scope), operands_(operands) {
  TESSERA_CHECK(operands.size() == op.operands().size(), "{} given {} operands for {}", op.name(),
                operands.size(), op.operands().size());
}

Results EvalContext::run_region(size_t i, std::vector<Literal> args) const {
  return run_block(op.region(i), std::move(args), &scope_, state);
}

Results run_block(const ir::Block& block, std::vector<Literal> args, const Scope* parent,
                  const RunState& state) {
  TESSERA_CHECK(args.size() == block.arguments().size(), "block of {} arguments run on {}",
                block.arguments().size(), args.size());
  Scope scope{parent, {}};
  for (size_t i = 0; i < args.size(); ++i) {
    TESSERA_CHECK(args[i].type() == block.argument(i)->type(), "block argument {} is {}, given {}",
                  i, to_string(block.argument(i)->type()), to_string(args[i].type()));
    scope.values.emplace(block.argument(i), std::move(args[i]));
  }
  auto fast = state.options ? state.options->accelerate : nullptr;
  std::unique_ptr<FusionPlan> plan;
  FusionPlanner planner = fast ? fusion_planner().load() : nullptr;
  if (planner && block.ops().size() >= kFreeAfterOps) plan = planner(block);
  std::vector<std::vector<const ir::Value*>> dead = dead_after(block, plan.get());
  auto value = [&scope](const ir::Value* v) -> const Literal& { return scope.lookup(v); };
  size_t at = 0;
  auto dying = [&](const ir::Value* v) -> Literal* {
    if (dead.empty() || std::find(dead[at].begin(), dead[at].end(), v) == dead[at].end()) return nullptr;
    auto it = scope.values.find(v);
    return it == scope.values.end() ? nullptr : &it->second;
  };
  for (; at < block.ops().size(); ++at) {
    const auto& op = block.ops()[at];
    if (op->kind() == ir::OpKind::Return) return take_returned(*op, scope);
    if (plan && plan->inlined(*op)) continue;  // computed inside the loops of its readers
    Results results;
    // One interval per op feeds the profile and the trace (the ops of a loop or call are timed,
    // not the loop or call itself).
    Profile* profile = state.options ? state.options->profile : nullptr;
    Trace* trace = state.options ? state.options->trace : nullptr;
    const bool timed = (profile || trace) && op->kind() != ir::OpKind::While && op->kind() != ir::OpKind::Call;
    auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    const bool fused = plan && plan->run(*op, value, dying, results);
    if (!fused) {
      ir::refuse_unlowered_quantized(*op, "interpreter");
      EvalContext ctx(*op, scope, state);
      if (!fast || !fast(*op, ctx.operands(), results)) results = kKernels[static_cast<size_t>(op->kind())](ctx);
    }
    if (timed) {
      auto end = std::chrono::steady_clock::now();
      if (profile) {
        std::lock_guard<std::mutex> lock(profile->mutex);
        std::string key(op->name());
        if (profile->by_type)
          for (size_t i = 0; i < op->num_results(); ++i) key += " " + to_string(op->result(i)->type());
        auto& entry = profile->by_op[key];
        ++entry.first;
        entry.second += std::chrono::duration<double>(end - start).count();
      }
      // The reference walk interns each op's label as it goes (the executable does it once).
      if (trace)
        trace->add(trace->track(trace_device(*state.options)), trace->intern(op_label(*op, fused)), trace->ns(start),
                   trace->ns(end));
    }
    check_results(*op, results);
    for (size_t i = 0; i < results.size(); ++i) scope.values.emplace(op->result(i), std::move(results[i]));
    if (!dead.empty())
      for (const ir::Value* v : dead[at]) scope.values.erase(v);
  }
  TESSERA_CHECK(false, "block does not end in a return");
  __builtin_unreachable();
}

int64_t index_value(const Literal& x, int64_t i) {
  if (ir::is_unsigned_integer(x.element())) {
    uint64_t u = x.get_uint(i);
    return u > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(u);
  }
  return x.get_int(i);
}

// ---- Scalar bodies ----

ScalarBody::ScalarBody(const EvalContext& ctx, size_t region, size_t n)
    : ctx_(ctx), region_(region), n_(n) {
  const ir::Block& body = ctx.op.region(region);
  if (body.arguments().size() != 2 * n)
    ctx.fail("body takes {} arguments, expected {}", body.arguments().size(), 2 * n);
  for (const auto& a : body.arguments())
    if (a->type().rank() != 0) ctx.fail("body argument of type {} is not a scalar", to_string(a->type()));
  // The fast path: return(op(arg0, arg1)) or return(op(arg1, arg0)) with one binary kernel.
  if (n != 1 || body.ops().size() != 2) return;
  const ir::Op& single = *body.ops()[0];
  const ir::Op& ret = *body.ops()[1];
  if (single.operands().size() != 2 || ret.operands().size() != 1 || ret.operand(0) != single.result(0))
    return;
  const ir::Value* a = body.argument(0);
  const ir::Value* b = body.argument(1);
  if (a->type() != b->type()) return;
  if (single.operand(0) == a && single.operand(1) == b) {
    swapped_ = false;
  } else if (single.operand(0) == b && single.operand(1) == a) {
    swapped_ = true;
  } else {
    return;
  }
  fast_ = scalar_binary(single.kind(), a->type().element);
}

void ScalarBody::apply(std::span<Literal> acc, int64_t ia, std::span<const Literal* const> xs,
                       int64_t ix) const {
  if (fast_ != nullptr && acc[0].element() == xs[0]->element() &&
      acc[0].element() == ctx_.op.region(region_).argument(0)->type().element) {
    size_t n = static_cast<size_t>(ir::info(acc[0].element()).bytes);
    std::byte* a = acc[0].bytes().data() + static_cast<size_t>(ia) * n;
    const std::byte* x = xs[0]->bytes().data() + static_cast<size_t>(ix) * n;
    swapped_ ? fast_(x, a, a) : fast_(a, x, a);
    return;
  }
  const ir::Block& body = ctx_.op.region(region_);
  std::vector<Literal> args;
  for (size_t k = 0; k < n_; ++k) args.push_back(element_as(acc[k], ia, body.argument(k)->type()));
  for (size_t k = 0; k < n_; ++k) args.push_back(element_as(*xs[k], ix, body.argument(n_ + k)->type()));
  Results out = ctx_.run_region(region_, std::move(args));
  if (out.size() != n_) ctx_.fail("body returns {} values, expected {}", out.size(), n_);
  for (size_t k = 0; k < n_; ++k) {
    if (out[k].num_elements() != 1) ctx_.fail("body returns {}, not a scalar", to_string(out[k].type()));
    convert_element(out[k], 0, acc[k], ia);
  }
}

Literal ScalarBody::combine(const Literal& lhs, const Literal& rhs) const {
  TESSERA_CHECK(lhs.type() == rhs.type(), "combining {} with {}", to_string(lhs.type()),
                to_string(rhs.type()));
  Literal out = lhs;
  const Literal* xs[] = {&rhs};
  for (int64_t i = 0; i < out.num_elements(); ++i) apply({&out, 1}, i, xs, i);
  return out;
}

void refuse_while_iterations(const ir::Op& op, int64_t limit) {
  std::string where = op.loc.line > 0 ? fmt::format(" at {}:{}", op.loc.line, op.loc.column) : "";
  support::fail("{}{}: its condition still holds after {} iterations, the limit (max_while_iterations)", op.name(),
                where, limit);
}

std::string Profile::to_string() const {
  std::vector<std::pair<double, std::string>> rows;
  double total = 0;
  for (const auto& [name, e] : by_op) {
    rows.push_back({e.second, name});
    total += e.second;
  }
  std::sort(rows.rbegin(), rows.rend());
  std::string out = fmt::format("{:<34} {:>8} {:>10} {:>6}\n", "op", "count", "ms", "%");
  for (const auto& [sec, name] : rows)
    out += fmt::format("{:<34} {:>8} {:>10.2f} {:>5.1f}%\n", name, by_op.at(name).first, sec * 1e3, 100 * sec / total);
  return out;
}

void set_fusion_planner(FusionPlanner planner) { fusion_planner().store(planner); }
FusionPlanner current_fusion_planner() { return fusion_planner().load(); }

// ---- Entry points ----

void check_arguments(const ir::Function& fn, const std::vector<Literal>& args) {
  if (args.size() != fn.num_parameters())
    support::fail("@{} takes {} arguments, got {}", fn.name(), fn.num_parameters(), args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    // A shape-polymorphic function runs once refined for its arguments (transforms/refine_shapes.h).
    if (!fn.parameter(i)->type().is_static())
      support::fail("@{}: parameter {} has the dynamic type {}: refine its shapes for the arguments first "
                    "(transforms::refine_shapes; `tessera run` does it from its inputs)",
                    fn.name(), i, to_string(fn.parameter(i)->type()));
    if (args[i].type() != fn.parameter(i)->type())
      support::fail("@{}: argument {} has type {}, but parameter {} has type {}", fn.name(), i,
                    to_string(args[i].type()), i, to_string(fn.parameter(i)->type()));
  }
}

std::vector<Literal> evaluate(const ir::Function& fn, std::vector<Literal> args,
                              const Options& options) {
  check_arguments(fn, args);
  SingleProcessCollectives single;
  RunState state{options.process, options.collectives ? options.collectives : &single,
                 options.module, &options};
  return run_block(fn.body(), std::move(args), nullptr, state);
}

std::vector<Literal> evaluate(const ir::Module& module, std::string_view name,
                              std::vector<Literal> args, Options options) {
  const ir::Function* fn = module.find_function(name);
  if (fn == nullptr) support::fail("no function @{} in the module", name);
  options.module = &module;
  return evaluate(*fn, std::move(args), options);
}

}  // namespace tessera::interp
