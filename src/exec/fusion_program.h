// The instructions of one root's loop (internal to exec: fusion.cpp's fused loops, and the row
// groups of fusion_rows.cpp that run several roots' loops over the same rows in turn). A Program is
// built per run from the plan: the registers of the root's tree of inlined ops, each computed by
// one instruction per block of kBlock elements (fused_kernels.h). run() covers the whole result,
// run_range() and sweep_range() a stretch of it (a row group's tile).
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <span>

#include "exec/dims.h"
#include "exec/fold.h"
#include "exec/fused_kernels.h"
#include "exec/fusion.h"
#include "exec/fusion_patterns.h"
#include "exec/fusion_rules.h"
#include "exec/fusion_workspace.h"
#include "exec/strided.h"
#include "support/run_cache.h"
#include "support/threads.h"

namespace tessera::exec {

namespace fusion_program {

using namespace fused;
using namespace fusion_workspace;
using ir::ElementType;
using ir::Literal;
using ir::Op;
using ir::OpKind;
using ir::Value;

// The instructions of one root's loop.
class Program {
 public:
  Program(const MultiResultPlan& plan, const Op& root, const std::function<const Literal&(const Value*)>& value,
          const ir::Type& loop, Workspace* given = nullptr)
      : plan_(plan), root_(root), value_(value), loop_(loop) {
    Workspace& mine = given ? *given : support::run_local<Workspace>();
    if (mine.busy) {  // never expected (programs do not nest), but then a workspace of its own
      own_ = std::make_unique<Workspace>();
      w_ = own_.get();
    } else {
      w_ = &mine;
    }
    w_->busy = true;
    w_->regs.clear();
    w_->in_place.clear();
    w_->kinds.clear();
    w_->used = 0;
  }
  ~Program() { w_->busy = false; }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // The register holding `v` for the current block.
  int reg(const Value* v) {
    if (int known = find_reg(v); known >= 0) return known;
    const Op* def = v->defining_op();
    int r;
    if (def && plan_.computed_in(*def, root_)) {
      r = compute(*def);
    } else {
      r = read(value_(v), v->type());
      if (w_->kinds[static_cast<size_t>(r)].in_place) w_->in_place.push_back(v);
    }
    w_->regs.emplace_back(v, r);
    return r;
  }

  // The values the loop reads where they lie, and whether one is also read through strides.
  const std::vector<const Value*>& in_place_reads() const { return w_->in_place; }
  bool loaded(const Value* v) const {
    std::span<const std::byte> bytes = value_(v).bytes();
    for (const Instr& s : instrs())  // a view's loads start inside
      if (s.src != nullptr && s.src >= bytes.data() && s.src < bytes.data() + bytes.size()) return true;
    return false;
  }

  // The loop's FoldShape (run_reduce's), in the workspace.
  FoldShape& fold() { return w_->fold; }

  // Gives the scratch registers their places once the instructions are all added, before the loop
  // runs with register `result` (and `more`, riders) read after each block. A register takes the
  // place of one of its width whose last instruction came before its first, so a block's working
  // set is the registers live at once, not every value of the tree (the loop of AdamW's update of p
  // computes 6 values in 3 places), and registers of 4-byte elements lie 2 KiB apart (at a 4 KiB
  // stride, every register fell into the same half of L1's sets). Registers that must hold through the
  // block keep places of their own: an invariant load's (written by the first block only), the
  // results, and any read before an instruction writes it.
  void seal(int result, std::span<const int> more = {});  // fusion_program.cpp

