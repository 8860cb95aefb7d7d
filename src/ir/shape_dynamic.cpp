// Shape rules of get_dimension_size and the dynamic ops (dynamic_broadcast_in_dim, dynamic_iota,
// dynamic_reshape, real_dynamic_slice, dynamic_pad, dynamic_gather, dynamic_conv). They hold before
// shape refinement, where dimensions may be '?': a constraint is checked where the sizes it
// compares are known, and the result type is the declared one (its sizes come from operand values).
// What needs those values (pad's C3/C4, gather's slice sizes, convolution's windows) is checked on
// the static form (ir/dynamic_shapes.h) when the values are known.
#include <set>

#include "ir/shape_rules.h"
#include "support/strings.h"

namespace tessera::ir::shape_rules {
namespace {

using Types = std::vector<Type>;

bool known(int64_t d) { return d != kDynamic; }

// Operand i is a 1-D integer tensor (a shape operand); returns its size (kDynamic when '?').
int64_t check_shape_operand(const ShapeQuery& q, size_t i, std::string_view name) {
  const Type& t = q.operands[i];
  if (!t.is_tensor() || t.rank() != 1 || !is_integer(t.element))
    reject(q, "{} has type {}, must be a 1-D integer tensor", name, to_string(t));
  return t.shape[0];
}

void check_size(const ShapeQuery& q, std::string_view name, int64_t size, int64_t want, std::string_view what,
                const char* c) {
  if (known(size) && known(want) && size != want)
    reject(q, "{} has {} values, must have {} ({}) {}", name, size, want, what, c);
}

void check_same_element(const ShapeQuery& q, const Type& a, const Type& b, const char* c) {
  if (a.element != b.element)
    reject(q, "result {} and operand {} have different element types {}", to_string(b), to_string(a), c);
}

void check_unique_in(const ShapeQuery& q, std::string_view name, const std::vector<int64_t>& dims, int64_t rank,
                     const char* c_range, std::set<int64_t>* seen, const char* c_unique) {
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) reject(q, "{} has dimension {}, out of range for rank {} {}", name, d, rank, c_range);
    if (!seen->insert(d).second) reject(q, "dimension {} is repeated in {} {}", d, name, c_unique);
  }
}

}  // namespace

Types infer_GetDimensionSize(const ShapeQuery& q) {
  const Type& in = q.operands[0];
  if (!in.is_tensor()) reject(q, "operand {} is not a tensor", to_string(in));
  const auto* d = q.attrs.find<int64_t>("dimension");
  if (d == nullptr) reject(q, "has no 'dimension' attribute");
  if (*d < 0 || *d >= in.rank()) reject(q, "dimension {} is out of range for {} (C1)", *d, to_string(in));
  return {Type(ElementType::i32, {})};
}

Types infer_DynamicBroadcastInDim(const ShapeQuery& q) {
  const Type& in = q.operands[0];
  const Type& out = declared_result(q);
  check_same_element(q, in, out, "(C1)");
  const auto* dims = q.attrs.find<std::vector<int64_t>>("broadcast_dimensions");
  if (dims == nullptr) reject(q, "has no 'broadcast_dimensions' attribute");
  if (static_cast<int64_t>(dims->size()) != in.rank())
    reject(q, "broadcast_dimensions has {} entries for operand rank {} (C2)", dims->size(), in.rank());
  std::set<int64_t> seen;
  for (int64_t d : *dims) {
    if (d < 0 || d >= out.rank()) reject(q, "broadcast_dimensions has {}, out of range for result rank {} (C3)", d, out.rank());
    if (!seen.insert(d).second) reject(q, "broadcast_dimensions repeats {} (C4)", d);
  }
  for (size_t i = 0; i < dims->size(); ++i) {
    int64_t a = in.shape[i], b = out.shape[static_cast<size_t>((*dims)[i])];
    if (known(a) && known(b) && a != 1 && a != b)
      reject(q, "operand dimension {} (size {}) cannot broadcast to result dimension {} (size {}) (C5)", i, a,
             (*dims)[i], b);
  }
  check_size(q, "output_dimensions", check_shape_operand(q, 1, "output_dimensions"), out.rank(), "the result's rank",
             "(C7)");
  std::set<int64_t> known_dims;
  // The dialect's attribute is known_nonexpanding_dimensions; some printers spell it with '_non_'.
  if (const auto* e = q.attrs.find<std::vector<int64_t>>("known_expanding_dimensions"))
    check_unique_in(q, "known_expanding_dimensions", *e, in.rank(), "(C9)", &known_dims, "(C8)");
  for (const char* name : {"known_nonexpanding_dimensions", "known_non_expanding_dimensions"})
    if (const auto* n = q.attrs.find<std::vector<int64_t>>(name))
      check_unique_in(q, name, *n, in.rank(), "(C10)", &known_dims, "(C8)");
  return {out};
}

