// A gather whose indexed dimension is split, and a slice, reverse, pad, concatenate or
// reduce_window along a split dimension, done on the pieces where the cost model finds that
// cheaper than gathering the operand (#18, spmd/split_reads.h): the sharded run equals the
// single-device interpreter (a comparison that fails on NaN) for uneven splits, 2-D meshes,
// sub-axes, out-of-range and negative indices, several split indexed dimensions, strides,
// negative padding and results split or whole; the collectives are the cheaper ones (no gather of
// the operand where the local way moves less, never more bytes than gathering it), and a gather
// kept because it is cheaper is no warning.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>

#include "interp/interpreter.h"
#include "ir/builder.h"
#include "ir/builder_window.h"
#include "ir/window.h"
#include "runtime/session.h"
#include "spmd/halo_test_util.h"
#include "spmd/split_reads.h"

namespace tessera::spmd {
namespace {

using namespace tessera::ir;
using namespace halo_test;

GatherDims rows_of(int64_t rank_of_indices) {
  GatherDims gd;
  gd.offset_dims = {rank_of_indices - 1};  // after the indices' batch dimensions
  gd.collapsed_slice_dims = {0};
  gd.start_index_map = {0};
  gd.index_vector_dim = rank_of_indices - 1;
  return gd;
}

// A table [rows, 3] with a NaN and an infinity in rows no index picks (a mask that multiplied
// instead of selecting would spread them), gathered by `picks`.
struct GatherCase {
  std::vector<MeshAxis> mesh;
  int64_t rows;
  DimSharding table_rows;              // how the table's rows are split
  std::vector<int64_t> picks;          // row numbers, some outside [0, rows)
  DimSharding index_batch, result_batch;
  int64_t local_bytes_at_most;         // what the local gather may move (the indices, the sum)
};

TEST(SplitReads, GatherOfSplitRowsGathersLocallyAndSums) {
  const std::vector<GatherCase> cases = {
      // uneven (10 rows in pieces of 3), indices whole, out of range and negative: an all_reduce of [5, 3]
      {{{"x", 4}}, 10, {"x"}, {-3, 12, 9, 0, 4}, {}, {}, 2 * 5 * 3 * 4},
      // the indices and the result split like the rows: indices gathered, result reduce_scattered
      {{{"x", 4}}, 12, {"x"}, {11, 0, 5, 6, 6, 2, -1, 30}, {"x"}, {"x"}, 8 * 4 * 3 / 4 + 8 * 3 * 4 * 3 / 4},
      // a 2-D mesh, rows split by both axes (an uneven split by two axes projects only the first)
      {{{"x", 2}, {"y", 2}}, 12, {"x", "y"}, {8, 0, 4, 11}, {}, {}, 2 * 4 * 3 * 4},
      // rows split by a sub-axis, the batch by the other axis of the mesh
      {{{"x", 4}, {"y", 2}}, 16, {AxisRef("x", SubAxis{1, 2})}, {15, 2, 9, 9, 0, 7, 8, 3}, {"y"}, {"y"}, 2 * 4 * 3 * 4},
  };
  for (const GatherCase& c : cases) {
    Mesh mesh{"m", c.mesh, {}};
    auto n = static_cast<int64_t>(c.picks.size());
    Literal table = arange(f32({c.rows, 3}));
    std::vector<bool> picked(static_cast<size_t>(c.rows));
    for (int64_t r : c.picks) picked[static_cast<size_t>(std::clamp<int64_t>(r, 0, c.rows - 1))] = true;
    int unpicked = 0;
    for (int64_t r = 0; r < c.rows; ++r)
      if (!picked[static_cast<size_t>(r)])
        table.set_double(r * 3 + 1, unpicked++ % 2 ? std::numeric_limits<double>::infinity() : std::nan(""));
    ASSERT_GT(unpicked, 0);
    Literal indices = Literal::from_ints(i32({n, 1}), c.picks);
    Moved moved = run(mesh, [&](FunctionBuilder& b) {
      Tensor t = b.param(f32({c.rows, 3}), on({c.table_rows, {}}));
      Tensor i = b.param(i32({n, 1}), on({c.index_batch, {}}));
      return constrain(gather(t, i, rows_of(2), {1, 3}), on({c.result_batch, {}}));
    }, {table, indices}, "stablehlo.gather");
    EXPECT_EQ(moved.gathers, 0) << c.rows;
    EXPECT_LE(moved.bytes, c.local_bytes_at_most) << c.rows;
  }
}

// A gather of split rows whose result is laid out partial by a max or a min (unreduced=max{x} on
// the op, as Shardy's gather_shard_reduction_dim_is_collapsed_max writes it) and then made whole: the
// local gather fills the rows a device does not hold with that reduction's identity, so its
// pieces are partial by the max or min already and one all_reduce combines them, moving what
// the sum's does (it gathered the table and all-reduced identical copies before: 40 B, not 24).
// Negative rows for the max and positive ones for the min: pieces filled with zeros would win.
TEST(SplitReads, GatherOfSplitRowsPartialByAMaxOrMinMovesWhatTheSumDoes) {
  Mesh mesh{"m", {{"x", 2}}, {}};
  Literal indices = Literal::from_ints(i32({3, 1}), std::vector<int64_t>{3, 0, 2});
  std::map<int, int64_t> bytes;
  for (int kind : {0, 1, 2}) {
    Literal table = arange(f32({4, 2}));
    for (int64_t i = 0; i < table.num_elements(); ++i) table.set_double(i, (kind == 1 ? -1 : 1) * (table.get_double(i) + 1));
    Sharding partial{"m", {{}, {}}, {}, {AxisRef("x")},
                     kind == 1 ? ReductionKind::kMax : kind == 2 ? ReductionKind::kMin : ReductionKind::kSum};
    Moved moved = run(mesh, [&](FunctionBuilder& b) {
      Tensor t = b.param(f32({4, 2}), on({{"x"}, {}}));
      Tensor g = gather(t, b.param(i32({3, 1})), rows_of(2), {1, 2});
      g.value()->defining_op()->attrs().set("sdy.sharding", ShardingList{partial});
      return constrain(g, on({{}, {}}));
    }, {table, indices}, "");
    EXPECT_EQ(moved.kinds["all_gather"], 0) << kind << " " << moved.bytes;
    bytes[kind] = moved.bytes;
  }
  EXPECT_EQ(bytes[0], 3 * 2 * 4);
  EXPECT_EQ(bytes[1], bytes[0]);
  EXPECT_EQ(bytes[2], bytes[0]);
}

// Two split indexed dimensions (a 2-D mesh), and an index vector implicit in the last dimension.
TEST(SplitReads, GatherOfSeveralSplitIndexedDimensionsAndImplicitIndexVectors) {
  Mesh mesh{"m", {{"x", 2}, {"y", 2}}, {}};
  Literal table = arange(f32({5, 6, 3}));
  Literal pairs = Literal::from_ints(i32({4, 2}), std::vector<int64_t>{4, 5, 0, 0, 2, 3, 9, -2});
  GatherDims gd;
  gd.offset_dims = {1};
  gd.collapsed_slice_dims = {0, 1};
  gd.start_index_map = {0, 1};
  gd.index_vector_dim = 1;
  Moved two = run(mesh, [&](FunctionBuilder& b) {
    Tensor t = b.param(f32({5, 6, 3}), on({{"x"}, {"y"}, {}}));
    return gather(t, b.param(i32({4, 2})), gd, {1, 1, 3});
  }, {table, pairs}, "stablehlo.gather");
  EXPECT_EQ(two.gathers, 0);
  EXPECT_EQ(two.kinds["all_reduce"], 1);

  Literal rows = Literal::from_ints(i32({6}), std::vector<int64_t>{39, 1, 0, 13, 27, 2});
  GatherDims implicit;
  implicit.offset_dims = {1};
  implicit.collapsed_slice_dims = {0};
  implicit.start_index_map = {0};
  implicit.index_vector_dim = 1;
  Moved one = run(mesh, [&](FunctionBuilder& b) {
    Tensor t = b.param(f32({40, 4}), on({{"y", "x"}, {}}));
    return gather(t, b.param(i32({6})), implicit, {1, 4});
  }, {arange(f32({40, 4})), rows}, "stablehlo.gather");
  EXPECT_EQ(one.gathers, 0);
}

// Many lookups in a small table (FSDP's token embedding): gathering the table moves less than
// summing the looked-up rows, so the cost model keeps the gather, and it is no warning.
TEST(SplitReads, AGatherOfTheTableIsKeptWhereItIsCheaper) {
  Mesh mesh{"m", {{"x", 4}}, {}};
  std::vector<int64_t> picks(32);
  for (size_t i = 0; i < picks.size(); ++i) picks[i] = static_cast<int64_t>(i * 5 % 16);
  Moved moved = run(mesh, [&](FunctionBuilder& b) {
    Tensor t = b.param(f32({16, 8}), on({{"x"}, {}}));
    Tensor i = b.param(i32({8, 4}), on({{"x"}, {}}));
    GatherDims gd;
    gd.offset_dims = {2};
    gd.collapsed_slice_dims = {0};
    gd.start_index_map = {0};
    gd.index_vector_dim = 2;
    return constrain(gather(t, i, gd, {1, 8}), on({{"x"}, {}, {}}));
  }, {arange(f32({16, 8})), Literal::from_ints(i32({8, 4}), picks)}, "stablehlo.gather");
  EXPECT_EQ(moved.gathers, 1);
  EXPECT_EQ(moved.bytes, 16 * 8 * 4 * 3 / 4);  // the table's gather; the local way: 8*4*8*4*3/4 + 96
}

// By default a gather the local way moves less is done locally (no warning, fewer bytes); with
// PartitionOptions::local_gathers off the table is gathered whole, and the gather is reported as
// avoidable, with both numbers.
TEST(SplitReads, ACheaperLocalGatherIsTakenByDefaultAndReportedWhenOff) {
  Module m("case");
  m.add_mesh(Mesh{"m", {{"x", 4}}, {}});
  build_function(m, "f", [&](FunctionBuilder& b) {
    return gather(b.param(f32({10, 3}), on({{"x"}, {}})), b.param(i32({5, 1}), on({{}, {}})), rows_of(2), {1, 3});
  });
  runtime::Session s = runtime::Session::host(4);
  runtime::CompiledProgram local = s.compile(m, "f");
  EXPECT_TRUE(local.report().warnings().empty()) << local.report().explain();
  EXPECT_EQ(local.report().bytes_per_device(), 90) << local.report().explain();
  PartitionOptions off;
  off.local_gathers = false;
  runtime::CompiledProgram whole = s.compile(m, "f", off);
  std::vector<std::string> w = whole.report().warnings();
  ASSERT_EQ(w.size(), 1u) << whole.report().explain();
  EXPECT_NE(w[0].find("a local gather summed after would move 90 bytes per device, not 108"), std::string::npos) << w[0];
  EXPECT_EQ(whole.report().bytes_per_device(), 108) << whole.report().explain();
}

TEST(SplitReads, HaloPlanSendsOnlyWhatEachDeviceNeeds) {
  // 16 rows in 4 pieces of 4, rows 2:10 in pieces of 2: shards 0 and 1 cut theirs from their own
  // piece, shards 2 and 3 from their left neighbour's (rows 6:8 and 8:10): 2 rows sent.
  auto plan = plan_halo(16, 2, 10, 1, 4);
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->chunks.size(), 2u);
  EXPECT_EQ(plan->chunks[0].source, (std::vector<int64_t>{-1, -1, 1, 2}));
  EXPECT_EQ(plan->chunks[0].width, 2);
  EXPECT_EQ(plan->chunks[0].offset, (std::vector<int64_t>{0, 2, 0, 0}));
  EXPECT_FALSE(plan->chunks[1].remote());
  EXPECT_EQ(halo_bytes(*plan, 3, 4), 2 * 3 * 4);
  EXPECT_FALSE(plan_halo(16, 5, 5, 1, 4));
  // Reversing 8 in pieces of 2: each shard takes its mirror's piece, one permute of one piece;
  // 10 in pieces of 3: each range straddles two pieces (9:10 and 6:9, ...), two chunks.
  auto mirror = plan_reverse(8, 4);
  ASSERT_TRUE(mirror);
  ASSERT_EQ(mirror->chunks.size(), 1u);
  EXPECT_EQ(mirror->chunks[0].source, (std::vector<int64_t>{3, 2, 1, 0}));
  EXPECT_EQ(halo_bytes(*mirror, 1, 4), 2 * 4);
  auto uneven = plan_reverse(10, 4);
  ASSERT_TRUE(uneven);
  EXPECT_EQ(uneven->chunks.size(), 2u);
  EXPECT_LT(halo_bytes(*uneven, 1, 4), 3 * 3 * 4);  // less than gathering the other three pieces
}

// reverse along a split dimension, even and uneven, 1-D and 2-D meshes, sub-axes, with the other
// dimension reversed too, the result declared split alike: sharded equals unsharded, the pieces
// are exchanged, never gathered, and no more bytes move than gathering would.
// A shifted window (a pad of 8 rows in 4 pieces by 1 before and after: 10 rows in pieces of 3):
// shard i's window starts at operand row 3i - 1; shard 0 keeps its own rows, shards 1 and 2 take
// at most 2 rows from their right neighbour, shard 3 needs none (only padding); cropping by 2
// (low = -2) moves each window the other way.
TEST(SplitReads, ShiftedWindowPlanSendsOnlyWhatEachDeviceNeeds) {
  std::optional<HaloPlan> plan = plan_shift(8, 1, 10, 4);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->result_piece, 3);
  EXPECT_EQ(plan->first_index, (std::vector<int64_t>{-1, 2, 5, 8}));
  EXPECT_EQ(halo_bytes(*plan, 3, 4), 2 * 3 * 4);
  EXPECT_EQ(plan->lead, 1);  // (shard 0's window starts one row before the run)
  std::optional<HaloPlan> crop = plan_shift(8, -2, 6, 2);  // rows 2..7 in pieces of 3 from pieces of 4
  ASSERT_TRUE(crop.has_value());
  EXPECT_EQ(crop->first_index, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(halo_bytes(*crop, 1, 4), 1 * 4);  // shard 0 takes row 4 from shard 1
  EXPECT_FALSE(plan_shift(8, -8, 2, 2).has_value());  // nothing of the operand is kept
}

TEST(SplitReads, ReverseAlongASplitDimensionExchangesMirroredPieces) {
  struct Layout {
    std::vector<MeshAxis> mesh;
    DimSharding axes;
    int64_t shards;
  };
  const std::vector<Layout> layouts = {
      {{{"x", 4}}, {"x"}, 4}, {{{"x", 2}, {"y", 2}}, {"y", "x"}, 4}, {{{"x", 8}}, {AxisRef("x", SubAxis{1, 4})}, 4},
      {{{"x", 3}}, {"x"}, 3}, {{{"x", 2}, {"y", 4}}, {"x", "y"}, 8}};
  int permutes = 0;
  for (const Layout& l : layouts)
    for (int64_t size : {8, 10, 12, 17})
      for (bool both : {false, true}) {
        Mesh mesh{"m", l.mesh, {}};
        Moved moved = run(mesh, [&](FunctionBuilder& b) {
          Tensor x = b.param(f32({size, 3}), on({l.axes, {}}));
          return reverse(x, both ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0});
        }, {arange(f32({size, 3}))}, "stablehlo.reverse", false, on({l.axes, {}}));
        if (::testing::Test::HasFailure()) return;
        int64_t piece = (size + l.shards - 1) / l.shards;
        EXPECT_LE(moved.bytes, piece * (l.shards - 1) * 3 * 4) << size;
        EXPECT_EQ(moved.gathers, 0) << size << " over " << l.shards;
        permutes += moved.kinds["collective_permute"] > 0;
      }
  EXPECT_GT(permutes, 0);
}