  // The register of `op`'s result, computed from its operands' registers.
  int compute(const Op& op) {
    const ir::Type& t = op.result(0)->type();
    if (fusion_rules::is_view(op.kind())) {
      Dims strides(t.shape.size());
      int64_t offset = view_strides(op, strides);
      return load(value_(op.operand(0)), strides, offset);
    }
    if (op.kind() == OpKind::Compare || op.kind() == OpKind::Convert) {
      int r = index_test(op);
      if (r >= 0) return r;
    }
    if (op.kind() == OpKind::Select) {
      int r = select_compare(op);
      if (r >= 0) return r;
    }
    if (op.operands().size() <= 2) {
      int r = folded_index_test(op);
      if (r >= 0) return r;
    }
    if (op.operands().size() == 2) {
      int r = binary_row(op);
      if (r >= 0) return r;
    }
    // The operands' registers first: computing them adds their instructions before this one.
    std::array<int, 4> in{-1, -1, -1, -1};
    for (size_t i = 0; i < op.operands().size(); ++i) in[i] = reg(op.operand(i));
    Instr& s = add();
    s.in = in;
    switch (op.kind()) {
      case OpKind::Iota:
        s.dim = t.rank() == 0 ? 0 : op.attrs().get<int64_t>("iota_dimension");
        s.shape.assign(t.shape.begin(), t.shape.end());
        s.strides.assign(t.shape.size(), 0);  // for_rows' offsets, unused
        s.fn = kernels().iota(t.element);
        break;
      case OpKind::Compare:
        s.direction = op.attrs().get<ir::ComparisonDirection>("comparison_direction");
        s.fn = kernels().compare(op.operand(0)->type().element);
        break;
      case OpKind::Select:
        s.fn = kernels().select(t.element);
        break;
      case OpKind::Convert: s.fn = kernels().converter(op.operand(0)->type().element, t.element); break;
      default: s.fn = kernels().arithmetic(op.kind(), t.element); break;
    }
    s.out = scratch(t.element);
    return s.out;
  }

  // Runs the loop over `total` elements, handing each block's register `result` to
  // consume(data, start, n). With `unit` (a multiple of kBlock) a large loop runs in chunks that
  // start at multiples of it, spread over the free threads: consume must then be safe to call
  // concurrently for blocks of different chunks.
  // Runs the loop over elements [first, last) (first: the start of a block of the whole loop, or of
  // a row group's tile), handing each block's register `result` to consume(data, start, n).
  template <typename F>
  void sweep_range(int result, int64_t first, int64_t last, F&& consume) {
    std::byte* scratch = nullptr;
    std::byte** regs = sealed_registers(result, scratch);
    sweep_blocks(regs, scratch, result, first, last, consume);
  }

  // Runs the loop over columns [c0, c1) of each of `rows` rows of `len` elements, row after row (a
  // column reduction's share of its results: fusion.cpp's fold), handing blocks to consume as
  // sweep_range does.
  template <typename F>
  void sweep_columns(int result, int64_t rows, int64_t len, int64_t c0, int64_t c1, F&& consume) {
    std::byte* scratch = nullptr;
    std::byte** regs = sealed_registers(result, scratch);
    for (int64_t r = 0; r < rows; ++r) sweep_blocks(regs, scratch, result, r * len + c0, r * len + c1, consume);
  }

  // Runs the loop over `total` elements, handing each block's register `result` to
  // consume(data, start, n). With `unit` (a multiple of kBlock) a large loop runs in chunks that
  // start at multiples of it, spread over the free threads: consume must then be safe to call
  // concurrently for blocks of different chunks.
  template <typename F>
  void sweep(int result, int64_t total, F&& consume, int64_t unit = 0) {
    int64_t chunk = unit > 0 ? chunk_elements(total, unit) : total;
    if (chunk >= total) {
      sweep_range(result, 0, total, consume);
      return;
    }
    support::parallel_chunks((total + chunk - 1) / chunk, [&](int64_t c) {
      sweep_range(result, c * chunk, std::min(total, (c + 1) * chunk), consume);
    });
  }

