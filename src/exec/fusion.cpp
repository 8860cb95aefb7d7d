// Element-wise fusion: chains of element-wise ops computed in one loop, without materializing the
// values in between (the interp::FusionPlan of the fast kernels).
//
// The plan marks an element-wise op *inlined* when every op that reads its result is itself a
// fusable op that reads it element by element at its shape (and, for an expensive op such as exp
// or divide, or a cheap one whose inlined tree holds one, when there is only one reader, so
// nothing costly is computed twice; for a large cheap tree read by several loops, when computing it
// in each reads no more values from memory than storing it would). Every other fusable op
// is a *root*: it runs one loop over its result in blocks of kBlock elements, evaluating the tree
// of inlined ops below it instruction by instruction on block-sized registers that stay in cache
// (fused_kernels.h). A broadcast_in_dim in the tree reads its operand in place through strides;
// iota computes its index; a value read at the loop's shape is read where it lies, and the result
// may be written over one of those that dies here. A reduce can be a root too: it folds each block
// of its operand's tree into its results as the loop computes it (fold.h). Each instruction applies
// the reference kernel's scalar functor to each element in the same order of operations, and
// folds keep the reference's order, so fused results have the bits of the unfused kernels; only
// the passes over memory and the allocations change. Recomputing an inlined op for each root that
// reads it gives the same bits.
#include "exec/fusion.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "exec/dims.h"
#include "exec/fold.h"
#include "exec/fused_kernels.h"
#include "exec/fusion_contraction.h"
#include "exec/fusion_program.h"
#include "exec/fusion_riders.h"
#include "exec/fusion_workspace.h"
#include "exec/fusion_rules.h"
#include "support/error.h"
#include "support/run_cache.h"
#include "support/strings.h"
#include "support/threads.h"