// Slices of every kind along a split dimension: sharded equals unsharded, and never more bytes
// than gathering the operand; where the result stays split the halo exchange is used.
TEST(SplitReads, SliceAlongASplitDimensionExchangesHalos) {
  struct Layout {
    std::vector<MeshAxis> mesh;
    DimSharding axes;
    int64_t shards;
  };
  const std::vector<Layout> layouts = {
      {{{"x", 4}}, {"x"}, 4},
      {{{"x", 2}, {"y", 2}}, {"x", "y"}, 4},
      {{{"x", 2}, {"y", 2}}, {"y"}, 2},
      {{{"x", 8}}, {AxisRef("x", SubAxis{2, 4})}, 4},
      {{{"x", 2}, {"y", 4}}, {"y", "x"}, 8},
  };
  int halos = 0, cases = 0;
  for (const Layout& l : layouts)
    for (int64_t size : {8, 10, 16, 19})
      for (auto [start, limit, stride] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
               {2, size - 2, 1}, {1, size, 3}, {0, size / 2, 1}, {size / 2, size, 1}, {3, size - 1, 2}, {size - 1, size, 1}})
        for (bool split_result : {true, false}) {
          Mesh mesh{"m", l.mesh, {}};
          int64_t length = (limit - start + stride - 1) / stride;
          Moved moved = run(mesh, [&](FunctionBuilder& b) {
            Tensor x = b.param(f32({size, 3}), on({l.axes, {}}));
            Tensor s = slice(x, {start, 0}, {limit, 3}, {stride, 1});
            return constrain(s, on({split_result ? l.axes : DimSharding{}, {}}));
          }, {arange(f32({size, 3}))}, "stablehlo.slice", false);
          if (::testing::Test::HasFailure()) return;
          int64_t piece = (size + l.shards - 1) / l.shards;
          EXPECT_LE(moved.bytes, piece * (l.shards - 1) * 3 * 4) << size << " " << start << ":" << limit << ":" << stride;
          halos += moved.kinds["collective_permute"] > 0;
          ++cases;
          if (split_result && length % l.shards == 0 && stride == 1 && start == 2) {  // (an uneven result is left whole)
            EXPECT_EQ(moved.gathers, 0) << size << " over " << l.shards;
          }
        }
  EXPECT_GT(halos, cases / 4) << halos << " of " << cases;
}

