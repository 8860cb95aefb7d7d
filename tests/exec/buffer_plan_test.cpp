// The buffer plan (exec/buffer_plan.h): values live at the same step never share bytes, values
// that are not may, a value may take the storage of one dying where it is defined, and the arena
// of a small function is exactly what its live values need.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "exec/buffer_plan.h"
#include "exec/executable.h"
#include "exec/fusion.h"
#include "interp/interpreter.h"
#include "ir/builder.h"

namespace tessera::exec {
namespace {

constexpr int64_t kA = BufferPlan::kAlign;

TEST(BufferPlan, ValuesLiveTogetherNeverShareAndOthersDo) {
  // a: steps 0-1, b: 1-2, c: 2-3: a and c may share, b meets both.
  std::vector<LiveRange> v = {{100, 0, 1}, {100, 1, 2}, {100, 2, 3}};
  BufferPlan p = plan_buffers(v);
  EXPECT_EQ(p.offsets[0], p.offsets[2]);
  EXPECT_NE(p.offsets[0], p.offsets[1]);
  EXPECT_EQ(p.bytes, 2 * 2 * kA);  // 100 bytes round up to 128
}

TEST(BufferPlan, AResultTakesTheStorageOfAnOperandDyingAtItsStep) {
  std::vector<LiveRange> v = {{256, 0, 1}, {256, 1, 2, 0}};
  BufferPlan p = plan_buffers(v);
  EXPECT_EQ(p.offsets[1], p.offsets[0]);
  EXPECT_EQ(p.bytes, 256);
  v[1].over = -1;  // without the hint they meet at step 1
  EXPECT_EQ(plan_buffers(v).bytes, 512);
}

TEST(BufferPlan, RandomRangesNeverOverlapInMemoryWhileLive) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<LiveRange> v;
    for (int i = 0; i < 40; ++i) {
      uint32_t first = rng() % 30, len = rng() % 8;
      v.push_back({static_cast<int64_t>(rng() % 5000), first, first + len});
    }
    // Some values may take the storage of one of their size dying where they are defined.
    for (size_t i = 0; i < v.size(); ++i)
      for (size_t j = 0; j < v.size(); ++j)
        if (j != i && v[j].last == v[i].first && v[j].first < v[i].first && rng() % 2 == 0) {
          v[i].bytes = v[j].bytes;
          v[i].over = static_cast<int64_t>(j);
          break;
        }
    BufferPlan p = plan_buffers(v);
    // The bytes live at the busiest step: a lower bound of the arena (a value written over
    // another at the step that defines it shares its bytes there).
    int64_t most_live = 0;
    for (uint32_t step = 0; step < 40; ++step) {
      int64_t live = 0;
      for (size_t i = 0; i < v.size(); ++i) {
        const LiveRange& r = v[i];
        bool shares = r.over >= 0 && r.first == step && p.offsets[i] == p.offsets[static_cast<size_t>(r.over)];
        if (r.first <= step && step <= r.last && !shares) live += (std::max<int64_t>(r.bytes, 1) + kA - 1) / kA * kA;
      }
      most_live = std::max(most_live, live);
    }
    EXPECT_GE(p.bytes, most_live);
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_EQ(p.offsets[i] % kA, 0);
      EXPECT_LE(p.offsets[i] + v[i].bytes, p.bytes);
      for (size_t j = i + 1; j < v.size(); ++j) {
        bool live_together = v[i].first <= v[j].last && v[j].first <= v[i].last;
        bool overlap = p.offsets[i] < p.offsets[j] + std::max<int64_t>(v[j].bytes, 1) &&
                       p.offsets[j] < p.offsets[i] + std::max<int64_t>(v[i].bytes, 1);
        bool taken = (v[i].over == static_cast<int64_t>(j) || v[j].over == static_cast<int64_t>(i)) &&
                     p.offsets[i] == p.offsets[j];  // written element by element over the other
        EXPECT_FALSE(live_together && overlap && !taken) << "round " << round << ", values " << i << " and " << j;
      }
    }
  }
}

