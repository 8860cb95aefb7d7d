// Lesson 2: the gradient of a sharded program is a sharded program.
//
// reverse() turns lesson 1's loss into @sharded_loss_grad: a new function of the same module that
// takes the same parameters, with the same shardings, and returns d loss / dx and d loss / dw.
// x's gradient is constrained to x's own layout (rows over "data"), so when the program is
// partitioned later, each device's piece of the gradient sits where its piece of x does.
//
// The lesson prints the gradient program and checks one entry of it against a finite difference
// of the loss, computed with the reference interpreter in f64.
#include <fmt/format.h>

#include <cmath>

#include "autodiff/reverse.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "stablehlo/printer.h"

using namespace tessera;
using namespace tessera::ir;

int main() {
  Module module("sharded_loss");
  module.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  Function& loss = build_function(module, "sharded_loss", [](FunctionBuilder& f) {
    Tensor x = f.param(f64({8, 4}), Sharding{"m", {{"data"}, {}}, {}, {}});
    Tensor w = f.param(f64({4, 3}));
    Tensor y = tanh(matmul(x, w));
    return sum(y * y);
  });
  Function& grad = autodiff::reverse(module, loss);
  verify(module);
  fmt::print("{}\n", stablehlo::print(module));

  Literal x(f64({8, 4})), w(f64({4, 3}));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.set_double(i, std::sin(0.1 * double(i + 1)));
  for (int64_t j = 0; j < w.num_elements(); ++j) w.set_double(j, std::cos(0.2 * double(j + 1)));
  std::vector<Literal> g = interp::evaluate(module, grad.name(), {x, w});

  // d loss / d w[1][2] by central differences.
  const int64_t k = 1 * 3 + 2;
  const double h = 1e-6;
  auto loss_at = [&](double delta) {
    Literal moved = w;
    moved.set_double(k, w.get_double(k) + delta);
    return interp::evaluate(module, loss.name(), {x, moved})[0].get_double(0);
  };
  double numeric = (loss_at(h) - loss_at(-h)) / (2 * h);
  double analytic = g[1].get_double(k);
  fmt::print("d loss / d w[1][2] = {:.9f} (reverse), {:.9f} (finite difference)\n", analytic, numeric);
  return std::fabs(analytic - numeric) <= 1e-6 * std::max(1.0, std::fabs(numeric)) ? 0 : 1;
}
