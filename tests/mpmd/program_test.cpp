// The MPMD program form (issue #8 item 1): named computations in one step program, assigned to
// meshes, cut into per-mesh fragments with transfers, and run by FragmentPipeline in program order. Checked: which ops
// and transfers each fragment gets, the clone rule for cheap values, the refusal of a parameter read
// on two meshes, print → parse → print of a program with named computations, and results — loss and
// every gradient — equal to the unsplit program and to autodiff of the same math written without
// named computations, on 2 and 3 meshes, with microbatch loops and with an SPMD-sharded mesh.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "autodiff/reverse.h"
#include "common/error_of.h"
#include "common/random_literal.h"
#include "exec/accelerate.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "mpmd/fragment_pipeline.h"
#include "mpmd/fragments.h"
#include "mpmd/program.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"

namespace tessera::mpmd {
namespace {

using ir::f32;
using ir::FunctionBuilder;
using ir::Tensor;
using testing::error_of;

// The largest |a − b| / max(1, |b|) over every element, NaN when any element's is (std::max
// would keep the largest before it); types must match.
double max_relative(const ir::Literal& a, const ir::Literal& b) {
  EXPECT_EQ(ir::to_string(a.type()), ir::to_string(b.type()));
  double worst = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    double e = std::abs(a.get_double(i) - b.get_double(i)) / std::max(1.0, std::abs(b.get_double(i)));
    if (std::isnan(e)) return e;
    worst = std::max(worst, e);
  }
  return worst;
}

void expect_all_close(const std::vector<ir::Literal>& got, const std::vector<ir::Literal>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(max_relative(got[i], want[i]), tol) << "result " << i;
}

// A three-piece MLP, x[8,4] -> tanh(x w0) -> tanh(· w1) -> mean squared error against t, as named
// computations (@step) and, the same math, as one plain function (@plain). Parameters of both:
// (x, w0, w1, w2, t).
// With `x_sharding`, @step's x is laid out by it (its mesh must be in m).
void add_mlp(ir::Module& m, std::optional<ir::Sharding> x_sharding = std::nullopt) {
  ir::Function& layer0 = ir::build_function(m, "layer0", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 4})), w = f.param(f32({4, 6}));
    return tanh(matmul(x, w));
  });
  ir::Function& layer1 = ir::build_function(m, "layer1", [](FunctionBuilder& f) {
    Tensor h = f.param(f32({8, 6})), w = f.param(f32({6, 5}));
    return tanh(matmul(h, w));
  });
  ir::Function& head = ir::build_function(m, "head", [](FunctionBuilder& f) {
    Tensor h = f.param(f32({8, 5})), w = f.param(f32({5, 3})), t = f.param(f32({8, 3}));
    Tensor d = matmul(h, w) - t;
    return sum(d * d) / 8.0;
  });
  ir::build_function(m, "step", [&](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 4}), x_sharding), w0 = f.param(f32({4, 6})), w1 = f.param(f32({6, 5}));
    Tensor w2 = f.param(f32({5, 3})), t = f.param(f32({8, 3}));
    Tensor h0 = named_call(f, layer0, {x, w0})[0];
    Tensor h1 = named_call(f, layer1, {h0, w1})[0];
    return named_call(f, head, {h1, w2, t})[0];
  });
  ir::build_function(m, "plain", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 4})), w0 = f.param(f32({4, 6})), w1 = f.param(f32({6, 5}));
    Tensor w2 = f.param(f32({5, 3})), t = f.param(f32({8, 3}));
    Tensor d = matmul(tanh(matmul(tanh(matmul(x, w0)), w1)), w2) - t;
    return sum(d * d) / 8.0;
  });
}

// The interpreter with the fast kernels, as the runner runs one-device meshes.
interp::Options fast() {
  interp::Options o;
  o.accelerate = exec::accelerate;
  return o;
}

// (loss, gradient of every parameter) of @plain by autodiff of the whole function, no names.
std::vector<ir::Literal> plain_reference(ir::Module& m, const std::vector<ir::Literal>& in) {
  autodiff::ReverseOptions o;
  o.return_value = true;
  ir::Function& g = autodiff::reverse(m, *m.find_function("plain"), o);
  return interp::evaluate(m, g.name(), in);
}

std::vector<MeshSpec> meshes(std::initializer_list<const char*> names) {
  std::vector<MeshSpec> out;
  for (const char* n : names) out.push_back({n, 1, ""});
  return out;
}

