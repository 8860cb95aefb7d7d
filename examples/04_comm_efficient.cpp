// Lesson 4: communication-efficient gradients.
//
// A port of a JAX experiment on communication-efficient gradients to Tessera, on 4 host
// devices. A linear model's squared-error gradient 2·xᵀ(xw − y)/16 is computed from rows split over
// a `data` axis, three ways, each written as a manual (shard_map-style) program:
//   all_reduce      every device gets the whole gradient (8 values each);
//   reduce_scatter  every device gets its quarter (2 values), half the bytes of an all-reduce;
//   all_gather      the quarters gathered back (8 values again).
// Then: a momentum update applied to the quarters before gathering equals the whole update; a
// permutation of the rows (x and y together) keeps the gradient while reversing only y does not;
// and the bytes an all-reduce moves per rank for a 1 MiB gradient on 2, 4 and 8 ranks, as counted by
// the partitioner's report. Two bar charts are written as SVG.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>

#include "comm/accounting.h"
#include "ir/builder.h"
#include "runtime/session.h"
#include "stablehlo/printer.h"

using namespace tessera;
using namespace tessera::ir;

namespace {

constexpr double kTolerance = 2e-6;  // the experiment's atol = rtol

std::vector<double> linspace(double a, double b, int n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = a + (b - a) * i / (n - 1);
  return v;
}

// Rounds through f32, as NumPy's float32 arrays hold the data.
double f32r(double v) { return static_cast<double>(static_cast<float>(v)); }

Sharding rows(size_t rank) {
  Sharding s{"mesh", std::vector<DimSharding>(rank), {}, {}};
  s.dims[0] = {"data"};
  return s;
}
Sharding whole(size_t rank) { return Sharding{"mesh", std::vector<DimSharding>(rank), {}, {}}; }
const Groups kAll = {{0, 1, 2, 3}};

// 2·aᵀ(a·w − b)/16 on one device's rows.
Tensor local_contribution(const Tensor& a, const Tensor& b, const Tensor& w) {
  Tensor r = matmul(a, reshape(w, {8, 1}));
  Tensor e = reshape(r, {a.shape()[0]}) - b;
  Tensor g = dot_general(a, e, DotDims{{}, {}, {0}, {0}});
  return g * (2.0 / 16.0);
}

// The whole gradient on every device (psum), its quarter (psum_scatter), or quarters gathered.
void build_programs(Module& m) {
  build_function(m, "all_gradient", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({16, 8}), rows(2));
    Tensor y = f.param(f32({16}), rows(1));
    Tensor w = f.param(f32({8}), whole(1));
    return manual({x, y, w}, {rows(2), rows(1), whole(1)}, {whole(1)}, {"data"},
                  [](Builder&, const std::vector<Tensor>& in) {
                    return std::vector<Tensor>{all_reduce(local_contribution(in[0], in[1], in[2]), kAll)};
                  })[0];
  });
  build_function(m, "shard_gradient", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({16, 8}), rows(2));
    Tensor y = f.param(f32({16}), rows(1));
    Tensor w = f.param(f32({8}), whole(1));
    return manual({x, y, w}, {rows(2), rows(1), whole(1)}, {rows(1)}, {"data"},
                  [](Builder&, const std::vector<Tensor>& in) {
                    return std::vector<Tensor>{reduce_scatter(local_contribution(in[0], in[1], in[2]), 0, kAll)};
                  })[0];
  });
  build_function(m, "gather", [](FunctionBuilder& f) {
    Tensor g = f.param(f32({8}), rows(1));
    return manual({g}, {rows(1)}, {whole(1)}, {"data"}, [](Builder&, const std::vector<Tensor>& in) {
      return std::vector<Tensor>{all_gather(in[0], 0, kAll)};
    })[0];
  });
  // Momentum on the quarters: v' = 0.9 v + g, w' = w − 0.1 v', then w' gathered.
  Function& step = build_function(m, "momentum", [](FunctionBuilder& f) {
    Tensor w = f.param(f32({8}), rows(1));
    Tensor v = f.param(f32({8}), rows(1));
    Tensor g = f.param(f32({8}), rows(1));
    Tensor nv = v * 0.9 + g;
    return std::vector<Tensor>{w - nv * 0.1, nv};
  });
  step.set_result_sharding(0, whole(1));
  step.set_result_sharding(1, rows(1));
}

double worst(const Literal& got, const std::vector<double>& want) {
  double d = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    double e = std::abs(got.get_double(i) - want[static_cast<size_t>(i)]);
    d = std::max(d, e / (kTolerance + kTolerance * std::abs(want[static_cast<size_t>(i)])));
  }
  return d;  // <= 1 passes atol + rtol·|want|
}

