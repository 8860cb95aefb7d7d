// Which reduces of several results the partitioner may run by pieces (see identities.h): JAX's
// argmax and argmin, a (value, index) pair reduce whose body only compares its arguments and
// selects among them.
//
// A reduce along a split dimension run by pieces (each device's piece reduced from the order's
// identity, the partial results stacked in device order and reduced again from the inits) folds the
// same elements as the interpreter's row-major fold, grouped differently and with extra copies of
// the identity (one per device and one per padding row). That equals the sequential fold bit for
// bit when (1) the body is associative and (2) an extra identity anywhere changes nothing. Both are proved here for one family
// of bodies, by evaluating the body abstractly rather than matching JAX's printed form:
//   - the body's ops are compare (not TOTALORDER) between its arguments, and/or/xor/not of
//     those predicates, and select among its arguments; its results are (a value argument, an
//     index argument). Its outcome then depends only on how the two values compare (<, =, >, or
//     which of them is NaN) and how the two indices compare: 6 x 3 cases, each evaluated;
//   - in every case it agrees with one "selection by a total order": the larger value wins (the
//     smaller for argmin) with its index; a NaN beats every number; of two NaNs one fixed side's
//     pair wins; of two equal values a fixed side's value wins (bits differ only for -0 and +0)
//     and the lower index, the higher index, or the first side's index. Each such rule picks the
//     best element of the sequence by a total order on (element, position), so it is associative;
//   - the extra identities are harmless: each device reduces its piece from the order's identity (-inf,
//     or the integer type's lowest, for argmax) paired with the index init, its padding holds
//     that pair too, and the final reduce starts from the reduce's own inits, so they count once
//     and first, as in the sequential fold (the rule for a single-result reduce's init).
//     An inserted identity never wins unless every element and the init tie with it (all -inf):
//     then the value bits are the same (-inf is one bit pattern) and so is the index (the index
//     init is in the sequential fold's tie group too, and a min or max or first over a group is
//     unchanged by repeating a member of it; the first side's index is the leading init's in both).
//     The inits may be any values, at run time too. "The second side's index on ties" (a plain `GT` select) is
//     refused: a padding row at the end would then win a tie of all -inf.
// Anything else (the GE-select argmax on floats, whose NaN breaks associativity; arithmetic in
// the body) keeps the operands gathered along the reduced dimension.
#include <array>
#include <cmath>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ir/literal.h"
#include "spmd/identities.h"

