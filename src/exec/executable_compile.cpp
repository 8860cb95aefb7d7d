// Compiling a function into an Executable (executable.h): slots for values, a step per op with its
// kernel resolved, the fusion plan and the liveness of each block, while loops inline and callees
// compiled once.
#include <algorithm>
#include <atomic>
#include <unordered_set>
#include <fmt/format.h>

#include "exec/executable_code.h"
#include "exec/fusion.h"
#include "exec/fusion_rules.h"
#include "ir/quantize.h"
#include "support/error.h"

namespace tessera::exec {

namespace {

using detail::BlockCode;
using detail::Code;
using detail::Range;
using detail::Slot;
using detail::Step;
using detail::StepKind;
using ir::Block;
using ir::Op;
using ir::OpKind;
using ir::Value;

std::atomic<int64_t> compiled{0};

// Shared by one compile and the callees it compiles: each function once; a function that calls
// itself (directly or not) leaves the recursive call to the reference kernel.
struct Context {
  std::unordered_map<const ir::Function*, std::shared_ptr<const Executable>> done;
  std::unordered_set<const ir::Function*> in_progress;
};

// Records that a value is read by the op that runs at `at`, unless a later one reads it too.
void note_use(const Value* v, size_t at, std::unordered_map<const Value*, size_t>& last) {
  auto [it, added] = last.try_emplace(v, at);
  if (!added) it->second = std::max(it->second, at);
}
void note_uses(const Op& op, size_t at, std::unordered_map<const Value*, size_t>& last) {
  for (const Value* v : op.operands()) note_use(v, at, last);
  for (const auto& region : op.regions())
    for (const auto& inner : region->ops()) note_uses(*inner, at, last);
}

// The index of the block's return (the first one; a verified block has one, last).
size_t return_index(const Block& b) {
  for (size_t i = 0; i < b.ops().size(); ++i)
    if (b.ops()[i]->kind() == OpKind::Return) return i;
  TESSERA_CHECK(false, "block does not end in a return");
  __builtin_unreachable();
}

class Compiler {
 public:
  Compiler(Code& code, const CompileOptions& options, Context& context)
      : code_(code), options_(options), context_(context) {}

  Slot define(const Value* v) {
    Slot s = fresh(v->type());
    code_.slot_of.emplace(v, s);
    return s;
  }

