// Compile time of the SPMD partitioner: propagation + partitioning of an MLP chain of L layers
// (tensor-parallel pairs: a column-split layer then a row-split one, batch over "data") on a 2x4
// mesh, for L = 50, 100, 200, 400. The goal is linear growth and under a second at 400 layers;
// items/s is layers per second, so constant items/s means linear growth.
#include <benchmark/benchmark.h>

#include "ir/builder.h"
#include "spmd/partition.h"

namespace {

using namespace tessera::ir;

std::unique_ptr<Module> mlp_chain(int layers) {
  auto m = std::make_unique<Module>("mlp");
  m->add_mesh(Mesh{"m", {{"data", 2}, {"model", 4}}, {}});
  build_function(*m, "f", [&](FunctionBuilder& f) {
    Tensor x = f.param(f32({64, 128}), Sharding{"m", {{"data"}, {}}, {}, {}});
    for (int i = 0; i < layers; ++i) {
      // Column split on even layers, row split on odd ones (Megatron's pairing).
      Sharding s = i % 2 == 0 ? Sharding{"m", {{}, {"model"}}, {}, {}} : Sharding{"m", {{"model"}, {}}, {}, {}};
      Tensor w = f.param(f32({128, 128}), s);
      x = tanh(matmul(x, w));
    }
    return sum(x);
  });
  return m;
}

void BM_Partition(benchmark::State& state) {
  int layers = static_cast<int>(state.range(0));
  auto m = mlp_chain(layers);
  const Function& f = *m->find_function("f");
  for (auto _ : state) {
    Module out;
    tessera::spmd::Partitioned p = tessera::spmd::partition(*m, f, out);
    benchmark::DoNotOptimize(p.report.collectives.size());
  }
  state.counters["layers"] = layers;
  state.SetItemsProcessed(state.iterations() * layers);  // items/s: layers per second
}
BENCHMARK(BM_Partition)->Arg(50)->Arg(100)->Arg(200)->Arg(400)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
