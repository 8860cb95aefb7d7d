// Partial-sum (unreduced) layouts end to end, and the wrong results of issue #18 item 1, each a
// program whose sharded run on host devices must equal the single-device interpreter (and, where
// it is short to write, the values NumPy gives):
//   - scatter-add whose operand becomes partial (the operand split on its columns, on its scattered
//     rows, a 2x2 mesh, sub-axes, uneven index counts); scatter-replace alike;
//   - a result declared unreduced (assembled as the sum of its pieces), also of a value split by
//     the unreduced axis, and of an undeclared argument that a sub-axis of the unreduced axis splits;
//   - a sharding constraint to an unreduced layout;
//   - an argument declared unreduced (a whole array given for it is the sum of its pieces);
//   - reduce with an init that is not the reducer's identity, over a split (and uneven) dimension.
#include <gtest/gtest.h>

#include <iostream>

#include <cmath>
#include <functional>

#include "common/error_of.h"
#include "common/random_literal.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "runtime/session.h"
#include "stablehlo/printer.h"

namespace tessera::runtime {
namespace {

using namespace tessera::ir;

constexpr double kTolerance = 1e-5;  // relative, sharded vs unsharded (DESIGN.md §2)

// Fails on NaN too: a NaN on either side is never within the tolerance.
bool close(double a, double b) { return std::abs(a - b) <= kTolerance * (1 + std::abs(b)); }

void expect_equal(const Literal& got, const Literal& want, const std::string& what) {
  ASSERT_EQ(got.type(), want.type()) << what;
  for (int64_t i = 0; i < want.num_elements(); ++i)
    ASSERT_TRUE(close(got.get_double(i), want.get_double(i)))
        << what << ": element " << i << ": got " << got.get_double(i) << ", want " << want.get_double(i);
}

// Runs @f of m sharded on the mesh's devices and unsharded; both must agree (and with `numpy`, the
// values written out by hand, when given).
std::vector<Literal> expect_sharded_equals_unsharded(const Module& m, const std::vector<Literal>& in,
                                                     const std::vector<Literal>& numpy = {}) {
  std::vector<Literal> want = interp::evaluate(m, "f", in);
  Session s = Session::host(m.meshes.at(0).num_devices());
  CompiledProgram p = s.compile(m, "f");
  std::vector<Literal> got = s.run_sharded(p, in);
  EXPECT_EQ(got.size(), want.size());
  std::string text = stablehlo::print(m);
  for (size_t r = 0; r < got.size() && r < want.size(); ++r) expect_equal(got[r], want[r], "result " + std::to_string(r) + " of\n" + text);
  for (size_t r = 0; r < numpy.size() && r < got.size(); ++r) expect_equal(got[r], numpy[r], "NumPy's result " + std::to_string(r));
  return got;
}

Literal arange(Type t, double scale = 1) {
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) * scale;
  return Literal::from_doubles(std::move(t), v);
}

Sharding on(const std::string& mesh, std::vector<DimSharding> dims, std::vector<AxisRef> unreduced = {}) {
  return Sharding{mesh, std::move(dims), {}, std::move(unreduced)};
}

// ---- scatter ----

struct ScatterCase {
  std::vector<MeshAxis> mesh;
  Sharding operand, updates;
  std::vector<int64_t> rows;  // the scattered rows of the 8x4 operand
  OpKind combiner = OpKind::Add;
};

// operand f32[8,4] = arange(32); updates f32[n,4] = 100 + arange; indices [[rows...]] whole;
// update_window_dims=[1], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0],
// index_vector_dim=1 (the issue's program).
void run_scatter(const ScatterCase& c) {
  Module m;
  m.add_mesh(Mesh{"m", c.mesh, {}});
  int64_t n = static_cast<int64_t>(c.rows.size());
  build_function(m, "f", [&](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 4}), c.operand);
    Tensor idx = f.param(i32({n, 1}), on("m", {{}, {}}));
    Tensor upd = f.param(f32({n, 4}), c.updates);
    ScatterDims dims;
    dims.update_window_dims = {1};
    dims.inserted_window_dims = {0};
    dims.scatter_dims_to_operand_dims = {0};
    dims.index_vector_dim = 1;
    return scatter(x, idx, upd, dims, c.combiner);
  });
  Literal x = arange(f32({8, 4}));
  Literal idx = Literal::from_ints(i32({n, 1}), c.rows);
  Literal upd = arange(f32({n, 4}));
  for (int64_t i = 0; i < upd.num_elements(); ++i) upd.set_double(i, 100 + upd.get_double(i));
  // NumPy: np.add.at(x, rows, upd) (or x[rows] = upd).
  Literal numpy = x;
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < 4; ++j) {
      int64_t at = c.rows[static_cast<size_t>(k)] * 4 + j;
      double u = upd.get_double(k * 4 + j);
      numpy.set_double(at, c.combiner == OpKind::Add ? numpy.get_double(at) + u : u);
    }
  expect_sharded_equals_unsharded(m, {x, idx, upd}, {numpy});
}

