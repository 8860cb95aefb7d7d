// bf16 mixed precision (Config::compute, `tessera train --precision bf16`; issue #21 item 4):
// which ops run in which type, the sharded step against the unsharded one, and the bytes of the
// data-parallel gradient all-reduce, which must be half those of f32 training. PyTorch's bf16
// run is the oracle in torch_oracle_test.cpp (label `oracle`).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "comm/accounting.h"
#include "interp/interpreter.h"
#include "nn/capture.h"
#include "nn_test_util.h"
#include "runtime/session.h"

namespace tessera::nn {
namespace {

using namespace tessera::ir;

Config mixed_config() {
  Config c = testing::acceptance_config();
  c.compute = ElementType::bf16;
  return c;
}

Mesh line(std::string axis) { return Mesh{"mesh", {{std::move(axis), 4}}, {}}; }

// The forward program: every dot_general reads and writes bf16; every reduce (the norms' sums of
// squares, the softmaxes' maxima and sums, the loss's sums) reads f32.
TEST(MixedPrecision, MatmulsInBf16ReductionsInF32) {
  Module m("mixed");
  Programs p = capture(m, TrainingStep{CausalLM(mixed_config())});
  const Function& loss = *m.find_function(p.loss);
  int dots = 0, reduces = 0;
  for (const auto& op : loss.body().ops()) {
    if (op->kind() == OpKind::DotGeneral) {
      ++dots;
      EXPECT_EQ(op->result(0)->type().element, ElementType::bf16);
      for (const Value* v : op->operands()) EXPECT_EQ(v->type().element, ElementType::bf16);
    }
    if (op->kind() == OpKind::Reduce) {
      ++reduces;
      EXPECT_EQ(op->operand(0)->type().element, ElementType::f32);
    }
  }
  const Config c = mixed_config();
  // Per layer 7 weight matmuls and 2 attention products; the head.
  EXPECT_EQ(dots, 9 * c.layers + 1);
  // Per layer 2 norms and one softmax (max and sum); the final norm; the loss's log-softmax (max,
  // sum) and its sum over tokens.
  EXPECT_EQ(reduces, 4 * c.layers + 1 + 3);
  EXPECT_EQ(loss.result_types.at(0).element, ElementType::f32);
  for (const auto& arg : loss.body().arguments()) {
    if (is_float(arg->type().element)) {
      EXPECT_EQ(arg->type().element, ElementType::f32) << "parameters stay f32";
    }
  }
}

// Three AdamW steps under dp, fsdp and tp equal the unsharded bf16 steps within bf16's rounding:
// the sharded program rounds each device's partial gradient to bf16 before the all-reduce adds
// them (in bf16, as the values are bf16), where the unsharded one rounds the whole sum once, so
// gradients differ by a few bf16 ulps (2^-8 relative); after AdamW's normalization that moves the
// losses by well under 1e-3 relative (measured: 5e-5 at most).
TEST(MixedPrecision, ShardedStepsTrackUnsharded) {
  constexpr double kTolerance = 1e-3;
  constexpr int kSteps = 3;
  const Config c = mixed_config();
  const AdamW adamw{1e-3, 0.9, 0.95, 1e-4, 0.1};
  std::vector<Literal> params = init_parameters(c, 42);
  testing::Batch batch = testing::make_batch(c, 7);

  Module ref("unsharded");
  Programs rp = capture(ref, TrainingStep{CausalLM(c)}.with(adamw));
  std::vector<double> want;
  std::vector<Literal> in = train_step_inputs(rp, params, 1, batch.tokens, batch.targets);
  for (int step = 1; step <= kSteps; ++step) {
    in[rp.step_input()] = rp.step_scalars(step);
    std::vector<Literal> out = interp::evaluate(ref, rp.train_step, in);
    want.push_back(out[0].get_double(0));
    for (size_t i = 0; i < 3 * rp.num_parameters(); ++i) in[i] = out[1 + i];
  }
  EXPECT_LT(want.back(), want.front()) << "the loss falls";

  runtime::Session s = runtime::Session::host(4);
  for (const ShardingPlan& plan : {data_parallel(line("data"), "data"), fsdp(line("data"), "data"),
                                   tensor_parallel(line("model"), "model"), context_parallel(line("ctx"), "ctx")}) {
    SCOPED_TRACE("plan " + plan.name);
    Module m("sharded");
    Programs p = capture(m, TrainingStep{CausalLM(c)}.with(adamw).sharded(plan));
    runtime::ShardedProgram sp = s.sharded_program(s.compile(m, p.train_step), p.output_aliases);
    std::vector<Literal> start = train_step_inputs(p, params, 1, batch.tokens, batch.targets);
    std::vector<runtime::ShardedBuffer> bufs;
    for (size_t i = 0; i < start.size(); ++i) bufs.push_back(sp.stage(i, start[i]));
    double worst = 0;
    for (int step = 1; step <= kSteps; ++step) {
      bufs[p.step_input()] = sp.stage(p.step_input(), p.step_scalars(step));
      std::vector<runtime::ShardedBuffer> out = sp.execute(bufs);
      double loss = sp.fetch(out[0]).get_double(0), w = want[size_t(step) - 1];
      double e = std::abs(loss - w) / std::abs(w);
      worst = std::max(worst, e);
      EXPECT_LE(e, kTolerance) << "step " << step << ": " << loss << " vs " << w;  // false for NaN
      for (size_t i = 0; i < 3 * p.num_parameters(); ++i) bufs[i] = out[1 + i];
    }
    std::cout << fmt::format("  {:5} bf16: worst relative loss error over {} steps {:.1e}\n", plan.name, kSteps, worst);
  }
}

// One data-parallel step with a traffic counter: the all-reduces' bytes (the ring model of what
// ran, summed over the devices). In bf16 training the matmul weights' gradients are reduced in
// bf16, half the bytes of f32; the embedding's and the norm gains' gradients stay f32, as those
// layers compute in f32 (and so does the loss scalar's all-reduce).
int64_t all_reduce_bytes(std::optional<ElementType> compute) {
  Config c = testing::acceptance_config();
  c.compute = compute;
  comm::Traffic traffic(4);
  runtime::SessionOptions options;
  options.traffic = &traffic;
  runtime::Session s = runtime::Session::host(4, options);
  Module m("dp");
  Programs p = capture(m, TrainingStep{CausalLM(c)}.with(AdamW{}).sharded(data_parallel(line("data"), "data")));
  runtime::ShardedProgram sp = s.sharded_program(s.compile(m, p.train_step), p.output_aliases);
  testing::Batch batch = testing::make_batch(c, 7);
  std::vector<Literal> start = train_step_inputs(p, init_parameters(c, 42), 1, batch.tokens, batch.targets);
  std::vector<runtime::ShardedBuffer> bufs;
  for (size_t i = 0; i < start.size(); ++i) bufs.push_back(sp.stage(i, start[i]));
  sp.execute(bufs);
  int64_t ring = 0;
  for (int64_t d = 0; d < 4; ++d) {
    auto it = traffic.device(d).by_kind().find("all_reduce");
    if (it != traffic.device(d).by_kind().end()) ring += it->second.ring;
  }
  return ring;
}

TEST(MixedPrecision, GradientAllReduceMovesHalfTheBytes) {
  int64_t f32 = all_reduce_bytes(std::nullopt), bf16 = all_reduce_bytes(ElementType::bf16);
  ASSERT_GT(f32, 0);
  // What bf16 saves: 2 of the 4 bytes of each matmul weight's gradient element, times the ring
  // model's 2 (n-1)/n = 1.5 on 4 devices, on each of the 4 devices.
  int64_t matmul_elements = 0, f32_elements = 0;
  for (const ParamSpec& s : parameter_specs(testing::acceptance_config())) {
    bool stays_f32 = s.name == "embed" || s.name.ends_with("norm");
    (stays_f32 ? f32_elements : matmul_elements) += s.num_elements();
  }
  double saving = 4 * 1.5 * 2 * double(matmul_elements);
  std::cout << fmt::format("  dp all-reduce bytes per step (ring model, 4 devices summed): f32 {}, bf16 {} ({:.4f}x); "
                           "{} matmul weight elements reduced in bf16, {} embedding and gain elements in f32\n",
                           f32, bf16, double(bf16) / double(f32), matmul_elements, f32_elements);
  EXPECT_NEAR(double(f32 - bf16), saving, 1e-3 * saving);
  EXPECT_GT(matmul_elements, 30 * f32_elements) << "the matmul weights are the bulk of the gradients";
}

}  // namespace
}  // namespace tessera::nn