// Edge padding (low, high, negative ones crop) along a split dimension, the result declared split
// alike, the other dimension padded too (whole): sharded equals unsharded with a padding value
// that is no element's; never more bytes than gathering the operand, and where only a few
// elements shift (|low|, |high| <= 2, pieces of 2 or more, a result split evenly: propagation
// leaves an uneven result whole, and the cost model then counts its gather) the pieces are
// exchanged, never gathered. Interior padding (the operand dilated: each result piece reads the
// operand elements that land in it, at a phase of its own) is exchanged too, and where the
// result splits evenly with edges of 2 or less nothing is gathered; 16 rows over 4 padded 2 low,
// cropped 1 high and 1 between, bring each device the one row below its piece (12 bytes).
TEST(SplitReads, PadAlongASplitDimensionExchangesHalos) {
  int halos = 0, cases = 0;
  for (const HaloLayout& l : kHaloLayouts)
    for (int64_t size : {8, 10, 17})
      for (auto [low, high, interior] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
               {1, 1, 0}, {2, 0, 0}, {0, 2, 0}, {-1, 2, 0}, {2, -1, 0}, {-2, -1, 0}, {5, 6, 0}, {1, 1, 1},
               {0, 1, 1}, {2, -1, 1}, {-1, 0, 2}, {3, 2, 3}, {0, 0, 1}})
        for (bool other : {false, true}) {
          Mesh mesh{"m", l.mesh, {}};
          Moved moved = run(mesh, [&](FunctionBuilder& b) {
            Tensor x = b.param(f32({size, 3}), on({l.axes, {}}));
            Tensor p = pad(x, b.scalar(ElementType::f32, -7.25), {low, other ? 1 : 0}, {high, 0}, {interior, 0});
            return constrain(p, on({l.axes, {}}));
          }, {arange(f32({size, 3}))}, "stablehlo.pad", false);
          if (::testing::Test::HasFailure()) return;
          int64_t piece = (size + l.shards - 1) / l.shards;
          const int64_t length = size + (size - 1) * interior + low + high;
          EXPECT_LE(moved.bytes, piece * (l.shards - 1) * 3 * 4 + length * 4 * 4)
              << size << " low " << low << " high " << high << " interior " << interior;
          halos += moved.kinds["collective_permute"] > 0;
          ++cases;
          if (std::abs(low) <= 2 && std::abs(high) <= 2 && piece >= 2 && interior <= 1 && length % l.shards == 0) {
            EXPECT_EQ(moved.gathers, 0) << size << " over " << l.shards << " low " << low << " high " << high
                                        << " interior " << interior;
          }
        }
  EXPECT_GT(halos, cases / 8) << halos << " of " << cases;
  Moved one_row = run(Mesh{"m", {{"x", 4}}, {}}, [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({16, 3}), on({{"x"}, {}}));
    return constrain(pad(x, b.scalar(ElementType::f32, -7.25), {2, 0}, {-1, 0}, {1, 0}), on({{"x"}, {}}));
  }, {arange(f32({16, 3}))}, "stablehlo.pad");
  EXPECT_EQ(one_row.gathers, 0);
  EXPECT_EQ(one_row.bytes, 3 * 4);
}