// The issue's reproduction: column 0 came back counted 4 times and columns 1-3 were lost.
TEST(Unreduced, ScatterAddOperandSplitOnColumns) {
  run_scatter({{{"x", 4}}, on("m", {{}, {"x"}}), on("m", {{"x"}, {}}), {1, 3, 5, 7}});
}

TEST(Unreduced, ScatterAddOperandSplitOnScatteredRows) {
  run_scatter({{{"x", 4}}, on("m", {{"x"}, {}}), on("m", {{"x"}, {}}), {1, 3, 5, 7}});
}

TEST(Unreduced, ScatterAddOnTwoByTwoMesh) {
  run_scatter({{{"x", 2}, {"y", 2}}, on("m", {{}, {"y"}}), on("m", {{"x"}, {}}), {1, 3, 5, 7}});
  run_scatter({{{"x", 2}, {"y", 2}}, on("m", {{"y"}, {"x"}}), on("m", {{"x", "y"}, {}}), {0, 3, 3, 6}});
  run_scatter({{{"x", 2}, {"y", 2}}, on("m", {{}, {"x", "y"}}), on("m", {{"y"}, {"x"}}), {2, 2, 7, 1}});
}

TEST(Unreduced, ScatterAddOnSubAxes) {
  AxisRef hi("x", SubAxis{1, 2}), lo("x", SubAxis{2, 2});
  run_scatter({{{"x", 4}}, on("m", {{}, {hi}}), on("m", {{lo}, {}}), {1, 3, 5, 7}});
  run_scatter({{{"x", 4}}, on("m", {{lo}, {}}), on("m", {{hi}, {}}), {1, 3, 5, 7}});
}

TEST(Unreduced, ScatterAddUnevenIndexCounts) {
  run_scatter({{{"x", 4}}, on("m", {{}, {"x"}}), on("m", {{"x"}, {}}), {1, 3, 5}});
  run_scatter({{{"x", 4}}, on("m", {{"x"}, {}}), on("m", {{"x"}, {}}), {1, 3, 5, 7, 0}});
  run_scatter({{{"x", 4}}, on("m", {{}, {"x"}}), on("m", {{"x"}, {}}), {6, 6, 6, 6, 6, 6}});
}

TEST(Unreduced, ScatterReplaceAndMaxAgree) {
  for (OpKind k : {OpKind::Return, OpKind::Maximum}) {
    run_scatter({{{"x", 4}}, on("m", {{}, {"x"}}), on("m", {{"x"}, {}}), {1, 3, 5, 7}, k});
    run_scatter({{{"x", 4}}, on("m", {{"x"}, {}}), on("m", {{}, {"x"}}), {1, 3, 5, 7}, k});
  }
}

// ---- results, constraints and arguments ----

// The issue's: a dot_general contracting a dimension split by x, its result declared unreduced.
// Assembled whole, it is the sum of the partial products; a replicated read refuses it.
TEST(Unreduced, DeclaredUnreducedResultIsTheSumOfItsPieces) {
  Module m;
  m.add_mesh(Mesh{"m", {{"x", 4}}, {}});
  build_function(m, "f", [&](FunctionBuilder& f) {
    Tensor a = f.param(f32({8, 12}), on("m", {{}, {"x"}}));
    Tensor w = f.param(f32({12, 6}), on("m", {{"x"}, {}}));
    return dot_general(a, w, DotDims{{}, {}, {1}, {0}});
  });
  m.find_function("f")->set_result_sharding(0, on("m", {{}, {}}, {AxisRef("x")}));
  std::vector<Literal> in = {testing::random_literal(f32({8, 12}), 1), testing::random_literal(f32({12, 6}), 2)};
  expect_sharded_equals_unsharded(m, in);

  Session s = Session::host(4);
  CompiledProgram p = s.compile(m, "f");
  EXPECT_TRUE(p.report().collectives.empty()) << p.report().to_string();  // the sum is left to the reader
  ShardedProgram sp = s.sharded_program(p);
  std::vector<ShardedBuffer> bufs = {sp.stage(0, in[0]), sp.stage(1, in[1])};
  std::vector<ShardedBuffer> out = sp.execute(bufs);
  EXPECT_NE(testing::error_of([&] { sp.replicated(out[0]); }).find("unreduced"), std::string::npos);
}

