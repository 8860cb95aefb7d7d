// `tessera ops` (ops_cmd.h).
#include "tools/tessera/ops_cmd.h"

#include <fmt/format.h>

#include "autodiff/rules.h"
#include "interp/kernels.h"
#include "ir/rule_status.h"
#include "spmd/factor_rule.h"
#include "support/strings.h"

namespace tessera::tools {

RuleStatus rule_status(ir::OpKind k) {
  const std::pair<const char*, bool> rules[] = {
      {"shape", ir::shape_rule_pending(k)},    {"kernel", interp::kernel_pending(k)},
      {"VJP", autodiff::vjp_pending(k)},       {"JVP", autodiff::jvp_pending(k)},
      {"vmap", autodiff::vmap_pending(k)},     {"factor", spmd::factor_rule_pending(k)},
  };
  RuleStatus s;
  for (auto [name, pending] : rules) (pending ? s.pending : s.has).push_back(name);
  return s;
}

std::string ops_listing() {
  using namespace tessera::ir;
  const std::pair<OpTrait, const char*> traits[] = {
      {kPure, "pure"},           {kElementwise, "elementwise"}, {kCommutative, "commutative"},
      {kCollective, "collective"}, {kHasRegions, "regions"},     {kTerminator, "terminator"},
      {kShardy, "shardy"},       {kCheck, "check"},             {kDecomposable, "decomposable"}};
  std::string out;
  int complete = 0;
  for (int i = 0; i < kNumOpKinds; ++i) {
    auto k = static_cast<OpKind>(i);
    const OpInfo& op = info(k);
    std::string t;
    for (auto [bit, name] : traits)
      if (op.traits & bit) t += fmt::format("{}{}", t.empty() ? "" : ",", name);
    std::string arity = op.arity == kVariadic ? "variadic" : fmt::format("{}", op.arity);
    RuleStatus s = rule_status(k);
    complete += s.pending.empty() ? 1 : 0;
    std::string rules = "rules: " + (s.has.empty() ? std::string("none") : support::join(s.has, " "));
    if (!s.pending.empty()) rules += "; pending: " + support::join(s.pending, " ");
    out += fmt::format("{:<36} {:>8}  {:<40} {}\n", op.spelling, arity, t, rules);
  }
  out += fmt::format("{} ops, {} with every rule (shape, kernel, VJP, JVP, vmap, factor)\n", kNumOpKinds, complete);
  return out;
}

}  // namespace tessera::tools
