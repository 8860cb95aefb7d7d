// exec::Executable against the interpreter it replaces on the devices: the same kernels give the
// same bits, compiled once or walked op by op.
//
// With the same kernels the executable must give interp::evaluate's bits exactly: fast kernels and
// fusion against interp::evaluate with Options.accelerate and the same fusion planner, reference
// kernels only against the pure reference interpreter. Against the pure reference interpreter the
// fast executable agrees within the fast kernels' own tolerance (BLAS contractions: below). Programs:
// the SPMD property generator's and the fusion tests' random programs (tests/common/random_programs.h),
// while loops with nested loops, captured values and calls, collectives on host devices, donated
// inputs, and the Session's cache (one compilation per program and device).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "comm/parallel.h"
#include "common/error_of.h"
#include "common/random_literal.h"
#include "common/random_programs.h"
#include "exec_tolerance.h"
#include "exec/executable.h"
#include "exec/fusion.h"
#include "interp/interpreter.h"
#include "ir/builder.h"
#include "runtime/session.h"
#include "spmd/mesh_math.h"
#include "stablehlo/printer.h"

namespace tessera::exec {
namespace {

using namespace tessera::ir;
using tessera::testing::same_bits;

using exec::testing::kProgramTolerance;  // fast kernels against the reference: everything else is bit for bit

// The pure reference interpreter; the interpreter with fast kernels, fused (with exec's planner) or
// not; the same as an executable; restoring the process-wide planner and minimum afterwards.
void expect_same_bits(const std::vector<Literal>& got, const std::vector<Literal>& want, const std::string& what);

struct Runners {
  const Module& m;
  int64_t min_fused = 0;

  std::vector<Literal> reference(const std::vector<Literal>& in) const { return interp::evaluate(m, "f", in); }

  std::vector<Literal> interpreter(const std::vector<Literal>& in, bool fused, interp::Profile* profile = nullptr) const {
    set_fusion_min_elements(min_fused);
    interp::set_fusion_planner(fused ? &plan_fusion : nullptr);
    interp::Options o;
    o.accelerate = accelerate;
    o.profile = profile;
    std::vector<Literal> out = interp::evaluate(m, "f", in, o);
    restore();
    return out;
  }

  std::shared_ptr<const Executable> compile(bool fast, bool fused) const {
    set_fusion_min_elements(min_fused);
    CompileOptions o;
    o.module = &m;
    o.accelerate = fast ? &accelerate : nullptr;
    o.planner = fused ? &plan_fusion : nullptr;
    std::shared_ptr<const Executable> e = Executable::compile(*m.find_function("f"), o);
    restore();
    return e;
  }

  std::vector<Literal> executable(const Executable& e, const std::vector<Literal>& in,
                                  interp::Profile* profile = nullptr) const {
    set_fusion_min_elements(min_fused);  // the fused loops read it as they run, as in the interpreter
    interp::Options o;
    o.profile = profile;
    std::vector<Literal> out = e.run(in, o);
    // In a run context (values in the buffer plan's arena), twice: the same bits, the second run
    // over what the first left in the arena.
    std::unique_ptr<RunContext> context = e.make_context();
    EXPECT_EQ(context->arena_bytes(), e.arena_bytes());
    for (int k = 0; k < 2; ++k) expect_same_bits(e.run(in, interp::Options{}, *context), out, "in a run context");
    restore();
    return out;
  }

  static void restore() {
    set_fusion_min_elements(-1);  // the default
    interp::set_fusion_planner(&plan_fusion);
  }
};

void expect_same_bits(const std::vector<Literal>& got, const std::vector<Literal>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t r = 0; r < want.size(); ++r) EXPECT_TRUE(same_bits(got[r], want[r])) << what << ", result " << r;
}

void expect_close(const std::vector<Literal>& got, const std::vector<Literal>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t r = 0; r < want.size(); ++r) {
    ASSERT_EQ(got[r].type(), want[r].type()) << what;
    for (int64_t i = 0; i < got[r].num_elements(); ++i) {
      double a = got[r].get_double(i), b = want[r].get_double(i);
      ASSERT_TRUE(exec::testing::close(a, b, kProgramTolerance)) << a << " against " << b << ": " << what << ", result " << r
                                                          << " element " << i;
    }
  }
}

