// Mesh and sharding validation: each failure's exact message, and the shardings that must pass.
#include <gtest/gtest.h>

#include "common/error_of.h"

#include "ir/sharding.h"
#include "support/error.h"

namespace tessera::ir {
namespace {

using tessera::testing::error_of;

Mesh mesh_2x4() { return Mesh{"m", {{"data", 2}, {"model", 4}}, {}}; }

std::string check(const Sharding& s, Type t = f32({8, 4})) {
  return error_of([&] { validate(s, mesh_2x4(), t, "argument 0 of @f"); });
}

TEST(Mesh, Validation) {
  EXPECT_EQ(error_of([] { validate(Mesh{"m", {{"x", 0}}, {}}); }),
            "mesh @m: axis \"x\" has size 0, must be at least 1");
  EXPECT_EQ(error_of([] { validate(Mesh{"m", {{"x", 2}, {"x", 2}}, {}}); }),
            "mesh @m: axis \"x\" is declared twice");
  EXPECT_EQ(error_of([] { validate(Mesh{"m", {{"x", 4}}, {0, 1, 2}}); }),
            "mesh @m: 3 device ids for 4 devices");
  EXPECT_EQ(error_of([] { validate(Mesh{"m", {{"x", 4}}, {0, 0, 1, 2}}); }),
            "mesh @m: device ids [0, 0, 1, 2] are not a permutation of 0..3");
  EXPECT_EQ(error_of([] { validate(Mesh{"m", {{"x", 4}}, {3, 2, 1, 0}}); }), "<no error>");
  EXPECT_EQ(mesh_2x4().num_devices(), 8);
}

TEST(Sharding, ValidShardings) {
  EXPECT_EQ(check(Sharding{"m", {{"data"}, {}}, {}, {}}), "<no error>");
  EXPECT_EQ(check(Sharding{"m", {{"data", "model"}, {}}, {}, {}}), "<no error>");
  // Two halves of one axis on two dimensions do not overlap.
  EXPECT_EQ(check(Sharding{"m", {{AxisRef("model", {1, 2})}, {AxisRef("model", {2, 2})}}, {}, {}}),
            "<no error>");
  Sharding open{"m", {{"data"}, {}}, {"model"}, {}};
  open.dims[1].open = true;
  open.dims[0].priority = 1;
  EXPECT_EQ(check(open), "<no error>");
}

TEST(Sharding, WrongMesh) {
  EXPECT_EQ(check(Sharding{"n", {{}, {}}, {}, {}}),
            "sharding of argument 0 of @f: refers to mesh @n, expected @m");
}

TEST(Sharding, WrongRank) {
  EXPECT_EQ(check(Sharding{"m", {{"data"}}, {}, {}}),
            "sharding of argument 0 of @f: has 1 dimension shardings for tensor<8x4xf32> of rank 2");
}

TEST(Sharding, MissingAxis) {
  EXPECT_EQ(check(Sharding{"m", {{}, {"batch"}}, {}, {}}),
            "sharding of argument 0 of @f: dimension 1 names axis \"batch\", which is not in mesh @m "
            "(axes: data, model)");
  EXPECT_EQ(check(Sharding{"m", {{}, {}}, {"pipe"}, {}}),
            "sharding of argument 0 of @f: replicated names axis \"pipe\", which is not in mesh @m "
            "(axes: data, model)");
}

TEST(Sharding, SubAxisMustFit) {
  const std::string tail =
      ", which does not fit axis \"model\" of size 4 (need pre-size >= 1, size > 1, pre-size * size "
      "dividing 4, and size < 4)";
  EXPECT_EQ(check(Sharding{"m", {{AxisRef("model", {2, 4})}, {}}, {}, {}}),
            "sharding of argument 0 of @f: dimension 0 names sub-axis \"model\":(2)4" + tail);
  EXPECT_EQ(check(Sharding{"m", {{AxisRef("model", {1, 4})}, {}}, {}, {}}),
            "sharding of argument 0 of @f: dimension 0 names sub-axis \"model\":(1)4" + tail);
  EXPECT_EQ(check(Sharding{"m", {{AxisRef("model", {1, 3})}, {}}, {}, {}}),
            "sharding of argument 0 of @f: dimension 0 names sub-axis \"model\":(1)3" + tail);
  EXPECT_EQ(check(Sharding{"m", {{AxisRef("model", {0, 2})}, {}}, {}, {}}),
            "sharding of argument 0 of @f: dimension 0 names sub-axis \"model\":(0)2" + tail);
}

TEST(Sharding, AxisUsedTwice) {
  EXPECT_EQ(check(Sharding{"m", {{"data"}, {"data"}}, {}, {}}),
            "sharding of argument 0 of @f: axis \"data\" is used twice (dimension 0 and dimension 1)");
  EXPECT_EQ(check(Sharding{"m", {{"model"}, {AxisRef("model", {2, 2})}}, {}, {}}),
            "sharding of argument 0 of @f: axis \"model\":(2)2 is used twice (dimension 0 and "
            "dimension 1)");
  EXPECT_EQ(check(Sharding{"m", {{"data"}, {}}, {}, {"data"}}),
            "sharding of argument 0 of @f: axis \"data\" is used twice (dimension 0 and unreduced)");
}

TEST(Sharding, NegativePriority) {
  Sharding s{"m", {{"data"}, {}}, {}, {}};
  s.dims[0].priority = -1;
  EXPECT_EQ(check(s), "sharding of argument 0 of @f: dimension 0 has negative priority p-1");
}

TEST(Sharding, ShardCounts) {
  Mesh m = mesh_2x4();
  Sharding s{"m", {{"data", AxisRef("model", {1, 2})}, {}}, {}, {}};
  EXPECT_EQ(dim_shards(s, 0, m), 4);
  EXPECT_EQ(dim_shards(s, 1, m), 1);
  EXPECT_FALSE(s.is_fully_replicated());
  EXPECT_TRUE((Sharding{"m", {{}, {}}, {}, {}}.is_fully_replicated()));
}

}  // namespace
}  // namespace tessera::ir