  // Compiles `b` into `out`. Its arguments already have slots; `owns_args`: the block may free them
  // (a while condition's arguments are the loop state, which the body reads next).
  void compile_block(const Block& b, BlockCode& out, bool owns_args) {
    const auto& ops = b.ops();
    const size_t n = return_index(b);
    if (options_.accelerate && options_.planner && ops.size() >= interp::kMinPlannedBlockOps)
      out.plan = options_.planner(b);
    // Loops with several results (fusion_riders.h) in the function's own block, where the buffer
    // plan lays them out.
    auto* multi = dynamic_cast<MultiResultPlan*>(out.plan.get());
    if (multi && &out == &code_.body) multi->enable_riders();
    const interp::FusionPlan* plan = out.plan.get();
    std::unordered_map<const Op*, size_t> index_of;
    if (multi)
      for (size_t i = 0; i < ops.size(); ++i) index_of.emplace(ops[i].get(), i);
    auto rides_with = [&](const Op& op) { return multi ? multi->rides_with(op) : nullptr; };

    // Liveness, as interp's run_block computes it: an inlined op runs where the last of its readers
    // runs (a rider: where its root runs), a value dies after the last op that reads it (in its own
    // loop or in a region), a value nothing reads dies where it is defined (an argument: at the
    // first op).
    std::vector<size_t> runs_at(n + 1);
    std::unordered_map<const Value*, size_t> last;
    for (size_t i = n + 1; i-- > 0;) {
      const Op& op = *ops[i];
      runs_at[i] = i;
      if (const Op* root = rides_with(op)) {
        runs_at[i] = index_of.at(root);
      } else if (plan && plan->inlined(op)) {
        runs_at[i] = 0;
        for (size_t r = 0; r < op.num_results(); ++r) {
          auto it = last.find(op.result(r));
          if (it != last.end()) runs_at[i] = std::max(runs_at[i], it->second);
        }
      }
      for (const Value* v : op.operands()) note_use(v, runs_at[i], last);
      for (const auto& region : op.regions())
        for (const auto& inner : region->ops()) note_uses(*inner, i, last);
    }
    std::unordered_map<const Value*, size_t> dies_at;
    auto mark = [&](const Value* v, size_t defined) {
      auto it = last.find(v);
      dies_at.emplace(v, it != last.end() ? it->second : defined);
    };
    if (owns_args)
      for (const auto& a : b.arguments()) mark(a.get(), 0);
    for (size_t i = 0; i < n; ++i)
      if (!(plan && plan->inlined(*ops[i])) || rides_with(*ops[i]))  // else never stored, nothing to free
        for (size_t r = 0; r < ops[i]->num_results(); ++r) mark(ops[i]->result(r), runs_at[i]);
    auto dies_here = [&](const Value* v, size_t i) {
      auto it = dies_at.find(v);
      return it != dies_at.end() && it->second == i;
    };

    // The steps.
    std::vector<int64_t> step_of(n, -1);
    for (size_t i = 0; i < n; ++i) {
      const Op& op = *ops[i];
      for (size_t r = 0; r < op.num_results(); ++r) define(op.result(r));
      if (plan && plan->inlined(op)) {
        ++code_.stats.inlined;
        continue;
      }
      ir::refuse_unlowered_quantized(op, "executable compiler");
      Step s;
      s.op = &op;
      s.reference = interp::kernel(op.kind());
      std::vector<Slot> operands, results;
      for (const Value* v : op.operands()) operands.push_back(slot(v));
      for (size_t r = 0; r < op.num_results(); ++r) results.push_back(slot(op.result(r)));
      if (multi)  // the riders' values, after the op's own results
        for (const Op* m : multi->riders(op)) results.push_back(slot(m->result(0)));
      s.operands = list(operands);
      s.results = list(results);
      // Whether operand k may be moved into a while loop or a call: it dies here, this block owns
      // it, no later operand names it again and the op's regions do not read it.
      std::vector<const Value*> captures = op.regions().empty() ? std::vector<const Value*>{} : ir::captures_of(op);
      std::vector<uint8_t> move_in;
      for (size_t k = 0; k < op.operands().size(); ++k) {
        const Value* v = op.operand(k);
        bool again = std::find(op.operands().begin() + static_cast<long>(k) + 1, op.operands().end(), v) !=
                     op.operands().end();
        bool read_inside = std::find(captures.begin(), captures.end(), v) != captures.end();
        move_in.push_back(dies_here(v, i) && !again && !read_inside);
      }
      if (op.kind() == OpKind::While && compile_while(op, s, move_in)) {
      } else if (op.kind() == OpKind::Call && compile_call(op, s, move_in)) {
      } else {
        s.kind = plan && plan->runs(op) ? StepKind::kFused : StepKind::kKernel;
        s.try_fast = options_.accelerate != nullptr;
        code_.stats.fused += s.kind == StepKind::kFused;
        std::vector<std::pair<const Value*, Slot>> c;
        for (const Value* v : captures) c.push_back({v, slot(v)});
        s.captures = {static_cast<uint32_t>(code_.captured.size()), static_cast<uint32_t>(c.size())};
        code_.captured.insert(code_.captured.end(), c.begin(), c.end());
      }
      // The interpreter times the ops inside a while loop or a call, not the loop or call itself.
      if (op.kind() != OpKind::While && op.kind() != OpKind::Call) {
        s.profile = static_cast<int32_t>(code_.profile_keys.size());
        // A transpose that a dot_general writes in its order is the contraction's time: counted
        // as a dot_general, and named for both by type.
        bool contraction = op.kind() == OpKind::Transpose && multi && multi->contracts(op);
        std::string name = contraction ? std::string(ir::spelling(OpKind::DotGeneral)) : std::string(op.name());
        std::string typed = contraction ? name + " into " + std::string(op.name()) : name;
        for (size_t r = 0; r < op.num_results(); ++r) {
          typed += ' ';
          typed += to_string(op.result(r)->type());
        }
        code_.profile_keys.emplace_back(std::move(name), std::move(typed));
        code_.trace_labels.push_back(interp::op_label(op, s.kind == StepKind::kFused));
      }
      step_of[i] = static_cast<int64_t>(out.steps.size());
      out.steps.push_back(s);
    }
    code_.stats.steps += out.steps.size();

    // Frees: after the step of the op where each value dies, or at the return. Only an argument
    // that nothing reads dies at an inlined op (the first): it goes at the next step.
    std::vector<std::vector<Slot>> frees(out.steps.size());
    std::vector<Slot> at_return;
    for (auto [v, at] : dies_at) {
      while (at < n && step_of[at] < 0) ++at;
      if (at == n) at_return.push_back(slot(v));
      else frees[static_cast<size_t>(step_of[at])].push_back(slot(v));
    }
    for (size_t k = 0; k < frees.size(); ++k) {
      std::sort(frees[k].begin(), frees[k].end());
      out.steps[k].frees = list(frees[k]);
    }
    std::sort(at_return.begin(), at_return.end());
    out.return_frees = list(at_return);

    // The return: a value this block owns is moved out at its last mention, others are copied.
    const Op& ret = *ops[n];
    for (size_t k = 0; k < ret.operands().size(); ++k) {
      const Value* v = ret.operand(k);
      bool again = std::find(ret.operands().begin() + static_cast<long>(k) + 1, ret.operands().end(), v) !=
                   ret.operands().end();
      out.returns.push_back(slot(v));
      out.move_return.push_back(!again && dies_at.count(v) != 0);
    }
    out.declined = std::make_unique<std::atomic<bool>[]>(out.steps.size());
  }

