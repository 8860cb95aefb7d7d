// Elementwise kernels against NumPy, for every element type where NumPy defines the same meaning:
// f32, f64, f16, i32, i64, ui32, ui64, i1 (and complex where NumPy has the op). Each row of a table
// is one op with its NumPy expression, the types it applies to and the value ranges of its inputs;
// all rows run in one NumPy process.
#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>

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
      {OpKind::Abs, "np.abs(a0)", kF | kS},  // not unsigned: the spec takes signed integers
      {OpKind::Abs, "np.abs(a0.astype(np.complex128)).astype(a0.real.dtype)", kC},
      {OpKind::Sign, "np.sign(a0)", kF | kS},
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
      // More elementwise ops (#17).
      {OpKind::Tan, wide("np.tan(@)"), kF, Domain::Small},
      {OpKind::Tan, wide("np.tan(@)"), kC},
      {OpKind::Cbrt, wide("np.cbrt(@)"), kF},
      {OpKind::Popcnt,
       "np.vectorize(lambda v: bin(int(v) & ((1 << (8 * a0.dtype.itemsize)) - 1)).count('1'), otypes=[a0.dtype])(a0)",
       kInts},
      {OpKind::CountLeadingZeros,
       "np.vectorize(lambda v: 8 * a0.dtype.itemsize - (int(v) & ((1 << (8 * a0.dtype.itemsize)) - 1)).bit_length(), "
       "otypes=[a0.dtype])(a0)",
       kInts},
      {OpKind::Real, "np.real(a0)", kF | kC},
      {OpKind::Imag, "np.imag(a0)", kF | kC},
      {OpKind::Sinh, wide("np.sinh(@)"), kF | kC},
      {OpKind::Cosh, wide("np.cosh(@)"), kF | kC},
      {OpKind::Asin, wide("np.arcsin(@)"), kF, Domain::Small},
      {OpKind::Asin, wide("np.arcsin(@)"), kC},
      {OpKind::Acos, wide("np.arccos(@)"), kF, Domain::Small},
      {OpKind::Acos, wide("np.arccos(@)"), kC},
      {OpKind::Atan, wide("np.arctan(@)"), kF | kC},
      {OpKind::Asinh, wide("np.arcsinh(@)"), kF | kC},
      {OpKind::Acosh, wide("np.arccosh(@)"), kC},
      {OpKind::Atanh, wide("np.arctanh(@)"), kF, Domain::Small},
      {OpKind::Atanh, wide("np.arctanh(@)"), kC},
      {OpKind::Square, wide("@ * @"), kF | kC},
      {OpKind::Conj, "np.conj(a0)", kF | kC},
      {OpKind::IsInf, "np.isinf(a0)", kF, Domain::Special},
      {OpKind::IsPosInf, "np.isposinf(a0)", kF, Domain::Special},
      {OpKind::IsNegInf, "np.isneginf(a0)", kF, Domain::Special},
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

