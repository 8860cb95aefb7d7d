// OpKind, expanded from ops.def, and the per-kind facts of the table (spelling, arity, traits).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera::ir {

enum OpTrait : uint32_t {
  kNone = 0,
  kPure = 1u << 0,         // no side effects, no dependence on the device it runs on
  kElementwise = 1u << 1,  // result element i depends on operand elements i only
  kCommutative = 1u << 2,
  kCollective = 1u << 3,   // exchanges data between devices
  kHasRegions = 1u << 4,
  kTerminator = 1u << 5,
  kShardy = 1u << 6,       // an sdy dialect op
  kCheck = 1u << 7,        // a test assertion (check.*): no results, reports to the checker
  kDecomposable = 1u << 8, // an exact rewrite into other rows exists once shape operands are known
};

inline constexpr int kVariadic = -1;

enum class OpKind : uint16_t {
#define OP(e, spelling, arity, traits) e,
#include "ir/ops.def"
#undef OP
};

inline constexpr int kNumOpKinds = 0
#define OP(e, spelling, arity, traits) +1
#include "ir/ops.def"
#undef OP
    ;

struct OpInfo {
  std::string_view spelling;
  int arity;
  uint32_t traits;
};

const OpInfo& info(OpKind k);
inline std::string_view spelling(OpKind k) { return info(k).spelling; }
inline bool has_trait(OpKind k, OpTrait t) { return (info(k).traits & t) != 0; }
std::optional<OpKind> parse_op_kind(std::string_view spelling);

// The refusal of a rule that an op of the table does not have yet: a UserError naming the op and
// the layer ("stablehlo.fft: the reference kernel is not implemented in Tessera"), so a program
// using it stops with a message, as an unknown op would.
[[noreturn]] void not_implemented(OpKind k, std::string_view layer);

}  // namespace tessera::ir