// A max over a split dimension is partial too, but a declared unreduced layout means a sum: the
// maxima are combined first, then made partial.
TEST(Unreduced, DeclaredUnreducedResultOfAMax) {
  Module m;
  m.add_mesh(Mesh{"m", {{"x", 4}}, {}});
  build_function(m, "f", [&](FunctionBuilder& f) {
    Tensor a = f.param(f32({8, 6}), on("m", {{"x"}, {}}));
    return std::vector<Tensor>{reduce_max(a, {0}), reduce(a, f.scalar(ElementType::f32, 2), {0}, OpKind::Multiply)};
  });
  m.find_function("f")->set_result_sharding(0, on("m", {{}}, {AxisRef("x")}));
  m.find_function("f")->set_result_sharding(1, on("m", {{}}, {AxisRef("x")}));
  expect_sharded_equals_unsharded(m, {testing::random_literal(f32({8, 6}), 5, 0.5, 1.5)});
}

// Property seed 1173, reduced: a result declared [{"a"}, {}] unreduced={"b"} of a value split
// [{"a"}, {"b"}] (an argument times one so split). Propagation met both layouts on the value: its
// columns split by "b" and partial over "b" at once; the whole value, counted as partial, came back
// twice its size. The split wins (reshard's normalized), and the result is the value made partial.
TEST(Unreduced, DeclaredUnreducedResultOfAValueSplitByTheSameAxis) {
  Module m;
  m.add_mesh(Mesh{"m", {{"a", 2}, {"b", 2}}, {}});
  build_function(m, "f", [&](FunctionBuilder& f) {
    Tensor x = f.param(f32({4, 2}));
    Tensor y = f.param(f32({4, 2}), on("m", {{"a"}, {"b"}}));
    return x * y + 0.5;
  });
  m.find_function("f")->set_result_sharding(0, on("m", {{"a"}, {}}, {AxisRef("b")}));
  expect_sharded_equals_unsharded(m, {testing::random_literal(f32({4, 2}), 1), testing::random_literal(f32({4, 2}), 2)});
}

// The issue's: a constraint to [{}, {}] unreduced={x} of rows split by x, then c + c.
// One value returned twice, once as declared unreduced over the whole axis "a" and once with no
// declared layout, while a sub-axis of "a" splits it (property generator seeds 4288, 4447 and
// 4955, reduced). Propagation gives the value the declared unreduced axis; the partitioner drops
// it (the split wins), so the undeclared result must not be summed over "a" either: it came back
// twice the value.
TEST(Unreduced, OneValueReturnedUnreducedAndPlainUnderASubAxisSplit) {
  Module m;
  m.add_mesh(Mesh{"m", {{"a", 4}}, {}});
  build_function(m, "f", [&](FunctionBuilder& f) {
    Tensor y = f.param(f32({2}), on("m", {DimSharding{{AxisRef("a", SubAxis{1, 2})}}}));
    Tensor n = -y;
    return std::vector<Tensor>{n, n};
  });
  m.find_function("f")->set_result_sharding(1, on("m", {{}}, {AxisRef("a")}));
  Literal y = testing::random_literal(f32({2}), 7);
  Literal numpy(f32({2}));
  for (int64_t i = 0; i < 2; ++i) numpy.set_double(i, -y.get_double(i));
  expect_sharded_equals_unsharded(m, {y}, {numpy, numpy});
}