TEST(BufferPlan, ArenaAndPeakOfAChainAreExact) {
  using namespace tessera::ir;
  Module m;
  Function& fn = build_function(m, "f", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({256}));
    Tensor a = x + x;
    Tensor b = a * a;
    return b - a;  // b dies here: its storage takes the result
  });
  CompileOptions o{&m};
  o.planner = nullptr;  // every op a step of its own
  auto e = Executable::compile(fn, o);
  ASSERT_TRUE(e->planned());
  // a and b live together (1 KiB each); the result goes over b.
  EXPECT_EQ(e->arena_bytes(), 2048);
  // The arena, the argument; the result is copied into the argument's buffer.
  EXPECT_EQ(e->peak_bytes(), 2048 + 1024);
  auto context = e->make_context();
  EXPECT_EQ(context->arena_bytes(), 2048);
  Literal x = Literal::from_doubles(f32({256}), std::vector<double>(256, 1.5));
  for (int run = 0; run < 3; ++run) {
    std::vector<Literal> out = e->run({x}, interp::Options{}, *context);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].get_double(255), 9.0 - 3.0);
    EXPECT_FALSE(out[0].is_view());
  }
  // A lent argument (a view) is read, never written: the result goes to a fresh buffer.
  Literal lent = Literal::view(x.type(), x.bytes().data());
  std::vector<Literal> out = e->run({std::move(lent)}, interp::Options{}, *context);
  EXPECT_EQ(out[0].get_double(0), 6.0);
  EXPECT_EQ(x.get_double(0), 1.5);
  EXPECT_FALSE(out[0].is_view());
}

// A slice of one contiguous run of a value (the pieces of a combined all_reduce) is a view of the
// value's buffer, as a reshape is; a strided one, or one cutting an inner dimension, is copied.
// The operands of a concatenation along its outermost dimension are computed in place in its
// result (the gradients a combined all_reduce reads), but not one named twice. The interpreter's
// bits, run after run.
TEST(BufferPlan, ContiguousSlicesAndConcatenatedOperandsAreViews) {
  using namespace tessera::ir;
  Module m;
  Function& fn = build_function(m, "f", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({64})), y = f.param(f32({4, 16}));
    Tensor twice = x * 3.0;
    Tensor flat = concatenate({reshape(x + x, {64}), reshape(y * y, {64}), reshape(x - 1.0, {64})}, 0);
    Tensor again = concatenate({twice, x, twice}, 0);  // x a parameter, `twice` named twice: copied
    Tensor first = reshape(slice(flat, {0}, {64}), {4, 16});
    Tensor second = reshape(slice(flat, {64}, {128}), {4, 16});
    Tensor third = slice(reshape(flat, {12, 16}), {8, 0}, {12, 16});  // a reshape's view, sliced
    Tensor rows = slice(reshape(flat, {12, 16}), {0, 3}, {12, 5});     // an inner cut: copied
    Tensor strided = slice(flat, {1}, {128}, {2});                     // copied
    return std::vector<Tensor>{second - first, reshape(third, {4, 16}) + first, rows * 2.0, strided + 1.0, again};
  });
  CompileOptions o{&m};
  o.planner = nullptr;  // every op a step of its own
  auto e = Executable::compile(fn, o);
  ASSERT_TRUE(e->planned());
  EXPECT_EQ(e->stats().views, 3u /* slices */ + 8u /* reshapes */ + 3u /* concatenated */);
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<double> xs(64), ys(64);
  for (double& v : xs) v = u(rng);
  for (double& v : ys) v = u(rng);
  std::vector<Literal> in = {Literal::from_doubles(f32({64}), xs), Literal::from_doubles(f32({4, 16}), ys)};
  std::vector<Literal> want = interp::evaluate(m, "f", in);
  auto context = e->make_context();
  for (int run = 0; run < 3; ++run) {
    std::vector<Literal> got = e->run(in, interp::Options{}, *context);
    ASSERT_EQ(got.size(), want.size());
    for (size_t r = 0; r < want.size(); ++r) EXPECT_EQ(got[r], want[r]) << "run " << run << ", result " << r;
  }
}

// run_into on an optimizer-like step (the new parameter and moment), with the fusion planner on and
// off: both results computed in their donors' buffers (true aliasing), the interpreter's bits, the
// donated arguments' own buffers handed back with the results, and the lent argument handed back as
// it was, run after run.
TEST(BufferPlan, DonatedArgumentsComeBackInTheirOwnBuffers) {
  using namespace tessera::ir;
  for (bool fusion : {false, true}) {
    SCOPED_TRACE(fusion ? "fusion on" : "fusion off");
    Module m;
    Function& fn = build_function(m, "step", [](FunctionBuilder& f) {
      Tensor p = f.param(f32({4096})), mom = f.param(f32({4096})), g = f.param(f32({4096}));
      Tensor mom2 = mom * 0.9 + g * 0.1;
      Tensor p2 = p - mom2 * 0.01;
      return std::vector<Tensor>{p2, mom2};
    });
    CompileOptions o{&m};
    if (!fusion) o.planner = nullptr;
    auto e = Executable::compile(fn, o);
    ASSERT_TRUE(e->planned());
    EXPECT_EQ(e->stats().in_donor, 2u) << "both results computed in their donors' buffers";
    auto context = e->make_context();
    std::vector<Literal> x;
    for (int i = 0; i < 3; ++i) {
      std::vector<double> v(4096);
      for (size_t k = 0; k < v.size(); ++k) v[k] = 0.001 * static_cast<double>((k * (7 + i)) % 101) - 0.05;
      x.push_back(Literal::from_doubles(f32({4096}), v));
    }
    std::vector<Literal> want = interp::evaluate(fn, x);
    std::vector<Literal> args = x, out;
    const std::byte* p_storage = args[0].bytes().data();
    const std::byte* m_storage = args[1].bytes().data();
    std::vector<uint8_t> lent = {0, 0, 1};  // the gradient is the caller's
    for (int run = 0; run < 3; ++run) {
      e->run_into(args, lent, out, interp::Options{}, *context);
      ASSERT_EQ(out.size(), 2u);
      EXPECT_EQ(out[0], want[0]) << "run " << run;
      EXPECT_EQ(out[1], want[1]) << "run " << run;
      EXPECT_EQ(out[0].bytes().data(), p_storage) << "the parameter's own buffer";
      EXPECT_EQ(out[1].bytes().data(), m_storage) << "the moment's own buffer";
      EXPECT_EQ(args[2], x[2]) << "the lent gradient is handed back as it was";
      // The same step again from the same values, in the same buffers.
      std::memcpy(out[0].bytes().data(), x[0].bytes().data(), x[0].bytes().size());
      std::memcpy(out[1].bytes().data(), x[1].bytes().data(), x[1].bytes().size());
      args[0] = std::move(out[0]);
      args[1] = std::move(out[1]);
      out.clear();
    }
  }
}

