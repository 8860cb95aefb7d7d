// Pipeline schedules over fragments cut from the whole step (fragment_pipeline.h). A 4-layer
// residual stack written as named computations stage0 … stage{N−1}, microbatches by scan_calls and
// the loss a mean over microbatches (glue), runs under GPipe, 1F1B, interleaved (V = 2) and
// zero-bubble H1 (each transpose split into BI and W): loss and gradients bit for bit those of the unsplit whole step
// and of the same plan run in program order; the activations each stage keeps for its backwards
// follow the schedule (GPipe M microbatches, 1F1B min(P−s, M)); schedules that do not fit the
// program are refused naming the schedule, the action and the value. The CausalLM's blocks written
// as named computations give nn::TrainingStep::accumulate(M)'s step under 1F1B.
#include <gtest/gtest.h>

#include <cmath>

#include "common/error_of.h"
#include "common/random_literal.h"
#include "exec/accelerate.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "mpmd/fragment_pipeline.h"
#include "mpmd/model_step.h"
#include "nn/capture.h"
#include "nn/layers.h"
#include "nn/nn_test_util.h"
#include "schedule/schedule.h"

namespace tessera::mpmd {
namespace {

using schedule::Action;
using schedule::ActionKind;
using schedule::Schedule;
using schedule::ScheduleKind;
using schedule::generate;
using schedule::gpipe;
using schedule::insert_transfers;
using schedule::interleaved;
using schedule::one_f_one_b;
using schedule::schedule_kind_name;
using schedule::zero_bubble_h1;

using ir::f32;
using ir::FunctionBuilder;
using ir::Tensor;
using testing::error_of;

constexpr int64_t kLayers = 4, kRows = 16, kIn = 4, kWidth = 8, kOut = 3;

// @step(x[16,4], t[16,3], w_in[4,8], w_0 … w_3[8,8], w_out[8,3]): microbatch i is rows
// [i·16/M, (i+1)·16/M); h = x w_in, then h += tanh(h w_l) for each layer, loss_i = Σ (h w_out − t)²,
// loss = Σ_i loss_i / 16. Virtual stage v holds layers [v·4/N, (v+1)·4/N); stage0 also the input
// projection, the last also the output and the microbatch's loss.
std::vector<std::string> add_stack(ir::Module& m, int64_t n, int64_t microbatches) {
  const int64_t rows = kRows / microbatches, per = kLayers / n;
  std::vector<ir::Function*> stage;
  std::vector<std::string> names;
  for (int64_t v = 0; v < n; ++v) {
    names.push_back(fmt::format("stage{}", v));
    stage.push_back(&ir::build_function(m, names.back(), [&](FunctionBuilder& b) {
      Tensor h = b.param(v == 0 ? f32({rows, kIn}) : f32({rows, kWidth}));
      if (v == 0) h = matmul(h, b.param(f32({kIn, kWidth})));
      for (int64_t l = 0; l < per; ++l) h = h + tanh(matmul(h, b.param(f32({kWidth, kWidth}))));
      if (v < n - 1) return h;
      Tensor w_out = b.param(f32({kWidth, kOut})), t = b.param(f32({rows, kOut}));
      Tensor d = matmul(h, w_out) - t;
      return sum(d * d);
    }));
  }
  ir::build_function(m, "step", [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({kRows, kIn})), t = b.param(f32({kRows, kOut})), w_in = b.param(f32({kIn, kWidth}));
    std::vector<Tensor> w;
    for (int64_t l = 0; l < kLayers; ++l) w.push_back(b.param(f32({kWidth, kWidth})));
    Tensor w_out = b.param(f32({kWidth, kOut}));
    // Glue before any stage: the microbatches' rows.
    std::vector<Tensor> xs, ts;
    for (int64_t i = 0; i < microbatches; ++i) xs.push_back(ir::slice(x, {i * rows, 0}, {(i + 1) * rows, kIn}));
    for (int64_t i = 0; i < microbatches; ++i) ts.push_back(ir::slice(t, {i * rows, 0}, {(i + 1) * rows, kOut}));
    std::vector<Tensor> hs = xs;
    for (int64_t v = 0; v < n; ++v) {
      ScanResult r = scan_calls(b, *stage[v], microbatches, {}, [&](int64_t i) {
        std::vector<Tensor> args = {hs[i]};
        if (v == 0) args.push_back(w_in);
        for (int64_t l = v * per; l < (v + 1) * per; ++l) args.push_back(w[l]);
        if (v == n - 1) {
          args.push_back(w_out);
          args.push_back(ts[i]);
        }
        return args;
      });
      for (int64_t i = 0; i < microbatches; ++i) hs[i] = r.ys[i][0];
    }
    Tensor loss = hs[0];
    for (int64_t i = 1; i < microbatches; ++i) loss = loss + hs[i];
    return loss / static_cast<double>(kRows);
  });
  return names;
}

FragmentPipelineOptions weights_only() {
  FragmentPipelineOptions o;
  for (size_t p = 2; p < 2 + 2 + kLayers; ++p) o.wrt.push_back(p);  // w_in, w_0 … w_3, w_out
  return o;
}

interp::Options fast() {
  interp::Options o;
  o.accelerate = exec::accelerate;
  return o;
}

void expect_bitwise(const std::vector<ir::Literal>& got, const std::vector<ir::Literal>& want,
                    const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == want[i]) << what << ": result " << i;
}

