// A convolution whose input arrives split along a spatial dimension, and a select_and_scatter
// along a split window dimension, kept split by a halo exchange (#18 item 2,
// spmd/halo_conv.cpp, spmd/halo_select_scatter.cpp). The convolution: the sharded run equals the single-device interpreter
// (a comparison that fails on NaN) for uneven splits, 2-D meshes, sub-axes, kernels wider than a
// piece, strides, lhs and rhs dilations, padding, window reversal and feature and batch groups;
// where the output splits evenly the input is never gathered, and a "same" convolution of unit
// stride moves exactly the kernel's extent less one rows per device. The gradient of such a
// convolution (its input gradient is a convolution of the output gradient, split alike) keeps
// the split too. (An output that splits unevenly is left whole by propagation, so the cost model
// weighs gathering it after the exchange; some of those gather the input instead.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>

#include "autodiff/reverse.h"
#include "ir/builder_window.h"
#include "spmd/halo_test_util.h"

namespace tessera::spmd {
namespace {

using namespace tessera::ir;
using namespace halo_test;

// NHWC input, HWIO kernel, NHWC output (the CNN example's layout).
const ConvDims kNhwc{0, 3, {1, 2}, 2, 3, {0, 1}, 0, 3, {1, 2}};

struct Geometry {
  int64_t kernel, stride, lhs_dilation, rhs_dilation, low, high;
  bool reversed;
};

// The input [2, size, 5, 2] split along H; the output declared split alike.
Moved conv_case(const HaloLayout& l, int64_t size, const Geometry& g, int64_t groups, int64_t batch_groups) {
  Mesh mesh{"m", l.mesh, {}};
  Window w{{g.kernel, 2}, {g.stride, 1}, {g.lhs_dilation, 1}, {g.rhs_dilation, 1}, {g.low, 0}, {g.high, 0}, {g.reversed, false}};
  Literal x = arange(f32({2, size, 5, 2})), k = arange(f32({g.kernel, 2, 2 / groups, 4}));
  for (int64_t i = 0; i < k.num_elements(); ++i) k.set_double(i, 0.01 * k.get_double(i) - 0.1);
  return run(mesh, [&](FunctionBuilder& b) {
    Tensor in = b.param(f32({2, size, 5, 2}), on({{}, l.axes, {}, {}}));
    Tensor kernel = b.param(f32({g.kernel, 2, 2 / groups, 4}));
    Tensor y = convolution(in, kernel, kNhwc, w, groups, batch_groups);
    return constrain(y, on({{}, l.axes, {}, {}}));
  }, {x, k}, "stablehlo.convolution", false);
}

TEST(HaloConv, ConvolutionAlongASplitSpatialDimensionExchangesHalos) {
  const std::vector<Geometry> geometries = {
      {3, 1, 1, 1, 1, 1, false}, {5, 1, 1, 1, 2, 2, true},  {3, 2, 1, 1, 1, 1, false}, {3, 1, 1, 2, 2, 2, false},
      {2, 1, 2, 1, 1, 1, false}, {3, 1, 2, 1, 2, 2, true},  {4, 3, 1, 1, 0, 2, false}, {1, 1, 1, 1, 0, 0, false},
      {7, 1, 1, 1, 3, 3, false}, {3, 2, 3, 2, 0, 4, false}, {2, 1, 1, 1, 0, 0, false}, {3, 1, 1, 1, -1, 2, false},
  };
  int halos = 0, cases = 0;
  for (const HaloLayout& l : kHaloLayouts)
    for (int64_t size : {8, 12, 17})
      for (size_t gi = 0; gi < geometries.size(); ++gi)
        for (auto [groups, batch_groups] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 1}, {1, 2}}) {
          if ((groups != 1 || batch_groups != 1) && gi % 3 != 0) continue;  // (groups on a few geometries)
          const Geometry& g = geometries[gi];
          Moved moved = conv_case(l, size, g, groups, batch_groups);
          if (::testing::Test::HasFailure()) {
            ADD_FAILURE() << "size " << size << " over " << l.shards << ", geometry " << gi << ", groups " << groups << "/"
                          << batch_groups;
            return;
          }
          const int64_t row = 2 * 5 * 2 * 4;  // bytes of one H row of the input
          const int64_t piece = (size + l.shards - 1) / l.shards;
          const int64_t out_row = 2 / batch_groups * 4 * 4 * 4;
          // (at most: the input gathered and the output gathered to be split again)
          EXPECT_LE(moved.bytes, piece * l.shards * row + size * g.lhs_dilation * out_row) << size << " geometry " << gi;
          halos += moved.kinds["collective_permute"] > 0;
          ++cases;
          // A "same" convolution of unit stride, split evenly: exactly the kernel's extent less one
          // rows, and no gather, where those are fewer than gathering the input moves.
          const int64_t extent = (g.kernel - 1) * g.rhs_dilation + 1;
          if (g.stride == 1 && g.lhs_dilation == 1 && g.low + g.high == extent - 1 && size % l.shards == 0 &&
              extent - 1 < (l.shards - 1) * piece) {
            EXPECT_EQ(moved.kinds["all_gather"], 0) << size << " over " << l.shards << " geometry " << gi;
            EXPECT_EQ(moved.bytes, (extent - 1) * row) << size << " over " << l.shards << " geometry " << gi;
          }
        }
  EXPECT_GT(halos, cases / 3) << halos << " of " << cases;
}

