// Rematerialization: the backward pass computes cheap forward values again instead of keeping them
// alive, so the gradient program's peak live bytes fall while its gradients stay bit for bit the
// same (the same ops on the same values). Clones stay clones: simplification does not merge them
// back into the forward.
#include <gtest/gtest.h>

#include <random>

#include "autodiff/reverse.h"
#include "common/random_literal.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "spmd/report.h"

namespace tessera::autodiff {
namespace {

using namespace tessera::ir;

Function& deep_mlp(Module& m) {
  return build_function(m, "loss", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({64, 32}));
    std::vector<Tensor> ws;
    for (int i = 0; i < 4; ++i) ws.push_back(f.param(f32({32, 32})));
    Tensor h = x;
    for (const Tensor& w : ws) {
      Tensor z = matmul(h, w);
      h = tanh(z) * logistic(z) + h;  // elementwise values the backward reads
    }
    return sum(h * h);
  });
}

std::vector<Literal> inputs(const Function& f) { return testing::random_inputs(f, 5, -0.5, 0.5); }

TEST(Remat, SameGradientsFewerLiveBytes) {
  Module m;
  Function& loss = deep_mlp(m);
  ReverseOptions keep_options, dots_options;
  keep_options.name = "keep";
  dots_options.name = "dots";
  dots_options.remat = Remat::kSaveDots;
  Function& keep = reverse(m, loss, keep_options);
  Function& dots = reverse(m, loss, dots_options);
  std::vector<Literal> in = inputs(loss);
  std::vector<Literal> want = interp::evaluate(m, "keep", in);
  for (const char* name : {"dots"}) {
    std::vector<Literal> got = interp::evaluate(m, name, in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << name << " gradient " << i;
  }
  int64_t k = spmd::peak_live_bytes(keep), d = spmd::peak_live_bytes(dots);
  EXPECT_LT(d, k);
  // The recomputed ops are there, marked, after simplification.
  int marked = 0;
  for (const auto& op : dots.body().ops()) marked += op->attrs().has("tessera.remat") ? 1 : 0;
  EXPECT_GT(marked, 0);
  std::printf("peak live bytes: keep %ld, save dots %ld\n", long(k), long(d));
}

}  // namespace
}  // namespace tessera::autodiff