 private:
  Slot fresh(const ir::Type& type) {
    code_.slot_types.push_back(&type);
    return static_cast<Slot>(code_.slot_types.size() - 1);
  }

  Slot slot(const Value* v) const {
    auto it = code_.slot_of.find(v);
    TESSERA_CHECK(it != code_.slot_of.end(), "value of type {} used before it is defined", to_string(v->type()));
    return it->second;
  }

  Range list(const std::vector<Slot>& slots) {
    Range r{static_cast<uint32_t>(code_.lists.size()), static_cast<uint32_t>(slots.size())};
    code_.lists.insert(code_.lists.end(), slots.begin(), slots.end());
    return r;
  }

  // A while loop whose condition and body keep the types eval_While needs; any other is left to the
  // reference kernel, which reports what is wrong when it runs.
  bool compile_while(const Op& op, Step& s, const std::vector<uint8_t>& move_in) {
    if (op.regions().size() != 2) return false;
    const Block& cond = op.region(0);
    const Block& body = op.region(1);
    size_t n = op.operands().size();
    if (cond.arguments().size() != n || body.arguments().size() != n || op.num_results() != n) return false;
    for (size_t k = 0; k < n; ++k) {
      const ir::Type& t = op.operand(k)->type();
      if (cond.argument(k)->type() != t || body.argument(k)->type() != t || op.result(k)->type() != t) return false;
    }
    const Op& cond_ret = *cond.ops()[return_index(cond)];
    if (cond_ret.operands().size() != 1 || cond_ret.operand(0)->type() != ir::Type(ir::ElementType::i1, {}))
      return false;
    const Op& body_ret = *body.ops()[return_index(body)];
    if (body_ret.operands().size() != n) return false;
    for (size_t k = 0; k < n; ++k)
      if (body_ret.operand(k)->type() != op.operand(k)->type()) return false;

    auto w = std::make_unique<detail::WhileCode>();
    for (size_t k = 0; k < n; ++k) {
      Slot state = fresh(op.operand(k)->type());
      w->state.push_back(state);
      code_.slot_of.emplace(cond.argument(k), state);
      code_.slot_of.emplace(body.argument(k), state);
    }
    w->move_in = move_in;
    compile_block(cond, w->cond, false);
    compile_block(body, w->body, true);
    s.kind = StepKind::kWhile;
    s.nested = static_cast<int32_t>(code_.whiles.size());
    code_.whiles.push_back(std::move(w));
    ++code_.stats.nested;
    return true;
  }

  // A call of a function of the module whose parameter and result types match the call's, and
  // that is not being compiled already (recursion stays with the reference kernel).
  bool compile_call(const Op& op, Step& s, const std::vector<uint8_t>& move_in);

