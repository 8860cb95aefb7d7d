// reduce (built-in combiners, bools, several inputs, a body the fast path cannot take), dot_general
// (batch and several contracting dimensions, accumulation in double, wider declared results),
// while (with a value captured from outside the loop) and optimization_barrier.
#include <gtest/gtest.h>

#include <algorithm>

#include "numpy_oracle.h"
#include "support/strings.h"
#include "test_util.h"

namespace tessera::interp::testing {
namespace {

using E = ElementType;
using ir::OpKind;

// Halves make every partial sum exact, so the order of summation cannot matter.
TEST(Reduce, BuiltInCombinersMatchNumpy) {
  struct Combiner {
    OpKind kind;
    std::string numpy;
    double init;
    bool small_only;  // products only over few elements and not in f16, so that they stay exact
  };
  const Combiner combiners[] = {{OpKind::Add, "np.sum", 0, false},
                                {OpKind::Maximum, "np.max", -1e9, false},
                                {OpKind::Minimum, "np.min", 1e9, false},
                                {OpKind::Multiply, "np.prod", 1, true}};
  const std::vector<std::vector<int64_t>> dims_list = {{1}, {}, {0, 2}, {0, 1, 2}};
  NumPy np;
  std::vector<Literal> got;
  uint64_t seed = 10;
  for (E e : {E::f32, E::f64, E::f16, E::i32, E::i64, E::ui32}) {
    for (const Combiner& c : combiners) {
      for (const auto& dims : dims_list) {
        if (c.small_only && (dims.size() > 1 || e == E::f16)) continue;
        Literal x = random_literal(Type(e, {3, 4, 5}), seed++, Domain::Halves);
        double init = ir::is_unsigned_integer(e) && c.init < 0 ? 0 : e == E::f16 ? std::clamp(c.init, -6e4, 6e4) : c.init;
        got.push_back(run1({x}, [&](auto& p) { return ir::reduce(p[0], p[0].builder().scalar(e, init), dims, c.kind); }));
        std::string axes = "(" + support::join(dims, ", ") + (dims.size() == 1 ? ",)" : ")");
        np.add(fmt::format("np.asarray({}(a0, axis={})).astype(a0.dtype)", c.numpy, axes), {x});
      }
    }
  }
  Literal flags = random_literal(Type(E::i1, {4, 6}), 99);
  for (auto [kind, numpy] : {std::pair{OpKind::Or, "np.any"}, std::pair{OpKind::And, "np.all"}}) {
    got.push_back(run1({flags}, [&](auto& p) {
      return ir::reduce(p[0], p[0].builder().scalar(E::i1, kind == OpKind::And), {1}, kind);
    }));
    np.add(fmt::format("{}(a0, axis=1)", numpy), {flags});
  }
  std::vector<Literal> want = np.run();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same(got[i], want[i])) << "case " << i;
}

// Fills a reduce body of (acc..., x...) with `body`.
void fill_body(ir::Module& m, ir::Op& op, const std::vector<Type>& scalars,
               const std::function<std::vector<Tensor>(ir::Builder&, const std::vector<Tensor>&)>& body) {
  ir::Block& region = op.add_region();
  ir::Builder b(m, region);
  std::vector<Tensor> args;
  for (int k = 0; k < 2; ++k)
    for (const Type& t : scalars) args.push_back(b.wrap(region.add_argument(t)));
  std::vector<ir::Value*> results;
  for (const Tensor& t : body(b, args)) results.push_back(t.value());
  region.append(std::make_unique<ir::Op>(OpKind::Return, results, std::vector<Type>{}));
}

TEST(Reduce, SeveralInputsComputeAnArgmax) {
  Literal x = random_literal(Type(E::f32, {3, 7}), 5);
  ir::AttrMap dims;
  dims.set("dimensions", std::vector<int64_t>{1});
  std::vector<Literal> got = run({x}, [&](ir::FunctionBuilder& f, const std::vector<Tensor>& p) {
    Tensor index = f.iota(Type(E::i32, {3, 7}), 1);
    Tensor lowest = f.scalar(E::f32, -INFINITY);
    Tensor none = f.scalar(E::i32, -1);
    return f.emit_with_regions(OpKind::Reduce, {p[0], index, lowest, none}, dims, {}, [&](ir::Op& op) {
      fill_body(f.module(), op, {Type(E::f32, {}), Type(E::i32, {})}, [](ir::Builder&, const std::vector<Tensor>& a) {
        Tensor better = ir::compare(a[2], a[0], ir::ComparisonDirection::GT);
        return std::vector<Tensor>{ir::select(better, a[2], a[0]), ir::select(better, a[3], a[1])};
      });
    });
  });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(same(got[0], numpy("np.max(a0, axis=1)", {x})));
  EXPECT_TRUE(same(got[1], numpy("np.argmax(a0, axis=1).astype(np.int32)", {x})));
}

TEST(Reduce, BodyOtherThanOneOpIsInterpreted) {
  Literal x = random_literal(Type(E::f64, {4, 5}), 6, Domain::Halves);
  ir::AttrMap dims;
  dims.set("dimensions", std::vector<int64_t>{0});
  Literal got = run({x}, [&](ir::FunctionBuilder& f, const std::vector<Tensor>& p) {
    return f.emit_with_regions(OpKind::Reduce, {p[0], f.scalar(E::f64, 0.5)}, dims, {}, [&](ir::Op& op) {
      fill_body(f.module(), op, {Type(E::f64, {})},
                [](ir::Builder&, const std::vector<Tensor>& a) { return std::vector<Tensor>{a[0] + a[1] * a[1]}; });
    });
  })[0];
  EXPECT_TRUE(same(got, numpy("0.5 + np.sum(a0 * a0, axis=0)", {x})));
}

TEST(DotGeneral, MatchesNumpyWithBatchAndContractingDimensions) {
  NumPy np;
  std::vector<Literal> got;
  for (E e : {E::f32, E::f64, E::i32, E::i64}) {
    Literal a = random_literal(Type(e, {3, 4}), 20);
    Literal b = random_literal(Type(e, {4, 5}), 21);
    got.push_back(run1({a, b}, [](auto& p) { return ir::matmul(p[0], p[1]); }));
    np.add(ir::is_float(e) ? "(a0.astype(np.float64) @ a1).astype(a0.dtype)" : "a0 @ a1", {a, b});
    Literal c = random_literal(Type(e, {2, 3, 4, 5}), 22);
    Literal d = random_literal(Type(e, {2, 5, 4, 6}), 23);
    ir::DotDims dn{{0}, {0}, {2, 3}, {2, 1}};
    got.push_back(run1({c, d}, [&](auto& p) { return ir::dot_general(p[0], p[1], dn); }));
    np.add("np.einsum('biac,bcal->bil', a0.astype(np.float64) if a0.dtype.kind == 'f' else a0, a1).astype(a0.dtype)",
           {c, d});
  }
  std::vector<Literal> want = np.run();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(close(got[i], want[i])) << "case " << i;
}

// Like StableHLO's reference interpreter, products and partial sums are rounded to the element
// type in contraction order: (1e8 + 1) is 1e8 in f32, so the sum is 0, not 1. A contraction split
// across devices then sums its pieces the same way.
TEST(DotGeneral, AccumulatesInTheElementTypeInOrder) {
  Literal a = lit(Type(E::f32, {1, 3}), {1e8, 1, -1e8});
  Literal b = lit(Type(E::f32, {3, 1}), {1, 1, 1});
  EXPECT_TRUE(same(run1({a, b}, [](auto& p) { return ir::matmul(p[0], p[1]); }), lit(Type(E::f32, {1, 1}), {0})));
  Literal c = lit(Type(E::f64, {1, 3}), {1e8, 1, -1e8});
  Literal d = lit(Type(E::f64, {3, 1}), {1, 1, 1});
  EXPECT_TRUE(same(run1({c, d}, [](auto& p) { return ir::matmul(p[0], p[1]); }), lit(Type(E::f64, {1, 1}), {1})));
}

// a @ b as a dot_general whose declared result has element type `result`.
Literal dot(Literal a, Literal b, E result) {
  ir::DotDims dn{{}, {}, {1}, {0}};
  ir::AttrMap attrs;
  attrs.set("dot_dimension_numbers", dn);
  Type out(result, {a.shape()[0], b.shape()[1]});
  return run1({std::move(a), std::move(b)},
              [&](auto& p) { return p[0].builder().emit1(OpKind::DotGeneral, p, attrs, {out}); });
}

TEST(DotGeneral, WiderDeclaredResultsAndBools) {
  EXPECT_TRUE(same(dot(ints(Type(E::i8, {1, 2}), {100, 100}), ints(Type(E::i8, {2, 1}), {100, 100}), E::i32),
                   ints(Type(E::i32, {1, 1}), {20000})));
  const double q = 1 + std::ldexp(1.0, -7);
  EXPECT_TRUE(same(dot(lit(Type(E::bf16, {1, 2}), {q, 1}), lit(Type(E::bf16, {2, 1}), {q, 1}), E::f32),
                   lit(Type(E::f32, {1, 1}), {q * q + 1})));
  EXPECT_TRUE(same(dot(ints(Type(E::i1, {2, 2}), {1, 0, 0, 0}), ints(Type(E::i1, {2, 2}), {0, 1, 1, 1}), E::i1),
                   ints(Type(E::i1, {2, 2}), {0, 1, 0, 0})));
  // Integer products wrap like the result type.
  EXPECT_TRUE(same(dot(ints(Type(E::i32, {1, 2}), {65536, 1}), ints(Type(E::i32, {2, 1}), {65536, 5}), E::i32),
                   ints(Type(E::i32, {1, 1}), {5})));
}

// bf16 and f16 dots accumulate in f32 and round once, as XLA computes them. A running sum in the
// element type stops growing: 256 + 1 rounds to 256 in bf16 (8 significant bits), 2048 + 1 to 2048
// in f16, so 4096 ones would sum to 256 or 2048 instead of 4096. Mixed operands (an i8 with a
// bf16, as JAX's exports of mixed-type matmuls have) read each element exactly; an integer dot
// truncates its float operand's elements first.
TEST(DotGeneral, NarrowFloatsAccumulateInF32AndRoundOnce) {
  for (E e : {E::bf16, E::f16}) {
    Literal sum = dot(Literal::splat(Type(e, {1, 4096}), 1.0), Literal::splat(Type(e, {4096, 1}), 1.0), e);
    EXPECT_TRUE(same(sum, lit(Type(e, {1, 1}), {4096}))) << ir::spelling(e);
  }
  // 1 + 2^-8 + 2^-8 is 1 + 2^-7 in f32, a bf16 value; in bf16 each 1 + 2^-8 rounds back to 1.
  const double h = std::ldexp(1.0, -8);
  EXPECT_TRUE(same(dot(lit(Type(E::bf16, {1, 3}), {1, h, h}), Literal::splat(Type(E::bf16, {3, 1}), 1.0), E::bf16),
                   lit(Type(E::bf16, {1, 1}), {1 + 2 * h})));
  Literal i8 = ints(Type(E::i8, {2, 2}), {1, 2, 3, -4});
  EXPECT_TRUE(same(dot(i8, lit(Type(E::bf16, {2, 1}), {1.5, 2.5}), E::bf16), lit(Type(E::bf16, {2, 1}), {6.5, -5.5})));
  EXPECT_TRUE(same(dot(i8, lit(Type(E::f32, {2, 1}), {1.5, -2.5}), E::i32), ints(Type(E::i32, {2, 1}), {-3, 11})));
}

TEST(Control, WhileLoopsWithACapturedValue) {
  std::vector<Literal> got = run({ints(Type(E::i32, {}), {0}), ints(Type(E::i32, {}), {0})},
                                 [](ir::FunctionBuilder& f, const std::vector<Tensor>& p) {
                                   Tensor step = f.scalar(E::i32, 3);  // defined outside the loop
                                   return ir::while_loop(
                                       p,
                                       [](ir::Builder& b, const std::vector<Tensor>& v) {
                                         return ir::compare(v[0], b.scalar(E::i32, 10), ir::ComparisonDirection::LT);
                                       },
                                       [&](ir::Builder& b, const std::vector<Tensor>& v) {
                                         return std::vector<Tensor>{v[0] + b.scalar(E::i32, 1), v[1] + v[0] * step};
                                       });
                                 });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(same(got[0], ints(Type(E::i32, {}), {10})));
  EXPECT_TRUE(same(got[1], ints(Type(E::i32, {}), {135})));  // 3 * (0 + 1 + ... + 9)
}

TEST(Control, OptimizationBarrierIsTheIdentity) {
  Literal a = random_literal(Type(E::f32, {2, 3}), 30);
  Literal b = random_literal(Type(E::i64, {4}), 31);
  std::vector<Literal> got = run({a, b}, [](ir::FunctionBuilder&, const std::vector<Tensor>& p) {
    return ir::optimization_barrier(p);
  });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(same(got[0], a));
  EXPECT_TRUE(same(got[1], b));
}

}  // namespace
}  // namespace tessera::interp::testing
