// Reshards between even layouts of one mesh (src/spmd/reshard_plan.h): each pair below, taken from
// the moves Shardy's reshard_to_collectives makes, must give the unsharded value on every device
// (sharded run against the interpreter) and move exactly the bytes per device of Shardy's
// sequence for it (counted as the partition report counts: an all_gather what a device receives,
// an all_to_all (n-1)/n of its operand, a collective_permute its operand, a slice nothing).
#include <gtest/gtest.h>

#include <cmath>

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
};

Sharding on(std::vector<DimSharding> dims) { return Sharding{"m", std::move(dims), {}, {}}; }
AxisRef sub(const char* name, int64_t pre, int64_t size) { return AxisRef(name, SubAxis{pre, size}); }

void expect_reshard(const Case& c) {
  Module m;
  m.add_mesh(Mesh{"m", c.mesh, {}});
  build_function(m, "f", [&](FunctionBuilder& f) {
    Tensor x = f.param(f32(c.shape), c.from);
    return constrain(x, c.to) * 2.0;  // the product keeps the layout: the reshard is the only move
  });
  Literal x = testing::random_literal(f32(c.shape), 3);
  Literal want = interp::evaluate(m, "f", {x})[0];
  Session s = Session::host(m.meshes.at(0).num_devices());
  CompiledProgram p = s.compile(m, "f");
  Literal got = s.run_sharded(p, {x})[0];
  for (int64_t i = 0; i < want.num_elements(); ++i)
    ASSERT_TRUE(std::abs(got.get_double(i) - want.get_double(i)) <= kTolerance * (1 + std::abs(want.get_double(i))))
        << c.name << ": element " << i << ": " << got.get_double(i) << " against " << want.get_double(i);
  EXPECT_EQ(p.report().bytes_per_device(), c.shardy_bytes) << c.name << "\n" << p.report().to_string();
}

TEST(ReshardPlan, MovesAsFewBytesAsShardy) {
  std::vector<MeshAxis> m3 = {{"x", 2}, {"y", 2}, {"z", 2}}, m424 = {{"x", 4}, {"y", 2}, {"z", 4}};
  std::vector<Case> cases = {
      // two axes move between dimensions in one all_to_all (not two, nor a gather and a slice)
      {"all_to_all of two axes", m3, {16, 8, 8}, on({{"x"}, {}, {"y", "z"}}), on({{"x"}, {"y", "z"}, {}}), 384},
      // only the minor part of an axis is gathered
      {"gather a sub-axis", {{"x", 2}, {"y", 8}}, {16, 8}, on({{"y"}, {"x"}}), on({{sub("y", 1, 4)}, {"x"}}), 32},
      // a free axis is sliced onto the source dimension before the all_to_all carries it
      {"slice on the source dimension first", {{"x", 2}, {"y", 2}, {"z", 2}, {"w", 4}}, {16, 8},
       on({{}, {sub("w", 1, 2)}}), on({{"w"}, {}}), 96},
      // the new axis is sliced first, so the gather carries smaller pieces
      {"slice before gather", {{"x", 2}, {"y", 2}}, {16, 8}, on({{"x"}, {}}), on({{}, {"y"}}), 128},
      // two axes leave one dimension for two others
      {"two all_to_alls", m424, {16, 8, 8}, on({{}, {"y", "x"}, {}}), on({{"x"}, {}, {"y"}}), 640},
      // the minor axis of a dimension moves to another
      {"all_to_all of the minor axis", {{"x", 2}, {"y", 2}}, {8, 8}, on({{"x", "y"}, {}}), on({{"x"}, {"y"}}), 32},
      // axes reordered within a dimension: each device takes its piece from another
      {"reorder within a dimension", {{"x", 2}, {"y", 2}}, {8, 8}, on({{"x", "y"}, {}}), on({{"y", "x"}, {}}), 64},
  };
  for (const Case& c : cases) expect_reshard(c);
}

}  // namespace
}  // namespace tessera::runtime