struct Case {
  ScheduleKind kind;
  int64_t stages, microbatches, virtual_per_stage;
};

// Runs `c` on the stack; checks the results; returns the run (for the peaks).
FragmentPipelineRun run_case(const Case& c) {
  std::string what = fmt::format("{} P={} M={} V={}", schedule_kind_name(c.kind), c.stages, c.microbatches,
                                 c.virtual_per_stage);
  ir::Module m("stack");
  std::vector<std::string> names = add_stack(m, c.stages * c.virtual_per_stage, c.microbatches);
  FragmentPipelineOptions o = weights_only();
  o.split_backward = c.kind == ScheduleKind::kZeroBubbleH1;
  FragmentPipeline fp(m, *m.find_function("step"), names, c.stages, o);
  EXPECT_EQ(fp.microbatches(), c.microbatches) << what;
  std::vector<ir::Literal> in = testing::random_inputs(fp.whole(), 41);
  std::vector<ir::Literal> unsplit = interp::evaluate(fp.whole(), in, fast());
  std::vector<ir::Literal> program_order = fp.run(in).results;
  FragmentPipelineRun run = fp.run(generate(c.kind, c.stages, c.microbatches, c.virtual_per_stage), in);
  SCOPED_TRACE(fp.summary());
  // Loss and the six gradients; the same ops on the same values, so bit for bit.
  EXPECT_EQ(run.results.size(), 1u + 2 + kLayers) << what;
  expect_bitwise(run.results, unsplit, what + " vs the unsplit whole step");
  expect_bitwise(run.results, program_order, what + " vs the plan run in program order");
  // whole() sums the gradients over microbatches in microbatch order; autodiff's own whole step
  // sums them in reverse: the same numbers up to rounding.
  const ir::Function& autodiff_order = whole_step(m, *m.find_function("step"), weights_only().wrt);
  std::vector<ir::Literal> reverse_sums = interp::evaluate(autodiff_order, in, fast());
  for (size_t i = 0; i < reverse_sums.size(); ++i)
    for (int64_t k = 0; k < reverse_sums[i].num_elements(); ++k)
      EXPECT_NEAR(run.results[i].get_double(k), reverse_sums[i].get_double(k),
                  1e-6 * std::max(1.0, std::abs(reverse_sums[i].get_double(k))))
          << what << ": result " << i << " element " << k;
  // Moved: each of the N − 1 boundaries between virtual stages (on different stages) carries every
  // microbatch's activation [16/M, 8] forward and its cotangent back, all rows once each way.
  EXPECT_EQ(run.transferred_bytes, (c.stages * c.virtual_per_stage - 1) * 2 * kRows * kWidth * 4) << what;
  // The loss is not trivially equal: it is a positive number that depends on every microbatch.
  EXPECT_GT(run.results[0].get_double(0), 0.0) << what;
  return run;
}

