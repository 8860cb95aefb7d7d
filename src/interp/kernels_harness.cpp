// Calls and the test harness: func.call, the check.* assertions (also as the custom calls of
// JAX-generated tests), and interpreter.run_parallel, which the caller's hook runs.
//
// A check compares element by element and reports the largest difference and the first mismatch
// to the CheckLog of the run; without one, a failed check is a UserError. Equality treats NaN as
// equal to NaN. almost_eq allows an absolute difference up to `tolerance` (default 1e-4 for the check
// dialect's op, 1e-3 for the custom call of JAX's test files: the defaults of StableHLO's interpreter
// driver); close allows up to max_ulp_difference ULPs (default 3).
#include <cmath>
#include <complex>
#include <limits>
#include <utility>

#include "interp/kernels.h"
#include "ir/effects.h"
#include "interp/kernels_lapack.h"
#include "ir/dynamic_shapes.h"
#include "support/strings.h"

namespace tessera::interp {

void CheckLog::add(CheckResult r) {
  std::lock_guard lock(mu_);
  results_.push_back(std::move(r));
}

std::vector<CheckResult> CheckLog::take() {
  std::lock_guard lock(mu_);
  return std::exchange(results_, {});
}

namespace {

using ir::Literal;

enum class Compare { Eq, AlmostEq, Close };

// The distance from zero in ULPs of a float element's bit pattern, signed.
int64_t ulp_position(const Literal& x, int64_t i) {
  int bytes = ir::info(x.element()).bytes;
  uint64_t bits = 0;
  std::memcpy(&bits, x.bytes().data() + i * bytes, static_cast<size_t>(bytes));
  uint64_t sign = uint64_t{1} << (ir::info(x.element()).bits - 1);
  auto magnitude = static_cast<int64_t>(bits & (sign - 1));
  return (bits & sign) ? -magnitude : magnitude;
}

double ulp_distance(const Literal& a, const Literal& b, int64_t i) {
  double x = a.get_double(i), y = b.get_double(i);
  if (std::isnan(x) && std::isnan(y)) return 0;
  if (!std::isfinite(x) || !std::isfinite(y))
    return x == y ? 0 : std::numeric_limits<double>::infinity();
  return std::fabs(static_cast<double>(ulp_position(a, i) - ulp_position(b, i)));
}

double part_difference(double x, double y) {
  if (std::isnan(x) && std::isnan(y)) return 0;
  if (x == y) return 0;  // equal infinities too
  return std::isnan(x) || std::isnan(y) ? std::numeric_limits<double>::infinity() : std::fabs(x - y);
}

// The difference of element i: ULPs for Close, else the absolute difference (of either part of
// a complex number; of the integer values otherwise).
double difference(const Literal& a, const Literal& b, int64_t i, Compare how) {
  ir::ElementType e = a.element();
  if (ir::is_integer(e) || ir::is_bool(e)) {
    if (ir::is_unsigned_integer(e)) {
      uint64_t x = a.get_uint(i), y = b.get_uint(i);
      return static_cast<double>(x > y ? x - y : y - x);
    }
    int64_t x = a.get_int(i), y = b.get_int(i);
    return x == y ? 0 : std::fabs(static_cast<double>(x) - static_cast<double>(y));
  }
  if (how == Compare::Close && ir::is_float(e)) return ulp_distance(a, b, i);
  std::complex<double> x = a.get_complex(i), y = b.get_complex(i);
  return std::max(part_difference(x.real(), y.real()), part_difference(x.imag(), y.imag()));
}

std::string element_text(const Literal& x, int64_t i) {
  ir::ElementType e = x.element();
  if (ir::is_bool(e)) return x.get_int(i) ? "true" : "false";
  if (ir::is_unsigned_integer(e)) return fmt::format("{}", x.get_uint(i));
  if (ir::is_integer(e)) return fmt::format("{}", x.get_int(i));
  if (ir::is_complex(e)) return fmt::format("({}, {})", x.get_complex(i).real(), x.get_complex(i).imag());
  return fmt::format("{}", x.get_double(i));
}

std::string index_text(const Literal& x, int64_t flat) {
  std::vector<int64_t> index(x.shape().size());
  for (size_t d = index.size(); d-- > 0;) {
    index[d] = flat % x.shape()[d];
    flat /= x.shape()[d];
  }
  return "[" + support::join(index, ", ") + "]";
}

// The check dialect's expect_almost_eq without a `tolerance`, and the custom call, which has none.
constexpr double kAlmostEqTolerance = 1e-4;
constexpr double kAlmostEqCallTolerance = 1e-3;

void check(const EvalContext& ctx, std::string name, const Literal& actual, const Literal& expected,
           Compare how, double almost_eq_tolerance = kAlmostEqTolerance) {
  if (actual.type() != expected.type())
    ctx.fail("compares {} with {}", to_string(actual.type()), to_string(expected.type()));
  const ir::AttrMap& a = ctx.op.attrs();
  double limit = how == Compare::Eq        ? 0
                 : how == Compare::AlmostEq ? a.get_or<double>("tolerance", almost_eq_tolerance)
                                            : static_cast<double>(a.get_or<int64_t>("max_ulp_difference", 3));
  double floor = how == Compare::Close ? static_cast<double>(a.get_or<int64_t>("min_ulp_difference", 0)) : 0;
  CheckResult r{ctx.op.loc, std::move(name), true, 0, ""};
  for (int64_t i = 0; i < actual.num_elements(); ++i) {
    double d = difference(actual, expected, i, how);
    r.max_difference = std::max(r.max_difference, d);
    if ((d > limit || d < floor) && r.passed) {
      r.passed = false;
      r.detail = fmt::format("element {}: {} (actual) vs {} (expected)", index_text(actual, i),
                             element_text(actual, i), element_text(expected, i));
    }
  }
  if (CheckLog* log = ctx.state.options->checks) {
    log->add(std::move(r));
  } else if (!r.passed) {
    support::fail("{} at line {} failed: {}; largest difference {}", r.check, r.loc.line, r.detail,
                  r.max_difference);
  }
}

// check.eq is the older generation's only check, for every element type. Its expected values are
// what XLA computed when JAX's test harness generated the file, and the harness accepts a result
// within its default tolerance of the element type (jax._src.public_test_util's
// default_tolerance, used as both atol and rtol as assert_allclose does): exact for integers and
// booleans; for floating-point and complex values |actual - expected| <= tol * (1 + |expected|),
// equal NaNs and equal infinities passing. (The files put the expected value first or second, so
// the tolerance scales with the larger magnitude.) (The later generation of the same programs says the
// same with check.expect_eq for integers and check.expect_close for floats.) A faithful kernel
// differs from XLA's approximations by more than a few ULPs where the result cancels (lgamma near
// its zeros), which is why ULPs are not the measure here.
double jax_tolerance(ir::ElementType e) {
  switch (e) {
    case ir::ElementType::f64:
    case ir::ElementType::c128: return 1e-15;
    case ir::ElementType::f32:
    case ir::ElementType::c64: return 1e-6;
    case ir::ElementType::f16: return 1e-3;
    case ir::ElementType::bf16: return 1e-2;
    default: return 1e-1;  // the f8 (and narrower) types
  }
}

// How far element i of `a` and `b` are apart beyond JAX's tolerance (0 when within it).
double beyond_jax_tolerance(const Literal& a, const Literal& b, int64_t i) {
  std::complex<double> x = a.get_complex(i), y = b.get_complex(i);
  auto nan = [](std::complex<double> z) { return std::isnan(z.real()) || std::isnan(z.imag()); };
  if (nan(x) || nan(y)) return nan(x) && nan(y) ? 0 : std::numeric_limits<double>::infinity();
  if (x == y) return 0;  // equal infinities too
  double d = std::abs(x - y);
  if (!std::isfinite(d)) return std::numeric_limits<double>::infinity();
  double tol = jax_tolerance(a.element());
  return std::max(0.0, d - tol * (1 + std::max(std::abs(x), std::abs(y))));
}

}  // namespace

Results eval_ExpectEqConst(const EvalContext& ctx) {
  check(ctx, std::string(ctx.op.name()), ctx.operand(0), ctx.op.attrs().get<Literal>("value"), Compare::Eq);
  return {};
}
Results eval_ExpectAlmostEqConst(const EvalContext& ctx) {
  check(ctx, std::string(ctx.op.name()), ctx.operand(0), ctx.op.attrs().get<Literal>("value"),
        Compare::AlmostEq);
  return {};
}
Results eval_ExpectEq(const EvalContext& ctx) {
  check(ctx, std::string(ctx.op.name()), ctx.operand(0), ctx.operand(1), Compare::Eq);
  return {};
}
Results eval_ExpectAlmostEq(const EvalContext& ctx) {
  check(ctx, std::string(ctx.op.name()), ctx.operand(0), ctx.operand(1), Compare::AlmostEq);
  return {};
}
Results eval_ExpectClose(const EvalContext& ctx) {
  check(ctx, std::string(ctx.op.name()), ctx.operand(0), ctx.operand(1), Compare::Close);
  return {};
}

Results call_function(const EvalContext& ctx, const std::string& name, std::string_view what) {
  if (ctx.state.module == nullptr) ctx.fail("{} @{} but the interpreter was given no module", what, name);
  const ir::Function* fn = ctx.state.module->find_function(name);
  if (fn == nullptr) ctx.fail("{} @{}, which is not defined", what, name);
  std::vector<Literal> args;
  for (size_t i = 0; i < ctx.num_operands(); ++i) args.push_back(ctx.operand(i));
  Options nested = *ctx.state.options;
  nested.process = ctx.state.process;
  nested.collectives = ctx.state.collectives;
  nested.module = ctx.state.module;
  return evaluate(*fn, std::move(args), nested);
}

Results eval_Call(const EvalContext& ctx) {
  return call_function(ctx, ctx.op.attrs().get<std::string>("callee"), "calls");
}

// The check custom calls of JAX-generated test files: check.expect_eq, check.expect_almost_eq,
// check.expect_close (no results) and check.eq (an i1 result, also logged as a check when checks are
// collected; compared within JAX's tolerance, beyond_jax_tolerance above).
Results eval_CustomCall(const EvalContext& ctx) {
  const std::string& target = ctx.op.attrs().get<std::string>("call_target_name");
  std::string name = "stablehlo.custom_call @" + target;
  if (ctx.num_operands() == 2 && target == "check.eq") {
    const Literal &x = ctx.operand(0), &y = ctx.operand(1);
    bool inexact = ir::is_float(x.element()) || ir::is_complex(x.element());
    auto distance = [&](const Literal& a, const Literal& b, int64_t i) {
      return inexact ? beyond_jax_tolerance(a, b, i) : difference(a, b, i, Compare::Eq);
    };
    bool equal = x.type() == y.type();
    int64_t first = -1;
    for (int64_t i = 0; equal && i < x.num_elements(); ++i)
      if (distance(x, y, i) != 0) equal = false, first = i;
    // `tessera check` counts it as a check too: JAX's quantized test files return its i1 and run no
    // other check. Their order is check.eq(expected, actual); the older unquantized files write
    // check.eq(actual, expected): the expected operand is the one a constant or a call of their
    // @expected defines, the first when neither or both are.
    if (CheckLog* log = ctx.state.options ? ctx.state.options->checks : nullptr) {
      auto given = [&](size_t k) {
        const ir::Op* def = ctx.op.operand(k)->defining_op();
        return def != nullptr && (def->kind() == ir::OpKind::Constant ||
                                  (def->kind() == ir::OpKind::Call && def->attrs().get<std::string>("callee") == "expected"));
      };
      const bool expected_first = !(given(1) && !given(0));
      const Literal &expected = expected_first ? x : y, &actual = expected_first ? y : x;
      CheckResult r{ctx.op.loc, name, equal, 0, ""};
      if (x.type() != y.type()) {
        r.detail = fmt::format("compares {} with {}", to_string(actual.type()), to_string(expected.type()));
      } else if (!equal) {
        // The largest |actual - expected|, as every check reports it (not the excess over the tolerance).
        for (int64_t i = 0; i < x.num_elements(); ++i)
          r.max_difference = std::max(r.max_difference, difference(x, y, i, Compare::AlmostEq));
        r.detail = fmt::format("element {}: {} (actual) vs {} (expected)", index_text(actual, first),
                               element_text(actual, first), element_text(expected, first));
      }
      log->add(std::move(r));
    }
    return one(Literal::scalar(ir::ElementType::i1, equal ? 1 : 0));
  }
  // GSPMD's with_sharding_constraint (JAX exports before Shardy): the identity on values; the
  // parser imports it as sdy.sharding_constraint (docs/DESIGN.md), so it runs here only when not.
  if (ir::is_identity_target(target)) {  // and the placement annotations (ir/effects.h)
    if (ctx.num_operands() != 1) ctx.fail("@{} takes 1 operand, got {}", target, ctx.num_operands());
    return one(ctx.operand(0));
  }
  if (target == "shape_assertion") {  // JAX's check of its dimension variables
    ir::check_shape_assertion(ctx.op.attrs(), ctx.operands());
    return {};
  }
  Compare how;
  if (target == "check.expect_eq") how = Compare::Eq;
  else if (target == "check.expect_almost_eq") how = Compare::AlmostEq;
  else if (target == "check.expect_close") how = Compare::Close;
  else if (std::optional<Results> r = eval_lapack(ctx, target)) return std::move(*r);
  else ctx.fail("@{} is not a call target the interpreter knows", target);
  if (ctx.num_operands() != 2) ctx.fail("@{} takes 2 operands, got {}", target, ctx.num_operands());
  check(ctx, name, ctx.operand(0), ctx.operand(1), how, kAlmostEqCallTolerance);
  return {};
}

Results eval_RunParallel(const EvalContext& ctx) {
  const auto& hook = ctx.state.options->run_parallel;
  if (!hook) ctx.fail("needs a parallel runner (tessera check and comm::run_parallel provide one)");
  std::vector<Literal> inputs;
  for (size_t i = 0; i < ctx.num_operands(); ++i) inputs.push_back(ctx.operand(i));
  return hook(ctx.op, std::move(inputs));
}

}  // namespace tessera::interp
