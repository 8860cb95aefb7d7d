// Kernels of reductions, contractions and control flow: reduce (any body, several inputs),
// dot_general (batch and contracting dimensions), while, optimization_barrier and return.
//
// reduce folds the input elements into the accumulators in row-major order, starting from the
// init values (the spec lets the order be any tree; a fixed order keeps results reproducible).
// dot_general reads each operand element exactly and accumulates floats in f32, or f64 for f64
// results: every product and partial sum is rounded to that type in a fixed order, and a narrower
// result (bf16, f16, the f8 kinds) is rounded from it once at the end, as XLA computes such dots
// (rounding every partial sum to bf16 drifts by many ulps over a long contraction). Complex numbers
// accumulate in complex<double>; integers with wrapping in 64 bits, wrapped to the result width (a
// float operand of an integer dot is truncated and saturated first, as stablehlo.convert would).
// An integer operand facing a float one is converted to the float's type first (XLA's rule).
#include <algorithm>
#include <complex>
#include <optional>

#include "interp/kernels.h"
#include "support/strings.h"

namespace tessera::interp {

using ir::Literal;

namespace {

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The dimensions of a dot_general operand that are neither batch nor contracting, in order.
std::vector<int64_t> free_dims(const Literal& x, const std::vector<int64_t>& batch,
                               const std::vector<int64_t>& contracting) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < x.type().rank(); ++d)
    if (!contains(batch, d) && !contains(contracting, d)) out.push_back(d);
  return out;
}

// XLA's dot operand converter: of a dot whose operands have different element types, an integer
// operand facing a floating-point (or complex) one is converted to that type first, so an i32
// entering a bf16 dot is rounded to bf16 before the product (the spec's C13 wants equal types;
// mixed types are XLA's extension). Null when x is used as it is.
std::optional<Literal> converted_operand(const Literal& x, const Literal& other) {
  bool x_int = !ir::is_float(x.element()) && !ir::is_complex(x.element());
  bool other_float = ir::is_float(other.element()) || ir::is_complex(other.element());
  if (!x_int || !other_float) return std::nullopt;
  Literal out(x.type().with_element(other.element()));
  for (int64_t i = 0; i < x.num_elements(); ++i) convert_element(x, i, out, i);
  return out;
}

template <typename Acc>
Literal contract(const EvalContext& ctx, const ir::DotDims& dn) {
  std::optional<Literal> lhs_converted = converted_operand(ctx.operand(0), ctx.operand(1));
  std::optional<Literal> rhs_converted = converted_operand(ctx.operand(1), ctx.operand(0));
  const Literal& lhs = lhs_converted ? *lhs_converted : ctx.operand(0);
  const Literal& rhs = rhs_converted ? *rhs_converted : ctx.operand(1);
  std::vector<Acc> a = elements_as<Acc>(lhs);
  std::vector<Acc> b = elements_as<Acc>(rhs);
  std::vector<int64_t> lhs_free = free_dims(lhs, dn.lhs_batch, dn.lhs_contracting);
  std::vector<int64_t> rhs_free = free_dims(rhs, dn.rhs_batch, dn.rhs_contracting);
  std::vector<int64_t> ls = lhs.strides(), rs = rhs.strides();
  std::vector<int64_t> contracting_shape;
  for (int64_t d : dn.lhs_contracting) contracting_shape.push_back(lhs.shape()[static_cast<size_t>(d)]);
  Literal out(ctx.result_type());
  bool is_bool = ir::is_bool(out.element());
  const bool wide = out.element() == ir::ElementType::f64;
  auto rounding = [wide](double v) { return wide ? v : static_cast<double>(static_cast<float>(v)); };
  (void)rounding;
  int64_t flat = 0;
  // Result dimensions: batch, then lhs free, then rhs free.
  for_each_index(out.shape(), [&](const std::vector<int64_t>& index) {
    int64_t lbase = 0, rbase = 0;
    size_t r = 0;
    for (size_t i = 0; i < dn.lhs_batch.size(); ++i, ++r) {
      lbase += index[r] * ls[static_cast<size_t>(dn.lhs_batch[i])];
      rbase += index[r] * rs[static_cast<size_t>(dn.rhs_batch[i])];
    }
    for (int64_t d : lhs_free) lbase += index[r++] * ls[static_cast<size_t>(d)];
    for (int64_t d : rhs_free) rbase += index[r++] * rs[static_cast<size_t>(d)];
    Acc sum{};
    for_each_index(contracting_shape, [&](const std::vector<int64_t>& k) {
      int64_t li = lbase, ri = rbase;
      for (size_t i = 0; i < k.size(); ++i) {
        li += k[i] * ls[static_cast<size_t>(dn.lhs_contracting[i])];
        ri += k[i] * rs[static_cast<size_t>(dn.rhs_contracting[i])];
      }
      if constexpr (std::is_same_v<Acc, double>) {
        // Each product and partial sum is rounded to the accumulation type (f32 or f64), so a
        // contraction split across devices sums its pieces in the type its partial results have.
        sum = rounding(sum + rounding(a[static_cast<size_t>(li)] * b[static_cast<size_t>(ri)]));
      } else {
        sum += a[static_cast<size_t>(li)] * b[static_cast<size_t>(ri)];  // uint64_t wraps
      }
    });
    if constexpr (std::is_same_v<Acc, uint64_t>)
      if (is_bool) sum = sum != 0;  // or of ands
    write_scalar(out, flat++, scalar_of(sum, out.element()));
  });
  return out;
}

}  // namespace