// Fragments as "mesh:origin" in program order.
std::vector<std::string> layout(const FragmentPlan& plan) {
  std::vector<std::string> out;
  for (const Fragment& f : plan.fragments)
    out.push_back(plan.meshes[f.mesh].name + ":" + (f.origin ? f.origin->to_string() : "-"));
  return out;
}

// Transfers as "value type from->to".
std::vector<std::string> moves(const FragmentPlan& plan) {
  std::vector<std::string> out;
  for (const Transfer& t : plan.transfers)
    out.push_back(fmt::format("{} {}->{}", ir::to_string(plan.values[t.value].type), plan.meshes[t.from].name,
                              plan.meshes[t.to].name));
  return out;
}

// A NaN in the results is the worst error there is, not one skipped.
TEST(ProgramForm, MaxRelativeIsNaNWhenAnElementIs) {
  ir::Literal got(f32({3})), want(f32({3}));
  for (int64_t i = 0; i < 3; ++i) {
    got.set_double(i, double(i));
    want.set_double(i, double(i) + 0.5);
  }
  got.set_double(1, NAN);
  EXPECT_TRUE(std::isnan(max_relative(got, want))) << max_relative(got, want);
}

TEST(ProgramForm, TwoMeshFragmentsAndTransfers) {
  ir::Module m("mlp");
  add_mlp(m);
  ir::Function& whole = whole_step(m, *m.find_function("step"));
  FragmentPlan plan = fragment(m, whole, meshes({"A", "B"}), {{"layer0", "A"}, {"layer1", "A"}, {"head", "B"}});
  SCOPED_TRACE(plan.summary());
  // Forward in call order, then the transpose in reverse order, each on its forward's mesh.
  EXPECT_EQ(layout(plan), (std::vector<std::string>{"A:layer0", "A:layer1", "B:head", "B:headᵀ", "A:layer1ᵀ",
                                                      "A:layer0ᵀ"}));
  // Only the activation crosses forward and only its cotangent crosses back.
  EXPECT_EQ(moves(plan), (std::vector<std::string>{"tensor<8x5xf32> A->B", "tensor<8x5xf32> B->A"}));
  // Contractions: forward 2 + backward 4 (weight and input gradients) on A, 1 + 2 on B.
  EXPECT_EQ(plan.count(0, ir::OpKind::DotGeneral), 6u);
  EXPECT_EQ(plan.count(1, ir::OpKind::DotGeneral), 3u);
  EXPECT_EQ(plan.count(0, ir::OpKind::Tanh), 2u);
  EXPECT_EQ(plan.count(1, ir::OpKind::Tanh), 0u);
  // Parameters stay home: x, w0, w1 on A; w2, t on B.
  std::vector<std::optional<size_t>> home = {0, 0, 0, 1, 1};
  EXPECT_EQ(plan.parameter_mesh, home);
  // The loss comes from B; each gradient from its parameter's mesh.
  ASSERT_EQ(plan.results.size(), 6u);
  EXPECT_EQ(plan.fragments[plan.values[plan.results[0].index].producer].mesh, 1u);
  for (size_t p = 0; p < 5; ++p)
    EXPECT_EQ(plan.fragments[plan.values[plan.results[1 + p].index].producer].mesh, *home[p]) << "gradient " << p;
}