int64_t ops_run(const interp::Profile& p) {
  int64_t n = 0;
  for (const auto& [name, e] : p.by_op) n += e.first;
  return n;
}

// TESSERA_PROPERTY_CASES and TESSERA_PROPERTY_SEED widen the seeds of each shape by hand.
TEST(Executable, FusionProgramsGiveTheInterpretersBits) {
  int64_t riders = 0;
  std::vector<std::vector<int64_t>> shapes = {{3, 5, 7}, {2, 1, 9}, {4, 3, 130}, {1030}, {}, {6, 600}, {20, 64}};
  const uint32_t first = tessera::testing::property_first_seed(1), last = first + uint32_t(tessera::testing::property_cases(6));
  for (size_t s = 0; s < shapes.size(); ++s) {
    for (uint32_t seed = first; seed < last; ++seed) {
      Module m;
      tessera::testing::build_elementwise_chains(m, shapes[s], seed * 31 + static_cast<uint32_t>(s));
      const Function& fn = *m.find_function("f");
      std::mt19937 rng(seed);
      std::vector<Literal> in;
      for (size_t i = 0; i < fn.num_parameters(); ++i) in.push_back(tessera::testing::chain_input(fn.parameter(i)->type(), rng));
      std::string what = "shape " + std::to_string(s) + " seed " + std::to_string(seed);
      for (int64_t min_fused : {int64_t{0}, kFusionMinElements}) {
        Runners run{m, min_fused};
        std::vector<Literal> want = run.reference(in);
        // Fused, through both drivers: the same bits, the same ops run (per kind), twice in a row.
        interp::Profile interp_profile, exe_profile;
        std::vector<Literal> interp_fused = run.interpreter(in, true, &interp_profile);
        auto fused = run.compile(true, true);
        expect_same_bits(run.executable(*fused, in, &exe_profile), interp_fused, what + ", fused");
        expect_same_bits(run.executable(*fused, in), interp_fused, what + ", fused, second run");
        expect_same_bits(interp_fused, want, what + ", fused interpreter against the reference");
        // The executable's loops store their riders (exec/fusion_riders.h) as extra results: each
        // rider is an op the interpreter runs and the executable does not.
        std::map<std::string, int64_t> interp_counts, exe_counts;
        for (const auto& [name, e] : interp_profile.by_op) interp_counts[name] = e.first;
        for (const auto& [name, e] : exe_profile.by_op) exe_counts[name] = e.first;
        set_fusion_min_elements(min_fused);
        std::unique_ptr<interp::FusionPlan> plan = plan_fusion(fn.body());
        auto& multi = dynamic_cast<MultiResultPlan&>(*plan);
        multi.enable_riders();
        for (const auto& op : fn.body().ops())
          if (multi.rides_with(*op)) {
            ++exe_counts[std::string(op->name())];
            ++riders;
          }
        set_fusion_min_elements(-1);  // the default
        EXPECT_EQ(exe_counts, interp_counts) << what;
        // Inlined ops have no step: the executable runs as many ops as the fused interpreter.
        EXPECT_EQ(static_cast<int64_t>(fused->stats().steps), ops_run(exe_profile)) << what;
        if (min_fused == 0 && !shapes[s].empty()) {
          EXPECT_GT(fused->stats().inlined, 0u) << what;
        }
        // Unfused fast kernels, and the reference kernels alone.
        expect_same_bits(run.executable(*run.compile(true, false), in), run.interpreter(in, false), what + ", unfused");
        expect_same_bits(run.executable(*run.compile(false, false), in), want, what + ", reference kernels");
      }
    }
  }
  EXPECT_GT(riders, 0) << "no program had a loop with several results";
}

