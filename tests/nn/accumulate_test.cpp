// Gradient accumulation: the step over k microbatches equals the full batch's step (loss and every
// gradient), unsharded and data parallel on 4 host devices, and holds fewer activation bytes at
// once (the peak live bytes of the local program, as the partitioner's report measures them).
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "interp/interpreter.h"
#include "nn/capture.h"
#include "nn/plan.h"
#include "nn_test_util.h"
#include "runtime/session.h"
#include "spmd/report.h"

namespace tessera::nn {
namespace {

constexpr double kTolerance = 1e-5;

std::vector<ir::Literal> step_inputs(const Config& c, const Programs& p) {
  std::vector<ir::Literal> in = init_parameters(c, 3);
  testing::Batch b = testing::make_batch(c, 9);
  in.push_back(b.tokens);
  in.push_back(b.targets);
  (void)p;
  return in;
}

// A wrong smaller entry beside a large one: 2 % of the array's scale, but 10 % of itself.
TEST(RelativeError, JudgesEntriesAboveTheFloorByTheirOwnSize) {
  ir::Literal want(ir::f32({3})), got(ir::f32({3}));
  for (auto [i, w, g] : {std::tuple{0, 100.0, 100.0}, {1, 20.0, 22.0}, {2, 1e-5, 2e-5}}) {
    want.set_double(i, w);
    got.set_double(i, g);
  }
  EXPECT_NEAR(testing::relative_error(got, want), 0.1, 1e-6);
  got.set_double(1, 20.0);  // the entry under the floor (1e-5) counts against the array's scale only
  EXPECT_NEAR(testing::relative_error(got, want), 1e-7, 1e-9);
  got.set_double(0, NAN);
  EXPECT_EQ(testing::relative_error(got, want), INFINITY);
}

TEST(Accumulate, FourMicrobatchesEqualTheFullBatch) {
  Config c = testing::acceptance_config();
  CausalLM model(c);
  ir::Module whole("whole"), parts("parts");
  Programs pw = capture(whole, TrainingStep{model});
  Programs pp = capture(parts, TrainingStep{model}.accumulate(4));
  std::vector<ir::Literal> in = step_inputs(c, pw);
  interp::Options o;
  std::vector<ir::Literal> want = interp::evaluate(whole, pw.step, in), got = interp::evaluate(parts, pp.step, in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(testing::relative_error(got[i], want[i]), kTolerance) << "result " << i;
  // Each microbatch step holds a quarter of the activations.
  EXPECT_LT(spmd::peak_live_bytes(*parts.find_function("step_micro")), spmd::peak_live_bytes(*whole.find_function("step")));
}

// Under data parallel and under zero1 (whose gradients come out split: reduce-scatters).
TEST(Accumulate, DataParallelMicrobatchesStaySplit) {
  Config c = testing::acceptance_config();
  CausalLM model(c);
  ir::Mesh mesh{"mesh", {{"data", 4}}, {}};
  ir::Module whole("whole");
  Programs pw = capture(whole, TrainingStep{model});
  std::vector<ir::Literal> in = step_inputs(c, pw);
  std::vector<ir::Literal> want = interp::evaluate(whole, pw.step, in);
  runtime::Session s = runtime::Session::host(4);
  for (const ShardingPlan& plan : {data_parallel(mesh, "data"), zero1(mesh, "data")}) {
    SCOPED_TRACE("plan " + plan.name);
    ir::Module parts("parts");
    Programs pp = capture(parts, TrainingStep{model}.accumulate(2).sharded(plan));
    runtime::CompiledProgram p = s.compile(parts, pp.step);
    std::vector<ir::Literal> got = s.run_sharded(p, in);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(testing::relative_error(got[i], want[i]), kTolerance) << "result " << i;
    // Only gradients (and the loss) move, or, where that moves fewer bytes, the activations a
    // weight gradient's dot_general contracts over (a 32x64 activation gathered rather than a
    // 64x64 gradient all-reduced): nothing else is gathered, and the step moves less than
    // all-reducing every gradient once per microbatch (937,740 bytes per device, twice the
    // unaccumulated step).
    for (const spmd::CollectiveRecord& r : p.report().collectives)
      if (r.kind == "all_gather") {
        EXPECT_EQ(r.origin, "stablehlo.dot_general") << p.report().to_string();
      }
    EXPECT_LT(p.report().bytes_per_device(), 937740) << p.report().to_string();
  }
}

TEST(Remat, SameStepFewerLiveActivationBytes) {
  Config c = testing::acceptance_config();
  CausalLM model(c);
  ir::Module keep("keep"), remat("remat");
  Programs pk = capture(keep, TrainingStep{model});
  Programs pr = capture(remat, TrainingStep{model}.with_remat(autodiff::Remat::kSaveDots));
  std::vector<ir::Literal> in = step_inputs(c, pk);
  std::vector<ir::Literal> want = interp::evaluate(keep, pk.step, in), got = interp::evaluate(remat, pr.step, in);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << "result " << i;
  int64_t k = spmd::peak_live_bytes(*keep.find_function("step")), r = spmd::peak_live_bytes(*remat.find_function("step"));
  std::printf("peak live bytes of the step: %ld kept, %ld with remat\n", long(k), long(r));
  EXPECT_LT(r, k);
}

TEST(Accumulate, RefusesAPartThatDoesNotDivideTheBatch) {
  CausalLM model(testing::acceptance_config());
  EXPECT_THROW(TrainingStep{model}.accumulate(3), support::UserError);
}

}  // namespace
}  // namespace tessera::nn
