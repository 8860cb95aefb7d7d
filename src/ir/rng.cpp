// The random ops' attributes, builders and shape rules (rng.h). Messages carry the spec's
// constraint numbers. rng_bit_generator's DEFAULT algorithm is PHILOX in Tessera (as XLA's CPU and
// GPU compilers choose), so its state has PHILOX's sizes, 2 or 3 (C2). Its output may be of any
// integer or float type whose width XLA packs bits into: 8, 16, 32 or 64 bits (not i1, the 2- and
// 4-bit integers or the 4- and 6-bit floats).
#include "ir/rng.h"

#include "ir/shape_rules.h"

namespace tessera::ir {

namespace {

constexpr std::pair<RngAlgorithm, std::string_view> kAlgorithms[] = {
    {RngAlgorithm::kDefault, "DEFAULT"}, {RngAlgorithm::kThreeFry, "THREE_FRY"}, {RngAlgorithm::kPhilox, "PHILOX"}};
constexpr std::pair<RngDistribution, std::string_view> kDistributions[] = {{RngDistribution::kUniform, "UNIFORM"},
                                                                            {RngDistribution::kNormal, "NORMAL"}};

template <typename E, size_t N>
std::optional<E> find_name(const std::pair<E, std::string_view> (&table)[N], std::string_view name) {
  for (auto [e, text] : table)
    if (text == name) return e;
  return std::nullopt;
}
template <typename E, size_t N>
std::string_view name_of(const std::pair<E, std::string_view> (&table)[N], E e) {
  for (auto [f, text] : table)
    if (f == e) return text;
  return "?";
}
// The value of `#stablehlo<prefix VALUE>` in attribute `attr`.
template <typename E, size_t N>
std::optional<E> enum_of(const AttrMap& attrs, std::string_view attr, std::string_view prefix,
                         const std::pair<E, std::string_view> (&table)[N]) {
  const auto* o = attrs.find<Opaque>(attr);
  if (o == nullptr) return std::nullopt;
  for (auto [e, text] : table)
    if (o->text == fmt::format("#stablehlo<{} {}>", prefix, text)) return e;
  return std::nullopt;
}

}  // namespace

std::optional<RngAlgorithm> parse_rng_algorithm(std::string_view name) { return find_name(kAlgorithms, name); }
std::string_view to_string(RngAlgorithm a) { return name_of(kAlgorithms, a); }
std::optional<RngAlgorithm> rng_algorithm_of(const AttrMap& attrs) {
  return enum_of(attrs, "rng_algorithm", "rng_algorithm", kAlgorithms);
}
Opaque rng_algorithm_attr(RngAlgorithm a) { return Opaque{fmt::format("#stablehlo<rng_algorithm {}>", to_string(a))}; }

std::optional<RngDistribution> parse_rng_distribution(std::string_view name) { return find_name(kDistributions, name); }
std::string_view to_string(RngDistribution d) { return name_of(kDistributions, d); }
std::optional<RngDistribution> rng_distribution_of(const AttrMap& attrs) {
  return enum_of(attrs, "rng_distribution", "rng_distribution", kDistributions);
}
Opaque rng_distribution_attr(RngDistribution d) {
  return Opaque{fmt::format("#stablehlo<rng_distribution {}>", to_string(d))};
}

std::vector<Tensor> rng_bit_generator(const Tensor& state, RngAlgorithm algorithm, Type output) {
  AttrMap a;
  a.set("rng_algorithm", rng_algorithm_attr(algorithm));
  return state.builder().emit(OpKind::RngBitGenerator, {state}, std::move(a), {state.type(), std::move(output)});
}

Tensor rng(const Tensor& a, const Tensor& b, const Tensor& shape, RngDistribution distribution, Type result) {
  AttrMap m;
  m.set("rng_distribution", rng_distribution_attr(distribution));
  return a.builder().emit1(OpKind::Rng, {a, b, shape}, std::move(m), {std::move(result)});
}

namespace shape_rules {

std::vector<Type> infer_RngBitGenerator(const ShapeQuery& q) {
  auto algorithm = rng_algorithm_of(q.attrs);
  if (!algorithm) reject(q, "rng_algorithm must be #stablehlo<rng_algorithm DEFAULT|THREE_FRY|PHILOX>");
  const Type& state = q.operands[0];
  if (!state.is_tensor() || state.rank() != 1 || state.element != ElementType::ui64)
    reject(q, "initial_state is {}, must be a 1-dimensional tensor of ui64", to_string(state));
  int64_t n = state.shape[0];
  if (*algorithm == RngAlgorithm::kThreeFry && n != 2 && n != kDynamic)
    reject(q, "initial_state has {} entries; THREE_FRY's state has 2 (C2)", n);
  if (*algorithm != RngAlgorithm::kThreeFry && n != 2 && n != 3 && n != kDynamic)
    reject(q, "initial_state has {} entries; {}'s state has 2 or 3 (C2{})", n, to_string(*algorithm),
           *algorithm == RngAlgorithm::kDefault ? ", DEFAULT is PHILOX in Tessera" : "");
  if (q.declared.size() != 2) reject(q, "needs its two result types written out");
  if (q.declared[0] != state)
    reject(q, "output_state is {}, but initial_state is {}: types must be the same (C1)", to_string(q.declared[0]),
           to_string(state));
  const Type& out = q.declared[1];
  if (!out.is_tensor() || out.is_quantized() || !(is_float(out.element) || category(out.element) == kInt))
    reject(q, "output is {}, must be a tensor of an integer or floating-point type", to_string(out));
  int bits = info(out.element).bits;
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
    reject(q, "output is {}: random bits are packed into elements of 8, 16, 32 or 64 bits only", to_string(out));
  return {q.declared[0], out};
}

std::vector<Type> infer_Rng(const ShapeQuery& q) {
  auto distribution = rng_distribution_of(q.attrs);
  if (!distribution) reject(q, "rng_distribution must be #stablehlo<rng_distribution UNIFORM|NORMAL>");
  const Type& result = declared_result(q);
  const Type &a = q.operands[0], &b = q.operands[1], &shape = q.operands[2];
  for (const Type* t : {&a, &b})
    if (!t->is_tensor() || t->rank() != 0 || t->is_quantized() || (category(t->element) & (kBool | kInt | kFloat)) == 0)
      reject(q, "{} is {}, must be a 0-dimensional tensor of an integer, boolean or floating-point type",
             t == &a ? "a" : "b", to_string(*t));
  if (a.element != result.element || b.element != result.element)
    reject(q, "a is {} and b is {}, but the result is {}: element types must be the same (C1)", to_string(a),
           to_string(b), to_string(result));
  if (*distribution == RngDistribution::kNormal && !is_float(a.element))
    reject(q, "NORMAL needs floating-point a and b, not {} (C2)", spelling(a.element));
  if (!shape.is_tensor() || shape.rank() != 1 || shape.element != ElementType::i64)
    reject(q, "shape is {}, must be a 1-dimensional tensor of i64", to_string(shape));
  if (shape.shape[0] != result.rank() && shape.shape[0] != kDynamic)
    reject(q, "shape has {} entries, but the result {} has rank {} (C3)", shape.shape[0], to_string(result),
           result.rank());
  return {result};
}

}  // namespace shape_rules
}  // namespace tessera::ir