namespace tessera::exec {

namespace fused {

bool has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

// The widest set the CPU runs (the same bits: fused_kernels.h). TESSERA_FUSED_ISA=base, avx2 or
// avx512 caps it, to compare the sets in one binary.
const KernelSet& kernels() {
  static const KernelSet& set = [&]() -> const KernelSet& {
    const char* env = std::getenv("TESSERA_FUSED_ISA");
    std::string_view cap = env ? env : "avx512";
    if (cap == "avx512" && has_avx512()) return avx512_kernels();
    if (cap != "base" && __builtin_cpu_supports("avx2")) return avx2_kernels();
    return base::kernel_set();
  }();
  return set;
}

}  // namespace fused

namespace {

using namespace fused;
using namespace fusion_rules;
using namespace fusion_workspace;
using fusion_program::Program;
using ir::ElementType;
using ir::Literal;
using ir::Op;
using ir::OpKind;
using ir::Value;

// ---- The plan (what fuses: fusion_rules.h) ----

// The minimum in force (fusion.h): kFusionMinElements, TESSERA_FUSION_MIN from the environment
// (to compare minimums in one build), or what set_fusion_min_elements set; -1: not read yet.
std::atomic<int64_t> min_fused{-1};

int64_t default_min_fused() {
  static const int64_t n =
      support::env_int("TESSERA_FUSION_MIN", 0, int64_t{1} << 40, "the fewest elements a fused value has, 0 to 2^40")
          .value_or(kFusionMinElements);
  return n;
}

// Values of at least this many elements (256 KiB of f32) whose cheap trees several loops read are
// stored when recomputing them reads more (Plan). Smaller ones stay in cache between the loops,
// where an extra loop costs more than reading a few values again: the tiny training step (values
// up to [8,16,256]) ran 9 % slower with every size stored so.
constexpr int64_t kStoreSharedTreesFrom = 65536;

// TESSERA_FUSED_RECOMPUTE=all: every cheap tree is computed again in each loop that reads it, however
// many values it reads (as before the rule in Plan; for measuring it in one build).
bool recompute_all() {
  static const bool all = [] {
    const char* env = std::getenv("TESSERA_FUSED_RECOMPUTE");
    return env && std::string_view(env) == "all";
  }();
  return all;
}

class Plan final : public MultiResultPlan {
 public:
  explicit Plan(const ir::Block& block) : block_(block) {
    auto& readers = readers_;
    for (const auto& op : block.ops()) {
      for (const Value* v : op->operands()) readers[v].push_back(op.get());
      // Values read inside regions count as read by the region's op, which never fuses.
    }
    for (const auto& op : block.ops()) {
      if (!fusable(*op)) continue;
      fused_.insert(op.get());
    }
    for (const auto& op : block.ops()) {
      if (!fused_.count(op.get()) || op->kind() == OpKind::Reduce) continue;  // a reduce always stores
      const std::vector<const Op*>& rs = readers[op->result(0)];
      // A value read by several loops is computed again in each: only when its whole tree is cheap.
      bool costly_tree = !is_cheap(op->kind());
      for (const Value* v : op->operands())
        costly_tree = costly_tree || (v->defining_op() && costly_.count(v->defining_op()));
      // The values at its size that its tree reads from memory: each loop that computes it again
      // reads them again. Stored, it is written once and read once per reader instead; a cheap
      // tree read by several loops is computed in each only when that reads no more (the backward
      // pass's residual gradient, a sum of one more term per layer, was otherwise summed again
      // from all its terms in each of its three readers' loops: reads quadratic in the depth).
      int64_t n = op->result(0)->type().num_elements();
      std::vector<const Value*> leaves;  // distinct: a value read twice in a loop is one stream
      auto add_leaf = [&](const Value* v) {
        if (std::find(leaves.begin(), leaves.end(), v) == leaves.end()) leaves.push_back(v);
      };
      for (const Value* v : op->operands()) {
        auto it = v->defining_op() ? reads_.find(v->defining_op()) : reads_.end();
        if (it != reads_.end()) for (const Value* leaf : it->second) add_leaf(leaf);
        else if (v->type().num_elements() == n) add_leaf(v);
      }
      int64_t loops = 0;  // distinct readers: x * x is one
      for (size_t i = 0; i < rs.size(); ++i) loops += std::find(rs.begin(), rs.begin() + static_cast<long>(i), rs[i]) == rs.begin() + static_cast<long>(i);
      auto reads = static_cast<int64_t>(leaves.size());
      bool recompute = loops == 1 || (!costly_tree && (recompute_all() || n < kStoreSharedTreesFrom ||
                                                       reads * loops <= reads + 1 + loops));
      bool ok = !rs.empty() && recompute && n >= min_fused_;
      for (const Op* r : rs) ok = ok && fused_.count(r) && reads_in_place(*r, op->result(0));
      if (ok) inlined_.insert(op.get());
      if (ok) reads_[op.get()] = std::move(leaves);
      if (ok && costly_tree) costly_.insert(op.get());
    }
    // Values read inside regions: the region's op is not fusable, so readers[] above missed them;
    // a value so read must stay materialized.
    for (const auto& op : block.ops())
      for (const auto& region : op->regions()) unmark_read_in(*region, region_reads_);
    // Transposes read through strides by dot_generals, or written by one (fusion_contraction.h).
    fold_transposes(block, readers, region_reads_, std::max<int64_t>(1, min_fused_), inlined_, folded_);
  }

  bool inlined(const Op& op) const override { return inlined_.count(&op) != 0; }

  void enable_riders() override {
    // A root of an element-wise loop of its own (not a fold, nor a folded contraction).
    auto loop_root = [&](const Op& op) {
      return op.kind() != OpKind::Reduce && !folded_.count(&op) && op.num_results() == 1 && runs(op);
    };
    choose_riders(block_, readers_, region_reads_, loop_root, inlined_, riders_);
  }
  std::span<const Op* const> riders(const Op& root) const override {
    auto it = riders_.of_root.find(&root);
    return it == riders_.of_root.end() ? std::span<const Op* const>{} : std::span<const Op* const>(it->second);
  }
  const Op* rides_with(const Op& op) const override {
    auto it = riders_.root_of.find(&op);
    return it == riders_.root_of.end() ? nullptr : it->second;
  }
  bool strided_read(const Op& root, const Value* v) const override { return exec::strided_read(root, v, inlined_); }
  bool contracts(const Op& op) const override { return folded_.count(&op) && !inlined_.count(&op); }
  bool computed_in(const Op& def, const Op& root) const override {
    if (!inlined_.count(&def)) return false;
    auto it = riders_.root_of.find(&def);
    return it == riders_.root_of.end() || it->second == &root;
  }

  bool runs(const Op& op) const override;

  bool run(const Op& op, const std::function<const Literal&(const Value*)>& value,
           const std::function<Literal*(const Value*)>& dying, std::vector<Literal>& results) const override;

 private:
  void unmark_read_in(const ir::Block& b, std::unordered_set<const Value*>& read) {
    for (const auto& op : b.ops()) {
      for (const Value* v : op->operands()) {
        read.insert(v);
        if (v->defining_op()) inlined_.erase(v->defining_op());
      }
      for (const auto& region : op->regions()) unmark_read_in(*region, read);
    }
  }