// More elementwise ops (#17) that need their own inputs or attributes: next_after bit for bit (one
// ulp is below any tolerance), acosh from 1 up, reduce_precision against NumPy's casts to the
// narrower type (e5m10 is f16, e8m23 is f32: one rounding to nearest even, overflow to inf),
// complex from two parts.
TEST(ElementwiseNumpy, MoreOpsWithTheirOwnInputs) {
  NumPy np;
  std::vector<Literal> got, bitwise;
  std::vector<std::string> what;
  uint64_t seed = 500;
  for (E e : types_of(kF)) {
    for (Domain d : {Domain::Any, Domain::Special}) {
      std::vector<Literal> args = {random_literal(Type(e, {4, 6}), seed++, d),
                                   random_literal(Type(e, {4, 6}), seed++, d)};
      bitwise.push_back(run1(args, [](const std::vector<Tensor>& p) { return ir::next_after(p[0], p[1]); }));
      np.add("np.nextafter(a0, a1)", args);
    }
    // From ±0 to the smallest subnormal of either sign, and from the largest finite to inf.
    Literal zeros = lit(Type(e, {4}), {0.0, -0.0, 0.0, 1.0});
    Literal toward = lit(Type(e, {4}), {1.0, -1.0, -1.0, 1.0});
    bitwise.push_back(run1({zeros, toward}, [](const std::vector<Tensor>& p) { return ir::next_after(p[0], p[1]); }));
    np.add("np.nextafter(a0, a1)", {zeros, toward});
  }
  size_t n_bitwise = bitwise.size();
  for (E e : types_of(kF)) {
    Literal x = random_literal(Type(e, {3, 5}), seed++, Domain::Positive);
    got.push_back(run1({x}, [](const std::vector<Tensor>& p) { return ir::acosh(p[0] + 1.0); }));
    np.add(wide("np.arccosh(@ + 1)"), {x});
    what.push_back(fmt::format("acosh on {}", ir::spelling(e)));
  }
  for (Domain d : {Domain::Any, Domain::Special}) {
    Literal x = random_literal(Type(E::f32, {4, 6}), seed++, d);
    got.push_back(run1({x}, [](const std::vector<Tensor>& p) { return ir::reduce_precision(p[0], 5, 10); }));
    np.add("a0.astype(np.float16).astype(np.float32)", {x});
    what.push_back("reduce_precision e5m10 on f32");
    Literal y = random_literal(Type(E::f64, {4, 6}), seed++, d);
    got.push_back(run1({y}, [](const std::vector<Tensor>& p) { return ir::reduce_precision(p[0], 8, 23); }));
    np.add("a0.astype(np.float32).astype(np.float64)", {y});
    what.push_back("reduce_precision e8m23 on f64");
  }
  // Rounding up past the largest f16 (65504) overflows; ties round to even.
  Literal edges = lit(Type(E::f32, {7}), {1e5, -1e5, 65504, 65519, 65520, 1.0009765625 + 0.00048828125, 1e-3});
  got.push_back(run1({edges}, [](const std::vector<Tensor>& p) { return ir::reduce_precision(p[0], 5, 10); }));
  np.add("a0.astype(np.float16).astype(np.float32)", {edges});
  what.push_back("reduce_precision e5m10 at f16's edges");
  for (E e : {E::f32, E::f64}) {
    std::vector<Literal> args = {random_literal(Type(e, {3, 4}), seed++), random_literal(Type(e, {3, 4}), seed++)};
    got.push_back(run1(args, [](const std::vector<Tensor>& p) { return ir::complex(p[0], p[1]); }));
    np.add(fmt::format("(a0 + 1j * a1.astype(np.complex128)).astype({})", e == E::f32 ? "np.complex64" : "np.complex128"),
           args);
    what.push_back(fmt::format("complex of {}", ir::spelling(e)));
  }
  std::vector<Literal> want = np.run();
  ASSERT_EQ(want.size(), n_bitwise + got.size());
  for (size_t i = 0; i < n_bitwise; ++i) EXPECT_TRUE(same(bitwise[i], want[i])) << "next_after case " << i;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(close(got[i], want[n_bitwise + i])) << what[i];
}

