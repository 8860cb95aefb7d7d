// Data-movement kernels: against NumPy indexing where it has the same operation, and hand-checked
// for what is StableHLO's own (size-1 broadcasting by broadcast_in_dim, clamped dynamic slices,
// negative and interior padding, the spec's gather and scatter examples, empty dimensions).
#include <gtest/gtest.h>

#include "numpy_oracle.h"
#include "test_util.h"

namespace tessera::interp::testing {
namespace {

using E = ElementType;

Literal iota_f32(std::vector<int64_t> shape) {
  Literal x(Type(E::f32, std::move(shape)));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.set_double(i, static_cast<double>(i));
  return x;
}

TEST(Movement, MatchesNumpyIndexing) {
  NumPy np;
  std::vector<Literal> got;
  auto add = [&](std::vector<Literal> args, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                 std::string expr) {
    got.push_back(run1(args, f));
    np.add(std::move(expr), std::move(args));
  };
  Literal x = random_literal(Type(E::f32, {3, 2}), 1);
  add({x}, [](auto& p) { return ir::broadcast_in_dim(p[0], {2, 4, 3}, {2, 0}); },
      "np.broadcast_to(a0.T[:, None, :], (2, 4, 3))");
  add({x}, [](auto& p) { return ir::reshape(p[0], {2, 3}); }, "a0.reshape(2, 3)");
  Literal y = random_literal(Type(E::i64, {2, 3, 4}), 2);
  add({y}, [](auto& p) { return ir::transpose(p[0], {2, 0, 1}); }, "np.transpose(a0, (2, 0, 1))");
  add({y}, [](auto& p) { return ir::slice(p[0], {0, 1, 0}, {2, 3, 4}, {1, 1, 3}); }, "a0[0:2, 1:3, 0:4:3]");
  add({y}, [](auto& p) { return ir::reverse(p[0], {0, 2}); }, "a0[::-1, :, ::-1]");
  Literal z = random_literal(Type(E::i64, {2, 1, 4}), 3);
  add({y, z}, [](auto& p) { return ir::concatenate({p[0], p[1], p[0]}, 1); },
      "np.concatenate([a0, a1, a0], axis=1)");
  Literal v = random_literal(Type(E::f64, {2, 3}), 4);
  Literal pad_value = scalar_of(E::f64, -7);
  add({v, pad_value}, [](auto& p) { return ir::pad(p[0], p[1], {1, 0}, {2, 1}); },
      "np.pad(a0, ((1, 2), (0, 1)), constant_values=a1)");
  // Gather rows (an embedding lookup) and scatter-add rows, NumPy's a[idx] and np.add.at.
  Literal table = random_literal(Type(E::f32, {5, 3}), 5);
  Literal idx = ints(Type(E::i32, {4}), {4, 0, 2, 4});
  ir::GatherDims g;
  g.offset_dims = {1};
  g.collapsed_slice_dims = {0};
  g.start_index_map = {0};
  g.index_vector_dim = 1;
  add({table, idx}, [&](auto& p) { return ir::gather(p[0], p[1], g, {1, 3}); }, "a0[a1]");
  Literal updates = random_literal(Type(E::f32, {4, 3}), 6);
  ir::ScatterDims s;
  s.update_window_dims = {1};
  s.inserted_window_dims = {0};
  s.scatter_dims_to_operand_dims = {0};
  s.index_vector_dim = 1;
  add({table, idx, updates}, [&](auto& p) { return ir::scatter(p[0], p[1], p[2], s, ir::OpKind::Add); },
      "(lambda t: (np.add.at(t, a1, a2), t)[1])(a0.copy())");
  std::vector<Literal> want = np.run();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(close(got[i], want[i])) << "case " << i;
}

TEST(Movement, BroadcastInDimRepeatsSizeOneDimensions) {
  auto bcast = [](Literal x, std::vector<int64_t> shape, std::vector<int64_t> dims) {
    return run1({std::move(x)}, [&](auto& p) { return ir::broadcast_in_dim(p[0], shape, dims); });
  };
  EXPECT_TRUE(same(bcast(lit(Type(E::f32, {1, 3}), {1, 2, 3}), {2, 3}, {0, 1}),
                   lit(Type(E::f32, {2, 3}), {1, 2, 3, 1, 2, 3})));
  EXPECT_TRUE(same(bcast(lit(Type(E::f32, {2, 1}), {1, 2}), {2, 3}, {0, 1}),
                   lit(Type(E::f32, {2, 3}), {1, 1, 1, 2, 2, 2})));
  EXPECT_TRUE(same(bcast(lit(Type(E::f32, {3}), {1, 2, 3}), {2, 3}, {1}), lit(Type(E::f32, {2, 3}), {1, 2, 3, 1, 2, 3})));
  EXPECT_TRUE(same(bcast(lit(Type(E::f32, {}), {5}), {2, 2}, {}), lit(Type(E::f32, {2, 2}), {5, 5, 5, 5})));
  EXPECT_TRUE(same(bcast(ints(Type(E::i1, {1}), {1}), {3}, {0}), ints(Type(E::i1, {3}), {1, 1, 1})));
  // A size-1 dimension may also broadcast into a size-1 or size-0 one.
  EXPECT_TRUE(same(bcast(lit(Type(E::f32, {1}), {4}), {0, 1}, {1}), Literal(Type(E::f32, {0, 1}))));
}

TEST(Movement, DynamicSlicesClampTheirStarts) {
  Literal x = ints(Type(E::i32, {5}), {10, 11, 12, 13, 14});
  auto slice_at = [&](Literal start) {
    return run1({x, std::move(start)}, [](auto& p) { return ir::dynamic_slice(p[0], {p[1]}, {2}); });
  };
  EXPECT_TRUE(same(slice_at(ints(Type(E::i32, {}), {1})), ints(Type(E::i32, {2}), {11, 12})));
  EXPECT_TRUE(same(slice_at(ints(Type(E::i32, {}), {4})), ints(Type(E::i32, {2}), {13, 14})));
  EXPECT_TRUE(same(slice_at(ints(Type(E::i64, {}), {-3})), ints(Type(E::i32, {2}), {10, 11})));
  EXPECT_TRUE(same(slice_at(ints(Type(E::ui64, {}), {-1})), ints(Type(E::i32, {2}), {13, 14})));
  Literal m = iota_f32({3, 4});
  Literal got = run1({m, ints(Type(E::i32, {}), {2}), ints(Type(E::i32, {}), {-1}), lit(Type(E::f32, {2, 2}), {-1, -2, -3, -4})},
                     [](auto& p) { return ir::dynamic_update_slice(p[0], p[3], {p[1], p[2]}); });
  EXPECT_TRUE(same(got, lit(Type(E::f32, {3, 4}), {0, 1, 2, 3, -1, -2, 6, 7, -3, -4, 10, 11})));
}

TEST(Movement, PadWithNegativeEdgesAndInterior) {
  Literal x = ints(Type(E::i32, {3}), {1, 2, 3});
  auto padded = [&](std::vector<int64_t> lo, std::vector<int64_t> hi, std::vector<int64_t> interior) {
    return run1({x, ints(Type(E::i32, {}), {0})}, [&](auto& p) { return ir::pad(p[0], p[1], lo, hi, interior); });
  };
  // Interior first: [1 0 2 0 3]; low -1 drops the 1; high 2 appends two zeros.
  EXPECT_TRUE(same(padded({-1}, {2}, {1}), ints(Type(E::i32, {6}), {0, 2, 0, 3, 0, 0})));
  EXPECT_TRUE(same(padded({2}, {-2}, {0}), ints(Type(E::i32, {3}), {0, 0, 1})));
  EXPECT_TRUE(same(padded({-3}, {-2}, {2}), ints(Type(E::i32, {2}), {2, 0})));
  EXPECT_TRUE(same(padded({0}, {0}, {0}), x));
}

TEST(Movement, GatherAndScatterFollowTheSpecExamples) {
  // The spec's examples: batching dimensions, a start index map that reorders, clamped starts.
  Type operand_type(E::i64, {2, 3, 4, 2});
  Literal operand(operand_type);
  for (int64_t i = 0; i < operand.num_elements(); ++i) operand.set_int(i, i + 1);
  Literal indices = ints(Type(E::i64, {2, 2, 3, 2}),
                         {0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 0, 9, 0, 0, 2, 1, 2, 2, 1, 2, 0, 1, 1, 0});
  ir::GatherDims g;
  g.offset_dims = {3, 4};
  g.collapsed_slice_dims = {1};
  g.operand_batching_dims = {0};
  g.start_indices_batching_dims = {1};
  g.start_index_map = {2, 1};
  g.index_vector_dim = 3;
  Literal gathered = run1({operand, indices}, [&](auto& p) { return ir::gather(p[0], p[1], g, {1, 1, 2, 2}); });
  EXPECT_TRUE(same(gathered, ints(Type(E::i64, {2, 2, 3, 2, 2}),
                                  {1,  2,  3,  4,  3,  4,  5,  6,  13, 14, 15, 16, 33, 34, 35, 36, 35, 36, 37, 38,
                                   41, 42, 43, 44, 1,  2,  3,  4,  13, 14, 15, 16, 21, 22, 23, 24, 43, 44, 45, 46,
                                   33, 34, 35, 36, 27, 28, 29, 30})));
  ir::ScatterDims s;
  s.update_window_dims = {3, 4};
  s.inserted_window_dims = {1};
  s.input_batching_dims = {0};
  s.scatter_indices_batching_dims = {1};
  s.scatter_dims_to_operand_dims = {2, 1};
  s.index_vector_dim = 3;
  Literal ones(Type(E::i64, {2, 2, 3, 2, 2}));
  for (int64_t i = 0; i < ones.num_elements(); ++i) ones.set_int(i, 1);
  Literal scattered = run1({operand, indices, ones},
                           [&](auto& p) { return ir::scatter(p[0], p[1], p[2], s, ir::OpKind::Add); });
  // Window elements that land out of bounds (the start [0, 9]) are skipped, not clamped.
  EXPECT_TRUE(same(scattered, ints(operand_type, {3,  4,  6,  7,  6,  7,  7,  8,  9,  10, 11, 12, 15, 16, 17, 18,
                                                  17, 18, 19, 20, 22, 23, 24, 25, 25, 26, 28, 29, 30, 31, 31, 32,
                                                  35, 36, 38, 39, 38, 39, 39, 40, 41, 42, 44, 45, 46, 47, 47, 48})));
}

TEST(Movement, ScatterWithReplaceAndOutOfBoundsUpdates) {
  Literal x = ints(Type(E::i32, {4}), {0, 0, 0, 0});
  Literal idx = ints(Type(E::i32, {3, 1}), {3, -1, 1});
  Literal up = ints(Type(E::i32, {3}), {7, 8, 9});
  ir::ScatterDims s;
  s.inserted_window_dims = {0};
  s.scatter_dims_to_operand_dims = {0};
  s.index_vector_dim = 1;
  Literal got = run1({x, idx, up}, [&](auto& p) { return ir::scatter(p[0], p[1], p[2], s, ir::OpKind::Return); });
  EXPECT_TRUE(same(got, ints(Type(E::i32, {4}), {0, 9, 0, 7})));
}

TEST(Movement, EmptyDimensions) {
  Literal empty = Literal(Type(E::f32, {0, 3}));
  EXPECT_TRUE(same(apply(ir::OpKind::Add, {empty, empty}), empty));
  EXPECT_TRUE(same(run1({empty}, [](auto& p) { return ir::reduce_sum(p[0], {0}); }), lit(Type(E::f32, {3}), {0, 0, 0})));
  EXPECT_TRUE(same(run1({empty}, [](auto& p) { return ir::reduce_max(p[0], {0}); }),
                   lit(Type(E::f32, {3}), {-INFINITY, -INFINITY, -INFINITY})));
  EXPECT_TRUE(same(run1({empty}, [](auto& p) { return ir::transpose(p[0], {1, 0}); }), Literal(Type(E::f32, {3, 0}))));
  EXPECT_TRUE(same(run1({lit(Type(E::f32, {3}), {1, 2, 3})}, [](auto& p) { return ir::broadcast_in_dim(p[0], {0, 3}, {1}); }),
                   empty));
  // Contracting over a dimension of size 0 gives zeros.
  Literal a = Literal(Type(E::f32, {2, 0}));
  EXPECT_TRUE(same(run1({a, empty}, [](auto& p) { return ir::matmul(p[0], p[1]); }), Literal(Type(E::f32, {2, 3}))));
  Literal full = iota_f32({2, 3});
  EXPECT_TRUE(same(run1({Literal(Type(E::f32, {2, 0})), full}, [](auto& p) { return ir::concatenate({p[0], p[1]}, 1); }),
                   full));
  EXPECT_TRUE(same(run1({full}, [](auto& p) { return ir::slice(p[0], {1, 1}, {1, 3}); }), Literal(Type(E::f32, {0, 2}))));
  EXPECT_TRUE(same(run1({Literal(Type(E::f32, {0})), scalar_of(E::f32, 4)}, [](auto& p) { return ir::pad(p[0], p[1], {1}, {1}); }),
                   lit(Type(E::f32, {2}), {4, 4})));
  EXPECT_TRUE(same(run({}, [](ir::FunctionBuilder& b, auto&) { return std::vector<Tensor>{b.iota(Type(E::i32, {0}), 0)}; })[0],
                   Literal(Type(E::i32, {0}))));
}

}  // namespace
}  // namespace tessera::interp::testing