  const ir::Block& block_;
  std::unordered_map<const Value*, std::vector<const Op*>> readers_;
  std::unordered_set<const Value*> region_reads_;  // values read inside regions: stay materialized
  std::unordered_set<const Op*> fused_, inlined_;
  std::unordered_set<const Op*> costly_;  // inlined ops whose trees hold an op that is not cheap
  // Inlined ops: the values at their size that their trees read from memory.
  std::unordered_map<const Op*, std::vector<const Value*>> reads_;
  Riders riders_;  // none until enable_riders()
  FoldedContractions folded_;  // contractions that read or write through a folded transpose
  int64_t min_fused_ = fusion_min_elements();  // as the plan was made (tests change it between runs)
};


// A column reduction's loop is split into pieces of at least this many columns: a piece runs its
// loop row after row in blocks of its width, and narrower blocks cost more than a second thread
// saves (the larger step's norm-weight gradients, 256 columns in two pieces of 128: 28-32 ms per
// 10 steps on two threads against 22 on one).
constexpr int64_t kColumnPiece = kBlock;

// A narrower column reduction (a norm weight's gradient: 1024 rows of 256) is cut by rows instead,
// when its operand fits this many bytes: see fold.
constexpr int64_t kStagedColumnBytes = 8 << 20;

// The rows of a column reduction after the first part's, computed by the free threads (fold),
// kept in the run's cache from one step to the next.
struct ColumnStage : support::GrowingBuffer<std::byte> {};

// A reduce of a value computed in the loop: each block folded into the results as it is computed.
template <typename T>
void fold(Program& p, int reg, int64_t total, const FoldShape& f, OpKind kind, T* dst) {
  namespace s = interp::scalar;
  using E = ir::Elem<std::is_same_v<T, float> ? ElementType::f32 : ElementType::f64>;
  // Rows reduced (softmax's sums): chunks of whole rows (and whole blocks) spread over the free
  // threads, each row folded by one thread in its own order, so the bits do not depend on them.
  // Otherwise (the innermost dimension kept: a bias gradient summed over tokens) each result folds
  // elements from all over the loop: the columns are cut into one piece per free thread (pieces
  // of whole cache lines, each at least kColumnPiece wide: shorter blocks cost more per element),
  // each piece's loop run row after row by one thread, so each result folds its elements in order;
  // fewer columns than two pieces' worth, the rows are cut instead (below).
  int64_t unit = f.rows ? std::lcm(f.row, kBlock) : 0;
  int64_t rows = f.rows ? total / f.row : 0;
  bool long_rows = f.rows && f.row % kBlock == 0 && rows >= 8;  // fold_shape: kGroup rows side by side
  // Rows of 128 or 256 elements: a block holds 4 or 2, too few chains to overlap the folds'
  // latency. `group` blocks are staged and folded together, eight rows side by side (fold_block);
  // chunks of whole groups, so a group never spans two threads.
  int64_t group = f.rows && f.row < kBlock && kBlock % f.row == 0 ? std::max<int64_t>(1, 8 * f.row / kBlock) : 1;
  if (group > 1) unit = group * kBlock;
  auto run = [&]<typename Fn>() {
    auto combine = [](T a, T b) { return Fn::template apply<E>(a, b); };
    if (long_rows) {
      p.fold_long_rows(reg, rows, f.row, dst, combine);
      return;
    }
    int64_t columns = f.rows ? 0 : f.shape.back();
    int64_t threads = columns >= 2 * kColumnPiece && total >= 2 * kMinChunk ? support::available_threads() : 1;
    if (threads > 1) {
      int64_t per = std::max(kColumnPiece, ((columns + threads - 1) / threads + 15) / 16 * 16);
      support::parallel_chunks((columns + per - 1) / per, [&](int64_t c) {
        p.sweep_columns(reg, total / columns, columns, c * per, std::min(columns, (c + 1) * per),
                        [&](const std::byte* v, int64_t start, int64_t n) {
                          fold_block(f, reinterpret_cast<const T*>(v), start, n, dst, combine);
                        });
      });
      return;
    }
    // Fewer columns: the rows cut into one part per free thread at whole rows and blocks. The
    // first part's blocks are folded as they are computed; the other parts are computed into a
    // stage, then folded after the first by this thread, so each result still folds its elements
    // in order. The fold of the stage is a pass of adds: computing the operand is most of the work.
    int64_t staged_unit = columns > 0 ? std::lcm(columns, kBlock) : 0;
    threads = columns > 0 && total >= 2 * kMinChunk && total * int64_t{sizeof(T)} <= kStagedColumnBytes &&
                      total >= 2 * staged_unit
                  ? support::available_threads()
                  : 1;
    if (threads > 1) {
      int64_t per = (total / threads + staged_unit - 1) / staged_unit * staged_unit;
      int64_t parts = (total + per - 1) / per;
      T* staged = reinterpret_cast<T*>(support::run_local<ColumnStage>().reserve((total - per) * int64_t{sizeof(T)}));
      support::parallel_chunks(parts, [&](int64_t c) {
        int64_t last = std::min(total, (c + 1) * per);
        if (c > 0) {
          p.run_into(reg, reinterpret_cast<std::byte*>(staged + (c - 1) * per), c * per, last, int64_t{sizeof(T)});
          return;
        }
        p.sweep_range(reg, 0, last, [&](const std::byte* v, int64_t start, int64_t n) {
          fold_block(f, reinterpret_cast<const T*>(v), start, n, dst, combine);
        });
      });
      fold_block(f, staged, per, total - per, dst, combine);
      return;
    }
    p.sweep(
        reg, total,
        [&](const std::byte* v, int64_t start, int64_t n) {
          if (group == 1) {
            fold_block(f, reinterpret_cast<const T*>(v), start, n, dst, combine, std::is_same_v<Fn, s::Add>);
            return;
          }
          // group <= 4: rows of at most kBlock / 2 fold here (fold_shape).
          thread_local std::array<T, 4 * kBlock> stage;
          int64_t at = start / kBlock % group;
          std::memcpy(stage.data() + at * kBlock, v, static_cast<size_t>(n) * sizeof(T));
          if (at == group - 1 || start + n == total)
            fold_block(f, stage.data(), start - at * kBlock, at * kBlock + n, dst, combine);
        },
        unit);
  };
  switch (kind) {
    case OpKind::Add: run.template operator()<s::Add>(); break;
    case OpKind::Multiply: run.template operator()<s::Multiply>(); break;
    case OpKind::Maximum: run.template operator()<s::Maximum>(); break;
    default: run.template operator()<s::Minimum>(); break;
  }
}

bool run_reduce(const Plan& plan, const Op& op, const std::function<const Literal&(const Value*)>& value,
                std::vector<Literal>& results) {
  const Value* x = op.operand(0);
  if (x->defining_op() == nullptr || !plan.inlined(*x->defining_op())) return false;  // a stored operand
  Program p(plan, op, value, x->type());
  FoldShape& f = p.fold();
  TESSERA_CHECK(fold_shape(op, f), "a fused reduce the plan could not fold");
  int reg = p.reg(x);
  p.seal(reg);
  // The caller's destination (an executable's arena) or a fresh literal: filled with init first.
  if (results.empty()) results.emplace_back(op.result(0)->type());
  Literal& r = results.back();
  const Literal& init = value(op.operand(1));
  OpKind kind = *ir::region_combiner(op);
  if (r.element() == ElementType::f32) {
    float* dst = reinterpret_cast<float*>(r.bytes().data());
    std::fill(dst, dst + r.num_elements(), reinterpret_cast<const float*>(init.bytes().data())[0]);
    fold<float>(p, reg, x->type().num_elements(), f, kind, dst);
  } else {
    double* dst = reinterpret_cast<double*>(r.bytes().data());
    std::fill(dst, dst + r.num_elements(), reinterpret_cast<const double*>(init.bytes().data())[0]);
    fold<double>(p, reg, x->type().num_elements(), f, kind, dst);
  }
  return true;
}

// Which ops run() computes: decided by the op and the plan alone, never by the values.
bool Plan::runs(const Op& op) const {
  if (folded_.count(&op)) return !inlined_.count(&op);
  if (!fused_.count(&op) || inlined_.count(&op)) return false;
  const auto inlined_operand = [&](const Value* v) {  // a rider is stored, for other loops
    return v->defining_op() != nullptr && inlined_.count(v->defining_op()) != 0 && !riders_.root_of.count(v->defining_op());
  };
  if (op.kind() == OpKind::Reduce) return inlined_operand(op.operand(0));  // else a stored operand
  // A view alone is the strided copy of the fast kernels; fusing starts at its readers.
  if (is_view(op.kind())) return false;
  // A small op with nothing inlined runs faster through the fast kernel, when there is one.
  bool alone = std::none_of(op.operands().begin(), op.operands().end(), inlined_operand);
  bool has_kernel = is_binary(op.kind()) || op.kind() == OpKind::Select || op.kind() == OpKind::Convert ||
                    op.kind() == OpKind::Iota;
  return !(alone && has_kernel && op.result(0)->type().num_elements() < min_fused_ && op.kind() != OpKind::Power);
}

bool Plan::run(const Op& op, const std::function<const Literal&(const Value*)>& value,
               const std::function<Literal*(const Value*)>& dying, std::vector<Literal>& results) const {
  if (!runs(op)) return false;
  if (auto it = folded_.find(&op); it != folded_.end()) {
    run_folded(it->second, value, results);
    return true;
  }
  if (op.kind() == OpKind::Reduce) return run_reduce(*this, op, value, results);
  const ir::Type& t = op.result(0)->type();
  Program p(*this, op, value, t);
  int result = p.compute(op);
  // Riders (fusion_riders.h): their registers, computed in the tree above, stored after the root.
  std::span<const Op* const> more = riders(op);
  std::array<int, kMaxRiders> more_regs{};
  std::array<Literal*, kMaxRiders> more_out{};
  for (size_t j = 0; j < more.size(); ++j) more_regs[j] = p.reg(more[j]->result(0));
  p.seal(result, {more_regs.data(), more.size()});
  // The result goes over a value of its type that dies here and that the loop reads only at the
  // element it writes (in place, never through a broadcast): that saves allocating and zeroing a
  // fresh buffer, and writes where the loop has just read. Moving a Literal keeps its buffer.
  // A destination the caller gave (an executable's arena, results holding one per result, riders
  // included) is written instead.
  if (!results.empty()) {
    TESSERA_CHECK(results.size() == 1 + more.size(), "a fused loop with {} riders given {} destinations", more.size(),
                  results.size());
    for (size_t j = 0; j < more.size(); ++j) more_out[j] = &results[1 + j];
    p.run(result, results[0], {more_regs.data(), more.size()}, {more_out.data(), more.size()});
    return true;
  }
  Literal* reuse = nullptr;
  for (const Value* v : p.in_place_reads())
    if (reuse == nullptr && v->type() == t && !p.loaded(v)) reuse = dying(v);
  results.push_back(reuse != nullptr ? std::move(*reuse) : Literal(t));
  for (const Op* m : more) results.emplace_back(m->result(0)->type());
  for (size_t j = 0; j < more.size(); ++j) more_out[j] = &results[1 + j];
  p.run(result, results[0], {more_regs.data(), more.size()}, {more_out.data(), more.size()});
  return true;
}

std::unique_ptr<interp::FusionPlan> plan(const ir::Block& block) { return std::make_unique<Plan>(block); }

}  // namespace

std::unique_ptr<interp::FusionPlan> plan_fusion(const ir::Block& block) { return plan(block); }

void set_fusion_min_elements(int64_t n) { min_fused = n; }
int64_t fusion_min_elements() {
  int64_t n = min_fused.load(std::memory_order_relaxed);
  return n >= 0 ? n : default_min_fused();
}

namespace {
std::atomic<int64_t> index_tests{0}, select_compares{0}, index_test_folds{0}, reused_registers{0};

// A switch for measuring a fused-loop path in one build: on unless the variable is "0".
bool switched_on(const char* variable) {
  const char* env = std::getenv(variable);
  return env == nullptr || std::string_view(env) != "0";
}
}  // namespace

bool index_tests_on() {
  static const bool on = switched_on("TESSERA_INDEX_TESTS");
  return on;
}
int64_t index_tests_built() { return index_tests.load(std::memory_order_relaxed); }
void count_index_test() { index_tests.fetch_add(1, std::memory_order_relaxed); }
int64_t select_compares_built() { return select_compares.load(std::memory_order_relaxed); }
void count_select_compare() { select_compares.fetch_add(1, std::memory_order_relaxed); }
int64_t index_test_folds_built() { return index_test_folds.load(std::memory_order_relaxed); }
void count_index_test_fold() { index_test_folds.fetch_add(1, std::memory_order_relaxed); }
bool shared_places_on() {
  static const bool on = switched_on("TESSERA_SHARED_PLACES");
  return on;
}
int64_t register_reuses() { return reused_registers.load(std::memory_order_relaxed); }
void count_register_reuses(int64_t n) { reused_registers.fetch_add(n, std::memory_order_relaxed); }

}  // namespace tessera::exec
