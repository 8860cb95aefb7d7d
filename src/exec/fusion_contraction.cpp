// Transposes folded into dot_general's GEMM calls (fusion_contraction.h). The plan is checked when
// the fusion plan is made (the same shapes give the same plan at run time), so a folded op never
// declines for want of a layout: its inlined operand has no buffer to fall back on.
#include "exec/fusion_contraction.h"

#include <climits>

#include "exec/contraction.h"
#include "support/error.h"

namespace tessera::exec {

namespace {

using ir::ElementType;
using ir::Literal;
using ir::Op;
using ir::OpKind;
using ir::Value;
using Ints = std::vector<int64_t>;

const Ints& permutation(const Op& t) { return t.attrs().get<Ints>("permutation"); }
const ir::DotDims& dot_dims(const Op& d) { return d.attrs().get<ir::DotDims>("dot_dimension_numbers"); }

bool small_enough(const ir::Type& t) { return t.num_elements() < INT_MAX; }

// A dot_general the folded path computes: f32 or f64 throughout, every array indexable by BLAS's
// 32-bit integers (so no leading dimension overflows).
bool foldable_dot(const Op& d) {
  if (d.kind() != OpKind::DotGeneral || d.operands().size() != 2 || d.num_results() != 1) return false;
  ElementType e = d.result(0)->type().element;
  if (e != ElementType::f32 && e != ElementType::f64) return false;
  for (const Value* v : d.operands())
    if (v->type().element != e || !small_enough(v->type())) return false;
  return small_enough(d.result(0)->type());
}

// The strides a reader sees `v` through: the permuted strides of an inlined transpose's operand,
// or row-major (empty).
Ints transposed_strides(const Value* v, const OpSet& inlined) {
  const Op* t = v->defining_op();
  if (t == nullptr || t->kind() != OpKind::Transpose || !inlined.count(t)) return {};
  Ints xs = ir::row_major_strides(t->operand(0)->type().shape), s(xs.size());
  const Ints& perm = permutation(*t);
  for (size_t d = 0; d < s.size(); ++d) s[d] = xs[static_cast<size_t>(perm[d])];
  return s;
}

// The strides dot_general `d` writes its result through so that it lands in transpose `t`'s order.
Ints out_strides(const Op& t) {
  Ints ts = ir::row_major_strides(t.result(0)->type().shape), s(ts.size());
  const Ints& perm = permutation(t);
  for (size_t i = 0; i < s.size(); ++i) s[static_cast<size_t>(perm[i])] = ts[i];
  return s;
}

int64_t copied(const ContractionPlan& p) { return p.lhs_copy.elements + p.rhs_copy.elements; }

ContractionPlan plan_of(const Op& d, const Ints& ls, const Ints& rs, const Ints& os) {
  return plan_contraction(d.operand(0)->type().shape, d.operand(1)->type().shape, dot_dims(d), {ls, rs, os});
}

}  // namespace

void fold_transposes(const ir::Block& block, const std::unordered_map<const Value*, std::vector<const Op*>>& readers,
                     const std::unordered_set<const Value*>& region_reads, int64_t min_elements, OpSet& inlined,
                     FoldedContractions& folded) {
  auto readers_of = [&](const Value* v) -> const std::vector<const Op*>& {
    static const std::vector<const Op*> none;
    auto it = readers.find(v);
    return it == readers.end() ? none : it->second;
  };
  auto foldable = [&](const Op& op) {
    return op.result(0)->type().num_elements() >= min_elements && !region_reads.count(op.result(0));
  };
  // Transposes read only by dot_generals, each of which copies no more through the view.
  for (const auto& op : block.ops()) {
    if (op->kind() != OpKind::Transpose || !foldable(*op)) continue;
    const auto& rs = readers_of(op->result(0));
    bool ok = !rs.empty();
    for (const Op* r : rs) {
      if (!ok) break;
      if (!foldable_dot(*r)) {
        ok = false;
        break;
      }
      Ints l = r->operand(0) == op->result(0) ? transposed_strides(op->result(0), {op.get()}) : Ints{};
      Ints s = r->operand(1) == op->result(0) ? transposed_strides(op->result(0), {op.get()}) : Ints{};
      // (and the operands' roles kept: a plan computed as C^T gives other bits), also with the
      // other operand's transpose if it is folded already: two folds that each keep the roles
      // can swap them together (N,T read as T,N: contraction.h's C^T rule)
      ContractionPlan plain = plan_of(*r, {}, {}, {});
      Ints lo = l.empty() ? transposed_strides(r->operand(0), inlined) : l;
      Ints so = s.empty() ? transposed_strides(r->operand(1), inlined) : s;
      ok = copied(plan_of(*r, l, s, {})) <= copied(plain) && plan_of(*r, lo, so, {}).swapped == plain.swapped;
    }
    if (ok) inlined.insert(op.get());
  }
  // What a dot_general's GEMM calls read: an inlined transpose's operand, or the operand itself.
  auto source = [&](const Value* v) {
    const Op* t = v->defining_op();
    return t && inlined.count(t) ? t->operand(0) : v;
  };
  // Dot_generals read only by one transpose that is stored: the result written in its order.
  for (const auto& op : block.ops()) {
    if (!foldable_dot(*op)) continue;
    Ints l = transposed_strides(op->operand(0), inlined), r = transposed_strides(op->operand(1), inlined);
    FoldedContraction f{op.get(), source(op->operand(0)), source(op->operand(1)), &op->result(0)->type(), {}};
    const auto& rs = readers_of(op->result(0));
    const Op* t = rs.size() == 1 ? rs[0] : nullptr;
    if (t && t->kind() == OpKind::Transpose && !inlined.count(t) && foldable(*t) && !region_reads.count(op->result(0))) {
      f.plan = plan_of(*op, l, r, out_strides(*t));
      // Only with the operands' roles of the unfolded contraction: both libraries give other bits
      // with the roles swapped (C^T), and a fold must not change the bits a program computes
      // (transpose flags and leading dimensions keep them). A product that contraction.h computes
      // as C^T anyway (into a buffer, then copied) folds into a transpose that wants C^T when the
      // calls are the same: the buffer and the copy saved.
      ContractionPlan plain = plan_of(*op, l, r, {});
      bool roles_kept = f.plan.swapped ? same_gemm_calls(f.plan, plain) : !plain.swapped;
      if (f.plan.ok && roles_kept && fits_blas(f.plan) && copied(f.plan) <= copied(plain)) {
        inlined.insert(op.get());
        f.result = &t->result(0)->type();
        folded.emplace(t, f);
        continue;
      }
    }
    // (a scalar's view has no strides: ask the producers)
    if (f.lhs != op->operand(0) || f.rhs != op->operand(1)) {
      f.plan = plan_of(*op, l, r, {});
      TESSERA_CHECK(f.plan.ok && fits_blas(f.plan), "a row-major contraction without a plan");
      folded.emplace(op.get(), f);
    }
  }
}

void run_folded(const FoldedContraction& f, const std::function<const Literal&(const Value*)>& value,
                std::vector<Literal>& results) {
  const ir::Type& t = *f.result;
  bool fresh = results.empty();
  if (fresh) results.emplace_back(t);  // zero-filled: the GEMMs add into it
  TESSERA_CHECK(results.size() == 1 && results[0].type() == t, "a destination of another type than {}", to_string(t));
  const Literal &a = value(f.lhs), &b = value(f.rhs);
  std::byte* out = results[0].bytes().data();
  if (t.element == ElementType::f32)
    run_contraction(f.plan, reinterpret_cast<const float*>(a.bytes().data()),
                    reinterpret_cast<const float*>(b.bytes().data()), reinterpret_cast<float*>(out), fresh);
  else
    run_contraction(f.plan, reinterpret_cast<const double*>(a.bytes().data()),
                    reinterpret_cast<const double*>(b.bytes().data()), reinterpret_cast<double*>(out), fresh);
}

}  // namespace tessera::exec
