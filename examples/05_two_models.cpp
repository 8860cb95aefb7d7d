// Lesson 5: two models in one MPMD program.
//
// A policy model turns observations into actions; a frozen reward model scores the actions; the
// policy is trained to raise the score. In an RL system the two usually live in separate jobs.
// Here they are one program (as the Shardy:MPMD discussion suggests): each model is a *named
// computation* — a func.call labelled `policy` or `reward` — and an *assignment* puts `policy` on
// mesh A and `reward` on mesh B, two host devices each, data parallel inside each mesh. We
// differentiate the whole step once (forward and backward in one function), cut it into
// per-mesh *fragments* with *transfers* where values cross meshes, and run the fragments on their
// meshes, one thread per mesh. The numbers equal the unsplit program's, gradients reach only the
// policy, and a few SGD steps raise the reward.
#include <fmt/format.h>

#include <cmath>

#include "interp/interpreter.h"
#include "ir/builder.h"
#include "mpmd/fragment_pipeline.h"
#include "mpmd/fragments.h"
#include "mpmd/program.h"

using namespace tessera;
using namespace tessera::ir;

namespace {

Literal wave(Type t, double a, double b) {
  Literal l(std::move(t));
  for (int64_t i = 0; i < l.num_elements(); ++i) l.set_double(i, a * std::sin(b * double(i + 1)));
  return l;
}

double largest_difference(const std::vector<Literal>& x, const std::vector<Literal>& y) {
  double worst = 0;
  for (size_t k = 0; k < x.size(); ++k)
    for (int64_t i = 0; i < x[k].num_elements(); ++i)
      worst = std::max(worst, std::abs(x[k].get_double(i) - y[k].get_double(i)));
  return worst;
}

}  // namespace

int main() {
  Module module("two_models");
  // The layouts inside each mesh: batch rows over "data". Fragments on A are partitioned over
  // @a's two devices, fragments on B over @b's.
  module.add_mesh(Mesh{"a", {{"data", 2}}, {}});
  module.add_mesh(Mesh{"b", {{"data", 2}}, {}});
  Sharding rows_a{"a", {{"data"}, {}}, {}, {}}, rows_b{"b", {{"data"}, {}}, {}, {}};

  // The two models are ordinary functions.
  Function& policy = build_function(module, "policy", [](FunctionBuilder& f) {
    Tensor obs = f.param(f32({8, 4})), w1 = f.param(f32({4, 8})), w2 = f.param(f32({8, 3}));
    return tanh(matmul(tanh(matmul(obs, w1)), w2));  // actions in (−1, 1)
  });
  Function& reward = build_function(module, "reward", [&](FunctionBuilder& f) {
    Tensor act = f.param(f32({8, 3})), r1 = f.param(f32({3, 6})), r2 = f.param(f32({6, 1}));
    act = constrain(act, rows_b);  // scored data parallel on B's devices
    return matmul(tanh(matmul(act, r1)), r2);  // one score per row
  });

  // The step calls them as named computations (the call's callee names it; mpmd.name records
  // it). The loss, −mean(reward), is unnamed glue: it runs where its operand is (B).
  Function& step = build_function(module, "step", [&](FunctionBuilder& f) {
    Tensor obs = f.param(f32({8, 4}), rows_a);
    Tensor w1 = f.param(f32({4, 8})), w2 = f.param(f32({8, 3}));   // policy: trained
    Tensor r1 = f.param(f32({3, 6})), r2 = f.param(f32({6, 1}));   // reward: frozen
    Tensor act = mpmd::named_call(f, policy, {obs, w1, w2})[0];
    Tensor score = mpmd::named_call(f, reward, {act, r1, r2})[0];
    return -(sum(score) / 8.0);
  });

  // Forward and backward in one function. The reward model is frozen: gradients only for the
  // policy's parameters (1 and 2), so B's backward computes only the actions' cotangent.
  Function& whole = mpmd::whole_step(module, step, {1, 2});
  std::vector<mpmd::MeshSpec> meshes = {{"A", 2, "a"}, {"B", 2, "b"}};
  mpmd::FragmentPlan plan = mpmd::fragment(module, whole, meshes, {{"policy", "A"}, {"reward", "B"}});
  fmt::print("Fragments and transfers:\n{}", plan.summary());
  for (size_t m = 0; m < meshes.size(); ++m)
    fmt::print("mesh {}: {} contractions, {} tanh\n", meshes[m].name, plan.count(m, OpKind::DotGeneral),
               plan.count(m, OpKind::Tanh));

  // Gradients reach only the policy: the step returns (loss, d w1, d w2), both gradients come
  // from A, and what B's transpose sends back is the actions' cotangent and nothing else.
  bool frozen = plan.results.size() == 3;
  for (size_t r = 1; r < plan.results.size(); ++r)
    frozen = frozen && plan.fragments[plan.values[plan.results[r].index].producer].mesh == 0;
  for (const mpmd::Transfer& t : plan.transfers)
    if (t.from == 1) frozen = frozen && plan.values[t.value].type == f32({8, 3});
  fmt::print("reward model parameters get no gradient: {}\n", frozen ? "yes" : "NO");

  std::vector<Literal> in = {wave(f32({8, 4}), 1.0, 0.7), wave(f32({4, 8}), 0.5, 1.3), wave(f32({8, 3}), 0.5, 0.9),
                             wave(f32({3, 6}), 1.0, 0.3), wave(f32({6, 1}), 1.0, 0.4)};
  mpmd::FragmentPipeline runner(plan);
  for (const mpmd::Fragment& f : plan.fragments)
    fmt::print("fragment {} ({}) runs partitioned over {} devices of mesh {}\n", f.index, f.origin->to_string(),
               runner.devices_of(f.index), meshes[f.mesh].name);
  mpmd::FragmentPipelineRun run = runner.run(in);
  std::vector<Literal> split = run.results;
  std::vector<Literal> unsplit = interp::evaluate(module, whole.name(), in);
  double difference = largest_difference(split, unsplit);
  fmt::print("loss on meshes A and B = {:.6f}, unsplit = {:.6f}; largest difference {:.1e}\n",
             split[0].get_double(0), unsplit[0].get_double(0), difference);
  fmt::print("moved between meshes: {} bytes\n", run.transferred_bytes);

  // SGD (learning rate 0.5) on the policy only; the reward model's parameters stay as they are.
  double first = -split[0].get_double(0), last = first;
  bool rising = true;
  for (int s = 0; s < 5; ++s) {
    std::vector<Literal> out = runner.run(in).results;
    rising = rising && (s == 0 || -out[0].get_double(0) > last);
    last = -out[0].get_double(0);
    fmt::print("step {}: mean reward {:.6f}\n", s, last);
    for (size_t p = 1; p <= 2; ++p)
      for (int64_t i = 0; i < in[p].num_elements(); ++i)
        in[p].set_double(i, in[p].get_double(i) - 0.5 * out[p].get_double(i));
  }
  std::vector<Literal> out = runner.run(in).results;
  rising = rising && -out[0].get_double(0) > last;
  last = -out[0].get_double(0);
  fmt::print("mean reward {:.6f} -> {:.6f}: {}\n", first, last, rising ? "raised at every step" : "NOT raised");
  bool partitioned = true;
  for (const mpmd::Fragment& f : plan.fragments) partitioned = partitioned && runner.devices_of(f.index) == 2;
  bool ok = frozen && partitioned && difference <= 1e-5 && rising;
  fmt::print("{}: two_models\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
