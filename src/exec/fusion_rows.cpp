// Row groups (fusion_rows.h): finding them among a block's steps, and running their members tile
// by tile. A member's program is the one its own fused loop would run (fusion_program.h), over the
// tile's elements instead of all of them; a reduce folds the tile's rows with fold_block, in each
// row's order, from its stored operand or from its operand's tree staged for the tile.
#include "exec/fusion_rows.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string_view>

#include "exec/fold_rows.h"
#include "exec/fusion_program.h"
#include "exec/fusion_riders.h"
#include "exec/fusion_rules.h"
#include "support/error.h"

namespace tessera::exec {

namespace {

using fusion_program::Program;
using fusion_workspace::Workspace;
using ir::ElementType;
using ir::Literal;
using ir::Op;
using ir::OpKind;
using ir::Value;
using Shape = std::vector<int64_t>;

// Elements of a tile's P ++ [len] values: 64 KiB of f32 each, so that the several values a group
// reads and writes stay in the core's L2 from one member to the next. Rows of more than 2048
// elements go eight to a tile (a fold runs eight rows side by side).
constexpr int64_t kTileElements = 16384;

// A reduce whose rows fold_block can fold: f32 or f64 throughout, an add, multiply, max or min.
bool foldable_reduce(const Op& op) {
  if (op.kind() != OpKind::Reduce || op.operands().size() != 2 || op.num_results() != 1 || op.regions().size() != 1)
    return false;
  const ir::Type& x = op.operand(0)->type();
  ElementType e = x.element;
  if ((e != ElementType::f32 && e != ElementType::f64) || op.operand(1)->type() != ir::Type(e, {}) ||
      op.result(0)->type().element != e || op.region(0).arguments().empty() ||
      op.region(0).argument(0)->type().element != e || x.rank() == 0 || x.num_elements() == 0)
    return false;
  auto kind = ir::region_combiner(op);
  return kind && (*kind == OpKind::Add || *kind == OpKind::Multiply || *kind == OpKind::Maximum ||
                  *kind == OpKind::Minimum);
}

bool is_prefix(const Shape& p, const Shape& full) {
  return p.size() + 1 == full.size() && std::equal(p.begin(), p.end(), full.begin());
}

// What `op` is in a group over rows of `full` (P ++ [len]), if anything.
std::optional<RowRole> role_of(const Op& op, const Shape& full) {
  if (op.kind() == OpKind::Reduce) {
    if (!foldable_reduce(op) || op.operand(0)->type().shape != full) return std::nullopt;
    const auto& dims = op.attrs().get<std::vector<int64_t>>("dimensions");
    if (dims.size() == 1 && dims[0] == static_cast<int64_t>(full.size()) - 1) return RowRole::kReduceRows;
    if (dims.size() == full.size()) return RowRole::kReduceAll;
    return std::nullopt;
  }
  // A view alone is a strided copy (a broadcast's register would hold for a whole tile): left out.
  if (fusion_rules::is_view(op.kind()) || !fusion_rules::fusable(op)) return std::nullopt;
  const Shape& s = op.result(0)->type().shape;
  if (s == full) return RowRole::kFull;
  if (!s.empty() && is_prefix(s, full)) return RowRole::kRow;
  return std::nullopt;
}

// Visits the values `root`'s loop reads while computing `op` (in its tree): visit(v, via), via the
// view that reads v through strides, or null for a read at the loop's shape.
template <typename F>
void leaves(const MultiResultPlan& plan, const Op& root, const Op& op, F&& visit) {
  if (fusion_rules::is_view(op.kind())) {
    visit(op.operand(0), &op);
    return;
  }
  for (const Value* u : op.operands()) {
    const Op* d = u->defining_op();
    if (d && plan.computed_in(*d, root)) leaves(plan, root, *d, visit);
    else visit(u, nullptr);
  }
}

// Whether a loop over `loop` (P ++ [len] or P) reading v (via a view or not) at a tile's elements
// reads only the tile's rows of v: a slice or a reverse may read other rows, and is not looked into.
bool row_local(const Value* v, const Op* via, const Shape& loop, const Shape& full) {
  const Shape& s = v->type().shape;
  if (via == nullptr) return s == loop;
  if (via->kind() != OpKind::BroadcastInDim) return false;
  const auto& dims = via->attrs().get<std::vector<int64_t>>("broadcast_dimensions");
  for (size_t k = 0; k < dims.size(); ++k)
    if (dims[k] != static_cast<int64_t>(k)) return false;
  return s == loop || (loop == full && is_prefix(s, full));
}

// The group starting at steps[k], if one does.
bool try_group(const MultiResultPlan& plan, std::span<const RowStep> steps, size_t k, int64_t min_elements,
               RowGroup& g) {
  const Op& op0 = *steps[k].op;
  if (!steps[k].movable) return false;
  Shape full;
  if (op0.kind() == OpKind::Reduce && foldable_reduce(op0)) full = op0.operand(0)->type().shape;
  else if (op0.num_results() == 1) full = op0.result(0)->type().shape;
  if (full.empty() || !role_of(op0, full)) return false;
  const Shape p(full.begin(), full.end() - 1);
  g.len = full.back();
  g.rows = 1;
  for (int64_t d : p) g.rows *= d;
  if (g.len == 0 || g.rows == 0 || g.rows * g.len < std::max<int64_t>(min_elements, 1)) return false;
  std::unordered_set<const Value*> mine, late;  // computed by members in tiles; complete only after them
  int links = 0, passes = 0;
  bool has_rows = false;
  for (size_t j = k; j < steps.size(); ++j) {
    if (!steps[j].movable) break;
    const Op& op = *steps[j].op;
    std::optional<RowRole> role = role_of(op, full);
    const Shape& loop = role == RowRole::kRow ? p : full;
    bool reads_mine = false, local = true, reads_late = false;
    auto visit = [&](const Value* v, const Op* via) {
      if (late.count(v)) reads_late = true;
      if (mine.count(v)) {
        reads_mine = true;
        local = local && row_local(v, via, loop, full);
      }
    };
    leaves(plan, op, op, visit);
    std::span<const Op* const> riders = plan.riders(op);
    for (const Op* m : riders) leaves(plan, op, *m, visit);
    auto results = [&](auto&& add) {
      for (size_t r = 0; r < op.num_results(); ++r) add(op.result(r));
      for (const Op* m : riders) add(m->result(0));
    };
    if (role && local && !reads_late && g.members.size() < kMaxRowMembers) {
      g.members.push_back({static_cast<uint32_t>(j), &op, *role});
      links += reads_mine;
      passes += *role != RowRole::kRow;
      has_rows = has_rows || *role == RowRole::kReduceRows;
      results([&](const Value* v) { (*role == RowRole::kReduceAll ? late : mine).insert(v); });
      continue;
    }
    if (!reads_mine && !reads_late) {
      g.before.push_back(static_cast<uint32_t>(j));
      continue;
    }
    g.after.push_back(static_cast<uint32_t>(j));
    results([&](const Value* v) { late.insert(v); });
  }
  // Worth it: a row reduce, and values passed from member to member over the rows.
  if (!has_rows || passes < 3 || links < 2) return false;
  g.first = static_cast<uint32_t>(k);
  g.last = g.members.back().step;
  std::erase_if(g.before, [&](uint32_t s) { return s > g.last; });
  std::erase_if(g.after, [&](uint32_t s) { return s > g.last; });
  return true;
}

// ---- Running a group ----

// The members' workspaces (one program each, all alive at once) and a thread's staged tile,
// kept from run to run: a steady-state group allocates nothing.
struct RowWorkspaces {
  std::vector<std::unique_ptr<Workspace>> spaces;
};
struct RowStage : support::GrowingBuffer<std::byte> {};

struct MemberState {
  int reg = -1;                      // the register of its result (a reduce: of its operand), or -1
  std::array<int, kMaxRiders> more{};  // its riders' registers
  size_t riders = 0, dest = 0;       // its riders' count; its first destination in `dests`
  const std::byte* stored = nullptr;  // a reduce of a stored operand: the operand
};

template <typename T>
void fold_rows(const Op& op, RowRole role, const T* src, int64_t first, int64_t n, int64_t len, T* dst) {
  namespace s = interp::scalar;
  using E = ir::Elem<std::is_same_v<T, float> ? ElementType::f32 : ElementType::f64>;
  if constexpr (std::is_same_v<T, float>) {
    if (role == RowRole::kReduceRows) {  // whole rows from `first`: eight at a time in vectors
      int64_t done = fold_rows8_f32(*ir::region_combiner(op), src, n / len, len, dst + first / len);
      src += done * len;
      first += done * len;
      n -= done * len;
      if (n == 0) return;
    }
    if (role == RowRole::kReduceAll && *ir::region_combiner(op) == OpKind::Add) {  // one row: dst[0]
      int64_t done = 0;
      dst[0] = sum_skipping_zeros_f32(dst[0], src, n, done);
      src += done;
      first += done;
      n -= done;
      if (n == 0) return;
    }
  }
  FoldShape f;
  f.rows = true;
  f.row = role == RowRole::kReduceAll ? op.operand(0)->type().num_elements() : len;
  auto run = [&]<typename Fn>() {
    fold_block(f, src, first, n, dst, [](T a, T b) { return Fn::template apply<E>(a, b); }, std::is_same_v<Fn, s::Add>);
  };
  switch (*ir::region_combiner(op)) {
    case OpKind::Add: run.template operator()<s::Add>(); break;
    case OpKind::Multiply: run.template operator()<s::Multiply>(); break;
    case OpKind::Maximum: run.template operator()<s::Maximum>(); break;
    default: run.template operator()<s::Minimum>(); break;
  }
}

// Elements [first, first + n) of a reduce member's operand: where it is stored, or computed into
// this thread's stage (the operand's last instruction writes there: no copy of each block).
template <typename T>
const T* operand(Program* p, const MemberState& m, int64_t first, int64_t n) {
  if (m.stored) return reinterpret_cast<const T*>(m.stored) + first;
  std::byte* stage = support::run_local<RowStage>().reserve(n * static_cast<int64_t>(sizeof(T)));
  p->run_into(m.reg, stage, first, first + n, sizeof(T));
  return reinterpret_cast<const T*>(stage);
}

// Folds the rows [r0, r1) of reduce member `op` (all of them for kReduceAll: its result was
// filled with the init before the first tile).
template <typename T>
void reduce_tile(const Op& op, RowRole role, Program* p, const MemberState& m, Literal& out, const Literal& init,
                 int64_t r0, int64_t r1, int64_t len) {
  T* dst = reinterpret_cast<T*>(out.bytes().data());
  if (role == RowRole::kReduceRows) std::fill(dst + r0, dst + r1, reinterpret_cast<const T*>(init.bytes().data())[0]);
  int64_t first = r0 * len, n = (r1 - r0) * len;
  fold_rows<T>(op, role, operand<T>(p, m, first, n), first, n, len, dst);
}

// A sum of everything (kReduceAll, f32 add) with its tiles spread over threads: each chunk of
// tiles keeps its operand with each run of zeros as one zero (keep_zero_runs_f32), then one thread
// folds the chunks' lists in order, with the bits of the fold of every element in order. A masked
// loss (a one-hot times a log-softmax) keeps about one run in 64. A chunk whose list would pass its
// buffer (an operand with few zeros) is marked full and folded again after the others, as before.
struct ZeroRuns {
  support::GrowingBuffer<float> kept;
  int64_t size = 0;
  bool full = false;
};
struct ChunkRuns {
  std::vector<ZeroRuns> chunks;
};

}  // namespace

std::vector<RowGroup> find_row_groups(const MultiResultPlan& plan, std::span<const RowStep> steps) {
  std::vector<RowGroup> groups;
  // TESSERA_ROW_GROUPS=0 in the environment: none (for measuring what they gain, in one build).
  static const bool off = [] {
    const char* env = std::getenv("TESSERA_ROW_GROUPS");
    return env != nullptr && std::string_view(env) == "0";
  }();
  if (off) return groups;
  const int64_t min_elements = fusion_min_elements();
  for (size_t k = 0; k < steps.size();) {
    RowGroup g;
    if (!try_group(plan, steps, k, min_elements, g)) {
      ++k;
      continue;
    }
    k = g.last + 1;
    groups.push_back(std::move(g));
  }
  return groups;
}

void run_row_group(const MultiResultPlan& plan, const RowGroup& g,
                   const std::function<const Literal&(const Value*)>& value, std::span<Literal* const> dests) {
  const size_t count = g.members.size();
  RowWorkspaces& pool = support::run_local<RowWorkspaces>();
  while (pool.spaces.size() < count) pool.spaces.push_back(std::make_unique<Workspace>());
  std::array<std::optional<Program>, kMaxRowMembers> programs;
  std::array<MemberState, kMaxRowMembers> state;
  bool whole = false;
  size_t d = 0;
  for (size_t i = 0; i < count; ++i) {
    const Op& op = *g.members[i].op;
    MemberState& m = state[i];
    m.dest = d;
    if (op.kind() == OpKind::Reduce) {
      const Value* x = op.operand(0);
      if (x->defining_op() && plan.computed_in(*x->defining_op(), op)) {
        programs[i].emplace(plan, op, value, x->type(), pool.spaces[i].get());
        m.reg = programs[i]->reg(x);
        programs[i]->seal(m.reg);
      } else {
        m.stored = value(x).bytes().data();
      }
      if (g.members[i].role == RowRole::kReduceAll) {
        whole = true;
        Literal& out = *dests[d];
        std::memcpy(out.bytes().data(), value(op.operand(1)).bytes().data(), out.bytes().size());
      }
      d += 1;
      continue;
    }
    programs[i].emplace(plan, op, value, op.result(0)->type(), pool.spaces[i].get());
    m.reg = programs[i]->compute(op);
    std::span<const Op* const> riders = plan.riders(op);
    for (size_t j = 0; j < riders.size(); ++j) m.more[j] = programs[i]->reg(riders[j]->result(0));
    m.riders = riders.size();
    programs[i]->seal(m.reg, {m.more.data(), m.riders});
    d += 1 + riders.size();
  }
  TESSERA_CHECK(d == dests.size(), "a row group of {} results given {} destinations", d, dests.size());

  auto run_member = [&](size_t i, int64_t r0, int64_t r1) {
    const RowMember& member = g.members[i];
    const MemberState& m = state[i];
    Literal& out = *dests[m.dest];
    if (member.role == RowRole::kFull || member.role == RowRole::kRow) {
      int64_t scale = member.role == RowRole::kFull ? g.len : 1;
      programs[i]->run_range(m.reg, out, {m.more.data(), m.riders}, dests.subspan(m.dest + 1, m.riders), r0 * scale,
                             r1 * scale);
      return;
    }
    const Literal& init = value(member.op->operand(1));
    Program* p = programs[i] ? &*programs[i] : nullptr;
    if (out.element() == ElementType::f32) reduce_tile<float>(*member.op, member.role, p, m, out, init, r0, r1, g.len);
    else reduce_tile<double>(*member.op, member.role, p, m, out, init, r0, r1, g.len);
  };
  const int64_t tile = std::max<int64_t>(kTileElements / g.len, std::min<int64_t>(8, g.rows));
  // Tiles spread over the free threads in chunks of whole tiles (each row computed and folded by
  // one thread, as one thread would); a fold of everything then runs after them, in order: a sum's
  // from the chunks' kept runs (ZeroRuns), any other's computing its operand again.
  const int64_t total = g.rows * g.len;
  const int64_t per_chunk = std::max<int64_t>(1, fusion_workspace::chunk_elements(total, tile * g.len) / (tile * g.len));
  const int64_t chunks = (g.rows + tile * per_chunk - 1) / (tile * per_chunk);
  auto chunk_rows = [&](int64_t c) { return std::pair(c * tile * per_chunk, std::min(g.rows, (c + 1) * tile * per_chunk)); };
  // The one f32 sum of everything, if that is what the group's whole folds are (the loss).
  size_t summed = count, alls = 0;
  for (size_t i = 0; i < count; ++i) {
    if (g.members[i].role != RowRole::kReduceAll) continue;
    ++alls;
    if (dests[state[i].dest]->element() == ElementType::f32 && *ir::region_combiner(*g.members[i].op) == OpKind::Add)
      summed = i;
  }
  if (alls != 1 || chunks <= 1) summed = count;
  ChunkRuns& runs = support::run_local<ChunkRuns>();
  if (summed < count) {
    const int64_t capacity = std::max<int64_t>(tile * per_chunk * g.len / 8, 256);
    if (runs.chunks.size() < static_cast<size_t>(chunks)) runs.chunks.resize(static_cast<size_t>(chunks));
    for (int64_t c = 0; c < chunks; ++c) {
      ZeroRuns& r = runs.chunks[static_cast<size_t>(c)];
      r.kept.reserve(capacity);
      r.size = 0;
      r.full = false;
    }
  }
  // The rows [r_first, r_last), tile by tile, every member over a tile in turn; in chunk `c` of
  // several, the folds of everything wait for the end, the sum's operand kept while its tile is
  // still in cache.
  auto tiles = [&](int64_t r_first, int64_t r_last, int64_t c) {
    for (int64_t r0 = r_first; r0 < r_last; r0 += tile) {
      int64_t r1 = std::min(r_last, r0 + tile);
      for (size_t i = 0; i < count; ++i) {
        if (c < 0 || g.members[i].role != RowRole::kReduceAll) {
          run_member(i, r0, r1);
          continue;
        }
        ZeroRuns& r = runs.chunks[static_cast<size_t>(c)];
        if (i != summed || r.full) continue;
        int64_t n = (r1 - r0) * g.len;
        Program* p = programs[i] ? &*programs[i] : nullptr;
        int64_t kept = keep_zero_runs_f32(operand<float>(p, state[i], r0 * g.len, n), n, r.kept.data() + r.size,
                                          r.kept.size() - r.size);
        r.full = kept < 0;
        r.size += std::max<int64_t>(kept, 0);
      }
    }
  };
  if (chunks <= 1) {
    tiles(0, g.rows, -1);
    return;
  }
  support::parallel_chunks(chunks, [&](int64_t c) {
    auto [first, last] = chunk_rows(c);
    tiles(first, last, c);
  });
  if (!whole) return;
  for (size_t i = 0; i < count; ++i) {
    if (g.members[i].role != RowRole::kReduceAll) continue;
    for (int64_t c = 0; c < chunks; ++c) {
      const ZeroRuns* r = i == summed ? &runs.chunks[static_cast<size_t>(c)] : nullptr;
      if (r && !r->full) {
        float* dst = reinterpret_cast<float*>(dests[state[i].dest]->bytes().data());
        fold_rows<float>(*g.members[i].op, RowRole::kReduceAll, r->kept.data(), 0, r->size, g.len, dst);
        continue;
      }
      auto [first, last] = chunk_rows(c);
      for (int64_t r0 = first; r0 < last; r0 += tile) run_member(i, r0, std::min(last, r0 + tile));
    }
  }
}

}  // namespace tessera::exec