// TESSERA_PROPERTY_CASES and TESSERA_PROPERTY_SEED widen this and the next test by hand.
TEST(Executable, PropertyProgramsGiveTheInterpretersBits) {
  int with_contractions = 0;
  const int cases = tessera::testing::property_cases(150);
  for (uint32_t c = 0; c < uint32_t(cases); ++c) {
    uint32_t seed = tessera::testing::property_first_seed(2000) + c;
    tessera::testing::ProgramGen g{std::mt19937(seed), Mesh{"m", {{"a", 2}, {"b", 2}}, {}}};
    Module m("case");
    m.add_mesh(g.mesh);
    tessera::testing::build_sharded_program(m, g, 5 + g.pick(26));
    const Function& fn = *m.find_function("f");
    std::vector<Literal> in;
    for (size_t i = 0; i < fn.num_parameters(); ++i) in.push_back(tessera::testing::uniform_input(fn.parameter(i)->type(), g.rng));
    std::string what = "seed " + std::to_string(seed) + "\n" + stablehlo::print(m);
    for (const auto& op : fn.body().ops()) with_contractions += op->kind() == OpKind::DotGeneral;
    Runners run{m, 0};
    std::vector<Literal> want = run.reference(in);
    auto fast = run.compile(true, true);
    std::vector<Literal> got = run.executable(*fast, in);
    expect_same_bits(got, run.interpreter(in, true), what + " (fast kernels, fused)");
    expect_same_bits(run.executable(*fast, in), got, what + " (second run)");
    expect_close(got, want, what + " (fast kernels against the reference)");
    expect_same_bits(run.executable(*run.compile(false, false), in), want, what + " (reference kernels)");
    if (HasFailure()) return;
  }
  EXPECT_GT(with_contractions, cases / 3);
}

// The property programs partitioned on host devices: the Session's executables give the bits of
// the interpreter the Session ran before (SessionOptions::executable off), collectives included.
TEST(Executable, ShardedPropertyProgramsGiveTheInterpretersBitsOnHostDevices) {
  const std::vector<std::vector<MeshAxis>> meshes = {{{"a", 2}}, {{"a", 4}}, {{"a", 2}, {"b", 2}}, {{"a", 2}, {"b", 4}}};
  int communicating = 0;
  const int cases = tessera::testing::property_cases(60, 4);
  for (uint32_t c = 0; c < uint32_t(cases); ++c) {
    uint32_t seed = tessera::testing::property_first_seed(3000) + c;
    tessera::testing::ProgramGen g{std::mt19937(seed), Mesh{"m", meshes[c % meshes.size()], {}}};
    Module m("case");
    m.add_mesh(g.mesh);
    tessera::testing::build_sharded_program(m, g, 5 + g.pick(26));
    const Function& fn = *m.find_function("f");
    std::vector<Literal> in;
    for (size_t i = 0; i < fn.num_parameters(); ++i) in.push_back(tessera::testing::uniform_input(fn.parameter(i)->type(), g.rng));
    std::string what = "seed " + std::to_string(seed) + "\n" + stablehlo::print(m);
    runtime::SessionOptions interpreted;
    interpreted.executable = false;
    runtime::Session with_executables = runtime::Session::host(g.mesh.num_devices());
    runtime::Session with_interpreter = runtime::Session::host(g.mesh.num_devices(), interpreted);
    runtime::CompiledProgram p = with_executables.compile(m, "f");
    communicating += p.report().collectives.empty() ? 0 : 1;
    std::vector<Literal> want = with_interpreter.run_sharded(p, in);
    int64_t before = Executable::compilations();
    expect_same_bits(with_executables.run_sharded(p, in), want, what);
    EXPECT_EQ(Executable::compilations() - before, g.mesh.num_devices()) << what;
    expect_same_bits(with_executables.run_sharded(p, in), want, what + " (second run)");
    EXPECT_EQ(Executable::compilations() - before, g.mesh.num_devices()) << "compiled again: " << what;
    if (HasFailure()) return;
  }
  EXPECT_GT(communicating, cases / 3);
}

