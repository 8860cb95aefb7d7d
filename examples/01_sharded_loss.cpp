// Lesson 1: a sharded loss.
//
// A program in Tessera is written once, for whole arrays. Sharding is part of the program: we
// declare a mesh of devices and say how each argument is laid out over it. Here the mesh `m` has
// one axis, `data`, of 4 devices; x's rows are split over `data` (each device would hold 2 of the
// 8 rows) and w is replicated. Nothing about the math changes: the loss is sum(tanh(x·w)²).
//
// This lesson builds the program, prints it as StableHLO with Shardy shardings (the text JAX
// emits, so other tools can read it), and evaluates it with the reference interpreter. Later
// lessons partition it and run it on 4 devices; the numbers must not change.
#include <fmt/format.h>

#include <cmath>

#include "interp/interpreter.h"
#include "ir/builder.h"
#include "stablehlo/printer.h"

using namespace tessera;
using namespace tessera::ir;

int main() {
  Module module("sharded_loss");
  module.add_mesh(Mesh{"m", {{"data", 4}}, {}});

  Function& loss = build_function(module, "sharded_loss", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 4}), Sharding{"m", {{"data"}, {}}, {}, {}});  // rows over "data"
    Tensor w = f.param(f32({4, 3}));                                         // replicated
    Tensor y = tanh(matmul(x, w));
    return sum(y * y);
  });
  verify(module);
  fmt::print("{}\n", stablehlo::print(module));

  // Fixed inputs, so the loss can be checked against NumPy (tests/interp does).
  Literal x(f32({8, 4})), w(f32({4, 3}));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.set_double(i, std::sin(0.1 * double(i + 1)));
  for (int64_t j = 0; j < w.num_elements(); ++j) w.set_double(j, std::cos(0.2 * double(j + 1)));

  std::vector<Literal> result = interp::evaluate(loss, {x, w});
  fmt::print("loss = {:.6f}\n", result[0].get_double(0));
  return 0;
}