  // Folds rows of `len` elements (a multiple of kBlock) computed by the loop into dst[row], as
  // fold_block does, kGroup rows side by side: the blocks at one column of a group's rows are
  // computed in turn and staged, then folded, each row's elements still in order (the reference's
  // bits) but kGroup chains of dependent folds overlapped, where one row per block would be one
  // chain. Chunks of whole groups spread over the free threads; each row is folded by one thread.
  template <typename T, typename Combine>
  void fold_long_rows(int result, int64_t rows, int64_t len, T* dst, Combine&& combine) {
    constexpr int64_t kGroup = 8;
    // The last instruction computes `result` (compute() adds an op's instruction after its
    // operands'): it writes straight into the staging row unless it runs only once per chunk.
    bool direct = w_->used > 0 && instrs().back().out == result && !instrs().back().invariant;
    auto groups = [&](int64_t first_row, int64_t last_row) {
      std::byte* scratch = nullptr;
      std::byte** regs = sealed_registers(result, scratch);
      alignas(64) T stage[kGroup][kBlock];
      bool first = true;
      for (int64_t r = first_row; r < last_row; r += kGroup) {
        int64_t count = std::min(kGroup, last_row - r);
        for (int64_t c = 0; c < len; c += kBlock) {
          for (int64_t g = 0; g < count; ++g) {
            int64_t start = (r + g) * len + c;
            point(regs, scratch, start);
            if (direct) regs[static_cast<size_t>(result)] = reinterpret_cast<std::byte*>(stage[g]);
            // Every block starts at a multiple of kBlock: an invariant load's register holds for all.
            for (const Instr& s : instrs())
              if (first || !s.invariant) s.fn(s, regs, start, kBlock);
            first = false;
            if (!direct) std::memcpy(stage[g], regs[static_cast<size_t>(result)], sizeof stage[g]);
          }
          if (count == kGroup) {
            T acc[kGroup];
            for (int64_t g = 0; g < kGroup; ++g) acc[g] = dst[r + g];
            for (int64_t i = 0; i < kBlock; ++i)
              for (int64_t g = 0; g < kGroup; ++g) acc[g] = combine(acc[g], stage[g][i]);
            for (int64_t g = 0; g < kGroup; ++g) dst[r + g] = acc[g];
          } else {
            for (int64_t g = 0; g < count; ++g) {
              T acc = dst[r + g];
              for (int64_t i = 0; i < kBlock; ++i) acc = combine(acc, stage[g][i]);
              dst[r + g] = acc;
            }
          }
        }
      }
    };
    int64_t chunk = chunk_elements(rows * len, kGroup * len) / len;  // rows per chunk
    if (chunk >= rows) {
      groups(0, rows);
      return;
    }
    support::parallel_chunks((rows + chunk - 1) / chunk, [&](int64_t c) {
      groups(c * chunk, std::min(rows, (c + 1) * chunk));
    });
  }

  // Runs the loop, writing register `result` into `out`, and registers `more` into `more_out`
  // (riders: stored after all of a block's instructions have run, so each may go over a value the
  // loop reads only in place). A large loop runs in chunks of whole blocks spread over the threads
  // the budget has free (support/threads.h), each chunk with registers of its own: an element's
  // value depends only on its index, never on the chunk or thread that computes it, so the result
  // has the bits of one thread's loop.
  void run(int result, Literal& out, std::span<const int> more = {}, std::span<Literal* const> more_out = {}) {
    int64_t total = out.num_elements();
    int64_t chunk = chunk_elements(total);
    if (chunk >= total) {
      run_range(result, out, more, more_out, 0, total);
      return;
    }
    support::parallel_chunks((total + chunk - 1) / chunk, [&](int64_t c) {
      run_range(result, out, more, more_out, c * chunk, std::min(total, (c + 1) * chunk));
    });
  }

  // The elements [first, last) of run()'s results, on this thread.
  void run_range(int result, Literal& out, std::span<const int> more, std::span<Literal* const> more_out, int64_t first,
                 int64_t last) {
    run_into(result, out.bytes().data(), 0, ir::info(out.element()).bytes, more, more_out, first, last);
  }

  // Register `result` of elements [first, last) into `to` (element `first` at to[0], `width`
  // bytes each): a row group's staged tile, which its reduce then folds.
  void run_into(int result, std::byte* to, int64_t first, int64_t last, int64_t width) {
    run_into(result, to, first, width, {}, {}, first, last);
  }