TEST(FragmentPipeline, MapsFragmentsToActions) {
  ir::Module m("stack");
  std::vector<std::string> names = add_stack(m, 2, 4);
  FragmentPipeline fp(m, *m.find_function("step"), names, 2, weights_only());
  SCOPED_TRACE(fp.summary());
  // One forward and one backward fragment per (microbatch, virtual stage), on the stage holding it.
  std::map<std::string, int> count;
  for (size_t f = 0; f < fp.plan().fragments.size(); ++f) {
    const FragmentRole& r = fp.role(f);
    if (r.kind == FragmentRole::Kind::kGlue) {
      count["glue"]++;
      continue;
    }
    count[r.to_string()]++;
    EXPECT_EQ(fp.plan().fragments[f].mesh, static_cast<size_t>(r.virtual_stage % 2)) << r.to_string();
  }
  for (int64_t mb = 0; mb < 4; ++mb)
    for (int64_t v = 0; v < 2; ++v) {
      EXPECT_EQ(count[fmt::format("F(mb {}, vs {})", mb, v)], 1);
      EXPECT_EQ(count[fmt::format("B(mb {}, vs {})", mb, v)], 1);
    }
  // Glue, one op a fragment: the slices of x (stage 0) and of t (stage 1), the loss over
  // microbatches, and each gradient's sum over microbatches — unmarked from the transposes (so no
  // backward waits for another) and rebuilt in microbatch order at the end, ((g0 + g1) + g2) + g3:
  // 4 + 4 slices, 3 adds and a division for the loss, 3 adds for each of the 6 gradients.
  const FragmentPlan& plan = fp.plan();
  EXPECT_EQ(count["glue"], 4 + 4 + 3 + 1 + 6 * 3);
  for (size_t f = 0; f < plan.fragments.size(); ++f)
    if (fp.role(f).kind == FragmentRole::Kind::kGlue) {
      EXPECT_EQ(plan.fragments[f].num_ops(), 1u) << f;
    }
  for (size_t r = 1; r < plan.results.size(); ++r) {
    ASSERT_EQ(plan.results[r].kind, Binding::Kind::kValue);
    size_t last = plan.values[plan.results[r].index].producer;
    EXPECT_EQ(fp.role(last).kind, FragmentRole::Kind::kGlue) << "gradient " << r;
    // The last add of the chain reads the running sum and microbatch 3's term, computed by B(mb 3, ·).
    const Binding& term = plan.fragments[last].inputs.at(1);
    ASSERT_EQ(term.kind, Binding::Kind::kValue);
    EXPECT_EQ(fp.role(plan.values[term.index].producer).microbatch, 3) << "gradient " << r;
  }
  // Only activations go forward and their cotangents back: one each per microbatch.
  EXPECT_EQ(fp.plan().transfers.size(), 8u);
  // GPipe's compiled lists: every transfer at a SEND of the schedule, none on the side.
  CompiledSchedule c = fp.compile(gpipe(2, 4));
  EXPECT_EQ(c.scheduled_transfers, 8);
  EXPECT_EQ(c.direct_transfers, 0);
}