// An argument with no declared layout, returned as a result declared unreduced over "a" (and "b"),
// while a use constrains it to be split by the sub-axis "a":(1)2 (property seed 3767, reduced).
// Propagation gives the argument the unreduced axes too; the partitioner drops "a" (the split
// wins), but the runtime was handed the unnormalized layout and gave every device off a = 0
// zeros for its piece: columns 2-3 came back 0.
TEST(Unreduced, UndeclaredArgumentReturnedUnreducedUnderASubAxisSplit) {
  for (std::vector<AxisRef> unreduced : {std::vector<AxisRef>{AxisRef("a")}, {AxisRef("a"), AxisRef("b")}}) {
    Module m;
    m.add_mesh(Mesh{"m", {{"a", 4}, {"b", 2}}, {}});
    build_function(m, "f", [&](FunctionBuilder& f) {
      Tensor x = f.param(f32({8, 4}));
      Tensor wide = constrain(broadcast_in_dim(x, {3, 8, 4}, {1, 2}), on("m", {{}, {}, {AxisRef("a", SubAxis{1, 2})}}));
      return std::vector<Tensor>{x, wide};
    });
    m.find_function("f")->set_result_sharding(0, on("m", {{}, {}}, unreduced));
    Literal x = arange(f32({8, 4}), 0.5);
    expect_sharded_equals_unsharded(m, {x}, {x});
  }
}

TEST(Unreduced, ConstraintToUnreducedLayout) {
  for (Sharding in : {on("m", {{"x"}, {}}), on("m", {{}, {"x"}}), on("m", {{}, {}})}) {
    Module m;
    m.add_mesh(Mesh{"m", {{"x", 4}}, {}});
    build_function(m, "f", [&](FunctionBuilder& f) {
      Tensor a = f.param(f32({8, 6}), in);
      Tensor c = constrain(a, on("m", {{}, {}}, {AxisRef("x")}));
      return c + c;
    });
    Literal a = arange(f32({8, 6}));
    Literal numpy = arange(f32({8, 6}), 2);
    expect_sharded_equals_unsharded(m, {a}, {numpy});
  }
  // On a 2x2 mesh, partial along one axis and split along the other.
  Module m;
  m.add_mesh(Mesh{"m", {{"x", 2}, {"y", 2}}, {}});
  build_function(m, "f", [&](FunctionBuilder& f) {
    Tensor a = f.param(f32({8, 6}), on("m", {{"x"}, {"y"}}));
    Tensor c = constrain(a, on("m", {{"y"}, {}}, {AxisRef("x")}));
    return tanh(c * 0.25) + c;
  });
  expect_sharded_equals_unsharded(m, {arange(f32({8, 6}), 0.1)});
}

// Element-wise ops linear in a partial sum keep it partial (spmd/partition_linear.cpp): with P and
// Q partial over x (2x2 mesh, rows split by y) and R whole, add(P, R), subtract(R, P) (R kept on
// the first device along x, zeros on the other), add(P, Q) and negate(P) returned partial over x
// move nothing; tanh(P) + R, multiply(P, P) and multiply(P, R) must sum a partial operand first,
// and do (multiply(P, R) kept partial would be 0 · inf = NaN on P's zero piece where R is
// infinite: R holds inf and NaN here); every result is the unsharded one (an unreduced result is
// assembled as the sum of its pieces).
TEST(Unreduced, LinearOpsOfAPartialSumStayPartial) {
  const Sharding partial = on("m", {{"y"}, {}}, {AxisRef("x")}), whole = on("m", {{"y"}, {}});
  struct Case {
    const char* what;
    std::function<Tensor(Tensor, Tensor, Tensor)> body;
    int64_t bytes;  // per device; -1: some
  };
  const std::vector<Case> cases = {
      {"add(P, R)", [](Tensor p, Tensor, Tensor r) { return p + r; }, 0},
      {"subtract(R, P)", [](Tensor p, Tensor, Tensor r) { return r - p; }, 0},
      {"add(P, Q)", [](Tensor p, Tensor q, Tensor) { return p + q; }, 0},
      {"negate(P)", [](Tensor p, Tensor, Tensor) { return -p; }, 0},
      // (propagation leaves P - Q whole: it is summed once, after the subtract, 2 x 6 f32 over
      // 2 devices, not P and Q each before it)
      {"subtract(P, Q) + R", [](Tensor p, Tensor q, Tensor r) { return p - q + r; }, 48},
      {"multiply(P, R)", [](Tensor p, Tensor, Tensor r) { return p * r; }, -1},
      {"tanh(P) + R", [](Tensor p, Tensor, Tensor r) { return tanh(p) + r; }, -1},
      {"multiply(P, P)", [](Tensor p, Tensor, Tensor) { return p * p; }, -1}};
  Literal r = arange(f32({4, 6}), 0.25);
  r.set_double(3, INFINITY);
  r.set_double(8, NAN);
  std::vector<Literal> in = {arange(f32({4, 6}), -0.5), arange(f32({4, 6}), 0.125), r};
  for (const Case& c : cases) {
    Module m;
    m.add_mesh(Mesh{"m", {{"x", 2}, {"y", 2}}, {}});
    build_function(m, "f", [&](FunctionBuilder& f) {
      Tensor p = f.param(f32({4, 6}), partial), q = f.param(f32({4, 6}), partial), w = f.param(f32({4, 6}), whole);
      return c.body(p, q, w);
    });
    m.find_function("f")->set_result_sharding(0, partial);
    // (NaN on both sides agrees: the comparison above fails on NaN, so compare those apart)
    std::vector<Literal> want = interp::evaluate(m, "f", in);
    Session s = Session::host(4);
    CompiledProgram p = s.compile(m, "f");
    std::vector<Literal> got = s.run_sharded(p, in);
    ASSERT_EQ(got.size(), 1u);
    for (int64_t i = 0; i < want[0].num_elements(); ++i) {
      double a = got[0].get_double(i), b = want[0].get_double(i);
      EXPECT_TRUE(std::isnan(b) ? std::isnan(a) : a == b || close(a, b)) << c.what << " element " << i << ": " << a << " vs " << b;
    }
    if (c.bytes >= 0) {
      EXPECT_EQ(p.report().bytes_per_device(), c.bytes) << c.what << "\n" << p.report().explain();
    } else {
      EXPECT_GT(p.report().bytes_per_device(), 0) << c.what << "\n" << p.report().explain();
    }
  }
}