// While loops (one nested in another's body, reading values of the function around them, the same
// value passed twice, a loop value used after the loop), a reduction with its scalar body, and
// calls of a function that has its own loop.
void build_loops(Module& m) {
  Function& helper = build_function(m, "helper", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({4, 8}));
    Tensor n = f.param(i32({}));
    std::vector<Tensor> out = while_loop(
        {n, x}, [](Builder& b, const std::vector<Tensor>& v) { return compare(v[0], b.scalar(ElementType::i32, 0), ComparisonDirection::GT); },
        [](Builder& b, const std::vector<Tensor>& v) {
          return std::vector<Tensor>{v[0] - b.scalar(ElementType::i32, 1), tanh(v[1]) * 1.5};
        });
    return std::vector<Tensor>{out[1], reduce_max(out[1], {1})};
  });
  build_function(m, "f", [&](FunctionBuilder& f) {
    Tensor x = f.param(f32({4, 8}));
    Tensor w = f.param(f32({8, 8}));
    Tensor bias = f.param(f32({4, 8}));
    Tensor zero = f.scalar(ElementType::i32, 0);
    std::vector<Tensor> outer = while_loop(
        {zero, x, x},
        [](Builder& b, const std::vector<Tensor>& v) { return compare(v[0], b.scalar(ElementType::i32, 4), ComparisonDirection::LT); },
        [&](Builder& b, const std::vector<Tensor>& v) {
          Tensor h = tanh(matmul(v[1], w)) + v[1] * 0.5;  // w: a value of the function
          std::vector<Tensor> inner = while_loop(
              {b.scalar(ElementType::i32, 0), h},
              [](Builder& ib, const std::vector<Tensor>& u) { return compare(u[0], ib.scalar(ElementType::i32, 3), ComparisonDirection::LT); },
              [&](Builder& ib, const std::vector<Tensor>& u) {
                Tensor y = u[1] * 0.75 + u[1] * u[1] * 0.01;
                Tensor s = broadcast_in_dim(reduce_sum(y, {1}), {4, 8}, {0});
                return std::vector<Tensor>{u[0] + ib.scalar(ElementType::i32, 1), y - s * 0.05 + v[2] * 0.001 + bias * 0.1};
              });
          return std::vector<Tensor>{v[0] + b.scalar(ElementType::i32, 1), inner[1], v[2] * 0.9};
        });
    std::vector<Tensor> called = call(f, helper, {outer[1], f.scalar(ElementType::i32, 2)});
    std::vector<Tensor> again = call(f, helper, {called[0] + x, f.scalar(ElementType::i32, 3)});
    return std::vector<Tensor>{outer[0], outer[1], outer[2], called[1], again[0], again[1], sum(x * x)};
  });
}

TEST(Executable, WhileLoopsNestedRegionsAndCallsGiveTheInterpretersBits) {
  Module m;
  build_loops(m);
  verify(m);
  const Function& fn = *m.find_function("f");
  std::vector<Literal> in = tessera::testing::random_inputs(fn, 5);
  Runners run{m, 0};
  std::vector<Literal> want = run.reference(in);
  interp::Profile interp_profile, exe_profile;
  std::vector<Literal> interp_fast = run.interpreter(in, true, &interp_profile);
  int64_t before = Executable::compilations();
  auto fast = run.compile(true, true);
  EXPECT_EQ(Executable::compilations() - before, 2);  // @f and @helper, once for both calls
  expect_same_bits(run.executable(*fast, in, &exe_profile), interp_fast, "fast kernels");
  expect_same_bits(run.executable(*fast, in), interp_fast, "fast kernels, second run");
  expect_close(interp_fast, want, "fast kernels against the reference");
  expect_same_bits(run.executable(*run.compile(false, false), in), want, "reference kernels");
  // Two while loops compiled inline and two calls of the compiled helper.
  EXPECT_EQ(fast->stats().nested, 4u);
  for (const auto& [name, e] : interp_profile.by_op)
    EXPECT_EQ(exe_profile.by_op[name].first, e.first) << name;
  EXPECT_EQ(exe_profile.by_op.count("stablehlo.while"), 0u);
  EXPECT_EQ(exe_profile.by_op.count("func.call"), 0u);
}

