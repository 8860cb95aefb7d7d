// Rank-local buffers on host devices (session.h): stage_pieces makes each device's piece alone, the
// same bits as stage's split of the whole array (uneven, padded pieces included); local_bytes
// counts the pieces held; fetch and fetch_to assemble the whole array; replicated reads a
// replicated result where it is and refuses a split one; the ring model counts a program's
// collectives. The same over MPI ranks is in tests/comm/mpi/mpi_session_test.cpp.
#include <gtest/gtest.h>

#include "common/error_of.h"
#include "ir/builder.h"
#include "runtime/layout.h"
#include "runtime/session.h"

namespace tessera::runtime {
namespace {

using namespace tessera::ir;

Literal ramp(const Type& t, double scale) {
  Literal l(t);
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_double(i, scale * double(i) - 3);
  return l;
}

// The box [start, start + extent) of a 2-D array, copied out of it.
Literal slice2(const Literal& whole, const std::vector<int64_t>& start, const std::vector<int64_t>& extent) {
  Literal out(Type(whole.element(), extent));
  copy_box(whole, start, out, {0, 0}, extent);
  return out;
}

void build(Module& m) {
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  Function& fn = build_function(m, "f", [](FunctionBuilder& f) {
    Tensor w = f.param(f32({6, 3}), Sharding{"m", {{"data"}, {}}, {}, {}});  // 6 rows over 4: padded
    Tensor v = f.param(f32({8, 2}), Sharding{"m", {{}, {}}, {}, {}});        // replicated
    return std::vector<Tensor>{w * 2.0, ir::reduce_sum(w * 1.0, {0, 1}) + ir::reduce_sum(v, {0, 1})};
  });
  fn.set_result_sharding(0, Sharding{"m", {{"data"}, {}}, {}, {}});  // stays split
}

TEST(ShardedBuffer, PiecesMadeAloneAreTheSplitsBitwise) {
  Module m;
  build(m);
  Session s = Session::host(4);
  ShardedProgram p = s.sharded_program(s.compile(m, "f"));
  Literal w = ramp(f32({6, 3}), 0.25), v = ramp(f32({8, 2}), 1.5);
  std::vector<std::vector<int64_t>> asked;
  ShardedBuffer made = p.stage_pieces(0, [&](const std::vector<int64_t>& start, const std::vector<int64_t>& extent) {
    asked.push_back(start);
    return slice2(w, start, extent);
  });
  ShardedBuffer split = p.stage(0, w);
  ASSERT_EQ(made.pieces->size(), 4u);
  EXPECT_EQ(asked, (std::vector<std::vector<int64_t>>{{0, 0}, {2, 0}, {4, 0}, {6, 0}}));  // device 3 holds only padding
  for (size_t d = 0; d < 4; ++d) {
    EXPECT_EQ(to_string((*made.pieces)[d].type()), "tensor<2x3xf32>") << "device " << d;
    EXPECT_TRUE((*made.pieces)[d] == (*split.pieces)[d]) << "device " << d;
  }
  EXPECT_EQ(made.local_bytes(), 4 * 2 * 3 * 4);
  EXPECT_TRUE(p.fetch(made) == w);
  std::optional<Literal> at0 = p.fetch_to(made, 0);
  ASSERT_TRUE(at0.has_value());
  EXPECT_TRUE(*at0 == w);

  // A piece of the wrong shape is refused, naming the parameter and its box.
  std::string e = testing::error_of([&] {
    p.stage_pieces(0, [](const std::vector<int64_t>&, const std::vector<int64_t>&) { return Literal(f32({2, 2})); });
  });
  EXPECT_NE(e.find("the piece of parameter 0 of @f at [0, 0] is tensor<2x2xf32>, expected tensor<2x3xf32>"),
            std::string::npos) << e;
  EXPECT_NE(testing::error_of([&] { p.fetch_to(made, 1); }).find("rank 1 is not one of the session's 1 ranks"),
            std::string::npos);
}

TEST(ShardedBuffer, ReplicatedReadsTheProgramsOwnReduction) {
  Module m;
  build(m);
  Session s = Session::host(4);
  ShardedProgram p = s.sharded_program(s.compile(m, "f"));
  Literal w = ramp(f32({6, 3}), 0.25), v = ramp(f32({8, 2}), 1.5);
  std::vector<ShardedBuffer> in = {p.stage(0, w), p.stage(1, v)};
  std::vector<ShardedBuffer> out = p.execute(in);
  double want = 0;
  for (int64_t i = 0; i < w.num_elements(); ++i) want += w.get_double(i);
  for (int64_t i = 0; i < v.num_elements(); ++i) want += v.get_double(i);
  Literal loss = p.replicated(out[1]);
  EXPECT_EQ(to_string(loss.type()), "tensor<f32>");
  EXPECT_NEAR(loss.get_double(0), want, 1e-4 * std::abs(want));
  EXPECT_TRUE(loss == p.fetch(out[1]));
  std::string e = testing::error_of([&] { p.replicated(out[0]); });
  EXPECT_NE(e.find("the tensor<6x3xf32> array is split over the devices of mesh @m (device 0 holds tensor<2x3xf32>)"),
            std::string::npos) << e;
  // The replicated input is whole on every device: 4 copies of 64 bytes, made once.
  EXPECT_EQ(in[1].local_bytes(), 4 * 8 * 2 * 4);
  int calls = 0;
  ShardedBuffer made = p.stage_pieces(1, [&](const std::vector<int64_t>& start, const std::vector<int64_t>& extent) {
    ++calls;
    return slice2(v, start, extent);
  });
  EXPECT_EQ(calls, 1);
  for (size_t d = 0; d < 4; ++d) EXPECT_TRUE((*made.pieces)[d] == v) << "device " << d;
}

TEST(ShardedBuffer, RingModelOfAProgramsCollectives) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  build_function(m, "sum", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 4}), Sharding{"m", {{"data"}, {}}, {}, {}});
    return std::vector<Tensor>{ir::reduce_sum(x, {0, 1})};
  });
  Function& g = build_function(m, "gather", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 4}), Sharding{"m", {{"data"}, {}}, {}, {}});
    return std::vector<Tensor>{x * 1.0};
  });
  g.set_result_sharding(0, Sharding{"m", {{}, {}}, {}, {}});  // whole: an all-gather of the rows
  Session s = Session::host(4);
  // The partial sums are all-reduced over 4 devices: a scalar, 2·4·3/4 bytes.
  EXPECT_EQ(ring_model_bytes(s.compile(m, "sum")), 6);
  // Each device's 2x4 rows go to the 3 others: 3·32 bytes.
  EXPECT_EQ(ring_model_bytes(s.compile(m, "gather")), 96);
}

}  // namespace
}  // namespace tessera::runtime
