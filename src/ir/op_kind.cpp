#include "ir/op_kind.h"

#include <array>
#include <string>

#include "support/error.h"

namespace tessera::ir {
namespace {

constexpr std::array<OpInfo, kNumOpKinds> kOps = {{
#define OP(e, spelling, arity, traits) {spelling, arity, traits},
#include "ir/ops.def"
#undef OP
}};

}  // namespace

const OpInfo& info(OpKind k) { return kOps[static_cast<size_t>(k)]; }

std::optional<OpKind> parse_op_kind(std::string_view s) {
  for (size_t i = 0; i < kOps.size(); ++i)
    if (kOps[i].spelling == s) return static_cast<OpKind>(i);
  return std::nullopt;
}

void not_implemented(OpKind k, std::string_view layer) {
  support::fail("{}: the {} is not implemented in Tessera", spelling(k), layer);
}

}  // namespace tessera::ir