TEST(ProgramForm, TwoAndThreeMeshesGiveTheUnsplitResults) {
  for (bool three : {false, true}) {
    ir::Module m("mlp");
    add_mlp(m);
    ir::Function& whole = whole_step(m, *m.find_function("step"));
    std::vector<ir::Literal> in = testing::random_inputs(whole, 17);
    std::vector<ir::Literal> unsplit = interp::evaluate(m, whole.name(), in, fast());
    std::vector<ir::Literal> plain = plain_reference(m, in);
    FragmentPlan plan = three ? fragment(m, whole, meshes({"A", "B", "C"}), {{"layer0", "A"}, {"layer1", "B"}, {"head", "C"}})
                              : fragment(m, whole, meshes({"A", "B"}), {{"layer0", "A"}, {"layer1", "A"}, {"head", "B"}});
    EXPECT_EQ(plan.transfers.size(), three ? 4u : 2u);
    FragmentPipeline exec(plan);
    FragmentPipelineRun st = exec.run(in);
    const std::vector<ir::Literal>& got = st.results;
    SCOPED_TRACE(three ? "3 meshes" : "2 meshes");
    // Same ops in the same order on whole arrays: bit for bit.
    ASSERT_EQ(got.size(), unsplit.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == unsplit[i]) << "result " << i;
    // Gradients that flowed back across meshes equal autodiff of the whole program without names.
    expect_all_close(got, plain, 1e-6);
    // Each transfer's reader starts after its producer ended; every mesh kept values for later.
    // f32 activations and their cotangents: h1 [8,5] both ways, and on 3 meshes h0 [8,6] too.
    EXPECT_EQ(st.transferred_bytes, 2 * (8 * 5 * 4) + (three ? 2 * (8 * 6 * 4) : 0));
    for (const Transfer& t : plan.transfers)
      EXPECT_GE(st.fragment_times[t.consumer].start, st.fragment_times[t.producer].end) << plan.values[t.value].name;
    for (size_t mesh = 0; mesh < plan.meshes.size(); ++mesh) EXPECT_GT(st.peak_store_bytes[mesh], 0) << mesh;
  }
}

// Cheap values are cloned into each fragment that uses them; anything else crosses once per
// (value, destination mesh). @step: c = 0.5 everywhere (cheap, unnamed), e = exp(x) (unnamed, not
// cheap), h = f(e, w) on A, then g#0(h, c, e) and g#1(·, c, e) on B, loss = sum(· v).
void add_shared_values(ir::Module& m) {
  ir::Function& f = ir::build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({4, 4})), w = b.param(f32({4, 4}));
    return tanh(matmul(x, w));
  });
  ir::Function& g = ir::build_function(m, "g", [](FunctionBuilder& b) {
    Tensor a = b.param(f32({4, 4})), c = b.param(f32({4, 4})), e = b.param(f32({4, 4}));
    return a * c + e;
  });
  ir::build_function(m, "step", [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({4, 4})), w = b.param(f32({4, 4})), v = b.param(f32({4, 4}));
    Tensor c = ir::broadcast_to(b.scalar(ir::ElementType::f32, 0.5), {4, 4});
    Tensor e = exp(x);
    Tensor h = named_call(b, f, {e, w})[0];
    Tensor y = named_call(b, g, {h, c, e}, 0)[0];
    y = named_call(b, g, {y, c, e}, 1)[0];
    return sum(y * v);
  });
}

TEST(ProgramForm, CheapValuesAreClonedOthersCrossOncePerMesh) {
  ir::Module m("shared");
  add_shared_values(m);
  ir::Function& whole = whole_step(m, *m.find_function("step"));
  FragmentPlan plan = fragment(m, whole, meshes({"A", "B"}), {{"f", "A"}, {"g", "B"}});
  SCOPED_TRACE(plan.summary());
  ASSERT_GE(plan.fragments.size(), 3u);
  // e = exp(x) reads x, whose first consumer (f) is on A: x and e live on A.
  EXPECT_EQ(plan.parameter_mesh[0], std::optional<size_t>(0));
  EXPECT_EQ(plan.count(0, ir::OpKind::Exponential), 1u);
  EXPECT_EQ(plan.count(1, ir::OpKind::Exponential), 0u);
  // Forward transfers: h and e, once each, although g#0 and g#1 (two fragments on B) both read e.
  const Fragment& g0 = plan.fragments[1];
  const Fragment& g1 = plan.fragments[2];
  ASSERT_EQ(layout(plan)[1], "B:g#0");
  ASSERT_EQ(layout(plan)[2], "B:g#1");
  std::vector<const Transfer*> forward;
  for (const Transfer& t : plan.transfers)
    if (t.producer == 0) forward.push_back(&t);
  ASSERT_EQ(forward.size(), 2u);
  for (const Transfer* t : forward) {
    EXPECT_EQ(t->to, 1u);
    EXPECT_EQ(t->consumer, 1u);  // the first reader on B
  }
  // g#1 reads e from B's store, not through a transfer of its own.
  size_t reads_transferred = 0;
  for (const Binding& in : g1.inputs)
    for (const Transfer* t : forward) reads_transferred += in.kind == Binding::Kind::kValue && in.index == t->value;
  EXPECT_EQ(reads_transferred, 1u);  // e (h goes to g#0 only)
  // c is no transfer and no input: each g fragment builds its own copy (simplify folded the
  // broadcast into one splat constant).
  for (const Fragment* gf : {&g0, &g1}) {
    EXPECT_GE(gf->num_cloned, 1u) << gf->function;
    size_t constants = 0;
    for (const auto& op : gf->fn().body().ops()) constants += op->kind() == ir::OpKind::Constant;
    EXPECT_GE(constants, 1u) << gf->function;
  }
  // Inputs: g#0 reads h and e; g#1 reads g#0's result, e and (for the loss glue it holds) v.
  auto values_read = [](const Fragment& f) {
    size_t n = 0;
    for (const Binding& in : f.inputs) n += in.kind == Binding::Kind::kValue;
    return n;
  };
  EXPECT_EQ(g0.inputs.size(), 2u);
  EXPECT_EQ(values_read(g0), 2u);
  EXPECT_EQ(g1.inputs.size(), 3u);
  EXPECT_EQ(values_read(g1), 2u);
  // The split program computes what the unsplit one does.
  std::vector<ir::Literal> in = testing::random_inputs(whole, 3);
  std::vector<ir::Literal> got = FragmentPipeline(plan).run(in).results;
  std::vector<ir::Literal> want = interp::evaluate(m, whole.name(), in, fast());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == want[i]) << "result " << i;
}

