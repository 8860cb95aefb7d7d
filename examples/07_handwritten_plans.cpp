// Lesson 7: data parallelism and FSDP written by hand, against the automatic plans.
//
// Tessera's plans are automatic: say how the parameters and the batch are laid out, and the
// partitioner inserts the collectives. JAX's shard_map (and Tessera's sdy.manual_computation) lets
// you write the per-device program yourself instead. This lesson does both for one training step of
// a two-layer MLP (loss = sum((tanh(x w1) w2 - y)^2) / batch) on 4 host devices:
//   data parallel  the batch split over `data`, the weights whole on every device; by hand: each
//                  device's forward and backward on its rows (written out, as llm.c does), then
//                  all_reduce of the loss and of each gradient;
//   FSDP           the weights' rows split over `data` too; by hand: all_gather each weight before
//                  use, and reduce_scatter each gradient back to its rows.
// The automatic plans differentiate the same loss with autodiff::reverse. The lesson checks that
// both give one device's loss and gradients, and prints the collectives each program has (from
// the partition report): the same kinds, counts and bytes per device.
#include <fmt/format.h>

#include <cmath>

#include "autodiff/reverse.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "runtime/session.h"

using namespace tessera;
using namespace tessera::ir;

namespace {

constexpr int64_t kBatch = 16, kIn = 8, kHidden = 16, kOut = 4, kDevices = 4;
constexpr double kTolerance = 1e-5;  // relative, against one device (f32 sums in another order)
const Groups kAll = {{0, 1, 2, 3}};

Sharding whole(size_t rank) { return Sharding{"mesh", std::vector<DimSharding>(rank), {}, {}}; }
Sharding rows(size_t rank) {
  Sharding s = whole(rank);
  s.dims[0] = {"data"};
  return s;
}

// The loss, written once for whole arrays; the plans differ only in the weights' layout.
Function& automatic(Module& m, const std::string& name, bool fsdp) {
  Sharding weights = fsdp ? rows(2) : whole(2);
  Function& f = build_function(m, name, [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({kBatch, kIn}), rows(2));
    Tensor y = b.param(f32({kBatch, kOut}), rows(2));
    Tensor w1 = b.param(f32({kIn, kHidden}), weights);
    Tensor w2 = b.param(f32({kHidden, kOut}), weights);
    Tensor d = matmul(tanh(matmul(x, w1)), w2) - y;
    return sum(d * d) / double(kBatch);
  });
  autodiff::ReverseOptions options;
  options.wrt = {2, 3};
  options.return_value = true;
  return autodiff::reverse(m, f, options);  // name + "_grad": loss, dw1, dw2
}

// One device's part of the loss and of the gradients of its rows of the batch, written out.
std::vector<Tensor> local_step(const Tensor& x, const Tensor& y, const Tensor& w1, const Tensor& w2) {
  Tensor h = tanh(matmul(x, w1));  // [rows, hidden]
  Tensor d = matmul(h, w2) - y;     // [rows, out]
  Tensor loss = sum(d * d) / double(kBatch);
  Tensor dp = d * (2.0 / double(kBatch));
  Tensor dw2 = matmul(transpose(h, {1, 0}), dp);
  Tensor dz = matmul(dp, transpose(w2, {1, 0})) * (1.0 - h * h);
  Tensor dw1 = matmul(transpose(x, {1, 0}), dz);
  return {loss, dw1, dw2};
}

