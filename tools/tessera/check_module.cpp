// `tessera check` on a module that is no test case: its @main takes arguments, and nothing in the
// file compares values. JAX's exports in StableHLO's testdata are such files (the shape-polymorphic
// ones above all); their RUN lines test that the module reads back the same after its
// serialization. Here that is print -> parse -> print giving the same text, and then the module
// is also run: every '?' dimension of the arguments made 3 (a size no program's shape
// assertions or slices are likely to refuse, and not 1, which broadcasting would hide), each
// leading scalar integer argument of a polymorphic @main (JAX's dimension variables, as jax2tf
// passes them) given that value, shapes refined, and the other arguments filled with small
// deterministic values. The run must give results of the declared result types. What failed
// is a UserError naming the step.
#include <fmt/format.h>

#include <random>
#include <sstream>

#include "ir/element_type.h"
#include "ir/literal.h"
#include "ir/module.h"
#include "stablehlo/parser.h"
#include "stablehlo/printer.h"
#include "support/error.h"
#include "tools/tessera/check.h"
#include "transforms/lower_quantized.h"
#include "transforms/refine_shapes.h"

namespace tessera::tools {
namespace {

constexpr int64_t kDimSize = 3;  // each '?' of the arguments

// The first line where `a` and `b` differ (1-based), shown for the error.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream x(a), y(b);
  std::string l, r;
  for (int line = 1;; ++line) {
    bool more_l = static_cast<bool>(std::getline(x, l)), more_r = static_cast<bool>(std::getline(y, r));
    if (!more_l && !more_r) return "";
    if (l != r || more_l != more_r) return fmt::format("line {}: '{}' then '{}'", line, l, r);
  }
}

ir::Type concrete(ir::Type t) {
  if (t.is_tensor())
    for (int64_t& d : t.shape)
      if (d == ir::kDynamic) d = kDimSize;
  t.bounds.clear();  // a static dimension has no bound (the run refines the types to these)
  for (ir::Type& m : t.elements) m = concrete(m);
  return t;
}

// Small values of `t`: floats and complex in [-1, 1) (real parts), integers 0..3, booleans.
ir::Literal argument(const ir::Type& t, std::mt19937& rng) {
  if (t.is_token()) return ir::Literal::token();
  if (t.is_tuple()) {
    std::vector<ir::Literal> members;
    for (const ir::Type& m : t.elements) members.push_back(argument(m, rng));
    return ir::Literal::tuple(std::move(members));
  }
  std::vector<double> values(static_cast<size_t>(t.num_elements()));
  std::uniform_int_distribution<int> small(0, 3);
  std::uniform_real_distribution<double> unit(-1, 1);
  for (double& v : values) {
    if (ir::is_bool(t.element)) v = small(rng) % 2;
    else if (ir::is_integer(t.element)) v = small(rng);
    else v = unit(rng);
  }
  return ir::Literal::from_doubles(t, values);
}

}  // namespace

std::string check_module(ir::Module& module, const std::string& entry, const std::string& path,
                         const ModuleRunner& run) {
  const std::string printed = stablehlo::print(module);
  std::string again;
  try {
    again = stablehlo::print(*stablehlo::parse(printed, path + " (printed)"));
  } catch (const support::UserError& e) {
    support::fail("the printed module does not read back: {}", e.what());
  }
  if (again != printed)
    support::fail("print -> parse -> print changes the module, at {}", first_difference(printed, again));

  transforms::lower_quantized(module);
  const ir::Function* fn = module.find_function(entry);
  std::vector<ir::Type> types;
  std::vector<ir::Literal> args;
  std::mt19937 rng(7);
  const bool polymorphic = transforms::has_dynamic_types(*fn);
  bool leading = polymorphic;  // still among the leading scalar integers (dimension variables)
  for (size_t i = 0; i < fn->num_parameters(); ++i) {
    const ir::Type& t = fn->parameter(i)->type();
    leading = leading && t.is_tensor() && t.shape.empty() && ir::is_integer(t.element);
    types.push_back(concrete(t));
    args.push_back(leading ? ir::Literal::scalar(t.element, kDimSize) : argument(types.back(), rng));
  }
  if (polymorphic) {
    transforms::refine_shapes(module, entry, types, args);
    fn = module.find_function(entry);
  }
  std::vector<ir::Literal> results = run(*fn, std::move(args));
  if (results.size() != fn->result_types.size())
    support::fail("@{} returned {} values, but declares {} results", entry, results.size(), fn->result_types.size());
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].type() != fn->result_types[i])
      support::fail("@{}'s result {} is {}, but it declares {}", entry, i, stablehlo::print(results[i].type()),
                    stablehlo::print(fn->result_types[i]));
  return fmt::format("round trip; ran on generated arguments{}: the file compares no values",
                     polymorphic ? fmt::format(" with every '?' = {}", kDimSize) : "");
}

}  // namespace tessera::tools
