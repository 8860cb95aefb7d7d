// Lesson 6: a small convolutional network, trained on 4 devices two ways.
//
// The model is convolution -> relu -> max-pool (reduce_window) -> dense, on 6x6 images with two
// channels (NHWC), with a squared-error loss. reverse() differentiates it: the convolution's
// gradients are convolutions, the max-pool's is a select_and_scatter. Each step runs the gradient
// program and takes an SGD step on the host. We train three times from the same start: on one
// device (the reference interpreter), with the batch split over 4 host devices (data parallel:
// the kernel gradient's sum over the batch becomes an all-reduce), and with the convolution's
// output channels split over the 4 devices (each device computes a quarter of the feature maps).
// Both sharded runs give the unsharded run's losses and weights.
//
// `06_cnn --emit DIR` writes the two sharded modules (cnn_batch.mlir, cnn_channels.mlir: @loss and
// @loss_grad) as StableHLO and stops, for `tessera partition --explain`.
#include <fmt/format.h>

#include <cmath>

#include "autodiff/reverse.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "ir/builder_window.h"
#include "runtime/session.h"
#include "stablehlo/printer.h"
#include "support/durable_file.h"

using namespace tessera;
using namespace tessera::ir;

namespace {

constexpr int64_t kBatch = 8, kSize = 6, kChannels = 2, kFeatures = 8, kClasses = 4;
constexpr int kSteps = 8;
constexpr double kLearningRate = 0.002;

// The loss of the model, with x's and the kernel's shardings as given.
Module model(std::optional<Sharding> x_sharding, std::optional<Sharding> kernel_sharding) {
  Module m("cnn");
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  Function& loss = build_function(m, "loss", [&](FunctionBuilder& f) {
    Tensor x = f.param(f32({kBatch, kSize, kSize, kChannels}), x_sharding);
    Tensor target = f.param(f32({kBatch, kClasses}));
    Tensor kernel = f.param(f32({3, 3, kChannels, kFeatures}), kernel_sharding);
    Tensor dense = f.param(f32({kSize / 2 * kSize / 2 * kFeatures, kClasses}));
    Window same;  // 3x3, stride 1, padded to keep 6x6
    same.size = {3, 3};
    same.stride = {1, 1};
    same.base_dilation = same.window_dilation = {1, 1};
    same.pad_lo = same.pad_hi = {1, 1};
    same.reversal = {false, false};
    Tensor y = convolution(x, kernel, ConvDims{0, 3, {1, 2}, 2, 3, {0, 1}, 0, 3, {1, 2}}, same);
    y = maximum(y, f.scalar(ElementType::f32, 0));  // relu
    Window pool;  // 2x2 max-pool, stride 2
    pool.size = {1, 2, 2, 1};
    pool.stride = {1, 2, 2, 1};
    pool.base_dilation = pool.window_dilation = {1, 1, 1, 1};
    pool.pad_lo = pool.pad_hi = {0, 0, 0, 0};
    pool.reversal.assign(4, false);
    y = reduce_window(y, extreme(y, true), pool, OpKind::Maximum);
    Tensor logits = matmul(reshape(y, {kBatch, kSize / 2 * kSize / 2 * kFeatures}), dense);
    Tensor err = logits - target;
    return sum(err * err) * (1.0 / kBatch);
  });
  autodiff::reverse(m, loss);
  return m;
}

Literal filled(Type t, double scale, double phase) {
  Literal l(t);
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_double(i, scale * std::sin(phase * double(i + 1)));
  return l;
}

struct Run {
  std::vector<double> losses;
  std::vector<Literal> params;  // kernel, dense
};

// kSteps of SGD; `grad` maps (x, target, kernel, dense) to (loss's gradients for each).
template <typename Grad, typename Loss>
Run train(Grad&& grad, Loss&& loss, const Literal& x, const Literal& target) {
  Run r;
  r.params = {filled(f32({3, 3, kChannels, kFeatures}), 0.3, 0.7), filled(f32({72, kClasses}), 0.1, 0.3)};
  for (int step = 0; step < kSteps; ++step) {
    r.losses.push_back(loss({x, target, r.params[0], r.params[1]}));
    std::vector<Literal> g = grad({x, target, r.params[0], r.params[1]});
    for (size_t p = 0; p < 2; ++p)
      for (int64_t i = 0; i < r.params[p].num_elements(); ++i)
        r.params[p].set_double(i, r.params[p].get_double(i) - kLearningRate * g[p + 2].get_double(i));
  }
  r.losses.push_back(loss({x, target, r.params[0], r.params[1]}));
  return r;
}

// The largest difference between two runs, relative to the values' size.
double difference(const Run& a, const Run& b) {
  double worst = 0;
  auto worse = [&](double d) { worst = std::isnan(d) || std::isnan(worst) ? NAN : std::max(worst, d); };
  for (size_t i = 0; i < a.losses.size(); ++i)
    worse(std::abs(a.losses[i] - b.losses[i]) / std::max(1.0, std::abs(b.losses[i])));
  for (size_t p = 0; p < a.params.size(); ++p)
    for (int64_t i = 0; i < a.params[p].num_elements(); ++i)
      worse(std::abs(a.params[p].get_double(i) - b.params[p].get_double(i)) /
            std::max(1.0, std::abs(b.params[p].get_double(i))));
  return worst;
}

Run on_devices(const Module& m, const Literal& x, const Literal& target) {
  runtime::Session session = runtime::Session::host(4);
  runtime::CompiledProgram loss = session.compile(m, "loss");
  runtime::CompiledProgram grad = session.compile(m, "loss_grad");
  fmt::print("  gradient program: {} collectives\n", grad.report().collectives.size());
  return train([&](const std::vector<Literal>& in) { return session.run_sharded(grad, in); },
               [&](const std::vector<Literal>& in) { return session.run_sharded(loss, in)[0].get_double(0); }, x,
               target);
}

// The modules of the two sharded runs, named as --emit writes them.
Module batch_split() { return model(Sharding{"m", {{"data"}, {}, {}, {}}, {}, {}}, std::nullopt); }
Module channel_split() { return model(std::nullopt, Sharding{"m", {{}, {}, {}, {"data"}}, {}, {}}); }

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--emit") {
    for (auto [name, make] : {std::pair{"cnn_batch.mlir", &batch_split}, {"cnn_channels.mlir", &channel_split}}) {
      std::string path = std::string(argv[2]) + "/" + name;
      support::write_file_atomically(path, {stablehlo::print(make())});
      fmt::print("wrote {}\n", path);
    }
    return 0;
  }
  Literal x = filled(f32({kBatch, kSize, kSize, kChannels}), 1.0, 0.37);
  Literal target = filled(f32({kBatch, kClasses}), 0.5, 1.3);

  Module plain = model(std::nullopt, std::nullopt);
  Run one = train([&](const std::vector<Literal>& in) { return interp::evaluate(plain, "loss_grad", in); },
                  [&](const std::vector<Literal>& in) { return interp::evaluate(plain, "loss", in)[0].get_double(0); },
                  x, target);
  fmt::print("one device: loss {:.6f} -> {:.6f} in {} steps\n", one.losses.front(), one.losses.back(), kSteps);

  fmt::print("batch split over 4 devices:\n");
  Run batch = on_devices(batch_split(), x, target);
  double batch_diff = difference(batch, one);
  fmt::print("  loss {:.6f} -> {:.6f}; largest difference from one device {:.1e}\n", batch.losses.front(),
             batch.losses.back(), batch_diff);

  fmt::print("channels split over 4 devices:\n");
  Run channels = on_devices(channel_split(), x, target);
  double channel_diff = difference(channels, one);
  fmt::print("  loss {:.6f} -> {:.6f}; largest difference from one device {:.1e}\n", channels.losses.front(),
             channels.losses.back(), channel_diff);

  fmt::print("losses on one device:");
  for (double l : one.losses) fmt::print(" {:.6f}", l);
  fmt::print("\n");
  bool learned = std::isfinite(one.losses.back()) && one.losses.back() < 0.9 * one.losses.front();
  bool ok = learned && batch_diff <= 1e-4 && channel_diff <= 1e-4;
  fmt::print("{}: cnn\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