// A whole array given for an unreduced argument is the array the pieces sum to: it goes whole to
// the first device along the unreduced axes and as zeros to the others.
TEST(Unreduced, ArgumentDeclaredUnreducedCountsOnce) {
  Module m;
  m.add_mesh(Mesh{"m", {{"x", 2}, {"y", 2}}, {}});
  build_function(m, "f", [&](FunctionBuilder& f) {
    Tensor a = f.param(f32({4, 6}), on("m", {{"y"}, {}}, {AxisRef("x")}));
    Tensor b = f.param(f32({4, 6}), on("m", {{}, {}}, {AxisRef("x"), AxisRef("y")}));
    return std::vector<Tensor>{a * 3.0 + 1.0, reduce_sum(a + b, {1}), b};
  });
  Literal a = arange(f32({4, 6})), b = arange(f32({4, 6}), -0.5);
  Literal numpy_sum(f32({4}));
  for (int64_t r = 0; r < 4; ++r) {
    double t = 0;
    for (int64_t c = 0; c < 6; ++c) t += a.get_double(r * 6 + c) + b.get_double(r * 6 + c);
    numpy_sum.set_double(r, t);
  }
  Literal numpy_first = a;
  for (int64_t i = 0; i < a.num_elements(); ++i) numpy_first.set_double(i, a.get_double(i) * 3 + 1);
  expect_sharded_equals_unsharded(m, {a, b}, {numpy_first, numpy_sum, b});

  // The staged pieces: whole rows on the first device along x, zeros on the second.
  Session s = Session::host(4);
  CompiledProgram p = s.compile(m, "f");
  ShardedBuffer staged = s.sharded_program(p).stage(0, a);
  const Literal& first = (*staged.pieces)[0];
  const Literal& second = (*staged.pieces)[2];  // x=1, y=0: the same rows, partial
  ASSERT_EQ(first.shape(), (std::vector<int64_t>{2, 6}));
  for (int64_t i = 0; i < first.num_elements(); ++i) {
    EXPECT_EQ(first.get_double(i), a.get_double(i));
    EXPECT_EQ(second.get_double(i), 0.0);
  }
}

// ---- reduce with a non-identity init ----

