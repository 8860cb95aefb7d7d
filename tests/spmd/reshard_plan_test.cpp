// Reshards between even layouts of one mesh (src/spmd/reshard_plan.h): each pair below, taken from
// the moves Shardy's reshard_to_collectives makes, must give the unsharded value on every device
// (sharded run against the interpreter) and move exactly the bytes per device of Shardy's
// sequence for it (counted as the partition report counts: an all_gather what a device receives,
// an all_to_all (n-1)/n of its operand, a collective_permute its operand, a slice nothing).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <random>

#include "common/random_literal.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "runtime/session.h"

namespace tessera::runtime {
namespace {

using namespace tessera::ir;

constexpr double kTolerance = 1e-6;  // relative; a reshard only moves values

struct Case {
  std::string name;
  std::vector<MeshAxis> mesh;
  std::vector<int64_t> shape;
  Sharding from, to;
  int64_t shardy_bytes;  // per device, of Shardy's expected collectives
  std::vector<int64_t> to_device_ids = {};  // when set, `to` is on mesh "n": c.mesh's axes, these ids
};

Sharding on(std::vector<DimSharding> dims) { return Sharding{"m", std::move(dims), {}, {}}; }
AxisRef sub(const char* name, int64_t pre, int64_t size) { return AxisRef(name, SubAxis{pre, size}); }
std::string text(const Sharding& s) {  // [{"x", "y"}, {}], for messages
  std::string out = "[";
  for (size_t d = 0; d < s.dims.size(); ++d) {
    out += d ? ", {" : "{";
    for (size_t i = 0; i < s.dims[d].axes.size(); ++i) out += (i ? ", " : "") + to_string(s.dims[d].axes[i]);
    out += "}";
  }
  return out + "]";
}

// Runs c's reshard (input seeded by `seed`) sharded and unsharded and expects equal values; then,
// while the compiled program lives, `inspect` reads it.
void run_reshard(const Case& c, uint64_t seed, const std::string& what,
                 const std::function<void(const CompiledProgram&)>& inspect) {
  Module m;
  m.add_mesh(Mesh{"m", c.mesh, {}});
  if (!c.to_device_ids.empty()) m.add_mesh(Mesh{"n", c.mesh, c.to_device_ids});
  build_function(m, "f", [&](FunctionBuilder& f) {
    Tensor x = f.param(f32(c.shape), c.from);
    Sharding to = c.to;
    if (!c.to_device_ids.empty()) to.mesh = "n";
    return constrain(x, to);  // the result keeps the constraint's layout: the reshard is the only move
  });
  Literal x = testing::random_literal(f32(c.shape), seed);
  Literal want = interp::evaluate(m, "f", {x})[0];
  Session s = Session::host(m.meshes.at(0).num_devices());
  CompiledProgram p = s.compile(m, "f");
  Literal got = s.run_sharded(p, {x})[0];
  for (int64_t i = 0; i < want.num_elements(); ++i)
    ASSERT_TRUE(std::abs(got.get_double(i) - want.get_double(i)) <= kTolerance * (1 + std::abs(want.get_double(i))))
        << what << ": element " << i << ": " << got.get_double(i) << " against " << want.get_double(i) << "\n"
        << p.report().to_string();
  inspect(p);
}

// The sharded run equals the unsharded one, and the report counts `bytes` per device.
void expect_reshard(const Case& c, int64_t bytes) {
  run_reshard(c, 3, c.name, [&](const CompiledProgram& p) {
    EXPECT_EQ(p.report().bytes_per_device(), bytes) << c.name << "\n" << p.report().to_string();
  });
}
void expect_reshard(const Case& c) { expect_reshard(c, c.shardy_bytes); }

TEST(ReshardPlan, MovesAsFewBytesAsShardy) {
  std::vector<MeshAxis> m3 = {{"x", 2}, {"y", 2}, {"z", 2}}, m424 = {{"x", 4}, {"y", 2}, {"z", 4}};
  std::vector<Case> cases = {
      // two axes move between dimensions in one all_to_all (not two, nor a gather and a slice)
      {"all_to_all of two axes", m3, {16, 8, 8}, on({{"x"}, {}, {"y", "z"}}), on({{"x"}, {"y", "z"}, {}}), 384},
      // only the minor part of an axis is gathered
      {"gather a sub-axis", {{"x", 2}, {"y", 8}}, {16, 8}, on({{"y"}, {"x"}}), on({{sub("y", 1, 4)}, {"x"}}), 32},
      // the new axis is sliced first, so the gather carries smaller pieces
      {"slice before gather", {{"x", 2}, {"y", 2}}, {16, 8}, on({{"x"}, {}}), on({{}, {"y"}}), 128},
      // the minor axis of a dimension moves to another
      {"all_to_all of the minor axis", {{"x", 2}, {"y", 2}}, {8, 8}, on({{"x", "y"}, {}}), on({{"x"}, {"y"}}), 32},
      // axes reordered within a dimension: each device takes its piece from another
      {"reorder within a dimension", {{"x", 2}, {"y", 2}}, {8, 8}, on({{"x", "y"}, {}}), on({{"y", "x"}, {}}), 64},
  };
  for (const Case& c : cases) expect_reshard(c);
}

// Layouts that do not nest (src/spmd/reshard_direct.h): a dimension split unevenly, or meshes with
// other device ids. Each device takes the blocks of its piece it lacks in rounds of
// collective_permute; the bytes below are counted by hand from the blocks and rounds (noted per
// case), and never exceed what Shardy's expected collectives move.
TEST(ReshardPlan, DirectBlocksWhereLayoutsDoNotNest) {
  std::vector<MeshAxis> m424 = {{"x", 4}, {"y", 2}, {"z", 4}}, m4 = {{"x", 2}, {"y", 2}, {"z", 2}, {"w", 2}};
  struct Direct {
    Case c;
    int64_t bytes;
  };
  std::vector<Direct> cases = {
      // 8 rows over 32 devices (pieces of 1, only x=0 holds rows): each device needs 8 blocks of
      // 2x1x2 (16 B); each of the 8 holders sends its row to the 31 others, so 31 rounds.
      {{"8 rows over 32 devices to two dimensions", m424, {16, 8, 8}, on({{}, {"x", "z", "y"}, {}}),
        on({{"x", "y"}, {}, {"z"}}), 1008},
       31 * 16},
      // 8 columns over 16 devices: the 8 devices with x=0 each need 4 blocks of 8x4x1 (128 B),
      // one held: 3 rounds.
      {{"to 8 columns over 16 devices", m4, {16, 8, 8}, on({{"z"}, {"x"}, {}}), on({{}, {}, {"x", "y", "z", "w"}}), 384},
       3 * 128},
      // the same layout on a mesh with its device ids reversed, one axis gathered: each device
      // needs two blocks of 8x4 (128 B) that another holds, 2 rounds.
      // Shardy slices w's minor half onto the columns, then one all_to_all (96 B). Each device
      // needs 4 rows of each column half (4x4, 64 B) and holds one half: 1 round.
      {{"a sub-axis to the whole axis on another dimension", {{"x", 2}, {"y", 2}, {"z", 2}, {"w", 4}}, {16, 8},
        on({{}, {sub("w", 1, 2)}}), on({{"w"}, {}}), 96},
       64},
      // Shardy: two all_to_alls (640 B). Each device needs 8 blocks of 4x1x4 (64 B), one per row
      // of the source, and holds one: 7 rounds (each row has 4 holders, so no sender is busier).
      {{"one dimension to two others", m424, {16, 8, 8}, on({{}, {"y", "x"}, {}}), on({{"x"}, {}, {"y"}}), 640},
       7 * 64},
      // Shardy slices y:(1)3, permutes to [{y, x:(1)2}] and gathers x:(1)2 (96 B). The blocks go
      // to that finer layout (1 row, 48 B, one round: each row has two holders and two takers),
      // then the same gather (48 B).
      {{"an axis for a bigger one (common factor 2)", {{"x", 4}, {"y", 6}}, {12, 12}, on({{"x"}, {}}), on({{"y"}, {}}),
        96},
       48 + 48},
      // The other way (Shardy: 144 B): one row each (48 B, one round), then a gather of y:(1)3
      // to 3 rows (96 B).
      {{"an axis for a smaller one (common factor 2)", {{"x", 4}, {"y", 6}}, {12, 12}, on({{"y"}, {}}), on({{"x"}, {}}),
        144},
       48 + 96},
      {{"other device ids", {{"x", 2}, {"y", 2}}, {16, 8}, on({{"x"}, {"y"}}), on({{"x"}, {}}), 256, {3, 2, 1, 0}},
       2 * 128},
      // The target keeps z's major half z:(1)2 replicated; the blocks go to the target with it
      // added to the rows, [{x, z:(2)2, w, z:(1)2}, {}, {y}] (1x8x4), then a gather of z:(1)2
      // (128 B). 8 rows over 16 shards: only z < 2 holds a row, and each holder's row is needed by
      // the 16 devices of its x (one itself): 15 rounds of 1x1x4 (16 B). Before the finer
      // layout could use the free half of an axis the target uses in part, the blocks went to
      // the target itself: 15 rounds of 2x1x4 (480 B). Shardy's all_to_all sequence (352 B as
      // the report counts it) is no exchange of these layouts (its first step needs rows that
      // no device of its group holds: tests/conformance/shardy_reshard_bytes_test.cpp).
      {{"a free half of an axis the target uses in part", {{"x", 2}, {"y", 2}, {"z", 4}, {"w", 2}}, {16, 8, 8},
        on({{"x"}, {"z", "w", "y"}, {}}), on({{"x", sub("z", 2, 2), "w"}, {}, {"y"}}), 480},
       15 * 16 + 128},
  };
  for (const Direct& d : cases) {
    EXPECT_LE(d.bytes, d.c.shardy_bytes) << d.c.name;
    expect_reshard(d.c, d.bytes);
  }
}

// Random pairs of layouts (dimensions of sizes that rarely divide, whole axes and halves of
// axes, a second mesh with its device ids shuffled): every reshard gives the unsharded value, and
// enough of them take the direct blocks (the only path for most uneven pairs), some through a
// finer layout and a gather, that a wrong block offset, round or gathered atom would show.
TEST(ReshardPlan, RandomLayoutPairsEqualUnsharded) {
  std::mt19937 rng(18);
  const std::vector<std::vector<MeshAxis>> meshes = {
      {{"x", 2}, {"y", 2}}, {{"x", 4}, {"y", 2}}, {{"x", 2}, {"y", 2}, {"z", 2}}, {{"x", 2}, {"y", 4}, {"z", 2}},
      {{"x", 4}, {"y", 3}}, {{"x", 2}, {"y", 6}}};
  const std::vector<int64_t> sizes = {1, 2, 3, 4, 5, 6, 8, 10, 12, 16};
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint32_t>(n)); };
  int direct = 0, finer = 0, cases = 500;
  for (int k = 0; k < cases; ++k) {
    const std::vector<MeshAxis>& axes = meshes[static_cast<size_t>(pick(static_cast<int64_t>(meshes.size())))];
    const size_t rank = static_cast<size_t>(1 + pick(3));
    std::vector<int64_t> shape;
    for (size_t d = 0; d < rank; ++d) shape.push_back(sizes[static_cast<size_t>(pick(static_cast<int64_t>(sizes.size())))]);
    // Each axis (or one half of an axis of 4) goes to a random dimension or none, in random order.
    auto layout = [&]() {
      std::vector<AxisRef> atoms;
      for (const MeshAxis& a : axes) {
        if (a.size == 4 && pick(2) == 0) atoms.push_back(sub(a.name.c_str(), pick(2) == 0 ? 1 : 2, 2));
        else atoms.push_back(AxisRef(a.name));
      }
      std::shuffle(atoms.begin(), atoms.end(), rng);
      std::vector<DimSharding> dims(rank);
      for (const AxisRef& a : atoms) {
        int64_t d = pick(static_cast<int64_t>(rank) + 1);
        if (d < static_cast<int64_t>(rank)) dims[static_cast<size_t>(d)].axes.push_back(a);
      }
      return on(dims);
    };
    Case c{fmt::format("random pair {}", k), axes, shape, layout(), layout(), 0};
    if (pick(3) == 0) {
      int64_t n = 1;
      for (const MeshAxis& a : axes) n *= a.size;
      for (int64_t i = 0; i < n; ++i) c.to_device_ids.push_back(i);
      std::shuffle(c.to_device_ids.begin(), c.to_device_ids.end(), rng);
    }
    std::string what = fmt::format("{}: {} -> {}{}", c.name, text(c.from), text(c.to),
                                   c.to_device_ids.empty() ? "" : " (other device ids)");
    bool blocks = false, gathers = false;
    run_reshard(c, static_cast<uint64_t>(k), what, [&](const CompiledProgram& p) {
      for (const auto& r : p.report().collectives) {
        blocks = blocks || r.forced_by.find("blocks between devices") != std::string::npos;
        gathers = gathers || (blocks && r.kind == "all_gather");
      }
    });
    direct += blocks;
    finer += gathers;
  }
  EXPECT_GE(direct, cases / 10) << "too few random pairs took the direct reshard to test it";
  EXPECT_GE(finer, 5) << "too few random pairs sent blocks to a finer layout, then gathered";
  std::cout << direct << " of " << cases << " random pairs took the direct reshard, " << finer << " through a finer layout\n";
}

}  // namespace
}  // namespace tessera::runtime
