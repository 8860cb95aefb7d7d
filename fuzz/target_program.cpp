// The `program` fuzz target (targets.h): StableHLO text that parses is run twice on the same
// inputs, by the interpreter with the fast kernels and fusion (what the Session ran before
// executables) and by an exec::Executable compiled from it, and the two must give the same bits,
// or both refuse it with a UserError (the executable's promise, exec/executable.h). Inputs are
// drawn from the text's hash, so a finding replays. Only programs that run in milliseconds are
// run: static shapes of at most kMaxElements elements per value (so a contraction or a window is
// at most kMaxElements^2 products) and no ops that talk to the outside (infeed, collectives); the
// others are accepted unrun, as the parser accepts them. A while loop's trip count is data, so both
// runs refuse a loop past kMaxIterations (Options::max_while_iterations), and must agree on that too. Fusion runs from the smallest values up (set_fusion_min_elements(0)), as the fusion tests
// do, so the fused loops are what a small program exercises.
#include <fmt/format.h>

#include <functional>
#include <memory>
#include <random>

#include "exec/accelerate.h"
#include "exec/executable.h"
#include "exec/fusion.h"
#include "fuzz/target_helpers.h"
#include "interp/interpreter.h"
#include "ir/module.h"
#include "stablehlo/parser.h"

namespace tessera::fuzz {

namespace {

using ir::ElementType;
using ir::Literal;
using ir::OpKind;

constexpr int64_t kMaxElements = 4096;
constexpr int64_t kMaxIterations = 32;

bool small_type(const ir::Type& t) {
  if (t.is_token()) return true;
  if (!t.is_tensor()) {
    for (const ir::Type& member : t.elements)
      if (!small_type(member)) return false;
    return true;
  }
  return t.is_static() && t.num_elements() <= kMaxElements;
}

// Whether every value of `block` (its nested regions too) is small and no op leaves the process.
bool runnable(const ir::Block& block) {
  for (const auto& a : block.arguments())
    if (!small_type(a->type())) return false;
  for (const auto& op : block.ops()) {
    switch (op->kind()) {
      case OpKind::Infeed: case OpKind::Outfeed: case OpKind::Send: case OpKind::Recv:
      case OpKind::AllReduce: case OpKind::AllGather: case OpKind::AllToAll: case OpKind::ReduceScatter:
      case OpKind::CollectivePermute: case OpKind::CollectiveBroadcast: case OpKind::CustomCall:
      case OpKind::Probe: case OpKind::ExpectSerializedEq:  // files
        return false;
      default: break;
    }
    for (const ir::Value* r : op->results())
      if (!small_type(r->type())) return false;
    for (const auto& region : op->regions())
      if (!runnable(*region)) return false;
  }
  return true;
}

// Values every kernel takes: floats in [-2, 2], integers in [-4, 4] ([0, 8] unsigned), booleans.
Literal input(const ir::Type& t, std::mt19937_64& rng) {
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  ElementType e = t.element;
  for (double& x : v) {
    if (ir::is_bool(e)) x = double(rng() % 2);
    else if (ir::is_integer(e)) x = double(rng() % 9) - (ir::is_unsigned_integer(e) ? 0 : 4);
    else x = std::uniform_real_distribution<double>(-2, 2)(rng);
  }
  return Literal::from_doubles(t, v);
}

// Restores the process-wide fusion settings however the check leaves.
struct FusionSettings {
  FusionSettings() {
    exec::set_fusion_min_elements(0);
    interp::set_fusion_planner(&exec::plan_fusion);
  }
  ~FusionSettings() { exec::set_fusion_min_elements(-1); }
};

}  // namespace

bool check_program(std::string_view text) {
  std::unique_ptr<ir::Module> m;
  if (!refusable("parse", [&] { m = stablehlo::parse(text, "fuzz.mlir"); })) return false;
  const ir::Function* fn = m->find_function("main");
  if (fn == nullptr && !m->functions.empty()) fn = m->functions.front().get();
  if (fn == nullptr) return true;
  for (const auto& f : m->functions)  // `fn` and what func.call reaches
    if (!runnable(f->body())) return true;
  for (size_t i = 0; i < fn->num_parameters(); ++i)  // inputs are drawn for plain tensors only
    if (!fn->parameter(i)->type().is_tensor() || fn->parameter(i)->type().is_quantized()) return true;

  std::mt19937_64 rng(std::hash<std::string_view>{}(text));
  std::vector<Literal> in;
  for (size_t i = 0; i < fn->num_parameters(); ++i) in.push_back(input(fn->parameter(i)->type(), rng));

  FusionSettings fusion;
  std::vector<Literal> want;
  std::vector<std::vector<Literal>> runs;  // the executable's, each way it runs
  interp::Options o;
  o.accelerate = &exec::accelerate;
  o.module = m.get();
  o.max_while_iterations = kMaxIterations;
  bool interpreted = refusable("interpreter", [&] { want = interp::evaluate(*m, fn->name(), in, o); });
  bool executed = refusable("executable", [&] {
    exec::CompileOptions c;
    c.module = m.get();
    c.accelerate = &exec::accelerate;
    c.planner = &exec::plan_fusion;
    std::shared_ptr<const exec::Executable> e = exec::Executable::compile(*fn, c);
    interp::Options run;
    run.module = m.get();
    run.max_while_iterations = kMaxIterations;
    runs.push_back(e->run(in, run));
    // In a context (the buffer plan's arena), as the Session runs it: the arguments donated, then
    // lent as views (read in place), the second run over what the first left in the arena.
    std::unique_ptr<exec::RunContext> context = e->make_context();
    std::vector<Literal> donated = in, lent, results;
    e->run_into(donated, {}, results, run, *context);
    runs.push_back(std::move(results));
    for (Literal& x : in) lent.push_back(Literal::view(x.type(), x.bytes().data()));
    results.clear();
    e->run_into(lent, {}, results, run, *context);
    runs.push_back(std::move(results));
  });
  expect(interpreted == executed, fmt::format("the interpreter {} the program and the executable {} it",
                                              interpreted ? "ran" : "refused", executed ? "ran" : "refused"));
  if (!interpreted) return false;
  for (size_t k = 0; k < runs.size(); ++k) {
    const std::vector<Literal>& got = runs[k];
    expect(got.size() == want.size(),
           fmt::format("run {}: {} results from the executable, {} from the interpreter", k, got.size(), want.size()));
    for (size_t r = 0; r < want.size(); ++r)
      expect(got[r] == want[r],  // Literal's == compares the type and the bits
             fmt::format("run {}, result {} ({}): the executable's bits differ from the interpreter's", k, r,
                         ir::to_string(want[r].type())));
  }
  return true;
}

}  // namespace tessera::fuzz