// A compiled list in short: "s3:" where the schedule step changes (s-1: start or glue after no
// compute), then rF (run fragment F), pV>M (post value V to mesh M), wV<M (wait for V from mesh M).
std::string short_form(const std::vector<Instruction>& list) {
  std::string out;
  int64_t step = -2;
  for (const Instruction& i : list) {
    if (i.step != step) out += fmt::format("{}s{}:", out.empty() ? "" : " ", step = i.step);
    if (i.kind == Instruction::Kind::kRun) out += fmt::format(" r{}", i.fragment);
    if (i.kind == Instruction::Kind::kPost) out += fmt::format(" p{}>{}", i.value, i.mesh);
    if (i.kind == Instruction::Kind::kWait) out += fmt::format(" w{}<{}", i.value, i.mesh);
  }
  return out;
}

// The instruction lists compile() makes for the four schedules on the stack (2 stages, 2
// microbatches), glue placed as it is: pinned, so a change to how schedules are executed abstractly
// shows here as a changed list before it shows as a changed time.
TEST(FragmentPipeline, CompiledListsArePinned) {
  const std::vector<std::pair<Case, std::vector<std::string>>> cases = {
      {{ScheduleKind::kGPipe, 2, 2, 1},
       {"s-1: r0 r1 s0: r4 s1: p2>1 s2: r5 s3: p4>1 s4: w25<1 s5: r13 s6: w20<1 s7: r12 r17 r18 r19",
        "s-1: r2 r3 s0: w2<0 s1: r6 s2: w4<0 s3: r7 r8 r9 s4: r11 s5: p25>0 s6: r10 r14 r15 r16 s7: p20>0"}},
      {{ScheduleKind::kOneFOneB, 2, 2, 1},
       {"s-1: r0 r1 s0: r4 s1: p2>1 s2: r5 s3: p4>1 s4: w25<1 s5: r13 s6: w20<1 s7: r12 r17 r18 r19",
        "s-1: r2 r3 s0: w2<0 s1: r6 s2: r11 s3: p25>0 s4: w4<0 s5: r7 r8 r9 s6: r10 r14 r15 r16 s7: p20>0"}},
      {{ScheduleKind::kInterleaved, 2, 2, 2},
       {"s-1: r0 r1 s0: r4 s1: p2>1 s2: r5 s3: p3>1 s4: w4<1 s5: r8 s6: p6>1 s7: w5<1 s8: r9 s9: p8>1"
        " s10: w22<1 s11: r17 s12: p26>1 s13: w20<1 s14: r16 r24 s15: p24>1 s16: w31<1 s17: r21"
        " s18: w28<1 s19: r20 r26 r27",
        "s-1: r2 r3 s0: w2<0 s1: r6 s2: p4>0 s3: w3<0 s4: r7 s5: p5>0 s6: w6<0 s7: r10 s8: r15 s9: p22>0"
        " s10: w8<0 s11: r11 r12 r13 s12: r14 r22 r23 s13: p20>0 s14: w26<0 s15: r19 s16: p31>0"
        " s17: w24<0 s18: r18 r25 s19: p28>0"}},
      {{ScheduleKind::kZeroBubbleH1, 2, 2, 1},
       {"s-1: r0 r1 s0: r4 s1: p2>1 s2: r5 s3: p4>1 s4: w31<1 s6: r15 s7: w26<1 s9: r14 r19 r20 r21",
        "s-1: r2 r3 s0: w2<0 s1: r6 s2: r12 s3: p31>0 s4: w4<0 s5: r7 r8 r9 s6: r10 s7: p26>0 s8: r13"
        " s9: r11 r16 r17 r18"}},
  };
  for (const auto& [c, want] : cases) {
    ir::Module m("stack");
    std::vector<std::string> names = add_stack(m, c.stages * c.virtual_per_stage, c.microbatches);
    FragmentPipelineOptions o = weights_only();
    o.split_backward = c.kind == ScheduleKind::kZeroBubbleH1;
    FragmentPipeline fp(m, *m.find_function("step"), names, c.stages, o);
    CompiledSchedule got = fp.compile(generate(c.kind, c.stages, c.microbatches, c.virtual_per_stage));
    ASSERT_EQ(got.stages.size(), want.size());
    for (size_t s = 0; s < want.size(); ++s)
      EXPECT_EQ(short_form(got.stages[s]), want[s]) << schedule_kind_name(c.kind) << " stage " << s;
  }
}

