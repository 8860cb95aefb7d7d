// The forward transform over the op table (op_table.h), the same rows the reverse transform is
// checked on: for every row, f(params) = op(params) in f64 and
//   - the dot-product identity <J v, u> = <v, J^T u> between f_jvp and f_grad, with pseudo-random
//     tangents v and cotangents u (multiples of 2^-10, exact in f32), to kIdentityTolerance;
//   - J v against the central difference (f(x + h v) - f(x - h v)) / 2h, entry by entry, to the
//     finite-difference tolerances, and f_jvp's primal results against f's.
// Then what the table does not reach: ties, partial tangents (one operand of concatenate, pad,
// dynamic_update_slice or select without a tangent), the signature (tangent parameters laid out
// like their primals, integer parameters and results without tangents), the tangent of a
// reduce_max tie, the collectives (each tangent goes through the same collective, so f_jvp(x, v)'s
// tangent is f(v) on every process), and the refusals, in reverse's words.
#include "op_table.h"

#include "autodiff/forward.h"
#include "ir/builder_numeric.h"

namespace tessera::autodiff::testing {
namespace {

using ir::ElementType;
using ir::FunctionBuilder;

// f(params) = op(params), a scalar result made a vector so that reverse takes a cotangent for it.
const ir::Function& build_vector_row(ir::Module& m, const Row& row, const std::vector<Literal>& args) {
  return build_row(m, "f", row, args, [](FunctionBuilder&, Tensor out) {
    return out.rank() == 0 ? ir::reshape(out, {1}) : out;
  });
}

std::vector<Literal> tangents_like(const std::vector<Literal>& args, uint64_t seed) {
  std::vector<Literal> out;
  for (size_t i = 0; i < args.size(); ++i) out.push_back(random_f64(args[i].type().shape, seed + i, -1, 1, true));
  return out;
}

std::vector<Literal> concat(std::vector<Literal> a, const std::vector<Literal>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Checks <J v, u> = <v, J^T u> for f (one f64 result, f64 parameters) at args.
void expect_identity(ir::Module& m, const ir::Function& f, const std::vector<Literal>& args, const std::string& what) {
  forward(m, f);
  reverse(m, f);
  ASSERT_NO_THROW(ir::verify(m));
  std::vector<Literal> v = tangents_like(args, 1000);
  Literal u = random_f64(f.result_types[0].shape, 2000, -1, 1, true);
  std::vector<Literal> jvp = interp::evaluate(m, f.name() + "_jvp", concat(args, v));
  std::vector<Literal> grads = interp::evaluate(m, f.name() + "_grad", concat(args, {u}));
  ASSERT_EQ(jvp.size(), 2u);
  ASSERT_EQ(grads.size(), args.size());
  double forward_side = dot(jvp[1], u), reverse_side = 0;
  for (size_t i = 0; i < args.size(); ++i) reverse_side += dot(v[i], grads[i]);
  EXPECT_NEAR(forward_side, reverse_side, kIdentityTolerance * (1 + std::abs(forward_side))) << what;
}

class Jvp : public ::testing::TestWithParam<Row> {};

TEST_P(Jvp, DotProductIdentityWithReverse) {
  const Row& row = GetParam();
  ir::Module m = row_module("identity");
  std::vector<Literal> args = row_arguments(row);
  expect_identity(m, build_vector_row(m, row, args), args, row.name);
}

TEST_P(Jvp, TangentMatchesCentralDifferences) {
  const Row& row = GetParam();
  ir::Module m = row_module("fd");
  std::vector<Literal> args = row_arguments(row);
  const ir::Function& f = build_vector_row(m, row, args);
  forward(m, f);
  ASSERT_NO_THROW(ir::verify(m));
  std::vector<Literal> v = tangents_like(args, 1000);
  std::vector<Literal> jvp = interp::evaluate(m, "f_jvp", concat(args, v));
  ASSERT_EQ(jvp.size(), 2u);
  EXPECT_EQ(jvp[0], interp::evaluate(m, "f", args)[0]) << row.name << ": f_jvp's primal result is not f's";

  auto moved = [&](double h) {
    std::vector<Literal> a = args;
    for (size_t i = 0; i < a.size(); ++i)
      for (int64_t j = 0; j < a[i].num_elements(); ++j) a[i].set_double(j, a[i].get_double(j) + h * v[i].get_double(j));
    return interp::evaluate(m, "f", a)[0];
  };
  Literal plus = moved(row.step), minus = moved(-row.step);
  int failures = 0;
  for (int64_t j = 0; j < jvp[1].num_elements(); ++j) {
    double fd = (plus.get_double(j) - minus.get_double(j)) / (2 * row.step), t = jvp[1].get_double(j);
    if (!within_fd_tolerance(t, fd) && ++failures <= 5)
      ADD_FAILURE() << row.name << ": (J v)[" << j << "] = " << t << ", finite differences give " << fd;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, Jvp, ::testing::ValuesIn(all_rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

TEST(JvpSignature, TangentsFollowFloatParametersAndResultsWithTheirShardings) {
  ir::Module m = row_module("signature");
  ir::Sharding rows{"m", {{"x"}, {}}, {}, {}};
  const ir::Function& f = ir::build_function(m, "f", [&](FunctionBuilder& b) {
    Tensor x = b.param(ir::f32({4, 2}), rows);
    Tensor n = b.param(ir::i32({4, 2}));
    return std::vector<Tensor>{x * ir::convert(n, ElementType::f32), n};
  });
  const ir::Function& g = forward(m, f);
  ASSERT_NO_THROW(ir::verify(m));
  EXPECT_EQ(g.name(), "f_jvp");
  ASSERT_EQ(g.num_parameters(), 3u);  // x, n, dx
  EXPECT_EQ(g.arg_sharding(0), rows);
  EXPECT_EQ(g.arg_sharding(1), std::nullopt);
  EXPECT_EQ(g.parameter(2)->type(), ir::f32({4, 2}));
  EXPECT_EQ(g.arg_sharding(2), rows);
  ASSERT_EQ(g.result_types.size(), 3u);  // x * n, n, d(x * n)
  EXPECT_EQ(g.result_types[2], ir::f32({4, 2}));
}

// The transpose of reverse's even split: the maxima's tangents averaged.
TEST(JvpRules, ReduceMaxAveragesTheTangentsOfTies) {
  ir::Module m("ties");
  const ir::Function& f = ir::build_function(m, "f", [](FunctionBuilder& b) {
    return ir::reduce_max(b.param(ir::f64({4})), {0});
  });
  forward(m, f);
  Literal x = Literal::from_doubles(ir::f64({4}), std::vector<double>{1, 3, 3, 2});
  Literal v = Literal::from_doubles(ir::f64({4}), std::vector<double>{10, 20, 40, 80});
  EXPECT_EQ(interp::evaluate(m, "f_jvp", {x, v})[1].get_double(0), 30);
}

// On ties the choosers split alike in both modes: each is the other's transpose.
TEST(JvpRules, TiesSplitAsInReverse) {
  ir::Module m("ties");
  const ir::Function& f = ir::build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(ir::f64({2, 3})), y = b.param(ir::f64({2, 3}));
    Tensor both = ir::concatenate({ir::maximum(x, y), ir::minimum(x, y), ir::clamp(y, x, y)}, 1);
    return ir::concatenate({both, ir::reshape(ir::reduce_max(x, {1}), {2, 1})}, 1);
  });
  std::vector<double> x = {1, 2, 2, 3, 3, 0}, y = {1, 5, 2, 0, 3, 3};  // ties at 0, 2, 4; row 1 of x ties at its max
  expect_identity(m, f, {Literal::from_doubles(ir::f64({2, 3}), x), Literal::from_doubles(ir::f64({2, 3}), y)}, "ties");
}

struct CollectiveRow {
  std::string name;
  OpKind kind;
  std::function<Tensor(const Tensor&)> op;
};

void PrintTo(const CollectiveRow& row, std::ostream* os) { *os << row.name; }

class JvpCollective : public ::testing::TestWithParam<CollectiveRow> {};

// Linear in x, so J v = f(v): evaluated as each of 4 partitions in turn.
TEST_P(JvpCollective, TangentIsTheSameCollectiveOfTheTangent) {
  const CollectiveRow& row = GetParam();
  ir::Module m("collective");
  const ir::Function& f = ir::build_function(m, "f", [&](FunctionBuilder& b) { return row.op(b.param(ir::f64({4, 8}))); });
  const ir::Function& g = forward(m, f);
  ASSERT_NO_THROW(ir::verify(m));
  int count = 0;
  for (const auto& op : g.body().ops()) count += op->kind() == row.kind;
  EXPECT_EQ(count, 2) << "the primal's " << ir::spelling(row.kind) << " and the tangent's";
  Literal x = random_f64({4, 8}, 1), v = random_f64({4, 8}, 2);
  for (uint32_t d = 0; d < 4; ++d) {
    interp::Options o;
    o.process = interp::ProcessInfo{0, d, 1, 4};
    EXPECT_EQ(interp::evaluate(m, "f_jvp", {x, v}, o)[1], interp::evaluate(m, "f", {v}, o)[0]) << row.name << " on " << d;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Collectives, JvpCollective,
    ::testing::ValuesIn(std::vector<CollectiveRow>{
        {"all_reduce", OpKind::AllReduce, [](const Tensor& x) { return ir::all_reduce(x, {{0, 2}, {1, 3}}); }},
        {"all_gather", OpKind::AllGather, [](const Tensor& x) { return ir::all_gather(x, 1, {{3, 1, 0, 2}}); }},
        {"reduce_scatter", OpKind::ReduceScatter, [](const Tensor& x) { return ir::reduce_scatter(x, 0, {{0, 1}, {2, 3}}); }},
        {"all_to_all", OpKind::AllToAll, [](const Tensor& x) { return ir::all_to_all(x, 1, 0, {{1, 3, 0, 2}}); }},
        {"collective_permute", OpKind::CollectivePermute, [](const Tensor& x) { return ir::collective_permute(x, {{0, 1}, {1, 2}}); }},
        {"collective_broadcast", OpKind::CollectiveBroadcast, [](const Tensor& x) { return ir::collective_broadcast(x, {{0, 1}, {2, 3}}); }},
        {"collective_reduce", OpKind::CollectiveReduce, [](const Tensor& x) { return ir::collective_reduce(x, {{1, 0}, {3, 2}}); }},
    }),
    [](const ::testing::TestParamInfo<CollectiveRow>& info) { return info.param.name; });

// The messages of reversing and of forwarding @f, each in a module of its own.
std::pair<std::string, std::string> messages(const std::function<Tensor(FunctionBuilder&)>& body) {
  std::string both[2];
  for (int mode = 0; mode < 2; ++mode) {
    ir::Module m("refusal");
    const ir::Function& f = ir::build_function(m, "f", body);
    both[mode] = message_of([&] { mode == 0 ? reverse(m, f) : forward(m, f); });
    EXPECT_EQ(m.functions.size(), 1u) << "a half-built transform stayed behind";
  }
  return {both[0], both[1]};
}

// Ops linear in two float operands, one of which has no tangent (it goes through floor): the
// tangent is the op on (the tangent, zeros in place of the other), whichever one is missing.
TEST(JvpRules, PartialTangentsOfConcatenatePadDynamicUpdateSliceAndSelect) {
  using T = const Tensor&;
  struct Case {
    std::string name;
    std::vector<int64_t> a, b;
    std::function<Tensor(T, T)> op;
  };
  std::vector<Case> cases{
      {"concatenate", {2, 3}, {2, 2}, [](T a, T b) { return ir::concatenate({a, b}, 1); }},
      {"pad", {3, 2}, {}, [](T a, T b) { return ir::pad(a, b, {1, 0}, {0, 2}, {1, 0}); }},
      {"dynamic_update_slice", {4, 5}, {2, 2},
       [](T a, T b) {
         Tensor i = a.builder().scalar(ElementType::i32, 1);
         return ir::dynamic_update_slice(a, b, {i, i});
       }},
      {"select", {2, 3}, {2, 3},
       [](T a, T b) {
         Tensor p = a.builder().constant(ints(Type(ElementType::i1, {2, 3}), {1, 0, 0, 1, 1, 0}));
         return ir::select(p, a, b);
       }},
  };
  for (const Case& k : cases)
    for (int missing = 0; missing < 2; ++missing) {
      std::string what = k.name + (missing == 0 ? ", no tangent for the first operand" : ", no tangent for the second");
      ir::Module m("partial");
      const ir::Function& f = ir::build_function(m, "f", [&](FunctionBuilder& b) {
        Tensor x = b.param(ir::f64(k.a));
        Tensor y = b.param(ir::f64(k.b));
        return k.op(missing == 0 ? ir::floor(x) : x, missing == 1 ? ir::floor(y) : y);
      });
      ir::build_function(m, "op", [&](FunctionBuilder& b) {
        Tensor x = b.param(ir::f64(k.a));
        return k.op(x, b.param(ir::f64(k.b)));
      });
      forward(m, f);
      ASSERT_NO_THROW(ir::verify(m)) << what;
      Literal x = random_f64(k.a, 1), y = random_f64(k.b, 2), vx = random_f64(k.a, 3), vy = random_f64(k.b, 4);
      std::vector<Literal> jvp = interp::evaluate(m, "f_jvp", {x, y, vx, vy});
      Literal want = interp::evaluate(m, "op", {missing == 0 ? Literal(vx.type()) : vx, missing == 1 ? Literal(vy.type()) : vy})[0];
      EXPECT_EQ(jvp[1], want) << what;
      double norm = dot(want, want);
      EXPECT_GT(norm, 0) << what;  // the present tangent reaches the result
    }
}

TEST(JvpRefusal, WhileLoopInReversesWords) {
  auto [reverse_message, forward_message] = messages([](FunctionBuilder& b) { return ir::sum(tanh_loop(b.param(ir::f32({4})))[1]); });
  EXPECT_EQ(forward_message.substr(0, 43), "cannot differentiate stablehlo.while: loops");
  EXPECT_EQ(forward_message, reverse_message);
}

TEST(JvpRefusal, CustomCallInReversesWords) {
  auto [reverse_message, forward_message] = messages([](FunctionBuilder& b) {
    ir::AttrMap a;
    a.set("call_target_name", std::string("foo"));
    Tensor x = b.param(ir::f32({4}));
    return ir::sum(b.emit(OpKind::CustomCall, {x}, std::move(a), {x.type()})[0]);
  });
  EXPECT_EQ(forward_message, "cannot differentiate stablehlo.custom_call: the derivative of custom call target 'foo' is unknown");
  EXPECT_EQ(forward_message, reverse_message);
}

// More elementwise ops (#17): the refused ones say the same in both modes.
TEST(JvpRefusal, MoreElementwiseOpsInReversesWords) {
  for (Tensor (*op)(const Tensor&) : {&ir::bessel_i1e}) {
    auto [reverse_message, forward_message] = messages([op](FunctionBuilder& b) { return ir::sum(op(b.param(ir::f32({4})))); });
    EXPECT_EQ(forward_message.substr(0, 26), "cannot differentiate chlo.");
    EXPECT_EQ(forward_message, reverse_message);
  }
  auto [reverse_message, forward_message] = messages([](FunctionBuilder& b) {
    Tensor x = b.param(ir::f32({4}));
    return ir::sum(ir::next_after(x, x * 2.0));
  });
  EXPECT_EQ(forward_message, "cannot differentiate chlo.next_after: it has no derivative (JAX defines none for nextafter either)");
  EXPECT_EQ(forward_message, reverse_message);
  auto [reverse_order, forward_order] = messages([](FunctionBuilder& b) {
    Tensor x = b.param(ir::f32({4}));
    return ir::sum(ir::polygamma(x, x));
  });
  EXPECT_EQ(forward_order, reverse_order);
  EXPECT_NE(forward_order.find("its order n takes integer values"), std::string::npos) << forward_order;
}

TEST(JvpRefusal, LoopOffTheTangentsPathIsNoError) {
  ir::Module m("refusal");
  const ir::Function& f = ir::build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(ir::f32({4}));
    tanh_loop(b.scalar(ElementType::f32, 1));
    return x * x;
  });
  EXPECT_EQ(message_of([&] { forward(m, f); }), "<no error>");
}

}  // namespace
}  // namespace tessera::autodiff::testing