 private:
  // run_range into `base`, element `origin` at base[0].
  void run_into(int result, std::byte* base, int64_t origin, int64_t width, std::span<const int> more,
                std::span<Literal* const> more_out, int64_t first, int64_t last) {
    // The result register writes straight into the result; so does a root whose value is a
    // plain read (a select of a scalar predicate, say) through one copy. An invariant last
    // instruction runs for the first block only: its register is copied.
    bool direct = w_->used > 0 && instrs().back().out == result && !instrs().back().invariant;
    std::byte* scratch = nullptr;
    std::byte** regs = sealed_registers(result, scratch);
    for (int64_t start = first; start < last; start += kBlock) {
      int64_t n = std::min(kBlock, last - start);
      point(regs, scratch, start);
      std::byte* dst = base + (start - origin) * width;
      if (direct) regs[static_cast<size_t>(result)] = dst;
      // An invariant load gives every block the same elements: once per range.
      for (const Instr& s : instrs())
        if (start == first || !s.invariant) s.fn(s, regs, start, n);
      if (!direct) std::memcpy(dst, regs[static_cast<size_t>(result)], static_cast<size_t>(n * width));
      for (size_t j = 0; j < more.size(); ++j) {
        int64_t w = ir::info(more_out[j]->element()).bytes;
        std::memcpy(more_out[j]->bytes().data() + start * w, regs[static_cast<size_t>(more[j])], static_cast<size_t>(n * w));
      }
    }
  }

  const std::vector<Reg>& kinds() const { return w_->kinds; }

  // The thread's registers for a run of the sealed loop (seal() placed them for `result`).
  std::byte** sealed_registers(int result, std::byte*& scratch) const {
    TESSERA_CHECK(sealed_ && result == sealed_result_, "a fused loop run for register {} but sealed for {}", result,
                  sealed_ ? sealed_result_ : -1);
    return registers(kinds().size(), scratch_bytes_, scratch);
  }

  // The registers of the block at `start`: values read in place at their element, the rest in the
  // thread's scratch.
  void point(std::byte** regs, std::byte* scratch, int64_t start) const {
    for (size_t r = 0; r < kinds().size(); ++r) {
      const Reg& g = kinds()[r];
      regs[r] = g.in_place ? const_cast<std::byte*>(g.src) + start * g.width : scratch + g.offset;
    }
  }
  std::span<const Instr> instrs() const { return {w_->instrs.data(), w_->used}; }

  // The next instruction, reset (its vectors keep their storage). Invalidated by the next add().
  Instr& add() {
    if (w_->used == w_->instrs.size()) w_->instrs.emplace_back();
    Instr& s = w_->instrs[w_->used++];
    sealed_ = false;
    s.fn = nullptr;
    s.in = {-1, -1, -1, -1};
    s.out = -1;
    s.src = nullptr;
    s.strides.clear();
    s.shape.clear();
    s.dim = 0;
    s.direction = {};
    s.invariant = false;
    s.row_len = 0;
    s.given = false;
    return s;
  }