TEST(ProgramForm, RefusesAParameterOnTwoMeshes) {
  ir::Module m("two_homes");
  ir::Function& f = ir::build_function(m, "f", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({4, 4})), w = b.param(f32({4, 4}));
    return tanh(matmul(x, w));
  });
  ir::build_function(m, "step", [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({4, 4})), w = b.param(f32({4, 4}));
    Tensor h = named_call(b, f, {x, w}, std::nullopt, "first")[0];
    return sum(named_call(b, f, {h, w}, std::nullopt, "second")[0]);
  });
  ir::Function& whole = whole_step(m, *m.find_function("step"));
  std::string e = error_of([&] { fragment(m, whole, meshes({"A", "B"}), {{"first", "A"}, {"second", "B"}}); });
  EXPECT_TRUE(std::regex_search(e, std::regex("parameter %arg1 \\(tensor<4x4xf32>\\) of @step_whole is read by "
                                              "named computation '(first|second)' on mesh '(A|B)' and by named "
                                              "computation '(first|second)' on mesh '(A|B)'")))
      << e;
  EXPECT_NE(e.find("first"), std::string::npos) << e;
  EXPECT_NE(e.find("second"), std::string::npos) << e;
  // On one mesh the same program is fine.
  EXPECT_EQ(error_of([&] { fragment(m, whole, meshes({"A", "B"}), {{"first", "A"}, {"second", "A"}}); }), "<no error>");
  // Unnamed glue that reads parameters of two meshes would move one of them.
  ir::build_function(m, "glued", [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({4, 4})), w = b.param(f32({4, 4})), v = b.param(f32({4, 4}));
    Tensor h = named_call(b, f, {x, w}, std::nullopt, "first")[0];
    Tensor k = named_call(b, f, {v, v}, std::nullopt, "second")[0];
    return sum(h * k + x * v);
  });
  ir::Function& glued = whole_step(m, *m.find_function("glued"));
  e = error_of([&] { fragment(m, glued, meshes({"A", "B"}), {{"first", "A"}, {"second", "B"}}); });
  EXPECT_TRUE(std::regex_search(e, std::regex("op [0-9]+ \\(stablehlo.multiply\\) reads parameter %arg0 .* \\(on "
                                              "mesh 'A'\\) and parameter %arg2 .* \\(on mesh 'B'\\)")))
      << e;
  // Glue x·k with k from B: x stays on A (its forward readers are there), k crosses to A; the
  // cotangent of k is x itself after simplification, read by second's transpose on B — a copy of
  // x goes there by a transfer, the parameter stays home.
  ir::build_function(m, "scaled", [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({4, 4})), w = b.param(f32({4, 4})), v = b.param(f32({4, 4}));
    Tensor h = named_call(b, f, {x, w}, std::nullopt, "first")[0];
    Tensor k = named_call(b, f, {v, v}, std::nullopt, "second")[0];
    return sum(h + x * k);
  });
  ir::Function& scaled = whole_step(m, *m.find_function("scaled"));
  FragmentPlan plan = fragment(m, scaled, meshes({"A", "B"}), {{"first", "A"}, {"second", "B"}});
  SCOPED_TRACE(plan.summary());
  EXPECT_EQ(plan.parameter_mesh[0], std::optional<size_t>(0));
  EXPECT_EQ(plan.parameter_mesh[2], std::optional<size_t>(1));
  size_t parameter_copies = 0;
  for (const Transfer& t : plan.transfers)
    if (plan.values[t.value].parameter) {
      ++parameter_copies;
      EXPECT_EQ(*plan.values[t.value].parameter, 0u);
      EXPECT_EQ(t.from, 0u);
      EXPECT_EQ(t.to, 1u);
      EXPECT_EQ(layout(plan)[t.consumer], "B:secondᵀ");
    }
  EXPECT_EQ(parameter_copies, 1u);
  std::vector<ir::Literal> in = testing::random_inputs(scaled, 8);
  std::vector<ir::Literal> got = FragmentPipeline(plan).run(in).results, want = interp::evaluate(m, scaled.name(), in, fast());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == want[i]) << "result " << i;
  // A computation without a mesh, a mesh or computation the program lacks.
  EXPECT_NE(error_of([&] { fragment(m, whole, meshes({"A"}), {{"first", "A"}}); })
                .find("named computation 'second' of @step_whole has no mesh: the assignment has only first -> A"),
            std::string::npos);
  EXPECT_NE(error_of([&] { fragment(m, whole, meshes({"A"}), {{"first", "A"}, {"second", "C"}}); })
                .find("'second' is assigned to mesh 'C', which is not one of the program's meshes (A)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { fragment(m, whole, meshes({"A"}), {{"first", "A"}, {"second", "A"}, {"third", "A"}}); })
                .find("@step_whole has no named computation 'third' (it has: first, second)"),
            std::string::npos);
}