// A loop that counts to its argument n (read from the function around it): at a limit of n
// iterations (Options::max_while_iterations) it runs, below that it is refused, in the same words
// by the interpreter and by executables of both kinds of kernels, plain or in a run context; the
// context runs again afterwards with the loop's bits.
TEST(Executable, AWhileLoopPastTheIterationLimitIsRefusedLikeTheInterpreters) {
  Module m;
  build_function(m, "f", [](FunctionBuilder& f) {
    Tensor n = f.param(i32({}));
    Tensor x = f.param(f32({4, 8}));
    return while_loop(
        {f.scalar(ElementType::i32, 0), x},
        [&](Builder&, const std::vector<Tensor>& v) { return compare(v[0], n, ComparisonDirection::LT); },
        [](Builder& b, const std::vector<Tensor>& v) {
          return std::vector<Tensor>{v[0] + b.scalar(ElementType::i32, 1), tanh(v[1]) * 1.5 + v[1]};
        });
  });
  verify(m);
  std::vector<Literal> in = tessera::testing::random_inputs(*m.find_function("f"), 3);
  in[0] = Literal::from_doubles(i32({}), std::vector<double>{5});
  Runners run{m, 0};
  std::vector<std::shared_ptr<const Executable>> compiled = {run.compile(false, false), run.compile(true, true)};
  std::vector<std::unique_ptr<RunContext>> contexts;
  for (const auto& e : compiled) contexts.push_back(e->make_context());
  for (int64_t limit : {5, 4, 0, -1}) {
    interp::Options o;
    o.max_while_iterations = limit;
    std::vector<Literal> want;
    std::string refusal = tessera::testing::error_of([&] { want = interp::evaluate(m, "f", in, o); });
    if (limit == -1 || limit >= 5) EXPECT_EQ(refusal, "<no error>") << limit;
    else EXPECT_EQ(refusal, fmt::format("stablehlo.while: its condition still holds after {} iterations, the limit "
                                        "(max_while_iterations)", limit));
    for (size_t k = 0; k < compiled.size(); ++k) {
      std::vector<Literal> plain, in_context;
      EXPECT_EQ(tessera::testing::error_of([&] { plain = compiled[k]->run(in, o); }), refusal) << limit;
      EXPECT_EQ(tessera::testing::error_of([&] { in_context = compiled[k]->run(in, o, *contexts[k]); }), refusal)
          << limit;
      if (refusal != "<no error>") continue;
      ASSERT_EQ(plain.size(), 2u);
      EXPECT_EQ(plain[0].get_int(0), 5);
      if (k == 0) expect_same_bits(plain, want, "reference kernels");
      expect_same_bits(in_context, plain, "in a run context");
    }
  }
}

TEST(Executable, ArgumentsAreCheckedLikeTheInterpreters) {
  Module m;
  build_loops(m);
  const Function& fn = *m.find_function("f");
  auto e = Executable::compile(fn, CompileOptions{&m});
  std::vector<Literal> in = tessera::testing::random_inputs(fn, 5);
  std::vector<Literal> fewer(in.begin(), in.end() - 1);
  EXPECT_EQ(tessera::testing::error_of([&] { e->run(fewer); }), tessera::testing::error_of([&] { interp::evaluate(fn, fewer); }));
  std::vector<Literal> wrong = in;
  wrong[1] = Literal(f32({8, 4}));
  std::string error = tessera::testing::error_of([&] { e->run(wrong); });
  EXPECT_EQ(error, tessera::testing::error_of([&] { interp::evaluate(fn, wrong); }));
  EXPECT_NE(error.find("argument 1 has type tensor<8x4xf32>"), std::string::npos) << error;
}

