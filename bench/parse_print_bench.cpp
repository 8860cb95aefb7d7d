// parse_print_bench: throughput of the StableHLO text parser and printer on a ~10 MB module.
//
// The module is generated in memory with the builder (realistic text: many functions mixing
// elementwise ops, dot_general, reductions, broadcasts, dense constants of a few hundred elements,
// while loops, collectives, shardings), printed once, and then we time (a) parse of the whole
// text and (b) print of the parsed module. For scale, the same run also times memcpy of the same
// number of bytes (a bandwidth ceiling) and a tight scan counting '%' and '\n' (the cheapest pass
// that reads every byte). Every benchmark reports bytes of text per second.
//
// Run with bench/run_parse_print.sh; figures are recorded in docs/PERFORMANCE.md.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace {

using namespace tessera;
using namespace tessera::ir;

// A dense literal of `type` with varied values (so they print with many digits, like trained
// weights do).
Literal varied(Type type, int64_t seed) {
  Literal l(std::move(type));
  for (int64_t j = 0; j < l.num_elements(); ++j) {
    double v = std::sin(0.37 * double(seed) + 1.3 * double(j)) * std::pow(10.0, double(j % 5) - 2);
    if (l.element() == ElementType::i32) l.set_int(j, static_cast<int64_t>(v * 1000));
    else l.set_double(j, v);
  }
  return l;
}

// One "layer": a sharded matmul, bias and activations, reductions, a while loop, collectives.
void add_layer(Module& m, int i) {
  const Groups quads = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  const Groups pairs = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  build_function(m, fmt::format("layer_{}", i), [&](FunctionBuilder& f) {
    Tensor x = f.param(f32({64, 128}), Sharding{"m", {{"data"}, {}}, {}, {}});
    Tensor w = f.param(f32({128, 256}), Sharding{"m", {{}, {"model"}}, {}, {}});
    Tensor bias = f.param(f32({256}));
    Tensor scale = f.constant(varied(f32({256}), i));
    Tensor shift = f.constant(varied(f32({16, 16}), i + 1));
    Tensor table = f.constant(varied(i32({128}), i + 2));

    Tensor h = matmul(x, w) + bias;
    h = constrain(h, Sharding{"m", {{"data"}, {"model"}}, {}, {}});
    h = tanh(h) * scale;
    h = maximum(h, f.scalar(ElementType::f32, 0.0) + h * 0.01);
    Tensor g = logistic(h) - exp(negate(h)) / (abs(h) + 1.0);
    Tensor rows = reduce_sum(g * g, {1});  // f32[64]
    Tensor cols = reduce_max(h, {0});      // f32[256]
    Tensor s2 = reshape(broadcast_in_dim(shift, {4, 16, 16}, {1, 2}), {4, 256});
    Tensor mix = cols + reduce_sum(s2, {0}) * 0.5;

    // A counted loop that damps h.
    std::vector<Tensor> loop = while_loop(
        {f.scalar(ElementType::i32, 0), h},
        [](Builder& b, const std::vector<Tensor>& v) {
          return compare(v[0], b.scalar(ElementType::i32, 4), ComparisonDirection::LT);
        },
        [](Builder& b, const std::vector<Tensor>& v) {
          return std::vector<Tensor>{v[0] + 1.0, sqrt(v[1] * v[1] + 1.0) * 0.9 - 0.1};
        });
    Tensor y = loop[1];

    // Collectives: reduce over the model axis, gather, scatter back, rotate.
    Tensor ar = all_reduce(y, pairs);
    Tensor rs = reduce_scatter(ar, 1, quads);          // f32[64,64]
    Tensor ag = all_gather(rows, 0, pairs);            // f32[128]
    Tensor cp = collective_permute(rs, {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
    Tensor t = transpose(cp, {1, 0});

    // A batched dot_general on a reshaped view.
    Tensor a3 = reshape(t, {8, 8, 64});
    DotDims d;
    d.lhs_batch = {0};
    d.rhs_batch = {0};
    d.lhs_contracting = {2};
    d.rhs_contracting = {2};
    Tensor bd = dot_general(a3, a3, d);  // f32[8,8,8]
    Tensor picked = convert(table, ElementType::f32) + ag;
    Tensor sel = select(compare(picked, ag, ComparisonDirection::GT), picked, ag * 2.0);
    f.function().set_result_sharding(0, Sharding{"m", {{"data"}, {}}, {}, {}});
    return std::vector<Tensor>{t, mix, sel, bd};
  });
}

struct Corpus {
  std::string text;
  std::unique_ptr<Module> parsed;
};

// About 10 MB of text; built once, on first use.
const Corpus& corpus() {
  static const Corpus c = [] {
    Module m("bench");
    m.add_mesh(Mesh{"m", {{"data", 4}, {"model", 2}}, {}});
    Corpus out;
    for (int i = 0;; ++i) {
      add_layer(m, i);
      if ((i + 1) % 64 == 0) {
        out.text = stablehlo::print(m);
        if (out.text.size() >= 10'000'000) break;
      }
    }
    out.parsed = stablehlo::parse(out.text, "bench.mlir");
    if (stablehlo::print(*out.parsed) != out.text) {
      std::fprintf(stderr, "parse_print_bench: print(parse(text)) != text\n");
      std::abort();
    }
    std::fprintf(stderr, "parse_print_bench: %zu functions, %zu bytes of text\n",
                 m.functions.size(), out.text.size());
    return out;
  }();
  return c;
}

void set_bytes(benchmark::State& state, size_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

void BM_Memcpy(benchmark::State& state) {
  const std::string& text = corpus().text;
  std::vector<char> dst(text.size(), 1);  // touched up front: no page faults in the loop
  for (auto _ : state) {
    std::memcpy(dst.data(), text.data(), text.size());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, text.size());
}

void BM_Scan(benchmark::State& state) {
  const std::string& text = corpus().text;
  for (auto _ : state) {
    size_t percents = 0, newlines = 0;
    for (char ch : text) {
      percents += ch == '%';
      newlines += ch == '\n';
    }
    benchmark::DoNotOptimize(percents);
    benchmark::DoNotOptimize(newlines);
  }
  set_bytes(state, text.size());
}

void BM_Parse(benchmark::State& state) {
  const std::string& text = corpus().text;
  for (auto _ : state) {
    std::unique_ptr<Module> m = stablehlo::parse(text, "bench.mlir");
    benchmark::DoNotOptimize(m.get());
    state.PauseTiming();  // freeing the module is not parsing
    m.reset();
    state.ResumeTiming();
  }
  set_bytes(state, text.size());
}

void BM_Print(benchmark::State& state) {
  const Corpus& c = corpus();
  for (auto _ : state) {
    std::string out = stablehlo::print(*c.parsed);
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state, c.text.size());
}

BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Scan)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Parse)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Print)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
