// Lesson 3: running the sharded loss on 4 devices.
//
// Lessons 1 and 2 wrote the loss and its gradient for whole arrays. Here a Session of 4 host
// devices (one thread each) compiles both: propagation gives every value a layout, and the
// partitioner turns the global program into the one local program each device runs on its own
// pieces, with the collectives in place. We print the local program of the loss and the report
// (what each device holds, what it sends), then run both programs sharded: whole arrays in, split
// by the compiled shardings, results reassembled. The numbers equal the single-device run.
#include <fmt/format.h>

#include <cmath>

#include "autodiff/reverse.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "runtime/session.h"
#include "stablehlo/printer.h"
#include "support/strings.h"

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
  autodiff::reverse(module, loss, {});

  Literal x(f32({8, 4})), w(f32({4, 3}));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.set_double(i, std::sin(0.1 * double(i + 1)));
  for (int64_t j = 0; j < w.num_elements(); ++j) w.set_double(j, std::cos(0.2 * double(j + 1)));

  runtime::Session session = runtime::Session::host(4);
  runtime::CompiledProgram program = session.compile(module, "sharded_loss");
  fmt::print("{}\n{}", stablehlo::print(*program.module), program.report().to_string());
  auto pieces = session.shard_dims(program);
  fmt::print("x's piece on each device: {}\n", support::shape_string(pieces[0][0]));

  double sharded = session.run_sharded(program, {x, w})[0].get_double(0);
  double single = interp::evaluate(loss, {x, w})[0].get_double(0);
  fmt::print("loss on 4 devices = {:.6f}, on one = {:.6f}\n", sharded, single);

  runtime::CompiledProgram grad = session.compile(module, "sharded_loss_grad");
  std::vector<Literal> g4 = session.run_sharded(grad, {x, w});
  std::vector<Literal> g1 = interp::evaluate(module, "sharded_loss_grad", {x, w});
  double worst = 0;
  for (size_t k = 0; k < g4.size(); ++k)
    for (int64_t i = 0; i < g4[k].num_elements(); ++i)
      worst = std::max(worst, std::abs(g4[k].get_double(i) - g1[k].get_double(i)));
  fmt::print("gradient: {} collectives; largest difference from one device {:.1e}\n",
             grad.report().collectives.size(), worst);
  return std::abs(sharded - single) <= 1e-5 * std::abs(single) && worst <= 1e-5 ? 0 : 1;
}
