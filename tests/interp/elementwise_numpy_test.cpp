// Elementwise kernels against NumPy, for every element type where NumPy defines the same meaning:
// f32, f64, f16, i32, i64, ui32, ui64, i1 (and complex where NumPy has the op). Each row of a table
// is one op with its NumPy expression, the types it applies to and the value ranges of its inputs;
// all rows run in one NumPy process.
#include <gtest/gtest.h>

#include "numpy_oracle.h"
#include "test_util.h"

namespace tessera::interp::testing {
namespace {

using ir::OpKind;
using E = ElementType;

enum TypeSet : unsigned {
  kF = 1,   // f32, f64, f16
  kS = 2,   // i32, i64
  kU = 4,   // ui32, ui64
  kB = 8,   // i1
  kC = 16,  // complex<f32>, complex<f64>
  kInts = kS | kU,
  kReal = kF | kInts,
};

std::vector<E> types_of(unsigned set) {
  std::vector<E> out;
  if (set & kF) out.insert(out.end(), {E::f32, E::f64, E::f16});
  if (set & kS) out.insert(out.end(), {E::i32, E::i64});
  if (set & kU) out.insert(out.end(), {E::ui32, E::ui64});
  if (set & kB) out.push_back(E::i1);
  if (set & kC) out.insert(out.end(), {E::c64, E::c128});
  return out;
}

// A function of @ (the first input) computed by NumPy in float64 (complex128) and cast back, as our kernels do.
std::string wide(const std::string& f) {
  const std::string x = "a0.astype(np.complex128 if a0.dtype.kind == 'c' else np.float64)";
  std::string expr = f;
  for (size_t at = 0; (at = expr.find('@', at)) != std::string::npos; at += x.size()) expr.replace(at, 1, x);
  return "(" + expr + ").astype(a0.dtype)";
}

struct Case {
  OpKind kind;
  std::string expr;
  unsigned types;
  Domain lhs = Domain::Any;
  Domain rhs = Domain::Any;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      {OpKind::Add, "a0 + a1", kReal | kB | kC},
      {OpKind::Subtract, "a0 - a1", kReal | kC},
      {OpKind::Multiply, "a0 * a1", kReal | kB | kC},
      {OpKind::Divide, "a0 / a1", kF | kC},
      {OpKind::Divide, "np.trunc(a0 / a1).astype(a0.dtype)", kInts, Domain::Any, Domain::Positive},
      {OpKind::Remainder, "np.fmod(a0, a1)", kReal, Domain::Any, Domain::Positive},
      {OpKind::Power, wide("np.power(@, a1)"), kF, Domain::Positive, Domain::Any},
      {OpKind::Power, "np.power(a0, a1)", kInts, Domain::Small, Domain::Small},
      {OpKind::Power, wide("np.power(@, a1.astype(np.complex128))"), kC},
      {OpKind::Maximum, "np.maximum(a0, a1)", kReal | kB},
      {OpKind::Maximum, "np.maximum(a0, a1)", kF, Domain::Special, Domain::Special},
      {OpKind::Minimum, "np.minimum(a0, a1)", kReal | kB},
      {OpKind::Minimum, "np.minimum(a0, a1)", kF, Domain::Special, Domain::Special},
      {OpKind::Atan2, wide("np.arctan2(@, a1)"), kF},
      {OpKind::And, "a0 & a1", kInts | kB},
      {OpKind::Or, "a0 | a1", kInts | kB},
      {OpKind::Xor, "a0 ^ a1", kInts | kB},
      {OpKind::ShiftLeft, "np.left_shift(a0, a1)", kInts, Domain::Any, Domain::Shift},
      {OpKind::ShiftRightLogical,
       "np.right_shift(a0.view(a0.dtype.str.replace('i', 'u')), a1.astype(a0.dtype.str.replace('i', 'u'))).view(a0.dtype)",
       kInts, Domain::Any, Domain::Shift},
      {OpKind::ShiftRightArithmetic,
       "np.right_shift(a0.view(a0.dtype.str.replace('u', 'i')), a1.astype(a0.dtype.str.replace('u', 'i'))).view(a0.dtype)",
       kInts, Domain::Any, Domain::Shift},
      {OpKind::Negate, "-a0", kReal | kC},
      {OpKind::Abs, "np.abs(a0)", kReal},
      {OpKind::Abs, "np.abs(a0.astype(np.complex128)).astype(a0.real.dtype)", kC},
      {OpKind::Sign, "np.sign(a0)", kReal},
      {OpKind::Sign, "np.sign(a0)", kF, Domain::Special},
      {OpKind::Exponential, wide("np.exp(@)"), kF | kC},
      {OpKind::ExponentialMinusOne, wide("np.expm1(@)"), kF},
      {OpKind::Log, wide("np.log(@)"), kF, Domain::Positive},
      {OpKind::Log, wide("np.log(@)"), kC},
      {OpKind::LogPlusOne, wide("np.log1p(@)"), kF, Domain::Small},
      {OpKind::Tanh, wide("np.tanh(@)"), kF | kC},
      {OpKind::Logistic, wide("1 / (1 + np.exp(-@))"), kF},
      {OpKind::Sqrt, wide("np.sqrt(@)"), kF, Domain::Positive},
      {OpKind::Sqrt, wide("np.sqrt(@)"), kC},
      {OpKind::Rsqrt, wide("1 / np.sqrt(@)"), kF, Domain::Positive},
      {OpKind::Sine, wide("np.sin(@)"), kF | kC},
      {OpKind::Cosine, wide("np.cos(@)"), kF | kC},
      {OpKind::Floor, "np.floor(a0)", kF, Domain::Halves},
      {OpKind::Floor, "np.floor(a0)", kF},
      {OpKind::Ceil, "np.ceil(a0)", kF, Domain::Halves},
      {OpKind::RoundNearestEven, "np.rint(a0)", kF, Domain::Halves},
      {OpKind::RoundNearestAfz, "np.sign(a0) * np.floor(np.abs(a0) + np.array(0.5, a0.dtype))", kF,
       Domain::Halves},
      {OpKind::IsFinite, "np.isfinite(a0)", kF, Domain::Special},
      {OpKind::Not, "~a0", kInts | kB},
  };
  return kCases;
}

TEST(ElementwiseNumpy, EveryOpAndTypeMatchesNumpy) {
  NumPy np;
  struct Ran {
    std::string what;
    Literal got;
  };
  std::vector<Ran> ran;
  uint64_t seed = 1;
  for (const Case& c : cases()) {
    int arity = ir::info(c.kind).arity;
    for (E e : types_of(c.types)) {
      std::vector<Literal> args;
      for (int i = 0; i < arity; ++i)
        args.push_back(random_literal(Type(e, {3, 5}), seed++, i == 0 ? c.lhs : c.rhs));
      Literal got = run1(args, [&](const std::vector<Tensor>& p) { return p[0].builder().emit1(c.kind, p); });
      np.add(c.expr, args);
      ran.push_back({fmt::format("{} on {} ({})", ir::spelling(c.kind), ir::spelling(e), c.expr), got});
    }
  }
  ASSERT_GT(ran.size(), 150u);
  std::vector<Literal> want = np.run();
  ASSERT_EQ(want.size(), ran.size());
  for (size_t i = 0; i < ran.size(); ++i) EXPECT_TRUE(close(ran[i].got, want[i])) << ran[i].what;
}

TEST(ElementwiseNumpy, CompareMatchesNumpyInEveryDirection) {
  using D = ir::ComparisonDirection;
  const std::pair<D, std::string> directions[] = {{D::EQ, "=="}, {D::NE, "!="}, {D::GE, ">="},
                                                  {D::GT, ">"},  {D::LE, "<="}, {D::LT, "<"}};
  NumPy np;
  std::vector<Literal> got;
  uint64_t seed = 100;
  for (auto [direction, symbol] : directions) {
    for (E e : types_of(kReal | kB)) {
      for (Domain d : {Domain::Small, Domain::Halves, Domain::Special}) {
        std::vector<Literal> args = {random_literal(Type(e, {4, 6}), seed++, d),
                                     random_literal(Type(e, {4, 6}), seed++, d)};
        got.push_back(run1(args, [&](const std::vector<Tensor>& p) { return ir::compare(p[0], p[1], direction); }));
        np.add("a0 " + symbol + " a1", args);
      }
    }
  }
  std::vector<Literal> want = np.run();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same(got[i], want[i])) << "case " << i;
}

