// Shape rules of chlo.top_k, chlo.ragged_dot, stablehlo.cholesky and stablehlo.triangular_solve.
// Messages carry the spec's constraint numbers (C1, C2, ...); top_k follows CHLO's definition (values and indices of
// shape operand.shape[:-1] + [k]). Complex operands of the linear-algebra ops are refused by name:
// their kernels and gradients here are real.
#include "ir/ragged_dot.h"
#include "ir/shape_rules.h"

namespace tessera::ir {

std::optional<Transpose> transpose_of(const AttrMap& attrs) {
  const auto* o = attrs.find<Opaque>("transpose_a");
  if (o == nullptr) return std::nullopt;
  for (auto [t, text] : {std::pair{Transpose::kNone, "NO_TRANSPOSE"}, {Transpose::kTranspose, "TRANSPOSE"},
                         {Transpose::kAdjoint, "ADJOINT"}})
    if (o->text == fmt::format("#stablehlo<transpose {}>", text)) return t;
  return std::nullopt;
}

Opaque transpose_attr(Transpose t) {
  const char* text = t == Transpose::kNone ? "NO_TRANSPOSE" : t == Transpose::kTranspose ? "TRANSPOSE" : "ADJOINT";
  return Opaque{fmt::format("#stablehlo<transpose {}>", text)};
}

namespace shape_rules {
namespace {

using Types = std::vector<Type>;

void float_matrices(const ShapeQuery& q, size_t i, const char* name, const char* c_rank) {
  const Type& t = q.operands[i];
  if (!is_float(t.element) && !is_complex(t.element))
    reject(q, "{} has element type {}; expected a floating-point or complex type", name, spelling(t.element));
  if (t.rank() < 2) reject(q, "{} has rank {}, must be at least 2 ({})", name, t.rank(), c_rank);
}

}  // namespace

Types infer_TopK(const ShapeQuery& q) {
  const Type& x = q.operands[0];
  if (is_complex(x.element)) reject(q, "operand has element type {}; complex values have no order", spelling(x.element));
  if (x.rank() < 1) reject(q, "operand must have rank >= 1, not {}", to_string(x));
  const auto* k = q.attrs.find<int64_t>("k");
  if (k == nullptr) reject(q, "has no k");
  int64_t last = x.shape.back();
  if (*k < 0 || *k > last) reject(q, "k = {} is out of range [0, {}] for the last dimension of {}", *k, last, to_string(x));
  std::vector<int64_t> shape = x.shape;
  shape.back() = *k;
  return {Type(x.element, shape), Type(ElementType::i32, shape)};
}

// chlo.ragged_dot: CHLO's verifier's constraints (ragged_dot.h); the result is the lhs's type.
Types infer_RaggedDot(const ShapeQuery& q) {
  const auto* dims = q.attrs.find<RaggedDotDims>("ragged_dot_dimension_numbers");
  if (dims == nullptr) reject(q, "has no ragged_dot_dimension_numbers");
  auto layout = ragged_dot_layout(q.operands[0], q.operands[1], q.operands[2], *dims);
  if (const auto* why = std::get_if<std::string>(&layout)) reject(q, "{}", *why);
  return {Type(q.operands[0].element, std::get<RaggedDotLayout>(layout).shape)};
}

Types infer_Cholesky(const ShapeQuery& q) {
  float_matrices(q, 0, "a", "C2");
  const Type& a = q.operands[0];
  if (a.shape[a.shape.size() - 2] != a.shape.back()) reject(q, "a has shape {}, not square (C3)", to_string(a));
  return {a};
}

Types infer_TriangularSolve(const ShapeQuery& q) {
  float_matrices(q, 0, "a", "C2");
  float_matrices(q, 1, "b", "C2");
  const Type &a = q.operands[0], &b = q.operands[1];
  if (a.element != b.element)
    reject(q, "a has element type {} and b {} (C1)", spelling(a.element), spelling(b.element));
  if (a.rank() != b.rank()) reject(q, "a has rank {} and b {} (C2)", a.rank(), b.rank());
  for (const char* name : {"left_side", "lower", "unit_diagonal"})
    if (!q.attrs.find<bool>(name)) reject(q, "has no '{}' attribute", name);
  if (!transpose_of(q.attrs))
    reject(q, "transpose_a must be #stablehlo<transpose NO_TRANSPOSE>, <transpose TRANSPOSE> or <transpose ADJOINT>");
  size_t r = a.shape.size();
  for (size_t d = 0; d + 2 < r; ++d)
    if (a.shape[d] != b.shape[d]) reject(q, "a has shape {} and b {}: batch dimension {} differs (C3)", to_string(a), to_string(b), d);
  bool left = q.attrs.get<bool>("left_side");
  int64_t n = a.shape[r - 1], m = b.shape[left ? r - 2 : r - 1];
  if (a.shape[r - 2] != n || m != n)
    reject(q, "a has shape {} and b {}: a must be square and match b's dimension {} (C3)", to_string(a), to_string(b),
           left ? -2 : -1);
  return {b};
}

}  // namespace shape_rules
}  // namespace tessera::ir