// CHLO's special functions against PyTorch (torch.special) and mpmath, which this Python has or
// not: skipped without them. Random operands of every float type, and values at the edges of each function's
// domain (erf_inv near ±1, bessel_i1e far out where its asymptotic series takes over, digamma and
// lgamma left of 0).
TEST(ElementwiseTorch, SpecialFunctionsMatchTorch) {
  const char* python = std::getenv("PYTHON");
  std::string probe = fmt::format("'{}' -c 'import torch, mpmath' > /dev/null 2>&1", python && *python ? python : "/usr/bin/python3");
  if (std::system(probe.c_str()) != 0) GTEST_SKIP() << "PyTorch or mpmath is not installed for " << probe;
  struct Special {
    OpKind kind;
    std::string torch;  // a function of torch.special
    Domain domain;
    std::vector<double> edges;
  };
  const Special specials[] = {
      {OpKind::Erf, "erf", Domain::Any, {-6, -0.5, 1e-8, 3.5, 6}},
      {OpKind::Erfc, "erfc", Domain::Any, {-6, -0.5, 1e-8, 3.5, 9}},
      // (the last three: 1 - 2^-52, 1 - 2^-53 and -(1 - 2^-52), where Newton on erfc from the
      // single-precision start had stopped at 5.456 for 5.864)
      {OpKind::ErfInv, "erfinv", Domain::Small,
       {-0.9999999, -0.999, 1e-9, 0.5, 0.999999, 0.9999999999, 0.9999999999999998, 0.99999999999999989,
        -0.9999999999999998}},
      {OpKind::Lgamma, "gammaln", Domain::Any, {-3.5, -0.25, 1e-5, 1, 2, 30, 1000}},
      {OpKind::Digamma, "digamma", Domain::Any, {-3.5, -0.25, 1e-5, 1, 9.5, 30, 1000}},
      {OpKind::BesselI1e, "i1e", Domain::Any, {-1000, -60, -50.5, -1e-6, 0, 12, 49.9, 75, 700, 1e6}},
  };
  NumPy np;
  std::vector<Literal> got;
  std::vector<std::string> what;
  uint64_t seed = 600;
  auto add = [&](const Special& s, const Literal& x) {
    got.push_back(run1({x}, [&](const std::vector<Tensor>& p) { return p[0].builder().emit1(s.kind, p); }));
    np.add(wide("__import__('torch').special." + s.torch + "(__import__('torch').from_numpy(@)).numpy()"), {x});
    what.push_back(fmt::format("{} on {}", ir::spelling(s.kind), describe(x)));
  };
  for (const Special& s : specials) {
    for (E e : types_of(kF)) add(s, random_literal(Type(e, {3, 5}), seed++, s.domain));
    if (s.kind != OpKind::ErfInv) add(s, lit(Type(E::f64, {static_cast<int64_t>(s.edges.size())}), s.edges));
  }
  // torch's double erfinv is off by 1e-8 near ±1 (4.572825001 for erfinv(1 - 1e-10), where mpmath
  // at 30 digits gives 4.5728249585449249); erf_inv's edges are checked against mpmath instead.
  Literal edges = lit(Type(E::f64, {static_cast<int64_t>(specials[2].edges.size())}), specials[2].edges);
  got.push_back(run1({edges}, [](const std::vector<Tensor>& p) { return ir::erf_inv(p[0]); }));
  np.add("np.array([float(__import__('mpmath').erfinv(v)) for v in a0.tolist()])", {edges});
  what.push_back("chlo.erf_inv at its edges against mpmath");
  std::vector<Literal> want = np.run();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(close(got[i], want[i])) << what[i];
}

// Where the functions are not finite: erf_inv(±1) = ±inf and NaN beyond; digamma is NaN at its
// poles (XLA's choice; torch gives -inf at 0); lgamma is +inf there; bessel_i1e is ±0 at ±inf.
TEST(ElementwiseTorch, SpecialFunctionsAtTheirPoles) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  Type t(E::f64, {4});
  auto apply1 = [&](Tensor (*f)(const Tensor&), std::vector<double> x) {
    return run1({lit(t, x)}, [&](const std::vector<Tensor>& p) { return f(p[0]); });
  };
  EXPECT_TRUE(same(apply1(ir::erf_inv, {1, -1, 1.5, nan}), lit(t, {inf, -inf, nan, nan})));
  // e^-|x| I1(x) falls to 0 with the sign of x (it was NaN at ±inf: 0 * inf).
  EXPECT_TRUE(same(apply1(ir::bessel_i1e, {inf, -inf, 0, nan}), lit(t, {0.0, -0.0, 0.0, nan})));
  EXPECT_TRUE(close(apply1(ir::digamma, {0, -1, -2, inf}), lit(t, {nan, nan, nan, inf})));
  EXPECT_TRUE(close(apply1(ir::lgamma, {0, -1, -2, 1}), lit(t, {inf, inf, inf, 0})));
}

}  // namespace
}  // namespace tessera::interp::testing