TEST(ElementwiseNumpy, SelectAndClampMatchNumpy) {
  NumPy np;
  std::vector<Literal> got;
  uint64_t seed = 200;
  for (E e : types_of(kReal | kB)) {
    std::vector<Literal> args = {random_literal(Type(E::i1, {3, 4}), seed++), random_literal(Type(e, {3, 4}), seed++),
                                 random_literal(Type(e, {3, 4}), seed++)};
    got.push_back(run1(args, [](const std::vector<Tensor>& p) { return ir::select(p[0], p[1], p[2]); }));
    np.add("np.where(a0, a1, a2)", args);
  }
  for (E e : types_of(kReal)) {
    for (Domain d : {Domain::Any, Domain::Special}) {
      std::vector<Literal> args = {random_literal(Type(e, {3, 4}), seed++, d),
                                   random_literal(Type(e, {3, 4}), seed++, d),
                                   random_literal(Type(e, {3, 4}), seed++, d)};
      got.push_back(run1(args, [](const std::vector<Tensor>& p) { return ir::clamp(p[0], p[1], p[2]); }));
      np.add("np.minimum(np.maximum(a1, a0), a2)", args);
    }
  }
  std::vector<Literal> want = np.run();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(close(got[i], want[i])) << "case " << i;
}

TEST(ElementwiseNumpy, ConvertMatchesNumpyAstype) {
  struct Pair {
    E from, to;
    Domain domain;
    std::string expr;
  };
  const Pair pairs[] = {
      {E::f32, E::i32, Domain::Any, "a0.astype(np.int32)"},
      {E::f64, E::ui32, Domain::Positive, "a0.astype(np.uint32)"},
      {E::f64, E::i64, Domain::Halves, "a0.astype(np.int64)"},
      {E::i32, E::f32, Domain::Any, "a0.astype(np.float32)"},
      {E::i64, E::f16, Domain::Any, "a0.astype(np.float16)"},
      {E::f64, E::f16, Domain::Any, "a0.astype(np.float16)"},
      {E::f64, E::f32, Domain::Any, "a0.astype(np.float32)"},
      {E::f16, E::f64, Domain::Any, "a0.astype(np.float64)"},
      {E::f32, E::f64, Domain::Special, "a0.astype(np.float64)"},
      {E::ui32, E::i64, Domain::Any, "a0.astype(np.int64)"},
      {E::i64, E::ui64, Domain::Positive, "a0.astype(np.uint64)"},
      {E::ui32, E::i1, Domain::Small, "a0 != 0"},
      {E::f32, E::i1, Domain::Halves, "a0 != 0"},
      {E::i1, E::f32, Domain::Any, "a0.astype(np.float32)"},
      {E::i1, E::i32, Domain::Any, "a0.astype(np.int32)"},
      {E::i32, E::c64, Domain::Any, "a0.astype(np.complex64)"},
      {E::f64, E::c128, Domain::Any, "a0.astype(np.complex128)"},
      {E::c128, E::c64, Domain::Any, "a0.astype(np.complex64)"},
  };
  NumPy np;
  std::vector<Literal> got;
  uint64_t seed = 300;
  for (const Pair& p : pairs) {
    Literal x = random_literal(Type(p.from, {2, 7}), seed++, p.domain);
    got.push_back(run1({x}, [&](const std::vector<Tensor>& t) { return ir::convert(t[0], p.to); }));
    np.add(p.expr, {x});
  }
  std::vector<Literal> want = np.run();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(same(got[i], want[i])) << ir::spelling(pairs[i].from) << " -> " << ir::spelling(pairs[i].to);
}