Results eval_DotGeneral(const EvalContext& ctx) {
  const auto& dn = ctx.op.attrs().get<ir::DotDims>("dot_dimension_numbers");
  ir::ElementType e = ctx.result_type().element;
  if (ir::is_complex(e)) return one(contract<std::complex<double>>(ctx, dn));
  if (ir::is_float(e)) return one(contract<double>(ctx, dn));
  return one(contract<uint64_t>(ctx, dn));
}

// N inputs and N init values; the body maps (acc_0..acc_N-1, x_0..x_N-1) to new accumulators.
Results eval_Reduce(const EvalContext& ctx) {
  size_t n = ctx.num_operands() / 2;
  const auto& dims = ctx.op.attrs().get<std::vector<int64_t>>("dimensions");
  Results acc;
  std::vector<const Literal*> inputs;
  for (size_t k = 0; k < n; ++k) {
    acc.emplace_back(ctx.result_type(k));
    for (int64_t i = 0; i < acc[k].num_elements(); ++i) convert_element(ctx.operand(n + k), 0, acc[k], i);
    inputs.push_back(&ctx.operand(k));
  }
  ScalarBody body(ctx, 0, n);
  std::vector<int64_t> kept_strides(inputs[0]->shape().size(), 0);  // 0 for reduced dimensions
  std::vector<int64_t> out_strides = acc[0].strides();
  for (size_t d = 0, j = 0; d < kept_strides.size(); ++d)
    if (!contains(dims, static_cast<int64_t>(d))) kept_strides[d] = out_strides[j++];
  int64_t flat = 0;
  for_each_index(inputs[0]->shape(), [&](const std::vector<int64_t>& index) {
    body.apply(acc, flat_index(index, kept_strides), inputs, flat++);
  });
  return acc;
}

Results eval_While(const EvalContext& ctx) {
  Results values;
  for (size_t i = 0; i < ctx.num_operands(); ++i) values.push_back(ctx.operand(i));
  const int64_t limit = ctx.state.options != nullptr ? ctx.state.options->max_while_iterations : -1;
  for (int64_t iterations = 0;; ++iterations) {
    Results cond = ctx.run_region(0, values);
    if (cond.size() != 1 || cond[0].type() != ir::Type(ir::ElementType::i1, {}))
      ctx.fail("condition must return one tensor<i1>");
    if (cond[0].get_int(0) == 0) return values;
    if (iterations == limit) refuse_while_iterations(ctx.op, limit);
    values = ctx.run_region(1, std::move(values));
    if (values.size() != ctx.num_operands()) ctx.fail("body returns {} values for {}", values.size(), ctx.num_operands());
  }
}

// if and case run exactly one branch: if's first on true; case's branch `index`, or its last when
// the index is out of range (the spec's semantics).
Results eval_If(const EvalContext& ctx) { return ctx.run_region(ctx.operand(0).get_int(0) != 0 ? 0 : 1, {}); }

Results eval_Case(const EvalContext& ctx) {
  int64_t index = ctx.operand(0).get_int(0);
  auto n = static_cast<int64_t>(ctx.op.regions().size());
  return ctx.run_region(static_cast<size_t>(index >= 0 && index < n ? index : n - 1), {});
}

// Identities for the interpreter: they only constrain how a compiler may reorder work.
Results eval_OptimizationBarrier(const EvalContext& ctx) {
  Results out;
  for (size_t i = 0; i < ctx.num_operands(); ++i) out.push_back(ctx.operand(i));
  return out;
}

// A block's results; run_block returns them.
Results eval_Return(const EvalContext& ctx) { return eval_OptimizationBarrier(ctx); }

}  // namespace tessera::interp