TEST(FragmentPipeline, GPipeAnd1F1BGiveTheWholeStep) {
  for (int64_t p : {2, 4})
    for (int64_t mb : {4, 8}) {
      FragmentPipelineRun g = run_case({ScheduleKind::kGPipe, p, mb, 1});
      FragmentPipelineRun f = run_case({ScheduleKind::kOneFOneB, p, mb, 1});
      // Activations kept for the backward: GPipe keeps all M microbatches' on every stage, 1F1B
      // min(P − s, M); every microbatch keeps the same bytes, so the peaks are in that ratio exactly.
      for (int64_t s = 0; s < p; ++s) {
        SCOPED_TRACE(fmt::format("P={} M={} stage {}", p, mb, s));
        EXPECT_GT(f.peak_saved_bytes[s], 0);
        EXPECT_GE(g.peak_saved_bytes[s], f.peak_saved_bytes[s]);
        EXPECT_EQ(g.peak_saved_bytes[s] * std::min(p - s, mb), f.peak_saved_bytes[s] * mb);
      }
      EXPECT_GT(g.peak_saved_bytes[p - 1], f.peak_saved_bytes[p - 1]);
      // Everything a stage keeps (inputs' slices, received cotangents, running gradient sums too)
      // follows the same order: each gradient term is added as soon as its backward has run.
      for (int64_t s = 0; s < p; ++s) EXPECT_GE(g.peak_store_bytes[s], f.peak_store_bytes[s]) << s;
      EXPECT_GT(g.peak_store_bytes[p - 1], f.peak_store_bytes[p - 1]);
    }
}

TEST(FragmentPipeline, InterleavedAndSplitZeroBubble) {
  for (int64_t mb : {4, 8}) run_case({ScheduleKind::kInterleaved, 2, mb, 2});
  run_case({ScheduleKind::kZeroBubbleH1, 2, 4, 1});
  run_case({ScheduleKind::kZeroBubbleH1, 4, 8, 1});
}

TEST(FragmentPipeline, RefusesSchedulesThatDoNotFitTheProgram) {
  ir::Module m("stack");
  std::vector<std::string> names = add_stack(m, 2, 4);
  FragmentPipeline fp(m, *m.find_function("step"), names, 2, weights_only());
  std::vector<ir::Literal> in = testing::random_inputs(fp.whole(), 5);
  EXPECT_NE(error_of([&] { fp.run(gpipe(4, 4), in); })
                .find("schedule 'gpipe' has 4 stages x 1 virtual stages, but the program's 2 virtual stages "
                      "(stage0, stage1) are cut for 2 stages x 1"),
            std::string::npos)
      << error_of([&] { fp.run(gpipe(4, 4), in); });
  EXPECT_NE(error_of([&] { fp.run(one_f_one_b(2, 8), in); })
                .find("schedule '1f1b' has 8 microbatches, but the program calls each virtual stage 4 times"),
            std::string::npos)
      << error_of([&] { fp.run(one_f_one_b(2, 8), in); });
  EXPECT_NE(error_of([&] { fp.run(interleaved(2, 4, 2), in); }).find("schedule 'interleaved' has 2 stages x 2"),
            std::string::npos);
  std::string e = error_of([&] { fp.run(zero_bubble_h1(2, 4), in); });
  EXPECT_NE(e.find("schedule 'zb-h1': stage 0 step"), std::string::npos) << e;
  EXPECT_NE(e.find("BI(mb 0, vs 0): the transposes of the whole step are not split"), std::string::npos)
      << e;
  // Programs that are no pipeline: a named computation that is not a virtual stage, a stage
  // called for fewer microbatches than the others.
  ir::Module m2("stack");
  add_stack(m2, 2, 4);
  e = error_of([&] { FragmentPipeline(m2, *m2.find_function("step"), {"stage0"}, 1, weights_only()); });
  EXPECT_NE(e.find("named computation 'stage1' is not one of the virtual stages (stage0)"), std::string::npos) << e;
  // The refusal left no half-made function behind: the right pipeline can be made next.
  EXPECT_EQ(error_of([&] { FragmentPipeline(m2, *m2.find_function("step"), {"stage0", "stage1"}, 2); }), "<no error>");
  ir::Module m3("uneven");
  ir::Function& f = ir::build_function(m3, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({2, 2})), w = b.param(f32({2, 2}));
    return tanh(matmul(x, w));
  });
  for (bool with_c : {false, true})  // 'b' for one microbatch of two; then also 'c' without a counter
    ir::build_function(m3, with_c ? "step_c" : "step", [&](FunctionBuilder& b) {
      Tensor x = b.param(f32({2, 2})), w = b.param(f32({2, 2})), v = b.param(f32({2, 2}));
      Tensor a0 = named_call(b, f, {x, w}, 0, "a")[0], a1 = named_call(b, f, {x, w}, 1, "a")[0];
      Tensor y = named_call(b, f, {a0 + a1, v}, 0, "b")[0];
      if (with_c) y = named_call(b, f, {y, v}, std::nullopt, "c")[0];
      return sum(y);
    });
  e = error_of([&] { FragmentPipeline(m3, *m3.find_function("step"), {"a", "b"}, 1); });
  EXPECT_NE(e.find("virtual stage 'b' is called with counters 0, but 'a' with 0 … 1"), std::string::npos) << e;
  e = error_of([&] { FragmentPipeline(m3, *m3.find_function("step_c"), {"a", "b", "c"}, 1); });
  EXPECT_NE(e.find("virtual stage 'c' is called without a call counter"), std::string::npos) << e;
}