// Microbatches: 4 explicit calls of @stage0 (call_counter 0..3) on A and a scan of @stage1 over
// them on B, carrying the summed loss. @plain is the same math without names.
void add_microbatched(ir::Module& m) {
  ir::Function& stage0 = ir::build_function(m, "stage0", [](FunctionBuilder& b) {
    Tensor x = b.param(f32({2, 4})), w = b.param(f32({4, 6}));
    return tanh(matmul(x, w));
  });
  ir::Function& stage1 = ir::build_function(m, "stage1", [](FunctionBuilder& b) {
    Tensor acc = b.param(f32()), h = b.param(f32({2, 6})), w = b.param(f32({6, 3})), t = b.param(f32({2, 3}));
    Tensor d = matmul(h, w) - t;
    return acc + sum(d * d);
  });
  auto rows = [](const Tensor& a, int64_t i) { return ir::slice(a, {2 * i, 0}, {2 * i + 2, a.shape()[1]}); };
  ir::build_function(m, "step", [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({8, 4})), w0 = b.param(f32({4, 6})), w1 = b.param(f32({6, 3})), t = b.param(f32({8, 3}));
    std::vector<Tensor> hs;
    for (int64_t i = 0; i < 4; ++i) hs.push_back(named_call(b, stage0, {rows(x, i), w0}, i)[0]);
    ScanResult r = scan_calls(b, stage1, 4, {b.scalar(ir::ElementType::f32, 0)},
                              [&](int64_t i) { return std::vector<Tensor>{hs[i], w1, rows(t, i)}; });
    EXPECT_EQ(r.ys.size(), 4u);
    return r.carry[0] / 8.0;
  });
  ir::build_function(m, "plain", [&](FunctionBuilder& b) {
    Tensor x = b.param(f32({8, 4})), w0 = b.param(f32({4, 6})), w1 = b.param(f32({6, 3})), t = b.param(f32({8, 3}));
    Tensor acc = b.scalar(ir::ElementType::f32, 0);
    for (int64_t i = 0; i < 4; ++i) {
      Tensor d = matmul(tanh(matmul(rows(x, i), w0)), w1) - rows(t, i);
      acc = acc + sum(d * d);
    }
    return acc / 8.0;
  });
}