  // A one-hot computed in the loop, compare(iota, b) EQ or NE (either way round) with the iota
  // along the last dimension and b the same all along it, alone or converted to a float type: one
  // instruction (fused::index_test) that writes the miss value and, in each row of the block, the
  // hit at b's index, where the iota, b's broadcast, the compare and the convert would each take a
  // pass over the block. Recognised from the ops' kinds, shapes and strides; -1 where it does not
  // apply (the loop then computes the ops one by one).
  // With `values`, the instruction writes them (Instr::given) for `op`'s result, the one-hot's
  // values as ops of scalars made them (folded_index_test); with `check`, 0 where it applies and
  // nothing added.
  int index_test(const Op& op, const Values* values = nullptr, bool check = false) {
    if (!index_tests_on()) return -1;
    const Op* cmp = &op;
    if (op.kind() == OpKind::Convert) {
      cmp = op.operand(0)->defining_op();
      if (!cmp || cmp->kind() != OpKind::Compare || !plan_.computed_in(*cmp, root_)) return -1;
    }
    auto direction = cmp->attrs().get<ir::ComparisonDirection>("comparison_direction");
    if (direction != ir::ComparisonDirection::EQ && direction != ir::ComparisonDirection::NE) return -1;
    const ir::Type& t = cmp->result(0)->type();
    if (t.shape != loop_.shape || t.rank() == 0) return -1;
    const int64_t last = t.rank() - 1, len = t.shape.back();
    for (size_t side = 0; side < 2; ++side) {
      const Op* iota = cmp->operand(side)->defining_op();
      const Value* b = cmp->operand(1 - side);
      if (!iota || iota->kind() != OpKind::Iota || !plan_.computed_in(*iota, root_) ||
          iota->attrs().get<int64_t>("iota_dimension") != last)
        continue;
      ElementType e = iota->result(0)->type().element;
      // Every iota value converts to e exactly (and differently).
      int64_t exact = e == ElementType::f32 ? int64_t{1} << 24 : e == ElementType::f64 ? int64_t{1} << 53
                      : e == ElementType::i32 ? int64_t{1} << 31 : INT64_MAX;
      fused::Kernel fn = kernels().index_test(e, op.result(0)->type().element);
      if (!fn || len > exact) return -1;
      // b: a broadcast computed in the loop (its operand read through strides), none along the rows.
      const Op* def = b->defining_op();
      if (!def || def->kind() != OpKind::BroadcastInDim || !plan_.computed_in(*def, root_)) return -1;
      const Literal* src = &value_(def->operand(0));
      Dims strides(t.shape.size());
      broadcast_strides(*def, strides);
      if (strides[static_cast<size_t>(last)] != 0) return -1;
      if (check) return 0;
      Instr& s = add();
      if (values) {
        s.given = true;
        s.values = *values;
      }
      s.src = src->bytes().data();
      s.strides.assign(strides.begin(), strides.end());
      s.shape.assign(t.shape.begin(), t.shape.end());
      s.direction = direction;
      s.fn = fn;
      s.out = scratch(op.result(0)->type().element);
      count_index_test();
      return s.out;
    }
    return -1;
  }

  // The register already holding `v`, else -1.
  int find_reg(const Value* v) const {
    for (const auto& [value, r] : w_->regs)
      if (value == v) return r;
    return -1;
  }
  bool in_register(const Value* v) const { return find_reg(v) >= 0; }

  // Whether `op` (f32 or f64) takes two values only: those of a one-hot computed in the loop
  // (index_test), through unary ops and binary ops with a scalar broadcast, none of them in a
  // register yet. Returns the one-hot's convert, with the values at the index and elsewhere in
  // `at`; null otherwise. Where two NaNs would meet in a commutative op, null (which NaN x86
  // returns then depends on the operands' order, which the compiler picks per loop).
  const Op* two_valued(const Op& op, Values& at) {
    ElementType e = op.result(0)->type().element;
    if (!is_real(e) || op.result(0)->type().shape != loop_.shape) return nullptr;
    auto operand = [&](size_t i) -> const Op* {
      const Value* v = op.operand(i);
      const Op* d = v->defining_op();
      return d && plan_.computed_in(*d, root_) && !in_register(v) && v->type().element == e ? d : nullptr;
    };
    const size_t w = static_cast<size_t>(ir::info(e).bytes);
    auto is_nan = [&](const std::array<std::byte, 8>& v) {
      if (w == 4) { float f; std::memcpy(&f, v.data(), 4); return f != f; }
      double d; std::memcpy(&d, v.data(), 8); return d != d;
    };
    if (op.kind() == OpKind::Convert) {
      if (index_test(op, nullptr, true) < 0) return nullptr;
      const Op* cmp = op.operand(0)->defining_op();
      bool eq = cmp->attrs().get<ir::ComparisonDirection>("comparison_direction") == ir::ComparisonDirection::EQ;
      for (size_t i = 0; i < 2; ++i) {
        double one = (i == 0) == eq ? 1.0 : 0.0;
        float f = static_cast<float>(one);
        if (w == 4) std::memcpy(at[i].data(), &f, 4);
        else std::memcpy(at[i].data(), &one, 8);
      }
      return &op;
    }
    fused::Kernel fn = kernels().arithmetic(op.kind(), e);
    if (!fn) return nullptr;
    if (op.operands().size() == 1) {
      const Op* d = operand(0);
      const Op* test = d ? two_valued(*d, at) : nullptr;
      if (test) apply(fn, at, nullptr, e, at);
      return test;
    }
    if (op.operands().size() != 2) return nullptr;
    for (size_t side = 0; side < 2; ++side) {
      const Op* c = operand(side);
      const Op* d = operand(1 - side);
      if (!c || !d || c->kind() != OpKind::BroadcastInDim || c->operand(0)->type().num_elements() != 1) continue;
      const Op* test = two_valued(*d, at);
      if (!test) return nullptr;
      Values scalar;
      for (size_t i = 0; i < 2; ++i) std::memcpy(scalar[i].data(), value_(c->operand(0)).bytes().data(), w);
      if (is_nan(scalar[0]) && (is_nan(at[0]) || is_nan(at[1]))) return nullptr;
      if (side == 0) apply(fn, scalar, &at, e, at);
      else apply(fn, at, &scalar, e, at);
      return test;
    }
    return nullptr;
  }

