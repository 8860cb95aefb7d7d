// The reverse, forward and vmap rules of chlo.top_k, stablehlo.cholesky and
// stablehlo.triangular_solve (real types; the shape rules refuse complex ones).
//
// top_k moves cotangents and tangents along its indices, as one-hot masks over the last dimension
// (the k indices of a row are distinct, so the masked sum is a scatter or a gather). cholesky and
// triangular_solve follow the standard formulas, written with triangular_solve itself: for
// A = L·Lᵀ reading A's lower triangle, dL = L·φ(L⁻¹·dA·L⁻ᵀ) with φ the lower triangle, its diagonal
// halved (JAX's cholesky_jvp_rule), and its transpose Ā = L⁻ᵀ·φ(Lᵀ·L̄)·L⁻¹ folded onto the lower
// triangle the op reads (the upper factor is the lower one of the transposed triangle). For
// x = op(a)⁻¹·b: dx = op(a)⁻¹·(db − op(da)·x), b̄ = op(a)⁻ᵀ·x̄, op(a)‾ = −b̄·xᵀ (mirrored for
// the right side), each restricted to the triangle read. vmap puts the batch in front, where each
// op already has batch dimensions.
#include "autodiff/jvp_rules.h"
#include "autodiff/rules.h"
#include "autodiff/vmap_rules.h"

namespace tessera::autodiff {

using ir::ComparisonDirection;
using ir::ElementType;
using ir::Transpose;

namespace {

// x with its last two dimensions swapped.
Tensor mT(const Tensor& x) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < x.rank(); ++d) perm.push_back(d);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return ir::transpose(x, perm);
}

// Where row index i and column index j of x's matrices stand in `direction` (i GE j: the lower
// triangle, GT: strictly, EQ: the diagonal).
Tensor where(const Tensor& x, ComparisonDirection direction) {
  ir::Type t(ElementType::i32, x.shape());
  Tensor i = x.builder().iota(t, x.rank() - 2), j = x.builder().iota(t, x.rank() - 1);
  return ir::compare(i, j, direction);
}

Tensor keep(const Tensor& x, ComparisonDirection direction) {
  return ir::select(where(x, direction), x, zeros_like(x.builder(), x.type()));
}

// The triangle of a that the op reads: lower (upper) with the diagonal, strictly when the diagonal
// is taken as ones.
Tensor read_triangle(const Tensor& x, bool lower, bool unit_diagonal) {
  if (lower) return keep(x, unit_diagonal ? ComparisonDirection::GT : ComparisonDirection::GE);
  return keep(x, unit_diagonal ? ComparisonDirection::LT : ComparisonDirection::LE);
}

// φ(x): the lower triangle with the diagonal halved.
Tensor phi(const Tensor& x) { return keep(x, ComparisonDirection::GT) + keep(x, ComparisonDirection::EQ) * 0.5; }

Tensor solve(const Tensor& a, const Tensor& b, bool left, Transpose t) {
  return ir::triangular_solve(a, b, left, true, false, t);
}

// The upper case in terms of the lower one: U = Lᵀ for the transposed triangle.
Tensor lower_factor(const Tensor& y, bool lower) { return lower ? y : mT(y); }

// The one-hot [..., k, n] of top_k's indices [..., k] over a last dimension of n.
Tensor one_hot(const Tensor& indices, int64_t n) {
  std::vector<int64_t> shape = indices.shape(), dims;
  shape.push_back(n);
  for (int64_t d = 0; d < indices.rank(); ++d) dims.push_back(d);
  Tensor iota = indices.builder().iota(ir::Type(ElementType::i32, shape), indices.rank());
  return ir::compare(iota, ir::broadcast_in_dim(indices, shape, dims), ComparisonDirection::EQ);
}

struct SolveAttrs {
  bool left, lower, unit;
  Transpose t;
  bool transposed() const { return t != Transpose::kNone; }  // ADJOINT is TRANSPOSE on reals
};

SolveAttrs solve_attrs(const ir::Op& op) {
  const ir::AttrMap& a = op.attrs();
  return {a.get<bool>("left_side"), a.get<bool>("lower"), a.get<bool>("unit_diagonal"), *ir::transpose_of(a)};
}

}  // namespace

// x̄[..., indices[..., j]] += ȳ[..., j]
void vjp_TopK(VjpContext& c) {
  if (!c.has_cotangent(0)) return;
  int64_t n = c.x().shape().back(), r = c.x().rank();
  Tensor hot = one_hot(c.y(1), n);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < r; ++d) dims.push_back(d);
  Tensor dy = ir::broadcast_in_dim(c.dy(0), hot.shape(), dims);
  Tensor zero = zeros_like(c.b, dy.type());
  c.add(0, ir::reduce_sum(ir::select(hot, dy, zero), {r - 1}));
}

