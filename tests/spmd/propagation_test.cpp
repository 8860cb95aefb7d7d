// Sharding propagation on small programs whose answer is known: layouts flow through element-wise
// ops both ways, closed dimensions keep theirs, user priorities decide conflicts (p0 first), a
// conflict without priorities keeps the common prefix (the documented rule), reshapes split axes
// into sub-axes, and a contraction's reduction factor does not leak into the result.
#include <gtest/gtest.h>

#include "common/error_of.h"
#include "ir/builder.h"
#include "spmd/propagate.h"

namespace tessera::spmd {
namespace {

using namespace tessera::ir;

DimSharding dim(std::vector<AxisRef> axes, bool open = false, std::optional<int64_t> priority = std::nullopt) {
  DimSharding d;
  d.axes = std::move(axes);
  d.open = open;
  d.priority = priority;
  return d;
}

Sharding on(std::vector<DimSharding> dims) { return Sharding{"m", std::move(dims), {}, {}}; }

std::vector<AxisRef> axes_of(const ShardingMap& sm, const Value* v, size_t d) { return sm.at(v).dims.at(d).axes; }

struct Program {
  Module m;
  Function* f = nullptr;
  Program() { m.add_mesh(Mesh{"m", {{"a", 4}, {"b", 2}}, {}}); }
  const Value* result(size_t i = 0) const { return f->body().terminator()->operand(i); }
};

TEST(Propagation, FlowsThroughElementwiseOpsBothWays) {
  Program p;
  p.f = &build_function(p.m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({8, 6}), on({dim({"a"}), dim({})}));
    Tensor y = b.param(f32({8, 6}));
    return tanh(x) + y;
  });
  ShardingMap sm = propagate(p.m, *p.f);
  EXPECT_EQ(axes_of(sm, p.f->parameter(1), 0), std::vector<AxisRef>{"a"});  // backward into y
  EXPECT_EQ(axes_of(sm, p.result(), 0), std::vector<AxisRef>{"a"});
  EXPECT_TRUE(axes_of(sm, p.result(), 1).empty());
}

TEST(Propagation, ClosedDimensionsKeepTheirLayout) {
  Program p;
  p.f = &build_function(p.m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({8, 6}), on({dim({"a"}), dim({})}));
    Tensor y = b.param(f32({8, 6}), on({dim({}), dim({})}));  // closed: whole on every device
    return x * y;
  });
  ShardingMap sm = propagate(p.m, *p.f);
  EXPECT_TRUE(axes_of(sm, p.f->parameter(1), 0).empty());
  EXPECT_EQ(axes_of(sm, p.result(), 0), std::vector<AxisRef>{"a"});
}

TEST(Propagation, UserPrioritiesDecideConflicts) {
  Program p;
  p.f = &build_function(p.m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({8, 6}), on({dim({"a"}, false, 1), dim({})}));
    Tensor y = b.param(f32({8, 6}), on({dim({"b"}, false, 0), dim({})}));
    return x + y;
  });
  ShardingMap sm = propagate(p.m, *p.f);
  EXPECT_EQ(axes_of(sm, p.result(), 0), std::vector<AxisRef>{"b"});
  // Without priorities the two disagree and the result keeps their common prefix: nothing.
  Program q;
  q.f = &build_function(q.m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({8, 6}), on({dim({"a"}), dim({})}));
    Tensor y = b.param(f32({8, 6}), on({dim({"b"}), dim({})}));
    return x + y;
  });
  ShardingMap sq = propagate(q.m, *q.f);
  EXPECT_TRUE(axes_of(sq, q.result(), 0).empty());
}

TEST(Propagation, ReshapeSplitsAnAxisIntoSubAxes) {
  Program p;
  p.f = &build_function(p.m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({8}), on({dim({"a"})}));
    return exp(reshape(x, {2, 4}));
  });
  ShardingMap sm = propagate(p.m, *p.f);
  EXPECT_EQ(axes_of(sm, p.result(), 0), (std::vector<AxisRef>{AxisRef("a", SubAxis{1, 2})}));
  EXPECT_EQ(axes_of(sm, p.result(), 1), (std::vector<AxisRef>{AxisRef("a", SubAxis{2, 2})}));
}