void handwritten(Module& m, const std::string& name, bool fsdp) {
  Sharding weights = fsdp ? rows(2) : whole(2);
  build_function(m, name, [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({kBatch, kIn}), rows(2));
    Tensor y = b.param(f32({kBatch, kOut}), rows(2));
    Tensor w1 = b.param(f32({kIn, kHidden}), weights);
    Tensor w2 = b.param(f32({kHidden, kOut}), weights);
    return manual({x, y, w1, w2}, {rows(2), rows(2), weights, weights}, {whole(0), weights, weights}, {"data"},
                  [&](Builder&, const std::vector<Tensor>& in) {
                    if (!fsdp) {  // every device holds the whole weights; sum what each computed
                      std::vector<Tensor> l = local_step(in[0], in[1], in[2], in[3]);
                      return std::vector<Tensor>{all_reduce(l[0], kAll), all_reduce(l[1], kAll), all_reduce(l[2], kAll)};
                    }
                    // Each device holds a quarter of each weight's rows: gather them, and hand each
                    // device back the sum of its quarter of the gradients.
                    std::vector<Tensor> l = local_step(in[0], in[1], all_gather(in[2], 0, kAll), all_gather(in[3], 0, kAll));
                    return std::vector<Tensor>{all_reduce(l[0], kAll), reduce_scatter(l[1], 0, kAll),
                                               reduce_scatter(l[2], 0, kAll)};
                  });
  });
}

Literal filled(const Type& t, double scale, double phase) {
  Literal l(t);
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_double(i, scale * std::sin(phase + 0.37 * double(i)));
  return l;
}

// The largest |a - b| / (|b| + 1e-3) over every element (NaN counts as a failure).
double worst(const std::vector<Literal>& a, const std::vector<Literal>& b) {
  double w = 0;
  for (size_t k = 0; k < b.size(); ++k)
    for (int64_t i = 0; i < b[k].num_elements(); ++i) {
      double e = std::abs(a[k].get_double(i) - b[k].get_double(i)) / (std::abs(b[k].get_double(i)) + 1e-3);
      w = std::isnan(e) ? INFINITY : std::max(w, e);
    }
  return w;
}

std::string collectives(const spmd::Report& r) {
  std::string s;
  for (const auto& [kind, n] : r.counts()) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", n, kind);
  return fmt::format("{}; {} bytes per device", s, r.bytes_per_device());
}

}  // namespace

int main() {
  Module m("handwritten_plans");
  m.add_mesh(Mesh{"mesh", {{"data", kDevices}}, {}});
  automatic(m, "dp", false);
  automatic(m, "fsdp", true);
  handwritten(m, "dp_by_hand", false);
  handwritten(m, "fsdp_by_hand", true);

  std::vector<Literal> inputs = {filled(f32({kBatch, kIn}), 1.0, 0.1), filled(f32({kBatch, kOut}), 0.5, 0.7),
                                 filled(f32({kIn, kHidden}), 0.4, 1.3), filled(f32({kHidden, kOut}), 0.3, 2.1)};
  std::vector<Literal> one = interp::evaluate(m, "dp_grad", inputs);
  fmt::print("one device: loss {:.6f}\n", one[0].get_double(0));

  runtime::Session session = runtime::Session::host(kDevices);
  bool ok = true;
  for (const char* plan : {"dp", "fsdp"}) {
    runtime::CompiledProgram a = session.compile(m, fmt::format("{}_grad", plan));
    runtime::CompiledProgram h = session.compile(m, fmt::format("{}_by_hand", plan));
    std::vector<Literal> ra = session.run_sharded(a, inputs), rh = session.run_sharded(h, inputs);
    double ea = worst(ra, one), eh = worst(rh, one);
    std::string ca = collectives(a.report()), ch = collectives(h.report());
    fmt::print("{:<5} automatic: loss {:.6f}, worst relative difference from one device {:.1e}; {}\n", plan,
               ra[0].get_double(0), ea, ca);
    fmt::print("{:<5} by hand:   loss {:.6f}, worst relative difference from one device {:.1e}; {}\n", plan,
               rh[0].get_double(0), eh, ch);
    bool same = ea <= kTolerance && eh <= kTolerance && ca == ch;
    fmt::print("{:<5} {}\n", plan, same ? "same losses, gradients and collectives" : "DIFFERENT");
    ok &= same;
  }
  fmt::print("{}: handwritten_plans\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
