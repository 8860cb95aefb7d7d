// The acceptance harness of the reverse transform over the op table (op_table.h): each row builds
// f(params) -> loss = sum(op(params) * w) with a fixed pseudo-random f64 weight w, reverses it, and
// compares every entry of every gradient (evaluated by the reference interpreter) with a central
// finite difference of f in f64.
//
// A second test accounts for every row of ops.def: each op is covered by a row of the table, checked
// by the collectives' adjoint identity (collective_adjoint_test.cpp), refused with a message
// (refusal_test.cpp), or listed below as having no gradient, so a new op cannot slip past.
#include <set>

#include "op_table.h"

namespace tessera::autodiff::testing {
namespace {

using ir::ElementType;
using ir::FunctionBuilder;

// Ops without a gradient: leaves (stablehlo and sdy constants), integer and boolean ops, bit reinterpretation, the terminator
// and the check ops (which have no results).
const std::vector<OpKind> kNoGradient = {
    OpKind::Constant, OpKind::Iota, OpKind::ReplicaId, OpKind::PartitionId, OpKind::Not,
    OpKind::BitcastConvert, OpKind::And, OpKind::Or, OpKind::Xor, OpKind::ShiftLeft,
    OpKind::ShiftRightLogical, OpKind::ShiftRightArithmetic, OpKind::Return, OpKind::ExpectEqConst,
    OpKind::ExpectAlmostEqConst, OpKind::ExpectEq, OpKind::ExpectAlmostEq, OpKind::ExpectClose,
    OpKind::SdyConstant,
    // More elementwise ops (#17): integer and boolean results.
    OpKind::Popcnt, OpKind::CountLeadingZeros, OpKind::IsInf, OpKind::IsPosInf, OpKind::IsNegInf,
    // CHLO's mulhi: integers. rng_bit_generator: an integer state in, random bits out.
    OpKind::Mulhi, OpKind::RngBitGenerator,
    // Shape polymorphism (#17): an integer size.
    OpKind::GetDimensionSize,
    // Tokens carry no data.
    OpKind::AfterAll, OpKind::CreateToken,
    // The streams: infeed's values come from outside the program (leaves, like constants); outfeed
    // gives only a token.
    OpKind::Infeed, OpKind::Outfeed,
    // The interpreter tests' probe ops (files on the side): probe's rules are the identity's.
    OpKind::Probe, OpKind::ExpectSerializedEq,
    // Quantization rounds to integers: refused by name (tests/stablehlo/quant_test.cpp).
    OpKind::UniformQuantize, OpKind::UniformDequantize,
};

// Issue #17's rows whose gradient is not written yet (src/autodiff/rules_pending.cpp refuses them
// by name); an op leaves this list for one of the others when its rule lands.
const std::vector<OpKind> kPendingGradient = {
    // tokens, tuples, effects
    OpKind::Send, OpKind::Recv,
    OpKind::Scan,
};

class VjpFd : public ::testing::TestWithParam<Row> {};

TEST_P(VjpFd, GradientMatchesCentralDifferences) {
  const Row& row = GetParam();
  ir::Module m = row_module("fd");
  std::vector<Literal> args = row_arguments(row);
  const ir::Function& f = build_row(m, "f", row, args, [](FunctionBuilder& b, Tensor out) {
    return ir::sum(out * b.constant(random_f64(out.shape(), 99, -1, 1)));
  });
  for (OpKind k : row.covers) ASSERT_TRUE(contains_op(f, k)) << row.name << " builds no " << ir::spelling(k);
  reverse(m, f);
  ASSERT_NO_THROW(ir::verify(m));
  std::vector<Literal> grads = interp::evaluate(m, "f_grad", args);
  ASSERT_EQ(grads.size(), args.size());

  auto loss = [&](std::vector<Literal> a) { return interp::evaluate(m, "f", std::move(a))[0].get_double(0); };
  int failures = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    ASSERT_EQ(grads[i].type(), args[i].type());
    for (int64_t j = 0; j < args[i].num_elements(); ++j) {
      std::vector<Literal> plus = args, minus = args;
      double v = args[i].get_double(j);
      plus[i].set_double(j, v + row.step);
      minus[i].set_double(j, v - row.step);
      double fd = (loss(plus) - loss(minus)) / (2 * row.step);
      double g = grads[i].get_double(j);
      if (!within_fd_tolerance(g, fd) && ++failures <= 5)
        ADD_FAILURE() << row.name << ": d loss / d param " << i << "[" << j << "] = " << g
                      << ", finite differences give " << fd;
    }
  }
}

// A NaN gradient (or estimate) fails: `|g - e| > tol` alone is false for NaN and let it pass.
TEST(FdTolerance, NaNNeverPasses) {
  EXPECT_FALSE(within_fd_tolerance(NAN, 1.0));
  EXPECT_FALSE(within_fd_tolerance(1.0, NAN));
  EXPECT_FALSE(within_fd_tolerance(INFINITY, INFINITY));
  EXPECT_TRUE(within_fd_tolerance(1.0, 1.0 + 1e-7));
  EXPECT_FALSE(within_fd_tolerance(1.0, 1.0 + 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Ops, VjpFd, ::testing::ValuesIn(all_rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

TEST(VjpCoverage, EveryOpIsCheckedOrListedExactlyOnce) {
  std::set<OpKind> fd;
  for (const Row& row : all_rows()) fd.insert(row.covers.begin(), row.covers.end());
  auto count = [](const std::vector<OpKind>& list, OpKind k) { return std::count(list.begin(), list.end(), k); };
  std::vector<OpKind> adjoint = adjoint_checked_ops(), refused = refused_ops();
  constexpr OpKind kAll[] = {
#define OP(e, spelling, arity, traits) OpKind::e,
#include "ir/ops.def"
#undef OP
  };
  for (OpKind k : kAll) {
    auto n = static_cast<long>(fd.count(k)) + count(adjoint, k) + count(refused, k) + count(kNoGradient, k) +
             count(kPendingGradient, k);
    EXPECT_EQ(n, 1) << ir::spelling(k) << " is in " << n << " of: the finite-difference table, the "
                    << "adjoint-checked collectives, the refused ops, the ops without a gradient, "
                    << "the ops whose gradient is not written yet";
  }
}

// JAX's convention for ties (lax.py, _reduce_chooser_jvp_rule): the maxima share dy evenly.
TEST(VjpRules, ReduceMaxSplitsTiesEvenly) {
  ir::Module m("ties");
  const ir::Function& f = ir::build_function(m, "f", [](FunctionBuilder& b) {
    return ir::reduce_max(b.param(ir::f64({4})), {0});
  });
  reverse(m, f);
  Literal x = Literal::from_doubles(ir::f64({4}), std::vector<double>{1, 3, 3, 2});
  Literal g = interp::evaluate(m, "f_grad", {x})[0];
  EXPECT_EQ(g, Literal::from_doubles(ir::f64({4}), std::vector<double>{0, 0.5, 0.5, 0}));
}

// Shardy's explicit collectives are identities on the global value, so their cotangents pass
// through; each adjoint moves the cotangent back to the operand's layout: all_gather <-> all_slice
// with the same axes, all_to_all with its dimensions swapped, reduce_scatter -> all_gather,
// all_reduce -> the cotangent as it is.
TEST(VjpRules, ShardyExplicitCollectivesMoveTheCotangentBackToTheOperandsLayout) {
  ir::Module m = row_module("sdy");
  auto on_m = [](std::vector<ir::DimSharding> dims) { return ir::Sharding{"m", std::move(dims), {}, {}}; };
  const ir::Function& f = ir::build_function(m, "f", [&](FunctionBuilder& b) {
    Tensor x = b.param(ir::f64({4, 4}), on_m({{"x"}, {"y"}}));
    Tensor g = ir::sdy_all_gather(x, {{"x"}, {}}, on_m({{}, {"y"}}));            // -> all_slice
    Tensor t = ir::sdy_all_to_all(g, {{{"y"}, 1, 0}}, on_m({{"y"}, {}}));         // -> all_to_all 0->1
    Tensor r = ir::sdy_all_reduce(t, {"x"}, on_m({{"y"}, {}}));                   // -> as it is
    return ir::sum(ir::sdy_reduce_scatter(r, {{}, {"x"}}, on_m({{"y"}, {"x"}})));  // -> all_gather
  });
  reverse(m, f);
  ASSERT_NO_THROW(ir::verify(m));
  std::vector<const ir::Op*> moves;
  for (const auto& op : m.find_function("f_grad")->body().ops())
    if (ir::has_trait(op->kind(), ir::kShardy) && ir::spelling(op->kind()) != "sdy.sharding_constraint")
      moves.push_back(op.get());
  ASSERT_EQ(moves.size(), 7u);  // the four forward ops and three adjoints (all_reduce has none)
  // The forward ops are rebuilt first; the adjoints follow in reverse order.
  const ir::Op& rs = *moves[4];
  EXPECT_EQ(rs.kind(), OpKind::SdyAllGather);
  EXPECT_EQ(rs.attrs().get<ir::Sharding>("gathering_axes"), on_m({{}, {"x"}}));
  EXPECT_EQ(rs.attrs().get<ir::Sharding>("out_sharding"), on_m({{"y"}, {}}));
  const ir::Op& a2a = *moves[5];
  EXPECT_EQ(a2a.kind(), OpKind::SdyAllToAll);
  EXPECT_EQ(a2a.attrs().get<ir::IntMatrix>("param_dims"), ir::IntMatrix::from_rows({{0, 1}}));
  EXPECT_EQ(a2a.attrs().get<ir::Sharding>("out_sharding"), on_m({{}, {"y"}}));
  const ir::Op& ag = *moves[6];
  EXPECT_EQ(ag.kind(), OpKind::SdyAllSlice);
  EXPECT_EQ(ag.attrs().get<ir::Sharding>("slicing_axes"), on_m({{"x"}, {}}));
  EXPECT_EQ(ag.attrs().get<ir::Sharding>("out_sharding"), on_m({{"x"}, {"y"}}));
  Literal x = random_f64({4, 4}, 5);
  EXPECT_EQ(interp::evaluate(m, "f_grad", {x})[0], Literal::splat(ir::f64({4, 4}), 1));
}

}  // namespace
}  // namespace tessera::autodiff::testing
