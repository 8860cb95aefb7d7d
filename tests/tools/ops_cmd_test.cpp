// `tessera ops`: every op of the table is listed with the rules each layer has for it, and an op
// still on a layer's PENDING lines is listed as pending there (the listing reads the same lines).
#include <gtest/gtest.h>

#include "ir/rule_status.h"
#include "tools/tessera/ops_cmd.h"

namespace tessera::tools {
namespace {

using ir::OpKind;

const std::vector<std::string> kAll = {"shape", "kernel", "VJP", "JVP", "vmap", "factor"};

TEST(Ops, EveryOpIsListedWithItsRules) {
  std::string out = ops_listing();
  for (int i = 0; i < ir::kNumOpKinds; ++i) {
    std::string_view name = ir::spelling(static_cast<OpKind>(i));
    EXPECT_NE(out.find(std::string(name) + " "), std::string::npos) << name;
  }
  EXPECT_NE(out.find("stablehlo.add"), std::string::npos);
  EXPECT_NE(out.find("rules: shape kernel VJP JVP vmap factor\n"), std::string::npos) << out;
}

TEST(Ops, RulesFollowThePendingLines) {
  for (OpKind k : {OpKind::Add, OpKind::Tuple, OpKind::Composite, OpKind::Map, OpKind::AfterAll}) {
    RuleStatus s = rule_status(k);
    EXPECT_EQ(s.has, kAll) << ir::spelling(k);
    EXPECT_TRUE(s.pending.empty()) << ir::spelling(k);
  }
  // An op on a layer's PENDING lines is listed as pending there, on its own line of the listing.
  std::string out = ops_listing();
  for (int i = 0; i < ir::kNumOpKinds; ++i) {
    auto k = static_cast<OpKind>(i);
    RuleStatus st = rule_status(k);
    EXPECT_EQ(st.has.size() + st.pending.size(), kAll.size());
    size_t at = out.find(std::string(ir::spelling(k)) + " ");
    ASSERT_NE(at, std::string::npos);
    std::string line = out.substr(at, out.find('\n', at) - at);
    EXPECT_EQ(line.find("pending:") != std::string::npos, !st.pending.empty()) << line;
    EXPECT_EQ(line.find("pending: shape") != std::string::npos, ir::shape_rule_pending(k)) << line;
  }
}

}  // namespace
}  // namespace tessera::tools
