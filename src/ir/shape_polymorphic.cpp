// Result types of an op whose operands have '?' dimensions (a shape-polymorphic JAX export).
//
// Most shape rules are written for static shapes: on a '?' they would compute with kDynamic (-1)
// as if it were a size, and reject, or give a wrong size. Rather than teach every rule the
// dynamic case, infer_polymorphic() runs the rule twice with every '?' of the operands replaced by
// a size (two different sizes, large enough that windows, pads and slices stay valid): a result
// dimension that comes out the same both times does not depend on the '?'s and is static, one
// that differs is '?'. This is what StableHLO's inference gives for these ops (a dimension
// computed from a dynamic one is dynamic), and shape refinement later fixes every '?' from the
// concrete arguments. Where the author's declared result type is compatible (same element type
// and rank, each dimension equal or one of the two '?'; the spec's verifier allows a declared type
// more or less refined than the inferred one) the result is the more refined of the two: what
// shape refinement needs, and the parser keeps the declared text (stablehlo/parser.cpp).
#include "ir/shape_polymorphic.h"

#include "ir/op_kind.h"
#include "support/error.h"

namespace tessera::ir {

namespace {

// Two probe sizes for '?'; distinct, odd, and big enough to survive negative padding and windows.
constexpr int64_t kProbeA = 1031;
constexpr int64_t kProbeB = 2053;

bool has_dynamic(const Type& t) {
  if (!t.is_tensor()) {
    for (const Type& m : t.elements)
      if (has_dynamic(m)) return true;
    return false;
  }
  for (int64_t d : t.shape)
    if (d == kDynamic) return true;
  return false;
}

Type substituted(const Type& t, int64_t size) {
  if (!t.is_tensor()) {
    Type out = t;
    for (Type& m : out.elements) m = substituted(m, size);
    return out;
  }
  Type out = t;
  for (int64_t& d : out.shape)
    if (d == kDynamic) d = size;
  out.bounds.clear();  // the probe is static
  return out;
}

// The two probe results merged: equal dimensions stay, differing ones become '?'.
std::optional<std::vector<Type>> merge(const std::vector<Type>& a, const std::vector<Type>& b) {
  if (a.size() != b.size()) return std::nullopt;
  std::vector<Type> out;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_tensor() || !b[i].is_tensor()) {
      if (!(a[i] == b[i])) return std::nullopt;
      out.push_back(a[i]);
      continue;
    }
    if (a[i].rank() != b[i].rank() || a[i].element != b[i].element) return std::nullopt;
    std::vector<int64_t> shape = a[i].shape;
    for (size_t d = 0; d < shape.size(); ++d)
      if (a[i].shape[d] != b[i].shape[d]) shape[d] = kDynamic;
    out.push_back(a[i].with_shape(std::move(shape)));
  }
  return out;
}

bool dims_compatible(const Type& inferred, const Type& declared) {
  if (inferred.kind != declared.kind) return false;
  if (!inferred.is_tensor()) {
    if (inferred.elements.size() != declared.elements.size()) return false;
    for (size_t i = 0; i < inferred.elements.size(); ++i)
      if (!dims_compatible(inferred.elements[i], declared.elements[i])) return false;
    return true;
  }
  if (inferred.rank() != declared.rank()) return false;
  for (size_t d = 0; d < inferred.shape.size(); ++d) {
    int64_t x = inferred.shape[d], y = declared.shape[d];
    if (x != y && x != kDynamic && y != kDynamic) return false;
  }
  // Element type and quantization: equal once the shapes (and bounds) are set aside.
  Type a = inferred, b = declared;
  a.shape.clear(), b.shape.clear(), a.bounds.clear(), b.bounds.clear();
  return a == b;
}

// The more refined of two compatible types: each dimension static where either is.
Type meet(const Type& inferred, const Type& declared) {
  if (!inferred.is_tensor()) {
    Type out = declared;
    for (size_t i = 0; i < out.elements.size(); ++i) out.elements[i] = meet(inferred.elements[i], declared.elements[i]);
    return out;
  }
  Type out = declared;
  for (size_t d = 0; d < out.shape.size(); ++d)
    if (out.shape[d] == kDynamic) out.shape[d] = inferred.shape[d];
  if (out.is_static()) out.bounds.clear();
  return out;
}

