// Shape rules of leaves and elementwise ops, and the dispatch over the op table.
#include <algorithm>
#include <array>

#include "ir/shape_rules.h"
#include "ir/dynamic_shapes.h"
#include "ir/shape_polymorphic.h"
#include "support/strings.h"

namespace tessera::ir {
namespace shape_rules {

using Types = std::vector<Type>;

unsigned category(ElementType e) {
  switch (info(e).kind) {
    case ElementKind::Bool: return kBool;
    case ElementKind::Signed:
    case ElementKind::Unsigned: return kInt;
    case ElementKind::Float: return kFloat;
    case ElementKind::Complex: return kComplex;
  }
  return 0;
}

namespace {
// "integer, float or complex" for the allowed categories.
std::string allowed_string(unsigned allowed) {
  std::vector<std::string_view> names;
  for (auto [bit, name] : {std::pair{kBool, "boolean"}, {kInt, "integer"}, {kFloat, "float"},
                           {kComplex, "complex"}})
    if (allowed & bit) names.push_back(name);
  std::string out(names[0]);
  for (size_t i = 1; i < names.size(); ++i) out += fmt::format("{}{}", i + 1 == names.size() ? " or " : ", ", names[i]);
  return out;
}
}  // namespace

void check_allowed(const ShapeQuery& q, size_t i, unsigned allowed) {
  if ((category(q.operands[i].element) & allowed) == 0)
    reject(q, "operand {} has type {}, must be {}", i, to_string(q.operands[i]),
           allowed_string(allowed));
}

// n operands of one type, of an allowed category; the result has that type. (The operand count
// was checked against ops.def before any rule runs.)
Types same_types(const ShapeQuery& q, size_t n, unsigned allowed) {
  for (size_t i = 1; i < n; ++i)
    if (q.operands[i] != q.operands[0])
      reject(q, "operand {} has type {}, but operand 0 has type {}", i, to_string(q.operands[i]),
             to_string(q.operands[0]));
  check_allowed(q, 0, allowed);
  return {q.operands[0]};
}

Types unary(const ShapeQuery& q, unsigned allowed) { return same_types(q, 1, allowed); }
Types binary(const ShapeQuery& q, unsigned allowed) { return same_types(q, 2, allowed); }

const Type& declared_result(const ShapeQuery& q, size_t i) {
  if (q.declared.size() <= i) reject(q, "needs its result type written out");
  return q.declared[i];
}

void check_dimension(const ShapeQuery& q, std::string_view attr, int64_t dim, int64_t rank) {
  if (dim < 0 || dim >= rank) reject(q, "{} = {} is out of range for rank {}", attr, dim, rank);
}

void check_precision_config(const ShapeQuery& q) {
  const auto* p = q.attrs.find<Opaque>("precision_config");
  if (p == nullptr) return;
  // The parser keeps both forms as `[#stablehlo<precision DEFAULT>, ...]` (older exports: #mhlo<...>).
  size_t entries = 0;
  constexpr std::string_view kEntry = "<precision ";
  for (size_t at = p->text.find(kEntry); at != std::string::npos; at = p->text.find(kEntry, at + 1)) {
    ++entries;
    size_t start = at + kEntry.size(), end = p->text.find('>', start);
    std::string_view value = std::string_view(p->text).substr(start, end == std::string::npos ? 0 : end - start);
    if (value != "DEFAULT" && value != "HIGH" && value != "HIGHEST")
      reject(q, "precision_config entry {} is '{}'; it must be DEFAULT, HIGH or HIGHEST", entries - 1, value);
  }
  if (entries > 2) reject(q, "precision_config has {} entries; it has at most 2, one per operand", entries);
}

std::string types_string(std::span<const Type> types) {
  std::vector<std::string> s;
  for (const Type& t : types) s.push_back(to_string(t));
  return support::join(s, ", ");
}

// Leaves.
Types infer_Constant(const ShapeQuery& q) {
  const Literal* v = q.attrs.find<Literal>("value");
  if (v == nullptr) reject(q, "has no 'value' attribute");
  return {v->type()};
}
Types infer_Iota(const ShapeQuery& q) {
  const Type& t = declared_result(q);
  int64_t d = q.attrs.get_or<int64_t>("iota_dimension", -1);
  check_dimension(q, "iota_dimension", d, t.rank());
  return {t};
}
Types infer_ReplicaId(const ShapeQuery& q) { return {Type(ElementType::ui32, {})}; }
Types infer_PartitionId(const ShapeQuery& q) { return {Type(ElementType::ui32, {})}; }

// One operand. Abs of a complex number is real.
Types infer_Negate(const ShapeQuery& q) { return unary(q, kNumeric); }
// abs and sign take signed integers, floats and complex numbers; not unsigned integers.
Types signed_unary(const ShapeQuery& q) {
  Types t = unary(q, kNumeric);
  if (info(t[0].element).kind == ElementKind::Unsigned)
    reject(q, "operand 0 has type {}, must be signed integer, float or complex", to_string(t[0]));
  return t;
}
Types infer_Abs(const ShapeQuery& q) {
  Types t = signed_unary(q);
  return {t[0].with_element(real_type(t[0].element))};
}
Types infer_Sign(const ShapeQuery& q) { return signed_unary(q); }
Types infer_Exponential(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_ExponentialMinusOne(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Log(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_LogPlusOne(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Tanh(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Logistic(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Sqrt(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Rsqrt(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Sine(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Cosine(const ShapeQuery& q) { return unary(q, kFloating); }
Types infer_Floor(const ShapeQuery& q) { return unary(q, kFloat); }
Types infer_Ceil(const ShapeQuery& q) { return unary(q, kFloat); }
Types infer_RoundNearestEven(const ShapeQuery& q) { return unary(q, kFloat); }
Types infer_RoundNearestAfz(const ShapeQuery& q) { return unary(q, kFloat); }
Types infer_IsFinite(const ShapeQuery& q) {
  Types t = unary(q, kFloat);
  return {t[0].with_element(ElementType::i1)};
}
Types infer_Not(const ShapeQuery& q) { return unary(q, kIntegral); }
Types infer_Convert(const ShapeQuery& q) {
  const Type& t = declared_result(q);
  if (t.shape != q.operands[0].shape)
    reject(q, "result {} must have the shape of operand {}", to_string(t), to_string(q.operands[0]));
  return {t};
}
Types infer_BitcastConvert(const ShapeQuery& q) {
  const Type& in = q.operands[0];
  const Type& out = declared_result(q);
  int a = info(in.element).bits, b = info(out.element).bits;
  std::vector<int64_t> expect = in.shape;
  if (a > b) {  // bit widths are powers of two, so they divide
    expect.push_back(a / b);
  } else if (a < b) {
    if (expect.empty() || expect.back() * a != b)
      reject(q, "operand {} needs a last dimension of {} to bitcast to {}", to_string(in), b / a,
             to_string(out));
    expect.pop_back();
  }
  if (out.shape != expect)
    reject(q, "result {} does not match operand {} (expected shape [{}])", to_string(out),
           to_string(in), support::join(expect, ", "));
  return {out};
}

// Two or three operands.
Types infer_Add(const ShapeQuery& q) { return binary(q, kAny); }
Types infer_Subtract(const ShapeQuery& q) { return binary(q, kNumeric); }
Types infer_Multiply(const ShapeQuery& q) { return binary(q, kAny); }
Types infer_Divide(const ShapeQuery& q) { return binary(q, kNumeric); }
Types infer_Remainder(const ShapeQuery& q) { return binary(q, kNumeric); }
Types infer_Power(const ShapeQuery& q) { return binary(q, kNumeric); }
Types infer_Maximum(const ShapeQuery& q) { return binary(q, kAny); }
Types infer_Minimum(const ShapeQuery& q) { return binary(q, kAny); }
Types infer_Atan2(const ShapeQuery& q) { return binary(q, kFloating); }
Types infer_And(const ShapeQuery& q) { return binary(q, kIntegral); }
Types infer_Or(const ShapeQuery& q) { return binary(q, kIntegral); }
Types infer_Xor(const ShapeQuery& q) { return binary(q, kIntegral); }
Types infer_ShiftLeft(const ShapeQuery& q) { return binary(q, kInt); }
Types infer_ShiftRightLogical(const ShapeQuery& q) { return binary(q, kInt); }
Types infer_ShiftRightArithmetic(const ShapeQuery& q) { return binary(q, kInt); }
Types infer_Compare(const ShapeQuery& q) {
  Types t = binary(q, kAny);
  if (!q.attrs.find<ComparisonDirection>("comparison_direction"))
    reject(q, "has no comparison_direction (EQ, NE, GE, GT, LE or LT)");
  if (q.attrs.has("compare_type") && !q.attrs.find<CompareType>("compare_type"))
    reject(q, "compare_type must be FLOAT, TOTALORDER, SIGNED or UNSIGNED");
  return {t[0].with_element(ElementType::i1)};
}
Types infer_Clamp(const ShapeQuery& q) {
  const Type& x = q.operands[1];
  for (size_t i : {0, 2}) {
    const Type& b = q.operands[i];
    if (b.element != x.element || (b.rank() != 0 && b.shape != x.shape))
      reject(q, "bound {} has type {}; it must be a scalar or have the type of operand {}",
             i == 0 ? "min" : "max", to_string(b), to_string(x));
  }
  check_allowed(q, 1, kInt | kFloat | kBool);
  return {x};
}
Types infer_Select(const ShapeQuery& q) {
  const Type& p = q.operands[0];
  const Type& t = q.operands[1];
  if (q.operands[2] != t)
    reject(q, "branches have types {} and {}", to_string(t), to_string(q.operands[2]));
  if (p.element != ElementType::i1 || (p.rank() != 0 && p.shape != t.shape))
    reject(q, "predicate {} must be i1, a scalar or shaped like {}", to_string(p), to_string(t));
  return {t};
}

}  // namespace shape_rules

namespace shape_rules {
// Whether the rule runs on expressed types, and that run (shape_quant.cpp): an op other than
// uniform_quantize, uniform_dequantize and bitcast_convert with a quantized operand or declared
// result has the shapes of its float op.
bool quantized_query(const ShapeQuery& q);
std::vector<Type> infer_on_expressed(const ShapeQuery& q, std::vector<Type> (*rule)(const ShapeQuery&));
}  // namespace shape_rules

std::vector<Type> infer_result_types(const ShapeQuery& q) {
  using Rule = std::vector<Type> (*)(const ShapeQuery&);
  static constexpr std::array<Rule, kNumOpKinds> kRules = {
#define OP(e, spelling, arity, traits) &shape_rules::infer_##e,
#include "ir/ops.def"
#undef OP
  };
  int arity = info(q.kind).arity;
  if (arity != kVariadic && static_cast<int>(q.operands.size()) != arity)
    shape_rules::reject(q, "expects {} operands, got {}", arity, q.operands.size());
  Rule rule = kRules[static_cast<size_t>(q.kind)];
  auto run = [rule](const ShapeQuery& query) {
    if (shape_rules::quantized_query(query)) return shape_rules::infer_on_expressed(query, rule);
    return rule(query);
  };
  // The dynamic ops' rules read '?' themselves; every other rule is probed where operands have '?'.
  if (is_dynamic_shape_op(q.kind)) return run(q);
  return infer_polymorphic(q, run);
}

}  // namespace tessera::ir
