// DESIGN.md's worked example, shared by the tests that pin its text, value and gradient: mesh @m
// with axis data=4, x f32[8,4] split by rows over "data", w f32[4,3] replicated,
// loss = sum(tanh(x·w)²), in a module named sharded_loss.
#pragma once

#include <memory>

#include "ir/builder.h"

namespace tessera::testing {

// Adds the mesh and @sharded_loss to `m` and returns the function.
inline ir::Function& build_sharded_loss(ir::Module& m) {
  using namespace tessera::ir;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  return build_function(m, "sharded_loss", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 4}), Sharding{"m", {{"data"}, {}}, {}, {}});
    Tensor w = f.param(f32({4, 3}));
    Tensor y = tanh(matmul(x, w));
    return sum(y * y);
  });
}

}  // namespace tessera::testing