// A 3-wide "same" convolution on 16 rows over 4 devices: each device receives one row from each
// neighbour (two collective_permutes of one row, 80 bytes each) and nothing is gathered.
TEST(HaloConv, SameConvolutionMovesTheHaloRowsOnly) {
  Moved moved = conv_case(kHaloLayouts[0], 16, {3, 1, 1, 1, 1, 1, false}, 1, 1);
  EXPECT_EQ(moved.kinds["collective_permute"], 2);
  EXPECT_EQ(moved.kinds["all_gather"], 0);
  EXPECT_EQ(moved.bytes, 2 * 2 * 5 * 2 * 4);
}

// select_and_scatter (a max-pool's gradient: the first largest of each window, the source added
// there) along a split window dimension without padding, the source split alike and the result
// declared split alike: sharded equals unsharded, with ties (every value repeats) and a window
// wider than a piece, never more than gathering the operand and source and then the result, and
// where the windows tile the operand (stride = size) on an even split nothing moves at all.
// Padded windows too (the runs inside the operand, the local op padded as the whole one), windows
// wholly in the padding (which scatter nothing) included.
TEST(HaloConv, SelectAndScatterAlongASplitWindowDimensionExchangesHalos) {
  int halos = 0, cases = 0;
  for (const HaloLayout& l : kHaloLayouts)
    for (int64_t size : {8, 12, 17})
      for (auto [k, stride, low, high] : std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{
               {2, 2, 0, 0}, {3, 1, 0, 0}, {3, 2, 0, 0}, {2, 3, 0, 0}, {5, 1, 0, 0}, {7, 2, 0, 0}, {3, 2, 1, 1},
               {3, 1, 1, 1}, {3, 2, 0, 1}, {2, 2, 1, 0}, {5, 2, 2, 2}, {3, 3, 2, 1}, {2, 2, 3, 2}})
        for (bool add : {true, false}) {
          if (k > size) continue;
          Mesh mesh{"m", l.mesh, {}};
          Window w{{k, 1}, {stride, 1}, {1, 1}, {1, 1}, {low, 0}, {high, 0}, {}};
          const int64_t windows = w.num_windows(0, size);
          Literal x = arange(f32({size, 3}));
          for (int64_t i = 0; i < x.num_elements(); ++i) x.set_double(i, static_cast<double>((i * 7) % 5));  // (ties)
          Literal src = arange(f32({windows, 3}));
          Moved moved = run(mesh, [&](FunctionBuilder& b) {
            Tensor in = b.param(f32({size, 3}), on({l.axes, {}}));
            Tensor source = b.param(f32({windows, 3}), on({l.axes, {}}));
            Tensor r = select_and_scatter(in, source, b.scalar(ElementType::f32, add ? 0.0 : -3.0), w, ComparisonDirection::GE,
                                          add ? OpKind::Add : OpKind::Maximum);
            return constrain(r, on({l.axes, {}}));
          }, {x, src}, "stablehlo.select_and_scatter", false);
          if (::testing::Test::HasFailure()) {
            ADD_FAILURE() << "size " << size << " over " << l.shards << ", window " << k << " stride " << stride;
            return;
          }
          const int64_t piece = (size + l.shards - 1) / l.shards, wpiece = (windows + l.shards - 1) / l.shards;
          EXPECT_LE(moved.bytes, (2 * piece + wpiece) * l.shards * 3 * 4) << size << " window " << k;
          halos += moved.kinds["collective_permute"] > 0;
          ++cases;
          if (k == stride && low == 0 && size % (l.shards * k) == 0) {
            EXPECT_EQ(moved.bytes, 0) << size << " over " << l.shards << " window " << k;
          }
        }
  EXPECT_GT(halos, cases / 3) << halos << " of " << cases;
}