// init 5 over a dimension split by x (8 rows on 4 devices, and 6: uneven, with padding rows):
// the init counts once, as unsharded.
TEST(Unreduced, ReduceInitAppliesOnce) {
  struct Case {
    OpKind kind;
    double init;
  };
  for (Case c : {Case{OpKind::Add, 5.0}, Case{OpKind::Multiply, 2.0}, Case{OpKind::Maximum, 5.0},
                 Case{OpKind::Minimum, -5.0}, Case{OpKind::Maximum, -0.25}})
    for (int64_t rows : {8, 6, 3})
      for (Sharding s : {on("m", {{"x"}, {}}), on("m", {{"x"}, {"y"}}), on("m", {{"x", "y"}, {}})}) {
        Module m;
        m.add_mesh(Mesh{"m", {{"x", 4}, {"y", 2}}, {}});
        build_function(m, "f", [&](FunctionBuilder& f) {
          Tensor x = f.param(f32({rows, 4}), s);
          return reduce(x, x.builder().scalar(ElementType::f32, c.init), {0}, c.kind);
        });
        Literal x = testing::random_literal(f32({rows, 4}), 3, 0.5, 1.5);
        Literal numpy(f32({4}));
        for (int64_t j = 0; j < 4; ++j) {
          double acc = c.init;
          for (int64_t i = 0; i < rows; ++i) {
            double v = x.get_double(i * 4 + j);
            acc = c.kind == OpKind::Add ? acc + v : c.kind == OpKind::Multiply ? acc * v
                : c.kind == OpKind::Maximum ? std::max(acc, v) : std::min(acc, v);
          }
          numpy.set_double(j, acc);
        }
        expect_sharded_equals_unsharded(m, {x}, {numpy});
      }
}

// The init a runtime value (a parameter), and a reduce whose result stays partial into a dot.
TEST(Unreduced, ReduceInitFromAParameterAppliesOnce) {
  Module m;
  m.add_mesh(Mesh{"m", {{"x", 4}}, {}});
  build_function(m, "f", [&](FunctionBuilder& f) {
    Tensor x = f.param(f32({6, 5}), on("m", {{"x"}, {}}));
    Tensor init = f.param(f32({}), on("m", {}));
    Tensor r = reduce(x, init, {0}, OpKind::Add);
    return std::vector<Tensor>{r, reduce(x * 0.5, init, {0, 1}, OpKind::Add)};
  });
  expect_sharded_equals_unsharded(m, {testing::random_literal(f32({6, 5}), 4), Literal::scalar(ElementType::f32, 5.0)});
}

// A partial value moved between layouts and kept partial (Shardy's out_unreduced_axes_preserved):
// the pieces differ along x, so the reshard must group devices only along the axes it moves. The
// search plans it without permutes (which would hand a device the piece of another x): 224 bytes
// per device, where gathering the rows whole and slicing moved 384 and Shardy's sequence 320.
TEST(Unreduced, PartialValueMovesBetweenLayoutsWithoutMixingItsPartialAxis) {
  // To the target, bytes per device: Shardy's case (224), and y and z swapped within the rows,
  // which a whole value reaches by one permute (128 B), a partial one by collectives that keep x
  // (two all_gathers and an all_to_all, 352 B, as the search finds without permutes).
  const std::vector<std::pair<Sharding, int64_t>> targets = {{on("m", {{}, {"y"}}, {AxisRef("x")}), 224},
                                                             {on("m", {{"z", "y"}, {}}, {AxisRef("x")}), 352}};
  for (const auto& [target, bytes] : targets) {
    Module m;
    m.add_mesh(Mesh{"m", {{"x", 2}, {"y", 2}, {"z", 2}}, {}});
    build_function(m, "f", [&](FunctionBuilder& f) {
      Tensor a = f.param(f32({16, 8}), on("m", {{"y", "z"}, {}}, {AxisRef("x")}));
      return constrain(a, target);
    });
    m.find_function("f")->set_result_sharding(0, target);
    std::vector<Literal> in = {testing::random_literal(f32({16, 8}), 1)};
    expect_sharded_equals_unsharded(m, in);
    Session s = Session::host(8);
    CompiledProgram p = s.compile(m, "f");
    EXPECT_EQ(p.report().bytes_per_device(), bytes) << p.report().to_string();
    for (const auto& c : p.report().collectives) {
      EXPECT_NE(c.kind, "collective_permute") << p.report().to_string();
      EXPECT_NE(c.kind, "all_reduce") << p.report().to_string();
    }
  }
}

}  // namespace
}  // namespace tessera::runtime