TEST(ProgramForm, MicrobatchLoopsCarryCallCounters) {
  ir::Module m("microbatched");
  add_microbatched(m);
  ir::Function& whole = whole_step(m, *m.find_function("step"));
  FragmentPlan plan = fragment(m, whole, meshes({"A", "B"}), {{"stage0", "A"}, {"stage1", "B"}});
  SCOPED_TRACE(plan.summary());
  std::vector<std::string> want;
  for (int i = 0; i < 4; ++i) want.push_back(fmt::format("A:stage0#{}", i));
  for (int i = 0; i < 4; ++i) want.push_back(fmt::format("B:stage1#{}", i));
  for (int i = 3; i >= 0; --i) want.push_back(fmt::format("B:stage1#{}ᵀ", i));
  for (int i = 3; i >= 0; --i) want.push_back(fmt::format("A:stage0#{}ᵀ", i));
  EXPECT_EQ(layout(plan), want);
  // One activation per microbatch forward, one cotangent back.
  ASSERT_EQ(plan.transfers.size(), 8u);
  for (size_t k = 0; k < 8; ++k) {
    EXPECT_EQ(plan.values[plan.transfers[k].value].type, f32({2, 6}));
    EXPECT_EQ(plan.transfers[k].from, k < 4 ? 0u : 1u);
  }
  std::vector<ir::Literal> in = testing::random_inputs(whole, 29);
  FragmentPipeline exec(plan);
  std::vector<ir::Literal> got = exec.run(in).results;
  std::vector<ir::Literal> unsplit = interp::evaluate(m, whole.name(), in, fast());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == unsplit[i]) << "result " << i;
  expect_all_close(got, plain_reference(m, in), 1e-6);
  // Running again gives the same numbers (a run keeps no state for the next).
  std::vector<ir::Literal> again = exec.run(in).results;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(again[i] == got[i]) << "result " << i;
}

TEST(ProgramForm, PrintParsePrintKeepsNamedComputations) {
  ir::Module m("microbatched");
  add_microbatched(m);
  std::string text = stablehlo::print(m);
  EXPECT_NE(text.find("mpmd.call_counter = 3"), std::string::npos) << text;
  EXPECT_NE(text.find("mpmd.name = \"stage1\""), std::string::npos) << text;
  std::unique_ptr<ir::Module> parsed = stablehlo::parse(text);
  EXPECT_EQ(stablehlo::print(*parsed), text);
  // The parsed program is the same MPMD program: same plan, same numbers.
  ir::Function& whole = whole_step(*parsed, *parsed->find_function("step"));
  FragmentPlan plan = fragment(*parsed, whole, meshes({"A", "B"}), {{"stage0", "A"}, {"stage1", "B"}});
  ir::Module original("microbatched");
  add_microbatched(original);
  ir::Function& whole0 = whole_step(original, *original.find_function("step"));
  FragmentPlan plan0 = fragment(original, whole0, meshes({"A", "B"}), {{"stage0", "A"}, {"stage1", "B"}});
  EXPECT_EQ(layout(plan), layout(plan0));
  EXPECT_EQ(moves(plan), moves(plan0));
  std::vector<ir::Literal> in = testing::random_inputs(whole, 5);
  std::vector<ir::Literal> a = FragmentPipeline(plan).run(in).results, b = FragmentPipeline(plan0).run(in).results;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i] == b[i]) << "result " << i;
}