  Code& code_;
  const CompileOptions& options_;
  Context& context_;
};

// The row groups of the function's block (fusion_rows.h), each with a profile key of its own. A
// step may run out of its place when it has no effects (an op of the fused loops' kinds, a reduce, a
// constant) and returns no value of a parameter's type (whose buffer, a donated argument's, may take
// it while the group still reads that argument).
void find_groups(Code& code) {
  const auto* plan = dynamic_cast<const MultiResultPlan*>(code.body.plan.get());
  code.group_at.assign(code.body.steps.size(), -1);
  if (plan == nullptr) return;
  std::unordered_set<Slot> returned;
  for (Slot r : code.body.returns)
    for (Slot p : code.params)
      if (*code.slot_types[p] == *code.slot_types[r]) returned.insert(r);
  std::vector<RowStep> steps;
  for (const Step& s : code.body.steps) {
    OpKind k = s.op->kind();
    bool movable = (s.kind == StepKind::kKernel || s.kind == StepKind::kFused) &&
                   (k == OpKind::Constant || k == OpKind::Reduce || fusion_rules::fusable(*s.op));
    const Slot* out = code.list(s.results);
    for (uint32_t r = 0; r < s.results.size; ++r) movable = movable && !returned.count(out[r]);
    steps.push_back({s.op, movable});
  }
  code.row_groups = find_row_groups(*plan, steps);
  for (size_t g = 0; g < code.row_groups.size(); ++g) {
    RowGroup& group = code.row_groups[g];
    code.group_at[group.first] = static_cast<int32_t>(g);
    ++code.stats.row_groups;
    code.stats.row_steps += group.members.size();
    group.profile = static_cast<int32_t>(code.profile_keys.size());
    code.profile_keys.emplace_back("row group", fmt::format("row group of {} steps, rows {}x{}", group.members.size(),
                                                             group.rows, group.len));
    code.trace_labels.push_back(interp::op_label(*group.members[0].op, true));
  }
}

std::shared_ptr<const Executable> compile_function(const ir::Function& fn, const CompileOptions& options,
                                                   Context& context) {
  std::shared_ptr<Executable> e = detail::Access::make();
  Code& code = detail::Access::code(*e);
  code.fn = &fn;
  code.module = options.module;
  code.accelerate = options.accelerate;
  context.in_progress.insert(&fn);
  Compiler c(code, options, context);
  for (size_t i = 0; i < fn.num_parameters(); ++i) code.params.push_back(c.define(fn.parameter(i)));
  c.compile_block(fn.body(), code.body, true);
  find_groups(code);
  context.in_progress.erase(&fn);
  code.stats.slots = code.slot_types.size();
  detail::plan_arena(code);
  ++compiled;
  context.done.emplace(&fn, e);
  return e;
}

bool Compiler::compile_call(const Op& op, Step& s, const std::vector<uint8_t>& move_in) {
  const std::string* callee_name = op.attrs().find<std::string>("callee");
  if (options_.module == nullptr || callee_name == nullptr) return false;
  const ir::Function* callee = options_.module->find_function(*callee_name);
  if (callee == nullptr || context_.in_progress.count(callee)) return false;
  if (callee->num_parameters() != op.operands().size() || callee->result_types != op.result_types()) return false;
  for (size_t k = 0; k < op.operands().size(); ++k)
    if (callee->parameter(k)->type() != op.operand(k)->type()) return false;
  auto it = context_.done.find(callee);
  std::shared_ptr<const Executable> e =
      it != context_.done.end() ? it->second : compile_function(*callee, options_, context_);
  s.kind = StepKind::kCall;
  s.nested = static_cast<int32_t>(code_.calls.size());
  code_.calls.push_back({std::move(e), move_in});
  ++code_.stats.nested;
  return true;
}

}  // namespace

Executable::Executable() : code_(std::make_unique<detail::Code>()) {}
Executable::~Executable() = default;

std::shared_ptr<const Executable> Executable::compile(const ir::Function& fn, const CompileOptions& options) {
  Context context;
  return compile_function(fn, options, context);
}

const ir::Function& Executable::function() const { return *code_->fn; }
const Executable::Stats& Executable::stats() const { return code_->stats; }
int64_t Executable::arena_bytes() const { return code_->arena_bytes; }
int64_t Executable::peak_bytes() const { return code_->peak_bytes; }
int64_t Executable::context_bytes() const { return code_->context_bytes; }
bool Executable::planned() const { return code_->planned; }
int64_t Executable::compilations() { return compiled.load(); }

}  // namespace tessera::exec
