// Rows of the op table (op_table.h) for chlo.top_k and the linear-algebra ops: top_k's values
// (the inputs are apart, so no step of the finite differences changes the order); cholesky, lower
// and upper, of a positive-definite matrix plus a small matrix that is not symmetric (the op reads
// one triangle: the other must get no gradient), batched; triangular_solve on the left and right,
// lower and upper, with a unit diagonal, transposed and adjoint, batched; ragged_dot in
// jax.lax.ragged_dot's form with groups of 2, 0 and 3 rows (the sixth row in no group), and with
// its lhs and rhs dimensions in another order.
#include "ir/ragged_dot.h"
#include "op_table.h"

namespace tessera::autodiff::testing {

using ir::ElementType;
using ir::FunctionBuilder;
using ir::Transpose;

namespace {

using P = const std::vector<Tensor>&;

// s·I in the shape of x (identity matrices over x's last two dimensions).
Tensor eye_like(const Tensor& x, double s) {
  ir::Type t(ElementType::i32, x.shape());
  Tensor i = x.builder().iota(t, x.rank() - 2), j = x.builder().iota(t, x.rank() - 1);
  return ir::convert(ir::compare(i, j, ir::ComparisonDirection::EQ), x.element()) * s;
}

// x·xᵀ + 3·I + q: positive definite in each triangle, not symmetric.
Tensor spd_plus(const Tensor& x, const Tensor& q) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < x.rank(); ++d) perm.push_back(d);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return ir::matmul(x, ir::transpose(x, perm)) + eye_like(x, 3) + q;
}

Tensor group_sizes(FunctionBuilder& f) { return f.constant(Literal::from_ints(ir::i32({3}), std::vector<int64_t>{2, 0, 3})); }

}  // namespace

std::vector<Row> linalg_rows() {
  return {
      {"top_k", {OpKind::TopK}, {{{3, 5}}},
       [](FunctionBuilder&, P p) { return ir::top_k(p[0], 3)[0]; }},
      {"ragged_dot", {OpKind::RaggedDot}, {{{6, 3}}, {{3, 3, 2}}},
       [](FunctionBuilder& f, P p) {
         return ir::ragged_dot(p[0], p[1], group_sizes(f), ir::RaggedDotDims{{{}, {}, {1}, {1}}, {0}, {0}});
       }},
      {"ragged_dot_transposed_layouts", {OpKind::RaggedDot}, {{{3, 6}}, {{3, 3, 2}}},
       [](FunctionBuilder& f, P p) {
         return ir::ragged_dot(p[0], p[1], group_sizes(f), ir::RaggedDotDims{{{}, {}, {0}, {0}}, {1}, {1}});
       }},
      {"cholesky_lower", {OpKind::Cholesky}, {{{3, 3}}, {{3, 3}, -0.3, 0.3}},
       [](FunctionBuilder&, P p) { return ir::cholesky(spd_plus(p[0], p[1]), true); }},
      {"cholesky_upper_batched", {OpKind::Cholesky}, {{{2, 3, 3}}, {{2, 3, 3}, -0.3, 0.3}},
       [](FunctionBuilder&, P p) { return ir::cholesky(spd_plus(p[0], p[1]), false); }},
      {"triangular_solve_left_lower", {OpKind::TriangularSolve}, {{{3, 3}}, {{3, 2}}},
       [](FunctionBuilder&, P p) {
         return ir::triangular_solve(p[0] + eye_like(p[0], 5), p[1], true, true, false, Transpose::kNone);
       }},
      {"triangular_solve_left_upper_transposed_batched", {OpKind::TriangularSolve}, {{{2, 3, 3}}, {{2, 3, 4}}},
       [](FunctionBuilder&, P p) {
         return ir::triangular_solve(p[0] + eye_like(p[0], 5), p[1], true, false, false, Transpose::kTranspose);
       }},
      {"triangular_solve_right_lower_unit_adjoint", {OpKind::TriangularSolve}, {{{3, 3}}, {{2, 3}}},
       [](FunctionBuilder&, P p) { return ir::triangular_solve(p[0], p[1], false, true, true, Transpose::kAdjoint); }},
      {"triangular_solve_right_upper", {OpKind::TriangularSolve}, {{{3, 3}}, {{4, 3}}},
       [](FunctionBuilder&, P p) {
         return ir::triangular_solve(p[0] + eye_like(p[0], 5), p[1], false, false, false, Transpose::kNone);
       }},
  };
}

}  // namespace tessera::autodiff::testing