  // An arithmetic op that takes only a one-hot's two values (two_valued: c * one_hot, its
  // negation) as one index test writing those values, where the one-hot and each op after it
  // would take a pass; -1 where it does not apply.
  int folded_index_test(const Op& op) {
    if (op.kind() == OpKind::Convert || op.kind() == OpKind::Compare) return -1;  // index_test's own
    Values at;
    const Op* test = two_valued(op, at);
    if (!test) return -1;
    count_index_test_fold();
    return index_test(*test, &at);
  }

  // A select whose predicate is a compare computed in the loop (and not yet in a register: then
  // it is read from there), as one instruction (fused::select_compare) where the compare and the
  // select would each take a pass over the block. A compare of an iota is left to index_test; -1
  // where it does not apply (the ops are then computed one by one).
  int select_compare(const Op& op) {
    const Value* pred = op.operand(0);
    const Op* cmp = pred->defining_op();
    if (!cmp || cmp->kind() != OpKind::Compare || !plan_.computed_in(*cmp, root_)) return -1;
    if (in_register(pred)) return -1;
    for (const Value* u : cmp->operands())
      if (const Op* d = u->defining_op(); d && d->kind() == OpKind::Iota && plan_.computed_in(*d, root_)) return -1;
    fused::Kernel fn = kernels().select_compare(cmp->operand(0)->type().element, op.result(0)->type().element);
    if (!fn) return -1;
    std::array<int, 4> in{reg(cmp->operand(0)), reg(cmp->operand(1)), reg(op.operand(1)), reg(op.operand(2))};
    Instr& s = add();
    s.in = in;
    s.direction = cmp->attrs().get<ir::ComparisonDirection>("comparison_direction");
    s.fn = fn;
    s.out = scratch(op.result(0)->type().element);
    count_select_compare();
    return s.out;
  }

  // A binary op with one operand a row broadcast computed in the loop (a row max or sum along the
  // last dimension: fused::Instr::row_len) and not yet in a register, as one instruction
  // (fused::binary_row) reading the row's value where a gather would fill a register with it for
  // the op to read; -1 where it does not apply.
  int binary_row(const Op& op) {
    const ir::Type& t = op.result(0)->type();
    if (t.shape != loop_.shape) return -1;
    for (size_t side = 0; side < 2; ++side) {
      const Value* b = op.operand(side);
      const Op* def = b->defining_op();
      if (!def || def->kind() != OpKind::BroadcastInDim || !plan_.computed_in(*def, root_) ||
          b->type().element != t.element || op.operand(1 - side)->type().shape != t.shape)
        continue;
      fused::Kernel fn = kernels().binary_row(op.kind(), t.element, side == 0);
      if (!fn) return -1;
      bool known = in_register(b);
      Dims strides(t.shape.size());
      broadcast_strides(*def, strides);
      int64_t len = row_broadcast(t.shape, strides);
      if (known || len == 0) continue;
      int other = reg(op.operand(1 - side));
      Instr& s = add();
      s.in = {other, -1, -1, -1};
      s.src = value_(def->operand(0)).bytes().data();
      s.row_len = len;
      s.fn = fn;
      s.out = scratch(t.element);
      return s.out;
    }
    return -1;
  }

