// Grad-sharding verification, on gradients reverse() makes and on hand-broken ones.
#include <gtest/gtest.h>

#include "common/error_of.h"

#include "autodiff/reverse.h"
#include "autodiff/verify_grad.h"
#include "ir/builder.h"

namespace tessera::autodiff {
namespace {

using namespace tessera::ir;

using tessera::testing::error_of;

Sharding rows() { return Sharding{"m", {{"data"}, {}}, {}, {}}; }

TEST(VerifyGrad, ReverseKeepsShardingsAndUsesAdjointCollectives) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  Function& f = build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({8, 4}), rows());
    Tensor g = all_gather(x, 0, {{0, 1, 2, 3}});
    return sum(tanh(g));
  });
  Function& g = reverse(m, f);
  EXPECT_EQ(error_of([&] { verify_gradient_shardings(f, g, {0}); }), "<no error>");
}

TEST(VerifyGrad, MissingConstraintIsNamed) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  Function& f = build_function(m, "f", [](FunctionBuilder& b) { return sum(b.param(f32({8, 4}), rows())); });
  Function& fake = build_function(m, "fake", [](FunctionBuilder& b) { return b.param(f32({8, 4})); });
  EXPECT_EQ(error_of([&] { verify_gradient_shardings(f, fake, {0}); }),
            "@fake: the gradient of parameter 0 of @f is not constrained to the parameter's sharding");
}

TEST(VerifyGrad, MissingAdjointCollectiveIsNamed) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  Function& f = build_function(m, "f", [](FunctionBuilder& b) {
    return sum(all_gather(b.param(f32({2, 4})), 0, {{0, 1, 2, 3}}));
  });
  // A "gradient" that gathers again instead of reduce-scattering.
  Function& fake = build_function(m, "fake", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({2, 4}));
    all_gather(x, 0, {{0, 1, 2, 3}});
    return x;
  });
  EXPECT_EQ(error_of([&] { verify_gradient_shardings(f, fake, {0}); }),
            "@fake has 0 stablehlo.reduce_scatter, expected at least 1: the forward collectives of "
            "@f and the adjoints of its stablehlo.all_gather");
}

}  // namespace
}  // namespace tessera::autodiff