// Stage 1 carries a running sum from microbatch to microbatch (acc' = acc + tanh(h w)), so its
// forward of microbatch 1 reads its forward of microbatch 0: a schedule that runs them the other
// way round passes the schedule validator (which knows nothing of the program) but not the plan.
TEST(FragmentPipeline, RefusesAnOrderAgainstTheProgramsDependencies) {
  ir::Module m("carried");
  ir::Function& s0 = ir::build_function(m, "stage0", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({2, 4})), w = b.param(f32({4, 4}));
    return tanh(matmul(x, w));
  });
  ir::Function& s1 = ir::build_function(m, "stage1", [](FunctionBuilder& b) {
    Tensor acc = b.param(f32({2, 4})), h = b.param(f32({2, 4})), w = b.param(f32({4, 4}));
    return acc + tanh(matmul(h, w));
  });
  ir::build_function(m, "step", [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({4, 4})), w0 = b.param(f32({4, 4})), w1 = b.param(f32({4, 4}));
    std::vector<Tensor> xs = {ir::slice(x, {0, 0}, {2, 4}), ir::slice(x, {2, 0}, {4, 4})};
    ScanResult h = scan_calls(b, s0, 2, {}, [&](int64_t i) { return std::vector<Tensor>{xs[i], w0}; });
    ScanResult r = scan_calls(b, s1, 2, {ir::broadcast_to(b.scalar(ir::ElementType::f32, 0), {2, 4})},
                              [&](int64_t i) { return std::vector<Tensor>{h.ys[i][0], w1}; });
    return sum(r.carry[0] * r.carry[0]);
  });
  FragmentPipelineOptions o;
  o.wrt = {1, 2};
  FragmentPipeline fp(m, *m.find_function("step"), {"stage0", "stage1"}, 2, o);
  std::vector<ir::Literal> in = testing::random_inputs(fp.whole(), 9);
  // In order it runs and gives the whole step.
  expect_bitwise(fp.run(gpipe(2, 2), in).results, interp::evaluate(fp.whole(), in, fast()), "gpipe");
  // Stage 1 takes microbatch 1 first: swap its two (RECV, F) pairs.
  Schedule s = gpipe(2, 2);
  s.name = "swapped";
  std::vector<Action>& st1 = s.actions[1];
  ASSERT_EQ(st1[1].kind, ActionKind::kForward);
  ASSERT_EQ(st1[3].kind, ActionKind::kForward);
  std::swap(st1[0], st1[2]);
  std::swap(st1[1], st1[3]);
  std::string e = error_of([&] { fp.run(s, in); });
  EXPECT_NE(e.find("schedule 'swapped': stage 1 step 1 F(mb 1, vs 1): fragment"), std::string::npos) << e;
  EXPECT_NE(e.find("= F(mb 0, vs 1) on this stage, which has not run yet"), std::string::npos) << e;
}