  // A register in the scratch; seal() gives it its place.
  int scratch(ElementType e) {
    Reg g;
    g.width = ir::info(e).bytes;
    w_->kinds.push_back(g);
    return static_cast<int>(w_->kinds.size()) - 1;
  }

  // A value the loop reads: in place at the loop's shape, else (a scalar) through strides.
  int read(const Literal& x, const ir::Type& t) {
    if (t.shape == loop_.shape) {
      Reg g;
      g.in_place = true;
      g.src = x.bytes().data();
      g.width = ir::info(t.element).bytes;
      w_->kinds.push_back(g);
      return static_cast<int>(w_->kinds.size()) - 1;
    }
    return load(x, Dims(loop_.shape.size()));
  }

  int load(const Literal& x, std::span<const int64_t> strides, int64_t offset = 0) {
    Instr& s = add();
    s.src = x.bytes().data() + offset * ir::info(x.element()).bytes;
    s.strides.assign(strides.begin(), strides.end());
    s.shape.assign(loop_.shape.begin(), loop_.shape.end());
    // Adjacent dimensions that the strides walk as one merge (a dimension of 1 with any): the
    // gather then copies rows as long as they run (a broadcast table's [2, 16] rows are 32 long).
    for (size_t d = s.shape.size(); d-- > 1;) {
      if (s.shape[d] != 1 && s.shape[d - 1] != 1 && s.strides[d - 1] != s.strides[d] * s.shape[d]) continue;
      if (s.shape[d] != 1) s.strides[d - 1] = s.strides[d];  // the merged dimension steps as the inner one
      s.shape[d - 1] *= s.shape[d];
      s.shape.erase(s.shape.begin() + static_cast<long>(d));
      s.strides.erase(s.strides.begin() + static_cast<long>(d));
    }
    // Block-invariant when only trailing dimensions of total size dividing kBlock have strides.
    int64_t period = 1;
    size_t d = s.shape.size();
    while (d > 0 && std::any_of(s.strides.begin(), s.strides.begin() + static_cast<long>(d),
                                [](int64_t st) { return st != 0; }))
      period *= s.shape[--d];
    s.invariant = period > 0 && kBlock % period == 0;
    s.row_len = row_broadcast(s.shape, s.strides);
    s.fn = kernels().gather(x.element());
    s.out = scratch(x.element());
    return s.out;
  }

  // sweep_range's loop over the blocks of [first, last), in registers already set up.
  template <typename F>
  void sweep_blocks(std::byte** regs, std::byte* scratch, int result, int64_t first, int64_t last, F&& consume) {
    for (int64_t start = first; start < last; start += kBlock) {
      int64_t n = std::min(kBlock, last - start);
      point(regs, scratch, start);
      // An invariant load gives every block the same elements (blocks kBlock apart): once per range.
      for (const Instr& s : instrs())
        if (start == first || !s.invariant) s.fn(s, regs, start, n);
      consume(static_cast<const std::byte*>(regs[static_cast<size_t>(result)]), start, n);
    }
  }

  const MultiResultPlan& plan_;
  const Op& root_;
  const std::function<const Literal&(const Value*)>& value_;
  const ir::Type& loop_;
  Workspace* w_ = nullptr;
  std::unique_ptr<Workspace> own_;
  int64_t scratch_bytes_ = 0;
  bool sealed_ = false;
  int sealed_result_ = -1;
};

}  // namespace fusion_program

}  // namespace tessera::exec