// A per-device program with every kind of collective, one all_reduce inside a while loop, on 4
// host devices: the executables give the interpreter's bits on every device.
TEST(Executable, CollectivesOnHostDevicesGiveTheInterpretersBits) {
  Module m;
  build_function(m, "f", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({4, 6}));
    Tensor y = all_reduce(x * x, {{0, 1, 2, 3}});
    std::vector<Tensor> loop = while_loop(
        {f.scalar(ElementType::i32, 0), x},
        [](Builder& b, const std::vector<Tensor>& v) { return compare(v[0], b.scalar(ElementType::i32, 3), ComparisonDirection::LT); },
        [](Builder& b, const std::vector<Tensor>& v) {
          return std::vector<Tensor>{v[0] + b.scalar(ElementType::i32, 1), all_reduce(tanh(v[1]), {{0, 1}, {2, 3}}, OpKind::Maximum) + v[1]};
        });
    Tensor g = all_gather(loop[1], 0, {{0, 1, 2, 3}});
    Tensor r = reduce_scatter(g * 0.5, 0, {{0, 1, 2, 3}});
    Tensor p = collective_permute(r, {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
    Tensor a = all_to_all(p + y, 1, 1, {{0, 1}, {2, 3}});
    return std::vector<Tensor>{y, p, a, reduce_sum(g, {0}), collective_broadcast(x, {{0, 1, 2, 3}})};
  });
  std::vector<Literal> in;
  for (int d = 0; d < 4; ++d) in.push_back(tessera::testing::random_literal(f32({4, 6}), 10 + static_cast<uint64_t>(d)));
  std::vector<std::vector<std::string>> grid = {{"f", "f", "f", "f"}};
  comm::ParallelOptions interpreted;
  interpreted.base.accelerate = accelerate;
  std::vector<Literal> want = comm::run_parallel(m, grid, in, interpreted);
  std::vector<std::shared_ptr<const Executable>> per_device;
  for (int d = 0; d < 4; ++d) per_device.push_back(Executable::compile(*m.find_function("f"), CompileOptions{&m}));
  comm::ParallelOptions compiled = interpreted;
  compiled.evaluate = [&](int64_t d, const Function&, std::vector<Literal> args, const interp::Options& o) {
    return per_device[static_cast<size_t>(d)]->run(std::move(args), o);
  };
  for (int run = 0; run < 2; ++run) expect_same_bits(comm::run_parallel(m, grid, in, compiled), want, "run " + std::to_string(run));
}

// all_gather and reduce_scatter along dimensions after others of size > 1 (their blocks are not
// the communicator's flat chunks), in run contexts (where collectives write straight into the
// arena, through a per-thread buffer laid out as chunks), on 4 host devices, groups of 4 and of 2:
// the interpreter's bits on every device, run after run.
TEST(Executable, CollectivesAlongInnerDimensionsInRunContextsGiveTheInterpretersBits) {
  Module m;
  build_function(m, "f", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({4, 6}));
    Tensor z = f.param(f32({2, 3, 8}));
    Tensor g = all_gather(x, 1, {{0, 1, 2, 3}});
    Tensor r = reduce_scatter(g * 0.5, 1, {{0, 1, 2, 3}});
    Tensor g3 = all_gather(z, 1, {{0, 1}, {2, 3}});
    Tensor r3 = reduce_scatter(z * z, 2, {{0, 1, 2, 3}});
    Tensor r2 = reduce_scatter(g3, 1, {{0, 2}, {1, 3}});
    return std::vector<Tensor>{g, r, g3, r3, r2};
  });
  std::vector<Literal> in;
  for (int d = 0; d < 4; ++d) {
    in.push_back(tessera::testing::random_literal(f32({4, 6}), 20 + static_cast<uint64_t>(d)));
    in.push_back(tessera::testing::random_literal(f32({2, 3, 8}), 30 + static_cast<uint64_t>(d)));
  }
  std::vector<std::vector<std::string>> grid = {{"f", "f", "f", "f"}};
  comm::ParallelOptions interpreted;
  interpreted.base.accelerate = accelerate;
  std::vector<Literal> want = comm::run_parallel(m, grid, in, interpreted);
  std::shared_ptr<const Executable> e = Executable::compile(*m.find_function("f"), CompileOptions{&m});
  ASSERT_TRUE(e->planned());
  std::vector<std::unique_ptr<RunContext>> contexts;
  for (int d = 0; d < 4; ++d) contexts.push_back(e->make_context());
  comm::ParallelOptions compiled = interpreted;
  compiled.evaluate = [&](int64_t d, const Function&, std::vector<Literal> args, const interp::Options& o) {
    return e->run(std::move(args), o, *contexts[static_cast<size_t>(d)]);
  };
  for (int run = 0; run < 2; ++run) expect_same_bits(comm::run_parallel(m, grid, in, compiled), want, "run " + std::to_string(run));
}