// A value across stages that no SEND of the schedule names: stage0 of microbatch 1 reads stage1's
// output of microbatch 0 (a carry that goes back round the pipeline). It moves right after its
// producer and is awaited at first use. Its cotangent makes B(mb 0, vs 1) wait for B(mb 1, vs 0),
// so GPipe (backwards in microbatch order) cannot finish — refused naming both stuck stages —
// while GPipe with the backwards in reverse order runs and gives the whole step.
TEST(FragmentPipeline, RefusesAScheduleThatCannotFinishOnTheProgram) {
  ir::Module m("ring");
  ir::Function& s0 = ir::build_function(m, "stage0", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({2, 4})), prev = b.param(f32({2, 4})), w = b.param(f32({4, 4}));
    return tanh(matmul(x + prev, w));
  });
  ir::Function& s1 = ir::build_function(m, "stage1", [](FunctionBuilder& b) {
    Tensor h = b.param(f32({2, 4})), w = b.param(f32({4, 4}));
    return tanh(matmul(h, w));
  });
  ir::build_function(m, "step", [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({4, 4})), w0 = b.param(f32({4, 4})), w1 = b.param(f32({4, 4}));
    std::vector<Tensor> xs = {ir::slice(x, {0, 0}, {2, 4}), ir::slice(x, {2, 0}, {4, 4})};
    Tensor prev = ir::broadcast_to(b.scalar(ir::ElementType::f32, 0), {2, 4});
    for (int64_t i = 0; i < 2; ++i) prev = named_call(b, s1, {named_call(b, s0, {xs[i], prev, w0}, i)[0], w1}, i)[0];
    return sum(prev * prev);
  });
  FragmentPipelineOptions o;
  o.wrt = {1, 2};
  FragmentPipeline fp(m, *m.find_function("step"), {"stage0", "stage1"}, 2, o);
  std::vector<ir::Literal> in = testing::random_inputs(fp.whole(), 13);
  std::string e = error_of([&] { fp.run(gpipe(2, 2), in); });
  EXPECT_NE(e.find("schedule 'gpipe' cannot finish on this program: stage 0 step 4 RECV grad(mb 0, vs 1) from "
                   "stage 1 waits for %"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("stage 1 step 4 B(mb 0, vs 1): fragment"), std::string::npos) << e;
  EXPECT_NE(e.find("(stage1#0ᵀ) waits for %"), std::string::npos) << e;
  // GPipe's forwards, then the backwards from the last microbatch to the first.
  auto compute = [](ActionKind kind, int64_t mb, int64_t vs) {
    Action a;
    a.kind = kind;
    a.microbatch = mb;
    a.virtual_stage = vs;
    return a;
  };
  Schedule reversed;
  reversed.name = "gpipe-reversed";
  reversed.stages = reversed.microbatches = 2;
  reversed.actions.resize(2);
  for (int64_t st = 0; st < 2; ++st)
    reversed.actions[st] = {compute(ActionKind::kForward, 0, st), compute(ActionKind::kForward, 1, st),
                            compute(ActionKind::kBackward, 1, st), compute(ActionKind::kBackward, 0, st)};
  insert_transfers(reversed);
  CompiledSchedule c = fp.compile(reversed);
  EXPECT_EQ(c.direct_transfers, 2);  // the carry forward and its cotangent back
  // Pinned as CompiledListsArePinned pins the built-in schedules': here with direct transfers too.
  EXPECT_EQ(short_form(c.stages[0]),
            "s-1: r0 r1 s0: r2 s1: p1>1 s2: w3<1 r4 s3: p4>1 s4: w8<1 s5: r10 p10>1 s6: w11<1 s7: r12 r14");
  EXPECT_EQ(short_form(c.stages[1]),
            "s0: w1<0 s1: r3 p3>0 s2: w4<0 s3: r5 r6 r7 r8 s4: r9 s5: p8>0 s6: w10<0 r11 r13 s7: p11>0");
  expect_bitwise(fp.run(reversed, in).results, interp::evaluate(fp.whole(), in, fast()), "gpipe-reversed");
}