// Concatenate along a split dimension, of two or three operands of other sizes (one of them
// arriving whole, or every one split), the result declared split alike: sharded equals unsharded
// (the operands' values are apart by 100, so one leaking into another's positions shows), never
// more bytes than gathering the operands and then the result, and where every operand arrives split (and the result
// splits evenly) nothing is gathered.
TEST(SplitReads, ConcatenateAlongASplitDimensionExchangesHalos) {
  int halos = 0, cases = 0;
  for (const HaloLayout& l : kHaloLayouts)
    for (std::vector<int64_t> sizes : std::vector<std::vector<int64_t>>{{8, 8}, {5, 11}, {16, 3, 7}, {1, 9}})
      for (bool all_split : {true, false}) {
        Mesh mesh{"m", l.mesh, {}};
        std::vector<Literal> in;
        int64_t gathered = 0;
        for (size_t k = 0; k < sizes.size(); ++k) {
          Literal a = arange(f32({sizes[k], 2}));
          for (int64_t i = 0; i < a.num_elements(); ++i) a.set_double(i, a.get_double(i) + 100.0 * static_cast<double>(k));
          in.push_back(std::move(a));
          gathered += sizes[k] * 2 * 4;
        }
        Moved moved = run(mesh, [&](FunctionBuilder& b) {
          std::vector<Tensor> xs;
          for (size_t k = 0; k < sizes.size(); ++k)
            xs.push_back(b.param(f32({sizes[k], 2}), on({all_split || k != 0 ? l.axes : DimSharding{}, {}})));
          return constrain(concatenate(xs, 0), on({l.axes, {}}));
        }, in, "stablehlo.concatenate", false);
        if (::testing::Test::HasFailure()) return;
        // (the cost model weighs the result's reshard too: gathering every operand and then the result)
        EXPECT_LE(moved.bytes, 2 * gathered);
        halos += moved.kinds["collective_permute"] > 0;
        ++cases;
        if (all_split && std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) % l.shards == 0) {
          EXPECT_EQ(moved.kinds["all_gather"], 0) << sizes.size() << " operands over " << l.shards;
        }
      }
  EXPECT_GE(halos, cases / 3) << halos << " of " << cases;
}

