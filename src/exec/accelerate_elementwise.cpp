// The element-wise fast kernels (see accelerate.h): binary arithmetic and bitwise ops, compare,
// select, iota, constant and convert on typed arrays, with the reference's scalar functors (the
// same bits, in vectorizable loops). Besides the float math of training steps they cover the
// integer index arithmetic the partitioner emits around split reads (a device's offset from its
// partition id, indices moved into its piece, masks of the rows it holds), which would otherwise
// run on the reference kernels and allocate every step.
#include <cstring>

#include "exec/accelerate_internal.h"
#include "exec/dims.h"
#include "interp/scalar_ops.h"
#include "support/error.h"

namespace tessera::exec::accel {

namespace {

template <typename E, typename Fn>
void binary_loop(const Literal& a, const Literal& b, Literal& r) {
  using T = typename E::storage;
  const T* x = data<T>(a);
  const T* y = data<T>(b);
  T* z = data<T>(r);
  int64_t n = r.num_elements();
  // load/store: identities for f32, f64 and the integers; bf16 computes in float and rounds once,
  // as the reference; i1 loads bools from bytes.
  for (int64_t i = 0; i < n; ++i) z[i] = E::store(Fn::template apply<E>(E::load(x[i]), E::load(y[i])));
}

template <typename E>
bool arithmetic(OpKind kind, const Literal& a, const Literal& b, Literal& r) {
  namespace s = interp::scalar;
  switch (kind) {
    case OpKind::Add: binary_loop<E, s::Add>(a, b, r); return true;
    case OpKind::Subtract: binary_loop<E, s::Subtract>(a, b, r); return true;
    case OpKind::Multiply: binary_loop<E, s::Multiply>(a, b, r); return true;
    case OpKind::Divide: binary_loop<E, s::Divide>(a, b, r); return true;
    case OpKind::Maximum: binary_loop<E, s::Maximum>(a, b, r); return true;
    case OpKind::Minimum: binary_loop<E, s::Minimum>(a, b, r); return true;
    default: return false;
  }
}

template <typename E>
bool bitwise(OpKind kind, const Literal& a, const Literal& b, Literal& r) {
  namespace s = interp::scalar;
  switch (kind) {
    case OpKind::And: binary_loop<E, s::Bitwise<0>>(a, b, r); return true;
    case OpKind::Or: binary_loop<E, s::Bitwise<1>>(a, b, r); return true;
    case OpKind::Xor: binary_loop<E, s::Bitwise<2>>(a, b, r); return true;
    default: return false;
  }
}

// Runs fn<Elem<e>>() for the element types the fast loops take (i1 only where `with_bool`).
template <typename F>
bool by_type(ElementType e, bool with_bool, F&& fn) {
  switch (e) {
    case ElementType::f32: return fn.template operator()<ir::Elem<ElementType::f32>>();
    case ElementType::f64: return fn.template operator()<ir::Elem<ElementType::f64>>();
    case ElementType::bf16: return fn.template operator()<ir::Elem<ElementType::bf16>>();
    case ElementType::i32: return fn.template operator()<ir::Elem<ElementType::i32>>();
    case ElementType::i64: return fn.template operator()<ir::Elem<ElementType::i64>>();
    case ElementType::ui32: return fn.template operator()<ir::Elem<ElementType::ui32>>();
    case ElementType::ui64: return fn.template operator()<ir::Elem<ElementType::ui64>>();
    case ElementType::i1: return with_bool && fn.template operator()<ir::Elem<ElementType::i1>>();
    default: return false;
  }
}

}  // namespace

bool binary(const Op& op, Operands in, std::vector<Literal>& out) {
  ElementType e = in[0]->element();
  if (in[1]->type() != in[0]->type() || op.result(0)->type() != in[0]->type()) return false;
  bool logic = op.kind() == OpKind::And || op.kind() == OpKind::Or || op.kind() == OpKind::Xor;
  bool floating = is_f(e) || e == ElementType::bf16;
  if (logic && floating) return false;
  Result r(op.result(0)->type(), out, false);  // every element written
  bool ok = by_type(e, logic, [&]<typename E>() {
    return logic ? bitwise<E>(op.kind(), *in[0], *in[1], *r) : arithmetic<E>(op.kind(), *in[0], *in[1], *r);
  });
  return r.done(ok);
}

// compare of floats (IEEE: any order with NaN is false, NE true) and integers; TOTALORDER and the
// other types go to the reference kernel.
bool compare(const Op& op, Operands in, std::vector<Literal>& out) {
  const Literal& a = *in[0];
  const Literal& b = *in[1];
  auto direction = op.attrs().get<ir::ComparisonDirection>("comparison_direction");
  auto type = op.attrs().get_or<ir::CompareType>("compare_type", ir::CompareType::NOTYPE);
  if (type == ir::CompareType::TOTALORDER || a.type() != b.type() || a.element() == ElementType::bf16) return false;
  Result result(op.result(0)->type(), out, false);  // every element written
  auto* r = data<uint8_t>(*result);
  bool ok = by_type(a.element(), true, [&]<typename E>() {
    using T = typename E::storage;
    const T* x = data<T>(a);
    const T* y = data<T>(b);
    int64_t n = result->num_elements();
    for (int64_t i = 0; i < n; ++i) r[i] = interp::scalar::compare_values(direction, x[i], y[i]) ? 1 : 0;
    return true;
  });
  return result.done(ok);
}

// select(pred, a, b): a predicate of a's shape, or a scalar choosing a whole operand.
bool select(const Op& op, Operands in, std::vector<Literal>& out) {
  const Literal& pred = *in[0];
  if (in[1]->type() != in[2]->type() || (pred.num_elements() != 1 && pred.shape() != in[1]->shape())) return false;
  if (pred.num_elements() == 1 && !pred.shape().empty()) return false;
  Result result(op.result(0)->type(), out, false);  // every element written
  Literal& r = *result;
  const uint8_t* p = data<uint8_t>(pred);
  bool ok = by_bytes(r.element(), [&]<typename T>() {
    const T* a = data<T>(*in[1]);
    const T* b = data<T>(*in[2]);
    T* z = data<T>(r);
    int64_t n = r.num_elements();
    if (pred.shape().empty()) {
      std::memcpy(z, p[0] ? a : b, static_cast<size_t>(n) * sizeof(T));
      return;
    }
    for (int64_t i = 0; i < n; ++i) z[i] = p[i] ? a[i] : b[i];
  });
  return result.done(ok);
}

// iota of an integer or float type: the index along one dimension.
bool iota(const Op& op, std::vector<Literal>& out) {
  const ir::Type& t = op.result(0)->type();
  if (t.element != ElementType::i32 && t.element != ElementType::i64 && !is_f(t.element)) return false;
  int64_t d = op.attrs().get<int64_t>("iota_dimension");
  Result result(t, out, false);  // every element written
  Literal& r = *result;
  RowMajor stride(t.shape);
  int64_t n = r.num_elements(), size = t.shape.empty() ? 1 : t.shape[static_cast<size_t>(d)],
          step = t.shape.empty() ? 1 : stride[static_cast<size_t>(d)];
  auto fill = [&]<typename T>() {
    T* z = data<T>(r);
    for (int64_t i = 0; i < n; ++i) z[i] = static_cast<T>((i / step) % size);
  };
  switch (t.element) {
    case ElementType::i32: fill.template operator()<int32_t>(); break;
    case ElementType::i64: fill.template operator()<int64_t>(); break;
    case ElementType::f32: fill.template operator()<float>(); break;
    default: fill.template operator()<double>(); break;
  }
  return true;
}

// A constant: its value copied into the destination (an executable's arena slot takes it with no
// allocation; the reference kernel returns a fresh copy every run).
bool constant(const Op& op, std::vector<Literal>& out) {
  const Literal* v = op.attrs().find<Literal>("value");
  if (v == nullptr || v->type() != op.result(0)->type()) return false;
  Result result(v->type(), out, false);  // every byte written
  if (!v->bytes().empty()) std::memcpy(result->bytes().data(), v->bytes().data(), v->bytes().size());
  return true;
}

namespace {

bool is_int_like(ElementType e) {
  return e == ElementType::i1 || e == ElementType::i32 || e == ElementType::i64 || e == ElementType::ui32 ||
         e == ElementType::ui64;
}

}  // namespace

// stablehlo.convert as the reference does it: integers wrap to the destination's width (two's
// complement), anything to i1 is "non-zero", i1 is 0 or 1, integers and floats to a float round
// once. Float to integer (rounding and saturation rules) goes to the reference kernel.
bool convert(const Op& op, Operands in, std::vector<Literal>& out) {
  ElementType from = in[0]->element(), to = op.result(0)->type().element;
  bool to_float = is_f(to);
  if (from == ElementType::bf16 || to == ElementType::bf16) {
    bool widen = from == ElementType::bf16 && to == ElementType::f32, narrow = from == ElementType::f32 && to == ElementType::bf16;
    if (!widen && !narrow) return false;
    Result result(op.result(0)->type(), out, false);  // every element written
    auto n = static_cast<size_t>(result->num_elements());
    if (widen) {
      const auto* s = data<uint16_t>(*in[0]);
      float* d = data<float>(*result);
      for (size_t i = 0; i < n; ++i) d[i] = ir::bf16_to_f32(s[i]);
    } else {
      const float* s = data<float>(*in[0]);
      auto* d = data<uint16_t>(*result);
      for (size_t i = 0; i < n; ++i) d[i] = ir::f32_to_bf16(s[i]);
    }
    return true;
  }
  if (!(is_int_like(from) && (is_int_like(to) || to_float)) && !(is_f(from) && to_float)) return false;
  Result result(op.result(0)->type(), out, false);  // every element written
  auto n = static_cast<size_t>(result->num_elements());
  // On storage types (bf16, which by_type also takes, returned above).
  bool ok = by_type(from, true, [&]<typename ES>() {
    return by_type(to, true, [&]<typename ED>() {
      const auto* s = data<typename ES::storage>(*in[0]);
      auto* d = data<typename ED::storage>(*result);
      if (to == ElementType::i1)
        for (size_t i = 0; i < n; ++i) d[i] = s[i] != 0 ? 1 : 0;
      else
        for (size_t i = 0; i < n; ++i) d[i] = static_cast<typename ED::storage>(s[i]);
      return true;
    });
  });
  return result.done(ok);
}

}  // namespace tessera::exec::accel