// The CausalLM of tests/mpmd/pipeline_test.cpp (4 layers) as model_step writes it: two named
// computations of two blocks each — stage0 the embedding and its blocks, stage1 its blocks, the
// norm, the head and the microbatch's mean cross-entropy — over M microbatches (rows i, i+M, …),
// the loss (Σ loss_i) · 1/M: under 1F1B on 2 stages it gives nn::TrainingStep::accumulate(M)'s loss
// and gradients. Bit for bit: the blocks are the model's own, the whole step's backward seeds each
// microbatch with 1/M where accumulate seeds 1 and scales the sum by 1/M — M a power of two, so
// the two differ by an exact scaling — and both add the microbatches' terms in the same order.
TEST(FragmentPipeline, CausalLMBlocksGiveTheAccumulatedStep) {
  nn::Config c;
  c.vocab = 32, c.d_model = 32, c.layers = 4, c.heads = 4, c.kv_heads = 2, c.ffn = 64, c.seq = 8, c.batch = 8;
  const nn::CausalLM model(c);
  const std::vector<nn::ParamSpec>& specs = model.parameters();
  std::vector<ir::Literal> in = nn::init_parameters(c, 5);
  nn::testing::Batch batch = nn::testing::make_batch(c, 11);
  for (int64_t microbatches : {4, 8}) {
    SCOPED_TRACE(fmt::format("M={}", microbatches));
    ModelStep step = model_step(model, 2, microbatches);
    ir::Module& m = *step.module;
    std::vector<ir::Literal> step_in = in;
    for (ir::Literal& x : step.batch_inputs(batch.tokens, batch.targets)) step_in.push_back(std::move(x));
    FragmentPipelineOptions o;
    for (size_t i = 0; i < specs.size(); ++i) o.wrt.push_back(i);
    FragmentPipeline fp(m, step.step(), step.virtual_stages, 2, o);
    FragmentPipelineRun run = fp.run(one_f_one_b(2, microbatches), step_in);

    ir::Module whole("whole");
    nn::Programs p = nn::capture(whole, nn::TrainingStep{model}.accumulate(microbatches));
    std::vector<ir::Literal> whole_in = in;
    whole_in.push_back(batch.tokens);
    whole_in.push_back(batch.targets);
    std::vector<ir::Literal> want = interp::evaluate(whole, p.step, whole_in, fast());
    ASSERT_EQ(run.results.size(), 1 + specs.size());
    ASSERT_EQ(want.size(), run.results.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_LE(nn::testing::relative_error(run.results[i], want[i]), 1e-6)
          << (i == 0 ? std::string("loss") : specs[i - 1].name);
    size_t bitwise = 0;
    for (size_t i = 0; i < want.size(); ++i) bitwise += run.results[i] == want[i];
    EXPECT_EQ(bitwise, want.size()) << "results equal bit for bit";
    EXPECT_GT(run.results[0].get_double(0), 1.0);  // about ln 32 at initialization
  }
}

}  // namespace
}  // namespace tessera::mpmd
