// Gradients on 4 host devices (threads exchanging data through the communicator):
//  * the adjoint identity sum_d <f(x)_d, w_d> = sum_d <x_d, f*(w)_d>, where f* is what reverse()
//    makes of f, for all_reduce, all_gather, reduce_scatter, all_to_all and collective_permute;
//  * the data-parallel gradient: each device differentiates its quarter of the batch, an
//    all_reduce sums the gradients, and the result equals the full batch's gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "autodiff/reverse.h"
#include "comm/parallel.h"
#include "interp/interpreter.h"
#include "ir/builder.h"

namespace tessera::autodiff {
namespace {

using namespace tessera::ir;

constexpr double kTolerance = 1e-5;  // relative, for f32 programs summed over 4 devices

Literal pseudo_random(Type t, double seed) {
  Literal l(std::move(t));
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_double(i, std::sin(seed * double(i + 1)));
  return l;
}

double dot(const Literal& a, const Literal& b) {
  double s = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) s += a.get_double(i) * b.get_double(i);
  return s;
}

// One replica of 4 partitions: an SPMD program's devices are partitions, as in JAX.
std::vector<Literal> on_4_devices(const Module& m, const std::string& fn, std::vector<Literal> inputs) {
  return comm::run_parallel(m, {{fn, fn, fn, fn}}, std::move(inputs));
}

using Collective = std::function<Tensor(const Tensor&)>;

// sum_d <f(x_d), w_d> against sum_d <x_d, f*(w)_d> on 4 devices.
void check_adjoint(const std::string& name, Type in, Type out, const Collective& f) {
  Module m(name);
  Function& pairing = build_function(m, "pairing", [&](FunctionBuilder& b) {
    Tensor x = b.param(in);
    Tensor w = b.param(out);
    return sum(f(x) * w);
  });
  ReverseOptions o;
  o.wrt = {0};
  reverse(m, pairing, o);  // pairing_grad(x, w) = f*(w)
  std::vector<Literal> inputs;
  for (int d = 0; d < 4; ++d) {
    inputs.push_back(pseudo_random(in, 0.3 + d));
    inputs.push_back(pseudo_random(out, 1.7 + d));
  }
  std::vector<Literal> lhs = on_4_devices(m, "pairing", inputs);
  std::vector<Literal> adjoint = on_4_devices(m, "pairing_grad", inputs);
  double left = 0, right = 0;
  for (int d = 0; d < 4; ++d) {
    left += lhs[d].get_double(0);
    right += dot(inputs[2 * d], adjoint[d]);
  }
  EXPECT_NEAR(left, right, kTolerance * std::max(1.0, std::fabs(left))) << name;
}

const Groups kAll = {{0, 1, 2, 3}};

TEST(MultiDevice, AdjointIdentities) {
  check_adjoint("all_reduce", f32({4, 2}), f32({4, 2}), [](const Tensor& x) { return all_reduce(x, kAll); });
  check_adjoint("all_gather", f32({2, 3}), f32({8, 3}), [](const Tensor& x) { return all_gather(x, 0, kAll); });
  check_adjoint("reduce_scatter", f32({8, 3}), f32({2, 3}),
                [](const Tensor& x) { return reduce_scatter(x, 0, kAll); });
  check_adjoint("all_to_all", f32({4, 6}), f32({1, 24}),
                [](const Tensor& x) { return all_to_all(x, 0, 1, kAll); });
  check_adjoint("collective_permute", f32({3, 2}), f32({3, 2}), [](const Tensor& x) {
    return collective_permute(x, {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
  });
  check_adjoint("subgroups", f32({2, 2}), f32({4, 2}),
                [](const Tensor& x) { return all_gather(x, 0, {{0, 2}, {1, 3}}); });
}

TEST(MultiDevice, DataParallelGradientEqualsFullBatchGradient) {
  Module m("dp");
  auto loss_of = [](const Tensor& x, const Tensor& w) {
    Tensor y = tanh(matmul(x, w));
    return sum(y * y);
  };
  // Parameters in order: x, then w (function arguments would be evaluated in any order).
  Function& full = build_function(m, "full", [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({8, 4}));
    return loss_of(x, b.param(f32({4, 3})));
  });
  Function& local = build_function(m, "local", [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({2, 4}));
    return loss_of(x, b.param(f32({4, 3})));
  });
  ReverseOptions wrt_w;
  wrt_w.wrt = {1};
  Function& full_grad = reverse(m, full, wrt_w);
  Function& local_grad = reverse(m, local, wrt_w);
  // Each device: its rows' gradient, summed over the devices.
  build_function(m, "step", [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({2, 4}));
    Tensor w = b.param(f32({4, 3}));
    return all_reduce(call(b, local_grad, {x, w})[0], kAll);
  });
  verify(m);

  Literal x = pseudo_random(f32({8, 4}), 0.37), w = pseudo_random(f32({4, 3}), 0.91);
  Literal expected = interp::evaluate(m, full_grad.name(), {x, w})[0];
  std::vector<Literal> inputs;
  for (int d = 0; d < 4; ++d) {
    Literal rows(f32({2, 4}));
    std::memcpy(rows.bytes().data(), x.bytes().data() + d * rows.bytes().size(), rows.bytes().size());
    inputs.push_back(std::move(rows));
    inputs.push_back(w);
  }
  std::vector<Literal> got = on_4_devices(m, "step", inputs);
  for (int d = 0; d < 4; ++d)
    for (int64_t i = 0; i < expected.num_elements(); ++i)
      EXPECT_NEAR(got[d].get_double(i), expected.get_double(i),
                  kTolerance * std::max(1.0, std::fabs(expected.get_double(i))))
          << "device " << d << " element " << i;
}

}  // namespace
}  // namespace tessera::autodiff