namespace tessera::spmd {

using ir::CompareType;
using ir::ComparisonDirection;
using ir::Op;
using ir::OpKind;
using ir::Value;

namespace {

// How the two values compare: first < second, equal, first > second, or which is NaN.
enum class ValueCase { kLess, kEqual, kGreater, kFirstNaN, kSecondNaN, kBothNaN };
// The body's abstract values: a predicate, or one of its four arguments (v1 i1 v2 i2).
struct Abstract {
  bool is_arg = false;
  int arg = 0;
  bool truth = false;
};

bool nan_of(ValueCase c, bool first) {
  return c == ValueCase::kBothNaN || c == (first ? ValueCase::kFirstNaN : ValueCase::kSecondNaN);
}

// compare(x, y) where x and y are arguments (0 = v1, 1 = i1, 2 = v2, 3 = i2).
std::optional<bool> compare_args(int x, int y, ComparisonDirection dir, ValueCase vc, int ic) {
  bool values = x % 2 == 0;
  if (values != (y % 2 == 0)) return std::nullopt;  // a value against an index
  bool x_first = x < 2, y_first = y < 2;
  // -1, 0, 1 for x < y, x == y, x > y; nullopt when unordered (a NaN).
  std::optional<int> order;
  if (values && (nan_of(vc, x_first) || nan_of(vc, y_first))) {
    order = std::nullopt;
  } else if (x_first == y_first) {
    order = 0;
  } else {
    int first_vs_second = values ? (vc == ValueCase::kLess ? -1 : vc == ValueCase::kEqual ? 0 : 1) : ic;
    order = x_first ? first_vs_second : -first_vs_second;
  }
  if (!order) return dir == ComparisonDirection::NE;
  switch (dir) {
    case ComparisonDirection::EQ: return *order == 0;
    case ComparisonDirection::NE: return *order != 0;
    case ComparisonDirection::LT: return *order < 0;
    case ComparisonDirection::LE: return *order <= 0;
    case ComparisonDirection::GT: return *order > 0;
    case ComparisonDirection::GE: return *order >= 0;
  }
  return std::nullopt;
}

// The body's two results (which argument each returns) in one case; nullopt when an op is outside
// the family.
std::optional<std::array<int, 2>> run_body(const ir::Block& body, ValueCase vc, int ic) {
  std::unordered_map<const Value*, Abstract> env;
  for (int k = 0; k < 4; ++k) env[body.argument(static_cast<size_t>(k))] = Abstract{true, k, false};
  auto truth = [&](const Value* v) -> std::optional<bool> {
    auto it = env.find(v);
    if (it == env.end() || it->second.is_arg) return std::nullopt;
    return it->second.truth;
  };
  for (const auto& owned : body.ops()) {
    const Op& op = *owned;
    if (op.kind() == OpKind::Return) {
      if (op.operands().size() != 2) return std::nullopt;
      std::array<int, 2> out{};
      for (size_t r = 0; r < 2; ++r) {
        auto it = env.find(op.operand(r));
        if (it == env.end() || !it->second.is_arg || it->second.arg % 2 != static_cast<int>(r)) return std::nullopt;
        out[r] = it->second.arg;
      }
      return out;
    }
    if (op.num_results() != 1 || !op.regions().empty()) return std::nullopt;
    Abstract result;
    if (op.kind() == OpKind::Compare) {
      auto x = env.find(op.operand(0)), y = env.find(op.operand(1));
      if (x == env.end() || y == env.end() || !x->second.is_arg || !y->second.is_arg) return std::nullopt;
      if (op.attrs().get_or<CompareType>("compare_type", CompareType::NOTYPE) == CompareType::TOTALORDER)
        return std::nullopt;
      auto c = compare_args(x->second.arg, y->second.arg,
                            op.attrs().get<ComparisonDirection>("comparison_direction"), vc, ic);
      if (!c) return std::nullopt;
      result.truth = *c;
    } else if (op.kind() == OpKind::And || op.kind() == OpKind::Or || op.kind() == OpKind::Xor) {
      auto a = truth(op.operand(0)), b = truth(op.operand(1));
      if (!a || !b) return std::nullopt;
      result.truth = op.kind() == OpKind::And ? (*a && *b) : op.kind() == OpKind::Or ? (*a || *b) : (*a != *b);
    } else if (op.kind() == OpKind::Not) {
      auto a = truth(op.operand(0));
      if (!a) return std::nullopt;
      result.truth = !*a;
    } else if (op.kind() == OpKind::Select) {
      auto p = truth(op.operand(0));
      auto x = env.find(op.operand(1)), y = env.find(op.operand(2));
      if (!p || x == env.end() || y == env.end() || !x->second.is_arg || !y->second.is_arg) return std::nullopt;
      result = *p ? x->second : y->second;
    } else {
      return std::nullopt;
    }
    env[op.result(0)] = result;
  }
  return std::nullopt;  // no return
}

// One selection rule of the family (see the file comment).
struct Rule {
  bool max;              // argmax (the larger value wins) or argmin
  bool tie_value_first;  // of equal values, the first side's value
  int tie_index;         // of equal values: -1 the lower index, 1 the higher, 0 the first side's
  bool nan_first;        // of two NaNs, the first side's pair
};

// Whether the rule's answer in case (vc, ic) is `got` (value argument, index argument).
bool agrees(const Rule& r, ValueCase vc, int ic, const std::array<int, 2>& got) {
  auto pair_of = [&](bool first) { return got[0] == (first ? 0 : 2) && got[1] == (first ? 1 : 3); };
  switch (vc) {
    case ValueCase::kFirstNaN: return pair_of(true);
    case ValueCase::kSecondNaN: return pair_of(false);
    case ValueCase::kBothNaN: return pair_of(r.nan_first);
    case ValueCase::kLess: return pair_of(!r.max);
    case ValueCase::kGreater: return pair_of(r.max);
    case ValueCase::kEqual: break;
  }
  if (got[0] != (r.tie_value_first ? 0 : 2)) return false;
  if (ic == 0) return true;  // equal indices: either side's has the same bits
  bool first_index = r.tie_index == 0 ? true : r.tie_index < 0 ? ic < 0 : ic > 0;
  return got[1] == (first_index ? 1 : 3);
}

}  // namespace

PiecesOrder pieces_order(const Op& op) {
  constexpr PiecesOrder kNone = PiecesOrder::kNone;
  if (op.kind() != OpKind::Reduce || op.num_results() != 2 || op.regions().size() != 1) return kNone;
  ir::ElementType value = op.operand(0)->type().element, index = op.operand(1)->type().element;
  if (!(ir::is_float(value) || ir::is_integer(value)) || !ir::is_integer(index)) return kNone;
  // (the pieces start from -inf or +inf: not for the f8 types that have none)
  if (ir::is_float(value)) {
    ir::Literal inf(ir::Type(value, {}));
    inf.set_double(0, INFINITY);
    if (!std::isinf(inf.get_double(0))) return kNone;
  }
  const ir::Block& body = op.region(0);
  if (body.arguments().size() != 4) return kNone;
  // Integers have no NaN: those cases cannot occur, and the body's answer in them is not asked.
  std::vector<ValueCase> cases = {ValueCase::kLess, ValueCase::kEqual, ValueCase::kGreater};
  if (ir::is_float(value)) cases.insert(cases.end(), {ValueCase::kFirstNaN, ValueCase::kSecondNaN, ValueCase::kBothNaN});
  std::vector<std::tuple<ValueCase, int, std::array<int, 2>>> answers;
  for (ValueCase vc : cases)
    for (int ic = -1; ic <= 1; ++ic) {
      auto got = run_body(body, vc, ic);
      if (!got) return kNone;
      answers.emplace_back(vc, ic, *got);
    }
  for (bool max : {true, false})
    for (bool tie_value_first : {true, false})
      for (int tie_index : {-1, 0, 1})
        for (bool nan_first : {true, false}) {
          Rule r{max, tie_value_first, tie_index, nan_first};
          bool all = true;
          for (const auto& [vc, ic, got] : answers) all = all && agrees(r, vc, ic, got);
          if (all) return max ? PiecesOrder::kLargest : PiecesOrder::kSmallest;
        }
  return kNone;
}

}  // namespace tessera::spmd