// A max-pool's gradient with SAME padding, window 3 over f32[16, 3] rows split 2 and 4 ways
// (stride 1: padding 1 and 1; stride 2: 0 and 1), the source and result split alike: bit for bit
// the unsharded result on inputs that are all negative (a padding position read as 0 would win),
// with ties, -inf and a NaN; nothing gathered, no warning, and only the halo moves: the rows and
// windows of the windows that touch a device's piece. Stride 1: windows j read rows j-1..j+1, so
// a piece [b, b+p) needs rows b-2..b+p+1 (two rows from each side, 24 bytes each) and windows
// b-1..b+p (one from each side, 12 bytes each): 72 bytes. Stride 2: windows j read rows
// 2j..2j+2, a piece needs rows b-2..b+p (two from the left, one from the right) and one window
// from the left: 48 bytes. The same on 2 devices as on 4. And both dimensions of an f32[16, 12]
// split on a 2x2 mesh, padded along both (3x3 windows, strides 2 and 1): nothing gathered.
// Returns the bytes the select_and_scatter moved per device.
int64_t expect_pool_gradient_bit_for_bit(const Mesh& mesh, const std::vector<int64_t>& shape, const Sharding& layout,
                                         const Window& w) {
  std::vector<int64_t> windows;
  for (size_t d = 0; d < shape.size(); ++d) windows.push_back(w.num_windows(d, shape[d]));
  Literal x(f32(shape)), src = arange(f32(windows));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.set_double(i, -1.0 - static_cast<double>((i * 7) % 5));
  x.set_double(5, -INFINITY);
  x.set_double(22, NAN);
  for (int64_t i = 0; i < src.num_elements(); ++i) src.set_double(i, 0.1 * static_cast<double>(i) - 1.3);
  Module m("pool");
  m.add_mesh(mesh);
  build_function(m, "f", [&](FunctionBuilder& b) {
    Tensor in = b.param(f32(shape), layout);
    Tensor source = b.param(f32(windows), layout);
    Tensor r = select_and_scatter(in, source, b.scalar(ElementType::f32, 0.0), w, ComparisonDirection::GE, OpKind::Add);
    return constrain(r, layout);
  });
  std::vector<Literal> want = interp::evaluate(m, "f", {x, src});
  runtime::Session s = runtime::Session::host(mesh.num_devices());
  runtime::CompiledProgram p = s.compile(m, "f");
  std::vector<Literal> got = s.run_sharded(p, {x, src});
  EXPECT_EQ(got.size(), 1u);
  for (int64_t i = 0; i < want[0].num_elements() && got.size() == 1; ++i) {
    float a = static_cast<float>(got[0].get_double(i)), e = static_cast<float>(want[0].get_double(i));
    uint32_t ab, eb;
    std::memcpy(&ab, &a, 4);
    std::memcpy(&eb, &e, 4);
    EXPECT_EQ(ab, eb) << "element " << i << ": sharded " << a << ", unsharded " << e << "\n" << p.report().explain();
  }
  int64_t bytes = 0;
  for (const auto& col : p.report().collectives) {
    if (col.origin.rfind("stablehlo.select_and_scatter", 0) != 0) continue;
    EXPECT_EQ(col.kind, "collective_permute") << p.report().explain();
    bytes += col.bytes_per_device;
  }
  EXPECT_TRUE(p.report().warnings().empty()) << p.report().explain();
  return bytes;
}