TEST(Propagation, ContractionsKeepReductionAxesOutOfTheResult) {
  Program p;
  p.f = &build_function(p.m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({8, 8}), on({dim({"b"}), dim({"a"})}));
    Tensor w = b.param(f32({8, 4}));
    return matmul(x, w);
  });
  ShardingMap sm = propagate(p.m, *p.f);
  EXPECT_EQ(axes_of(sm, p.f->parameter(1), 0), std::vector<AxisRef>{"a"});  // w's rows follow x's columns
  EXPECT_EQ(axes_of(sm, p.result(), 0), std::vector<AxisRef>{"b"});
  EXPECT_TRUE(axes_of(sm, p.result(), 1).empty());
}

TEST(Propagation, ImpossibleShardingsNameTheValue) {
  Program p;
  Function& f = p.m.add_function("f");
  f.add_parameter(f32({8}), on({dim({"c"})}));
  f.set_results({f.parameter(0)});
  std::string e = testing::error_of([&] { propagate(p.m, f); });
  EXPECT_NE(e.find("argument 0 of @f"), std::string::npos) << e;
  EXPECT_NE(e.find("\"c\""), std::string::npos) << e;
}


// Shardy's propagation_barrier: FORWARD lets the operand's layout reach the result and not back,
// BACKWARD the reverse, NONE neither.
TEST(Propagation, ABarrierLetsLayoutsThroughOneWayOnly) {
  for (const char* dir : {"FORWARD", "BACKWARD", "NONE"}) {
    Program p;
    p.f = &build_function(p.m, "f", [&](FunctionBuilder& b) {
      Tensor x = b.param(f32({8, 6}), on({dim({"a"}, true), dim({}, true)}));
      Tensor z = b.param(f32({8, 6}));
      Tensor forward = tanh(propagation_barrier(x, dir));
      Tensor backward = constrain(propagation_barrier(z, dir), on({dim({}), dim({"b"})}));
      return std::vector<Tensor>{forward, backward};
    });
    ShardingMap sm = propagate(p.m, *p.f);
    bool forward = std::string(dir) == "FORWARD", backward = std::string(dir) == "BACKWARD";
    EXPECT_EQ(axes_of(sm, p.result(0), 0), forward ? std::vector<AxisRef>{"a"} : std::vector<AxisRef>{}) << dir;
    EXPECT_EQ(axes_of(sm, p.f->parameter(1), 1), backward ? std::vector<AxisRef>{"b"} : std::vector<AxisRef>{}) << dir;
  }
}

// Every value of a sharding group gets the layout one of them has, though no op joins them.
TEST(Propagation, AShardingGroupLaysOutItsValuesAlike) {
  Program p;
  p.f = &build_function(p.m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({8, 6}), on({dim({"a"}), dim({})}));
    Tensor y = b.param(f32({8, 6}));
    Tensor u = exp(y);
    sharding_group(tanh(x), 3);
    sharding_group(u, 3);
    return u;
  });
  ShardingMap sm = propagate(p.m, *p.f);
  EXPECT_EQ(axes_of(sm, p.result(), 0), std::vector<AxisRef>{"a"});
  EXPECT_EQ(axes_of(sm, p.f->parameter(1), 0), std::vector<AxisRef>{"a"});  // and back into y
}

// A data-flow edge holds its result's layout (open dimensions may still grow) and passes layouts
// both ways, as the identity it is.
TEST(Propagation, ADataFlowEdgeHoldsItsLayout) {
  Program p;
  p.f = &build_function(p.m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({8, 6}));
    Tensor y = b.param(f32({8, 6}), on({dim({"a"}), dim({})}));
    return data_flow_edge(x, on({dim({}, true), dim({"b"})})) * y;
  });
  ShardingMap sm = propagate(p.m, *p.f);
  EXPECT_EQ(axes_of(sm, p.f->parameter(0), 0), std::vector<AxisRef>{"a"});
  EXPECT_EQ(axes_of(sm, p.f->parameter(0), 1), std::vector<AxisRef>{"b"});
}

}  // namespace
}  // namespace tessera::spmd
