// Builder: chlo.top_k and the linear-algebra ops (cholesky, triangular_solve).
#include "ir/builder.h"

namespace tessera::ir {

std::vector<Tensor> top_k(const Tensor& x, int64_t k) {
  AttrMap a;
  a.set("k", k);
  return x.builder().emit(OpKind::TopK, {x}, std::move(a));
}

Tensor cholesky(const Tensor& a, bool lower) {
  AttrMap attrs;
  attrs.set("lower", lower);
  return a.builder().emit1(OpKind::Cholesky, {a}, std::move(attrs));
}

Tensor triangular_solve(const Tensor& a, const Tensor& b, bool left_side, bool lower, bool unit_diagonal,
                        Transpose transpose_a) {
  AttrMap attrs;
  attrs.set("left_side", left_side);
  attrs.set("lower", lower);
  attrs.set("unit_diagonal", unit_diagonal);
  attrs.set("transpose_a", transpose_attr(transpose_a));
  return a.builder().emit1(OpKind::TriangularSolve, {a, b}, std::move(attrs));
}

}  // namespace tessera::ir