// ẏ[..., j] = ẋ[..., indices[..., j]]
void jvp_TopK(JvpContext& c) {
  int64_t n = c.x().shape().back(), r = c.x().rank();
  Tensor hot = one_hot(c.y(1), n);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d + 1 < r; ++d) dims.push_back(d);
  dims.push_back(r);
  c.set(0, c.term(0, [&](const Tensor& dx) {
    Tensor spread = ir::broadcast_in_dim(dx, hot.shape(), dims);
    return ir::reduce_sum(ir::select(hot, spread, zeros_like(c.b, spread.type())), {r});
  }));
}

// Ā = S*(L⁻ᵀ·φ(Lᵀ·L̄)·L⁻¹), S* folding the symmetric gradient onto the triangle read
void vjp_Cholesky(VjpContext& c) {
  bool lower = c.op.attrs().get<bool>("lower");
  Tensor l = lower_factor(c.y(), lower);
  Tensor lbar = keep(lower_factor(c.dy(), lower), ComparisonDirection::GE);
  Tensor p = phi(ir::matmul(mT(l), lbar));
  Tensor g = solve(l, solve(l, p, false, Transpose::kNone), true, Transpose::kTranspose);
  Tensor a = keep(g + mT(g), ComparisonDirection::GT) + keep(g, ComparisonDirection::EQ);
  c.add(0, lower ? a : mT(a));
}

// L̇ = L·φ(L⁻¹·Ȧ·L⁻ᵀ), Ȧ the symmetric matrix of the triangle read
void jvp_Cholesky(JvpContext& c) {
  bool lower = c.op.attrs().get<bool>("lower");
  Tensor l = lower_factor(c.y(), lower);
  c.set(0, c.term(0, [&](const Tensor& da) {
    Tensor d = lower_factor(da, lower);
    Tensor sym = keep(d, ComparisonDirection::GE) + mT(keep(d, ComparisonDirection::GT));
    Tensor m = solve(l, solve(l, sym, true, Transpose::kNone), false, Transpose::kTranspose);
    Tensor dl = ir::matmul(l, phi(m));
    return lower ? dl : mT(dl);
  }));
}

// b̄ = op(a)⁻ᵀ·x̄; op(a)‾ = −b̄·xᵀ (left) or −xᵀ·b̄ (right), on the triangle read
void vjp_TriangularSolve(VjpContext& c) {
  SolveAttrs s = solve_attrs(c.op);
  Transpose flipped = s.transposed() ? Transpose::kNone : Transpose::kTranspose;
  Tensor bbar = ir::triangular_solve(c.x(0), c.dy(), s.left, s.lower, s.unit, flipped);
  c.add(1, bbar);
  const Tensor& x = c.y();
  Tensor op_bar = s.left ? ir::matmul(bbar, mT(x)) : ir::matmul(mT(x), bbar);
  Tensor abar = s.transposed() ? mT(op_bar) : op_bar;
  c.add(0, ir::negate(read_triangle(abar, s.lower, s.unit)));
}

// ẋ = op(a)⁻¹·(ḃ − op(ȧ)·x) (left) or (ḃ − x·op(ȧ))·op(a)⁻¹ (right)
void jvp_TriangularSolve(JvpContext& c) {
  SolveAttrs s = solve_attrs(c.op);
  Tensor rhs = c.dx(1);
  if (c.has_tangent(0)) {
    Tensor da = read_triangle(*c.tangent(0), s.lower, s.unit);
    Tensor op_da = s.transposed() ? mT(da) : da;
    rhs = rhs - (s.left ? ir::matmul(op_da, c.y()) : ir::matmul(c.y(), op_da));
  }
  c.set(0, ir::triangular_solve(c.x(0), rhs, s.left, s.lower, s.unit, s.t));
}

// top_k(x)[b] = top_k(x[b]): the last dimension stays last
void vmap_TopK(VmapContext& c) {
  std::vector<Tensor> ys = c.again({c.bx(0)});
  c.set(0, ys[0]);
  c.set(1, ys[1]);
}

// the batch is one more batch dimension of the matrices
void vmap_Cholesky(VmapContext& c) { c.set(0, c.again({c.bx(0)})[0]); }
void vmap_TriangularSolve(VmapContext& c) { c.set(0, c.again({c.bx(0), c.bx(1)})[0]); }

}  // namespace tessera::autodiff