Types infer_DynamicIota(const ShapeQuery& q) {
  const Type& out = declared_result(q);
  int64_t n = check_shape_operand(q, 0, "output_shape");
  const auto* d = q.attrs.find<int64_t>("iota_dimension");
  if (d == nullptr) reject(q, "has no 'iota_dimension' attribute");
  int64_t size = known(n) ? n : out.rank();
  if (*d < 0 || *d >= size) reject(q, "iota_dimension {} is out of range for {} dimensions (C1)", *d, size);
  check_size(q, "output_shape", n, out.rank(), "the result's rank", "(C2)");
  return {out};
}

Types infer_DynamicReshape(const ShapeQuery& q) {
  const Type& in = q.operands[0];
  const Type& out = declared_result(q);
  check_same_element(q, in, out, "(C1)");
  if (in.is_static() && out.is_static() && in.num_elements() != out.num_elements())
    reject(q, "operand {} has {} elements, result {} has {} (C2)", to_string(in), in.num_elements(), to_string(out),
           out.num_elements());
  check_size(q, "output_shape", check_shape_operand(q, 1, "output_shape"), out.rank(), "the result's rank", "(C4)");
  return {out};
}

Types infer_RealDynamicSlice(const ShapeQuery& q) {
  const Type& in = q.operands[0];
  const Type& out = declared_result(q);
  check_same_element(q, in, out, "(as slice's)");
  if (out.rank() != in.rank()) reject(q, "result {} has another rank than operand {}", to_string(out), to_string(in));
  const char* names[] = {"start_indices", "limit_indices", "strides"};
  for (size_t i = 1; i < 4; ++i)
    check_size(q, names[i - 1], check_shape_operand(q, i, names[i - 1]), in.rank(), "the operand's rank", "");
  return {out};
}

Types infer_DynamicPad(const ShapeQuery& q) {
  const Type& in = q.operands[0];
  const Type& out = declared_result(q);
  const Type& value = q.operands[1];
  if (value.rank() != 0) reject(q, "padding_value {} must be a scalar", to_string(value));
  if (value.element != in.element || out.element != in.element)
    reject(q, "operand {}, padding_value {} and result {} must have one element type (C1)", to_string(in),
           to_string(value), to_string(out));
  const char* names[] = {"edge_padding_low", "edge_padding_high", "interior_padding"};
  for (size_t i = 2; i < 5; ++i)
    check_size(q, names[i - 2], check_shape_operand(q, i, names[i - 2]), in.rank(), "the operand's rank", "(C2)");
  if (out.rank() != in.rank()) reject(q, "result {} has another rank than operand {} (C4)", to_string(out), to_string(in));
  return {out};
}

Types infer_DynamicGather(const ShapeQuery& q) {
  const Type& in = q.operands[0];
  const Type& out = declared_result(q);
  if (!q.attrs.find<GatherDims>("dimension_numbers")) reject(q, "has no 'dimension_numbers' attribute");
  check_size(q, "slice_sizes", check_shape_operand(q, 2, "slice_sizes"), in.rank(), "the operand's rank", "(C11)");
  if (!is_integer(q.operands[1].element))
    reject(q, "start_indices {} must be integers", to_string(q.operands[1]));
  check_same_element(q, in, out, "(C14)");
  return {out};
}

Types infer_DynamicConv(const ShapeQuery& q) {
  const Type& lhs = q.operands[0];
  const Type& out = declared_result(q);
  const Type& padding = q.operands[2];
  if (!is_integer(padding.element) || padding.rank() != 2 ||
      (known(padding.shape[0]) && padding.shape[0] != lhs.rank() - 2) || (known(padding.shape[1]) && padding.shape[1] != 2))
    reject(q, "padding has type {}, must be an integer tensor of shape [{}, 2] (C4)", to_string(padding),
           lhs.rank() - 2);
  if (out.rank() != lhs.rank()) reject(q, "result {} has another rank than lhs {}", to_string(out), to_string(lhs));
  return {out};
}

}  // namespace tessera::ir::shape_rules