// A training-like step whose parameters and moments are donated and chained from step to step:
// large enough to fuse (the fused loops may write over the donated buffers), the same bits as the
// whole-array interpreter at every step, and a donated buffer that another buffer shares is copied,
// not moved (the other keeps its values).
TEST(Executable, DonatedInputsGiveTheInterpretersBits) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 2}}, {}});
  Sharding rows{"m", {{"data"}, {}}, {}, {}};
  build_function(m, "step", [&](FunctionBuilder& f) {
    Tensor w = f.param(f32({4096, 8}), rows);
    Tensor mom = f.param(f32({4096, 8}), rows);
    Tensor g = f.param(f32({4096, 8}), rows);
    Tensor m2 = mom * 0.9 + g * 0.1;
    Tensor upd = m2 / (sqrt(m2 * m2 + 1e-3) + 1e-8);
    Tensor w2 = w - upd * 0.01 - w * 0.001;
    for (int i = 0; i < 6; ++i) w2 = w2 * 0.999 + tanh(w2) * 0.001;  // past the planner's block size
    return std::vector<Tensor>{w2, m2, sum(w2 * w2)};
  });
  runtime::Session s = runtime::Session::host(2);
  runtime::ShardedProgram sp = s.sharded_program(s.compile(m, "step"), {{0, 0}, {1, 1}});
  Literal w = tessera::testing::random_literal(f32({4096, 8}), 1), mom = Literal(f32({4096, 8}));
  std::vector<runtime::ShardedBuffer> state = {sp.stage(0, w), sp.stage(1, mom)};
  runtime::ShardedBuffer shared = state[1];  // shares the moments' pieces: they must be copied
  for (int step = 0; step < 4; ++step) {
    Literal g = tessera::testing::random_literal(f32({4096, 8}), 100 + static_cast<uint64_t>(step));
    std::vector<Literal> want = interp::evaluate(m, "step", {w, mom, g});
    std::vector<runtime::ShardedBuffer> in = {std::move(state[0]), std::move(state[1]), sp.stage(2, g)};
    std::vector<runtime::ShardedBuffer> out = sp.execute(in);
    EXPECT_TRUE(in[0].donated() && in[1].donated());
    std::vector<Literal> got = {sp.fetch(out[0]), sp.fetch(out[1])};
    EXPECT_TRUE(same_bits(got[0], want[0])) << "step " << step;
    EXPECT_TRUE(same_bits(got[1], want[1])) << "step " << step;
    w = std::move(want[0]);
    mom = std::move(want[1]);
    state = {out[0], out[1]};
    out.clear();  // the next step's inputs are the only holders: moved, not copied
  }
  EXPECT_TRUE(same_bits(sp.fetch(shared), Literal(f32({4096, 8}))));
}

// The Session compiles a program once per device and kernel choice, on its first run, whatever the
// path: run_sharded, a ShardedProgram, run_per_device; a session without fast kernels compiles its own.
TEST(Executable, SessionCompilesOncePerProgramAndDevice) {
  Module m;
  m.add_mesh(Mesh{"m", {{"data", 4}}, {}});
  build_function(m, "f", [](FunctionBuilder& f) {
    Tensor x = f.param(f32({8, 4}), Sharding{"m", {{"data"}, {}}, {}, {}});
    Tensor w = f.param(f32({4, 3}));
    return sum(tanh(matmul(x, w)) * tanh(matmul(x, w)));
  });
  runtime::Session s = runtime::Session::host(4);
  runtime::CompiledProgram p = s.compile(m, "f");
  std::vector<Literal> in = tessera::testing::random_inputs(*m.find_function("f"), 3);
  int64_t before = Executable::compilations();
  Literal first = s.run_sharded(p, in)[0];
  EXPECT_EQ(Executable::compilations() - before, 4);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(same_bits(s.run_sharded(p, in)[0], first));
  runtime::ShardedProgram sp = s.sharded_program(p);
  std::vector<runtime::ShardedBuffer> bufs = {sp.stage(0, in[0]), sp.stage(1, in[1])};
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(same_bits(sp.fetch(sp.execute(bufs)[0]), first));
  EXPECT_EQ(Executable::compilations() - before, 4);
  runtime::SessionOptions reference;
  reference.fast_kernels = false;
  runtime::Session slow = runtime::Session::host(4, reference);
  Literal slow_result = slow.run_sharded(p, in)[0];
  slow.run_sharded(p, in);
  EXPECT_EQ(Executable::compilations() - before, 8);
  EXPECT_TRUE(exec::testing::close(slow_result.get_double(0), first.get_double(0), kProgramTolerance));
}

}  // namespace
}  // namespace tessera::exec