// reduce_window (a sum and a max-pool from -8) along a split dimension, with padding, strides,
// window dilation and base dilation, the result declared split alike: sharded equals unsharded,
// never more bytes than gathering the operand and then the result, and the windows' runs are
// exchanged in some; a base-dilated sum (a strided average pool's gradient) on an even split is
// exchanged, not gathered.
TEST(SplitReads, ReduceWindowAlongASplitDimensionExchangesHalos) {
  int halos = 0, cases = 0, dilated_even = 0;
  for (const HaloLayout& l : kHaloLayouts)
    for (int64_t size : {8, 10, 17})
      for (auto [size_w, stride, dilation, low, high] : std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>>{
               {3, 1, 1, 1, 1}, {2, 2, 1, 0, 0}, {3, 2, 1, 1, 1}, {3, 1, 2, 2, 2}, {4, 3, 1, 0, 2}, {3, 1, -2, 1, 0},
               {2, 2, -3, 0, 1}})
        for (bool sum : {true, false}) {
          Mesh mesh{"m", l.mesh, {}};
          // (a negative dilation in the table: a base dilation of that much instead)
          Window w{{size_w, 1}, {stride, 1}, {std::max<int64_t>(1, -dilation), 1}, {std::max<int64_t>(1, dilation), 1},
                   {low, 0}, {high, 0}, {}};
          Moved moved = run(mesh, [&](FunctionBuilder& b) {
            Tensor x = b.param(f32({size, 3}), on({l.axes, {}}));
            Tensor r = sum ? reduce_window(x, b.scalar(ElementType::f32, 0), w, OpKind::Add)
                           : reduce_window(x, b.scalar(ElementType::f32, -8), w, OpKind::Maximum);
            return constrain(r, on({l.axes, {}}));
          }, {arange(f32({size, 3}))}, "stablehlo.reduce_window", false);
          if (::testing::Test::HasFailure()) return;
          int64_t piece = (size + l.shards - 1) / l.shards;
          EXPECT_LE(moved.bytes, 2 * piece * l.shards * 3 * 4 * std::max<int64_t>(1, -dilation)) << size;
          if (dilation < 0 && w.num_windows(0, size) % l.shards == 0 && piece >= 2) {
            EXPECT_EQ(moved.gathers, 0) << size << " over " << l.shards;
            ++dilated_even;
          }
          halos += moved.kinds["collective_permute"] > 0;
          ++cases;
        }
  EXPECT_GT(dilated_even, 0);
  EXPECT_GT(halos, cases / 8) << halos << " of " << cases;
}

}  // namespace
}  // namespace tessera::spmd