double median_us(const std::function<void()>& run) {
  run();  // warm up
  std::vector<double> s;
  for (int i = 0; i < 7; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    run();
    s.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(s.begin(), s.end());
  return s[3];
}

void bar_svg(const std::string& path, const std::string& ylabel, const std::vector<std::string>& labels,
             const std::vector<double>& values) {
  double top = *std::max_element(values.begin(), values.end());
  std::ofstream out(path);
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"420\" height=\"260\">\n"
      << "<rect width=\"420\" height=\"260\" fill=\"white\"/>\n"
      << fmt::format("<text x=\"10\" y=\"18\" font-size=\"13\">{}</text>\n", ylabel);
  for (size_t i = 0; i < values.size(); ++i) {
    double h = 180 * values[i] / top, x = 40 + 120 * double(i);
    out << fmt::format("<rect x=\"{}\" y=\"{:.1f}\" width=\"80\" height=\"{:.1f}\" fill=\"#4a7ab8\"/>\n", x, 220 - h, h)
        << fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"12\">{:g}</text>\n", x + 20, 214 - h, values[i])
        << fmt::format("<text x=\"{}\" y=\"240\" font-size=\"12\">{}</text>\n", x, labels[i]);
  }
  out << "</svg>\n";
}

}  // namespace

int main() {
  Module m("comm_efficient");
  m.add_mesh(Mesh{"mesh", {{"data", 4}}, {}});
  build_programs(m);

  // The data: x = arange(128)/128 − 0.5 as 16×8, y = x·linspace(−0.4, 0.3, 8), w = linspace(0.1, −0.2, 8).
  std::vector<double> xh(128), yh(16), wh = linspace(0.1, -0.2, 8), coef = linspace(-0.4, 0.3, 8);
  for (int i = 0; i < 128; ++i) xh[size_t(i)] = f32r(i / 128.0 - 0.5);
  for (auto& c : coef) c = f32r(c);
  for (auto& w : wh) w = f32r(w);
  for (int r = 0; r < 16; ++r) {
    double s = 0;
    for (int c = 0; c < 8; ++c) s += xh[size_t(r * 8 + c)] * coef[size_t(c)];
    yh[size_t(r)] = f32r(s);
  }
  auto reference = [&](const std::vector<double>& w, const std::vector<double>& y) {
    std::vector<double> g(8, 0);
    for (int r = 0; r < 16; ++r) {
      double e = -y[size_t(r)];
      for (int c = 0; c < 8; ++c) e += xh[size_t(r * 8 + c)] * w[size_t(c)];
      for (int c = 0; c < 8; ++c) g[size_t(c)] += 2 * xh[size_t(r * 8 + c)] * e / 16;
    }
    return g;
  };
  std::vector<double> ref = reference(wh, yh);
  Literal x = Literal::from_doubles(f32({16, 8}), xh), y = Literal::from_doubles(f32({16}), yh),
          w = Literal::from_doubles(f32({8}), wh);

  comm::Traffic traffic(4);  // what each device actually sends and receives
  runtime::SessionOptions options;
  options.traffic = &traffic;
  runtime::Session s = runtime::Session::host(4, options);
  runtime::CompiledProgram all = s.compile(m, "all_gradient"), shard = s.compile(m, "shard_gradient"),
                           gather = s.compile(m, "gather"), momentum = s.compile(m, "momentum");
  runtime::ShardedProgram pa = s.sharded_program(all), ps = s.sharded_program(shard), pg = s.sharded_program(gather);
  std::vector<runtime::ShardedBuffer> in = {pa.stage(0, x), pa.stage(1, y), pa.stage(2, w)};
  // One run of each program, its traffic read after it.
  auto measured = [&](const std::function<runtime::ShardedBuffer()>& run, int64_t& received) {
    for (int64_t d = 0; d < 4; ++d) traffic.device(d).clear();
    runtime::ShardedBuffer b = run();
    received = traffic.device(0).total().received;
    return b;
  };
  int64_t all_bytes = 0, shard_bytes = 0, gather_bytes = 0;
  runtime::ShardedBuffer ga = measured([&] { return pa.execute(in)[0]; }, all_bytes);
  runtime::ShardedBuffer gs = measured([&] { return ps.execute(in)[0]; }, shard_bytes);
  std::vector<runtime::ShardedBuffer> gin = {gs};
  runtime::ShardedBuffer gg = measured([&] { return pg.execute(gin)[0]; }, gather_bytes);

  bool ok = true;
  double err = 0;
  for (const auto* b : {&ga, &gg})
    for (const Literal& piece : *b->pieces) err = std::max(err, worst(piece, ref));
  err = std::max(err, worst(ps.fetch(gs), ref));
  std::vector<int64_t> shapes = {(*ga.pieces)[0].shape()[0], (*gs.pieces)[0].shape()[0], (*gg.pieces)[0].shape()[0]};
  ok &= err <= 1 && shapes == std::vector<int64_t>{8, 2, 8};
  fmt::print("Gradient reference: [{:.6f}]\n", fmt::join(ref, ", "));
  fmt::print("Every device's result within 2e-6: {} (worst {:.3f} of the tolerance)\n", err <= 1 ? "yes" : "NO", err);
  fmt::print("Local result shapes: replicated ({},), reduce-scatter ({},), gathered ({},)\n", shapes[0], shapes[1], shapes[2]);

  std::string text_all = stablehlo::print(*all.module), text_shard = stablehlo::print(*shard.module);
  bool emitted = text_all.find("stablehlo.all_reduce") != std::string::npos &&
                 text_shard.find("stablehlo.reduce_scatter") != std::string::npos;
  ok &= emitted;
  fmt::print("StableHLO has all_reduce and reduce_scatter: {}\n", emitted ? "yes" : "NO");

  double all_us = median_us([&] { pa.execute(in); }), shard_us = median_us([&] { ps.execute(in); }),
         gather_us = median_us([&] { pg.execute(gin); });
  double gradient_bytes = 8 * 4, ring_scatter = 3.0 / 4 * gradient_bytes, ring_all = 2 * ring_scatter;
  fmt::print("Idealized ring bytes per rank: all_reduce {} reduce_scatter {}\n", ring_all, ring_scatter);
  fmt::print("Report's bytes per device: all_reduce {} reduce_scatter {} all_gather {}\n",
             all.report().bytes_per_device(), shard.report().bytes_per_device(), gather.report().bytes_per_device());
  fmt::print("Measured bytes received by device 0: all_reduce {} reduce_scatter {} all_gather {}\n", all_bytes,
             shard_bytes, gather_bytes);
  fmt::print("Completed CPU median microseconds: all_reduce {:.0f} reduce_scatter {:.0f} all_gather_only {:.0f}\n",
             all_us, shard_us, gather_us);

  // Momentum on the quarters, then gathered.
  std::vector<double> vh = linspace(-0.02, 0.03, 8);
  for (auto& v : vh) v = f32r(v);
  std::vector<Literal> out = s.run_sharded(momentum, {w, Literal::from_doubles(f32({8}), vh), ps.fetch(gs)});
  std::vector<double> expected(8);
  for (size_t i = 0; i < 8; ++i) expected[i] = wh[i] - 0.1 * (0.9 * vh[i] + ref[i]);
  auto pieces = s.shard_dims(momentum);
  bool momentum_ok = worst(out[0], expected) <= 1 && momentum.report().count("all_gather") == 1 &&
                     momentum.local_function().result_types[1].shape == std::vector<int64_t>{2};
  ok &= momentum_ok;
  fmt::print("Sharded momentum matches the whole update: {} (one all_gather, v' held as (2,) pieces)\n",
             momentum_ok ? "yes" : "NO");

  // Permuting rows of x and y together keeps the gradient; reversing only y changes it.
  std::vector<double> xr(128), yr(16), w2 = wh;
  for (int r = 0; r < 16; ++r) {
    yr[size_t(r)] = yh[size_t(15 - r)];
    for (int c = 0; c < 8; ++c) xr[size_t(r * 8 + c)] = xh[size_t((15 - r) * 8 + c)];
  }
  for (auto& v : w2) v = f32r(v + 0.17);
  std::vector<double> r2 = reference(w2, yh);
  std::vector<runtime::ShardedBuffer> in2 = {pa.stage(0, Literal::from_doubles(f32({16, 8}), xr)),
                                             pa.stage(1, Literal::from_doubles(f32({16}), yr)),
                                             pa.stage(2, Literal::from_doubles(f32({8}), w2))};
  std::vector<runtime::ShardedBuffer> g2 = {ps.execute(in2)[0]};
  double e2 = std::max(worst(pa.fetch(pa.execute(in2)[0]), r2), worst(pg.fetch(pg.execute(g2)[0]), r2));
  std::vector<double> yrev(yh.rbegin(), yh.rend()), wrong = reference(w2, yrev);
  double gap = 0;
  for (size_t i = 0; i < 8; ++i) gap = std::max(gap, std::abs(wrong[i] - r2[i]));
  ok &= e2 <= 1 && gap > 0.01;
  fmt::print("Joint permutation preserves the gradient: {}; label-only reversal changes it by {:.4f}\n",
             e2 <= 1 ? "yes" : "NO", gap);

  // The all-reduce of a 1 MiB gradient on 2, 4 and 8 ranks, as the report counts it.
  std::vector<int64_t> budget;
  for (int64_t p : {2, 4, 8}) {
    Module b;
    b.add_mesh(Mesh{"mesh", {{"data", p}}, {}});
    build_function(b, "sum", [&](FunctionBuilder& f) {
      Tensor parts = f.param(f32({p, 262144}), rows(2));
      return reduce_sum(parts, {0});
    });
    budget.push_back(runtime::Session::host(p).compile(b, "sum").report().bytes_per_device());
  }
  ok &= budget == std::vector<int64_t>{1048576, 1572864, 1835008};
  fmt::print("All-reduce bytes per rank for a 1 MiB gradient on 2, 4, 8 ranks: {}\n", fmt::join(budget, ", "));

  bar_svg("comm_efficient_storage.svg", "values stored per device", {"all-reduce", "reduce-scatter", "after gather"},
          {double(shapes[0]), double(shapes[1]), double(shapes[2])});
  bar_svg("comm_efficient_bytes.svg", "modeled bytes per rank", {"all-reduce", "reduce-scatter", "scatter + gather"},
          {ring_all, ring_scatter, 2 * ring_scatter});
  fmt::print("Wrote comm_efficient_storage.svg and comm_efficient_bytes.svg\n");
  fmt::print("{}: comm_efficient\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