TEST(HaloConv, PaddedSelectAndScatterMatchesBitForBitAndMovesTheRunsOnly) {
  struct Case {
    int64_t shards, stride, low, high, bytes;
  };
  for (const Case& c : std::vector<Case>{{4, 1, 1, 1, 72}, {4, 2, 0, 1, 48}, {2, 1, 1, 1, 72}, {2, 2, 0, 1, 48}}) {
    Window w{{3, 1}, {c.stride, 1}, {1, 1}, {1, 1}, {c.low, 0}, {c.high, 0}, {}};
    int64_t bytes = expect_pool_gradient_bit_for_bit(Mesh{"m", {{"x", c.shards}}, {}}, {16, 3}, on({{"x"}, {}}), w);
    EXPECT_EQ(bytes, c.bytes) << c.shards << " ways, stride " << c.stride;
  }
  Window w{{3, 3}, {2, 1}, {1, 1}, {1, 1}, {0, 1}, {1, 1}, {}};
  EXPECT_GT(expect_pool_gradient_bit_for_bit(Mesh{"m", {{"x", 2}, {"y", 2}}, {}}, {16, 12}, on({{"x"}, {"y"}}), w), 0);
}

// The gradient of loss(x, k) = sum(conv(x, k)^2), the input [4, size, 5, 2] split along H and the
// convolution's output kept split alike, as a CNN split along its rows runs it: the input
// gradient (a convolution of the split output gradient, with lhs_dilation for a strided
// convolution) exchanges halos, and the kernel gradient (the input convolved with the output
// gradient, both split along H) sums partial kernels, so no convolution gathers its operands;
// sharded equals unsharded, on uneven splits too.
TEST(HaloConv, GradientOfAConvolutionAlongASplitSpatialDimensionGathersNothing) {
  for (const Geometry& g : std::vector<Geometry>{{3, 1, 1, 1, 1, 1, false}, {3, 2, 1, 1, 1, 1, false}, {5, 1, 1, 2, 4, 4, false}})
    for (int64_t size : {16, 24, 18})
      for (size_t li : {size_t{0}, size_t{1}}) {
        const HaloLayout& l = kHaloLayouts[li];
        Mesh mesh{"m", l.mesh, {}};
        Module m("grad");
        m.add_mesh(mesh);
        Window w{{g.kernel, 2}, {g.stride, 1}, {g.lhs_dilation, 1}, {g.rhs_dilation, 1}, {g.low, 0}, {g.high, 0}, {g.reversed, false}};
        Function& f = build_function(m, "f", [&](FunctionBuilder& b) {
          Tensor in = b.param(f32({4, size, 5, 2}), on({{}, l.axes, {}, {}}));
          Tensor kernel = b.param(f32({g.kernel, 2, 2, 3}));
          Tensor y = constrain(convolution(in, kernel, kNhwc, w), on({{}, l.axes, {}, {}}));
          return sum(y * y);
        });
        autodiff::reverse(m, f);
        Literal x = arange(f32({4, size, 5, 2})), k = arange(f32({g.kernel, 2, 2, 3}));
        for (int64_t i = 0; i < x.num_elements(); ++i) x.set_double(i, std::sin(0.37 * x.get_double(i)));
        for (int64_t i = 0; i < k.num_elements(); ++i) k.set_double(i, 0.01 * k.get_double(i) - 0.1);
        std::vector<Literal> want = interp::evaluate(m, "f_grad", {x, k});
        runtime::Session s = runtime::Session::host(mesh.num_devices());
        runtime::CompiledProgram p = s.compile(m, "f_grad", {});
        std::vector<Literal> got = s.run_sharded(p, {x, k});
        ASSERT_EQ(got.size(), want.size());
        for (size_t r = 0; r < got.size(); ++r)
          for (int64_t i = 0; i < want[r].num_elements(); ++i)
            ASSERT_TRUE(close(got[r].get_double(i), want[r].get_double(i)))
                << "result " << r << " element " << i << ": sharded " << got[r].get_double(i) << ", unsharded "
                << want[r].get_double(i) << " (size " << size << ", kernel " << g.kernel << ")\n" << p.report().explain();
        // (18 rows split unevenly: the values only; moving between uneven layouts of other sizes
        // gathers, the reshard repertoire's fallback, not the convolution's)
        if (size % l.shards != 0) continue;
        int permutes = 0;
        for (const auto& c : p.report().collectives) {
          if (c.origin.rfind("stablehlo.convolution", 0) != 0) continue;
          EXPECT_NE(c.kind, "all_gather") << c.origin << " " << c.forced_by << " (size " << size << ", kernel " << g.kernel
                                          << ")\n" << p.report().explain();
          permutes += c.kind == "collective_permute";
        }
        EXPECT_GE(permutes, 2) << p.report().explain();
        EXPECT_TRUE(p.report().warnings().empty()) << p.report().explain();
      }
}

}  // namespace
}  // namespace tessera::spmd