TEST(ElementwiseNumpy, BitcastConvertMatchesNumpyView) {
  struct Pair {
    Type from, to;
    std::string expr;
  };
  const Pair pairs[] = {
      {Type(E::f32, {3, 5}), Type(E::i32, {3, 5}), "a0.view(np.int32)"},
      {Type(E::f64, {3, 5}), Type(E::ui64, {3, 5}), "a0.view(np.uint64)"},
      {Type(E::f16, {3, 5}), Type(E::ui16, {3, 5}), "a0.view(np.uint16)"},
      {Type(E::i64, {3, 5}), Type(E::i32, {3, 5, 2}), "a0.view(np.int32).reshape(3, 5, 2)"},
      {Type(E::f32, {3, 2}), Type(E::f64, {3}), "a0.view(np.float64).reshape(3)"},
      {Type(E::c64, {4}), Type(E::f32, {4, 2}), "a0.view(np.float32).reshape(4, 2)"},
  };
  NumPy np;
  std::vector<Literal> got;
  uint64_t seed = 400;
  for (const Pair& p : pairs) {
    Literal x = random_literal(p.from, seed++);
    got.push_back(run1({x}, [&](const std::vector<Tensor>& t) { return ir::bitcast_convert(t[0], p.to); }));
    np.add(p.expr, {x});
  }
  std::vector<Literal> want = np.run();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same(got[i], want[i])) << pairs[i].expr;
}

TEST(ElementwiseNumpy, IotaMatchesNumpyArange) {
  NumPy np;
  std::vector<Literal> got;
  for (E e : types_of(kReal)) {
    for (int64_t dim : {0, 1}) {
      Type t(e, {3, 4});
      got.push_back(run({}, [&](ir::FunctionBuilder& b, const std::vector<Tensor>&) {
        return std::vector<Tensor>{b.iota(t, dim)};
      })[0]);
      np.add(fmt::format("np.indices((3, 4))[{}].astype({})", dim, numpy_dtype(e)), {});
    }
  }
  std::vector<Literal> want = np.run();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same(got[i], want[i])) << "case " << i;
}

}  // namespace
}  // namespace tessera::interp::testing