// AdamW's update (nn/optimizer.cpp's expression) as one loop with three results: the new moments
// m and v ride with the parameter's update (exec/fusion_riders.h), each computed in its donor's
// buffer, with the reference interpreter's bits, run after run. Before riders it ran as three loops
// (m, v, then p reading m and v back). m is also read after the loop by an op of its own (a
// transpose, returned), which finds it stored.
TEST(BufferPlan, AdamWUpdatesPMAndVInOneLoop) {
  using namespace tessera::ir;
  const std::vector<int64_t> shape = {64, 300};  // past the fusion minimum
  Module m;
  Function& fn = build_function(m, "step", [&](FunctionBuilder& f) {
    Tensor p = f.param(f32(shape)), mom = f.param(f32(shape)), vel = f.param(f32(shape)), g = f.param(f32(shape));
    Tensor scalars = f.param(f32({3}));
    auto scalar = [&](int64_t i) { return reshape(slice(scalars, {i}, {i + 1}), {}); };
    auto full = [&](const Tensor& x) { return broadcast_in_dim(x, shape, {}); };
    Tensor m2 = mom * 0.9 + g * 0.1;
    Tensor v2 = vel * 0.999 + g * 0.001 * g;
    Tensor denom = sqrt(v2) / full(scalar(2)) + 1e-8;
    Tensor p2 = p * full(scalar(0)) - full(scalar(1)) * (m2 / denom);
    return std::vector<Tensor>{p2, m2, v2, transpose(m2, {1, 0})};
  });
  auto e = Executable::compile(fn, CompileOptions{&m});
  ASSERT_TRUE(e->planned());
  EXPECT_EQ(e->stats().in_donor, 3u) << "p, m and v computed in their donors' buffers";
  EXPECT_EQ(e->stats().fused, 1u) << "one loop for p, m and v";
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<Literal> x;
  for (int i = 0; i < 4; ++i) {
    std::vector<double> v(static_cast<size_t>(shape[0] * shape[1]));
    for (double& d : v) d = i == 2 ? std::fabs(u(rng)) * 1e-3 : u(rng);  // the second moment is >= 0
    x.push_back(Literal::from_doubles(f32(shape), v));
  }
  x.push_back(Literal::from_doubles(f32({3}), std::vector<double>{0.99, 1e-3, 0.3}));
  std::vector<Literal> want = interp::evaluate(fn, x);  // the reference kernels
  auto context = e->make_context();
  std::vector<Literal> args = x, out;
  const std::byte* storage[3] = {args[0].bytes().data(), args[1].bytes().data(), args[2].bytes().data()};
  std::vector<uint8_t> lent = {0, 0, 0, 1, 1};
  for (int run = 0; run < 3; ++run) {
    e->run_into(args, lent, out, interp::Options{}, *context);
    ASSERT_EQ(out.size(), 4u);
    for (size_t r = 0; r < 4; ++r) EXPECT_EQ(out[r], want[r]) << "result " << r << ", run " << run;
    for (size_t r = 0; r < 3; ++r) {
      EXPECT_EQ(out[r].bytes().data(), storage[r]) << "result " << r << " in its donor's own buffer";
      std::memcpy(out[r].bytes().data(), x[r].bytes().data(), x[r].bytes().size());  // the same step again
      args[r] = std::move(out[r]);
    }
    out.clear();
  }
}

}  // namespace
}  // namespace tessera::exec