// Mesh A is two host devices with x split along the batch (data parallel inside the mesh); B is one.
TEST(ProgramForm, ShardedMeshGivesTheUnsplitResults) {
  ir::Module m("mlp");
  m.add_mesh(ir::Mesh{"a", {{"data", 2}}, {}});
  ir::Sharding x_sharding;
  x_sharding.mesh = "a";
  x_sharding.dims = {ir::DimSharding{"data"}, ir::DimSharding{}};
  add_mlp(m, x_sharding);
  ir::Function& whole = whole_step(m, *m.find_function("step"));
  std::vector<MeshSpec> ms = {{"A", 2, "a"}, {"B", 1, ""}};
  FragmentPlan plan = fragment(m, whole, ms, {{"layer0", "A"}, {"layer1", "A"}, {"head", "B"}});
  std::vector<ir::Literal> in = testing::random_inputs(whole, 41);
  FragmentPipeline exec(plan);
  for (const Fragment& f : plan.fragments)  // A's fragments are partitioned over its two devices
    EXPECT_EQ(exec.devices_of(f.index), f.mesh == 0 ? 2 : 1) << f.function;
  std::vector<ir::Literal> got = exec.run(in).results;
  expect_all_close(got, interp::evaluate(m, whole.name(), in, fast()), 1e-5);
  expect_all_close(got, plain_reference(m, in), 1e-5);
  // B as two devices too: its fragments carry no sharding, so the partitioner replicates them
  // over B's devices; same numbers.
  m.add_mesh(ir::Mesh{"b", {{"data", 2}}, {}});
  std::vector<MeshSpec> both = {{"A", 2, "a"}, {"B", 2, "b"}};
  FragmentPlan plan2 = fragment(m, whole, both, {{"layer0", "A"}, {"layer1", "A"}, {"head", "B"}});
  FragmentPipeline exec2(plan2);
  for (const Fragment& f : plan2.fragments) EXPECT_EQ(exec2.devices_of(f.index), 2) << f.function;
  expect_all_close(exec2.run(in).results, got, 1e-6);
  // A mesh whose spmd mesh has another size is refused, naming both.
  std::vector<MeshSpec> bad = {{"A", 4, "a"}, {"B", 1, ""}};
  EXPECT_EQ(error_of([&] { fragment(m, whole, bad, {{"layer0", "A"}, {"layer1", "A"}, {"head", "B"}}); }),
            "mesh 'A' has 4 devices, but its spmd mesh @a has 2");
  // x's sharding names mesh @a: on B, which has no spmd mesh, its fragment is refused.
  EXPECT_NE(error_of([&] { fragment(m, whole, ms, {{"layer0", "B"}, {"layer1", "A"}, {"head", "B"}}); })
                .find("on mesh 'B'"),
            std::string::npos);
}

// A transfer the plan lacks (dropped by hand) is refused before anything runs, naming the value,
// the fragment that reads it and the one that computes it; so is an input of the wrong type.
TEST(ProgramForm, AMissingTransferIsRefusedNamingIt) {
  ir::Module m("mlp");
  add_mlp(m);
  ir::Function& whole = whole_step(m, *m.find_function("step"));
  FragmentPlan plan = fragment(m, whole, meshes({"A", "B"}), {{"layer0", "A"}, {"layer1", "A"}, {"head", "B"}});
  std::vector<ir::Literal> in = testing::random_inputs(whole, 1);
  std::vector<ir::Literal> wrong = in;
  wrong[1] = ir::Literal(f32({4, 5}));
  EXPECT_EQ(error_of([&] { FragmentPipeline(plan).run(wrong); }),
            "pipeline run: parameter 1 is tensor<4x5xf32>, the step's parameter %arg1 is tensor<4x6xf32>");
  ASSERT_EQ(plan.transfers.size(), 2u);
  plan.transfers.pop_back();  // the cotangent B -> A
  EXPECT_EQ(error_of([&] { FragmentPipeline(plan).run(in); }),
            "stage 0 (glue): fragment 4 (layer1ᵀ) needs %15 from stage 1 (fragment 3 (headᵀ)), and the plan has no "
            "transfer that brings it");
}

// A plan made by fragment() runs in this process: stages on MPI ranks are refused, before anything
// is compiled (the ranks below are never called).
TEST(ProgramForm, APlanOnRanksIsRefused) {
  struct NoRanks final : Ranks {
    int rank() const override { return 0; }
    int size() const override { return 2; }
    void send(int, uint64_t, const WireKey&, std::vector<std::byte>) override { ADD_FAILURE() << "send"; }
    bool take(int, uint64_t, const WireKey&, std::chrono::milliseconds, std::vector<std::byte>&) override {
      ADD_FAILURE() << "take";
      return false;
    }
    std::vector<std::vector<std::byte>> exchange(const std::string&, std::span<const std::byte>) override {
      ADD_FAILURE() << "exchange";
      return {};
    }
    void report_failure(const std::string&) override { ADD_FAILURE() << "report_failure"; }
  } ranks;
  ir::Module m("mlp");
  add_mlp(m);
  ir::Function& whole = whole_step(m, *m.find_function("step"));
  FragmentPlan plan = fragment(m, whole, meshes({"A", "B"}), {{"layer0", "A"}, {"layer1", "A"}, {"head", "B"}});
  FragmentPipelineOptions options;
  options.ranks = &ranks;
  EXPECT_EQ(error_of([&] { FragmentPipeline(plan, options); }),
            "a fragment plan runs in one process; stages on ranks are for a pipeline made from a step");
}

}  // namespace
}  // namespace tessera::mpmd