std::vector<Type> meet(const std::vector<Type>& inferred, std::span<const Type> declared) {
  std::vector<Type> out;
  for (size_t i = 0; i < inferred.size(); ++i) out.push_back(meet(inferred[i], declared[i]));
  return out;
}

// Each '?' of a tensor operand replaced by the size another operand of the same rank has there.
std::vector<Type> unify_elementwise(std::span<const Type> operands) {
  std::vector<Type> out(operands.begin(), operands.end());
  for (Type& t : out) {
    if (!t.is_tensor()) continue;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (t.shape[d] != kDynamic) continue;
      for (const Type& o : operands)
        if (o.is_tensor() && o.rank() == t.rank() && o.shape[d] != kDynamic) {
          t.shape[d] = o.shape[d];
          break;
        }
    }
    if (t.is_static()) t.bounds.clear();
  }
  return out;
}

}  // namespace

bool compatible_types(std::span<const Type> inferred, std::span<const Type> declared) {
  if (inferred.size() != declared.size()) return false;
  for (size_t i = 0; i < inferred.size(); ++i)
    if (!dims_compatible(inferred[i], declared[i])) return false;
  return true;
}

std::vector<Type> infer_polymorphic(const ShapeQuery& q, const std::function<std::vector<Type>(const ShapeQuery&)>& infer) {
  bool dynamic = false;
  for (const Type& t : q.operands) dynamic = dynamic || has_dynamic(t);
  // An elementwise op's operands of one rank have one shape at run time, so a '?' where another
  // operand is static is that size (the spec's "Dynamism" section: static dimensions must be equal,
  // others merely compatible; tensor<?x4xf32> + tensor<3x4xf32> is valid).
  if (dynamic && has_trait(q.kind, kElementwise)) {
    std::vector<Type> unified = unify_elementwise(q.operands);
    if (unified != std::vector<Type>(q.operands.begin(), q.operands.end()))
      return infer_polymorphic(ShapeQuery{q.kind, unified, q.attrs, q.declared}, infer);
  }
  // What the rule itself says; a result it gives that the declared types refine is the declared one.
  std::optional<support::UserError> first_error;
  std::vector<Type> direct;
  try {
    direct = infer(q);
    if (q.declared.empty() || (!dynamic && !has_dynamic_any(q.declared))) return direct;
    if (compatible_types(direct, q.declared)) return meet(direct, q.declared);
    if (!dynamic) return direct;
  } catch (const support::UserError& e) {
    if (!dynamic) throw;
    first_error = e;
  }
  // Operands with '?': probe the rule with two sizes for every '?'.
  std::optional<std::vector<Type>> merged;
  try {
    // The declared types take the same sizes: rules that read their result from them (convert,
    // broadcast_in_dim, reshape) then see one consistent static op.
    std::vector<Type> in_a, in_b, out_a, out_b;
    for (const Type& t : q.operands) {
      in_a.push_back(substituted(t, kProbeA));
      in_b.push_back(substituted(t, kProbeB));
    }
    for (const Type& t : q.declared) {
      out_a.push_back(substituted(t, kProbeA));
      out_b.push_back(substituted(t, kProbeB));
    }
    std::vector<Type> a = infer(ShapeQuery{q.kind, in_a, q.attrs, out_a});
    std::vector<Type> b = infer(ShapeQuery{q.kind, in_b, q.attrs, out_b});
    merged = merge(a, b);
  } catch (const support::UserError&) {
    merged.reset();
  }
  // The probed types, or the declared ones they agree with; a declared type that disagrees is left
  // to the caller to report against the probed (not the rule's misread) types.
  if (merged) {
    if (!q.declared.empty() && compatible_types(*merged, q.declared)) return meet(*merged, q.declared);
    return *merged;
  }
  if (first_error) throw *first_error;
  return direct;
}

bool has_dynamic_any(std::span<const Type> types) {
  for (const Type& t : types)
    if (has_dynamic(t)) return true;
  return false;
}

}  // namespace tessera::ir
