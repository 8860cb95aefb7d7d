// Test helpers: building and running one-function programs, literals, and comparisons.
#include "common/error_of.h"
#include "test_util.h"

#include <cmath>
#include <random>

#include "support/strings.h"

namespace tessera::interp::testing {

std::vector<Literal> run_in(ir::Module& module, std::vector<Literal> args, const Body& body,
                            Options options) {
  ir::Function& fn = ir::build_function(module, "f", [&](ir::FunctionBuilder& b) {
    std::vector<Tensor> params;
    for (const Literal& a : args) params.push_back(b.param(a.type()));
    return body(b, params);
  });
  ir::verify(module);
  options.module = &module;
  return evaluate(fn, std::move(args), options);
}

std::vector<Literal> run(std::vector<Literal> args, const Body& body, Options options) {
  ir::Module module("test");
  return run_in(module, std::move(args), body, options);
}

Literal run1(std::vector<Literal> args, const std::function<Tensor(const std::vector<Tensor>&)>& body,
             Options options) {
  std::vector<Literal> r = run(
      std::move(args),
      [&](ir::FunctionBuilder&, const std::vector<Tensor>& p) { return std::vector<Tensor>{body(p)}; },
      options);
  EXPECT_EQ(r.size(), 1u);
  return r.at(0);
}

Literal apply(ir::OpKind kind, std::vector<Literal> args, ir::AttrMap attrs) {
  return run1(std::move(args), [&](const std::vector<Tensor>& p) { return p.at(0).builder().emit1(kind, p, attrs); });
}

Literal lit(Type type, std::vector<double> values) { return Literal::from_doubles(std::move(type), values); }
Literal ints(Type type, std::vector<int64_t> values) { return Literal::from_ints(std::move(type), values); }
Literal scalar_of(ElementType e, double v) { return Literal::scalar(e, v); }

Literal random_literal(Type type, uint64_t seed, Domain domain) {
  std::mt19937_64 rng(seed);
  Literal x(type);
  ElementType e = type.element;
  bool is_unsigned = ir::is_unsigned_integer(e);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto integer = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN};
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (ir::is_bool(e)) {
      x.set_int(i, integer(0, 1));
    } else if (ir::is_integer(e)) {
      switch (domain) {
        case Domain::Positive: x.set_int(i, integer(1, 50)); break;
        case Domain::Small: x.set_int(i, integer(0, 6)); break;
        case Domain::Shift: x.set_int(i, integer(0, 15)); break;
        default: x.set_int(i, is_unsigned ? integer(0, 100) : integer(-50, 50));
      }
    } else {
      double v;
      switch (domain) {
        case Domain::Positive: v = uniform(0.1, 5); break;
        case Domain::Small: v = uniform(-0.9, 0.9); break;
        case Domain::Halves: v = static_cast<double>(integer(-12, 12)) / 2; break;
        case Domain::Special: v = integer(0, 2) == 0 ? specials[integer(0, 4)] : uniform(-4, 4); break;
        default: v = uniform(-4, 4);
      }
      x.set_complex(i, ir::is_complex(e) ? std::complex<double>(v, uniform(-4, 4)) : v);
    }
  }
  return x;
}

std::string describe(const Literal& x) {
  std::vector<std::string> items;
  for (int64_t i = 0; i < x.num_elements() && i < 64; ++i) {
    if (ir::is_complex(x.element())) {
      auto c = x.get_complex(i);
      items.push_back(fmt::format("({}, {})", c.real(), c.imag()));
    } else if (ir::is_unsigned_integer(x.element())) {
      items.push_back(std::to_string(x.get_uint(i)));
    } else if (ir::is_integer(x.element()) || ir::is_bool(x.element())) {
      items.push_back(std::to_string(x.get_int(i)));
    } else {
      items.push_back(fmt::format("{}", x.get_double(i)));
    }
  }
  if (x.num_elements() > 64) items.push_back("...");
  return to_string(x.type()) + " [" + support::join(items, ", ") + "]";
}

std::string message_of(const std::function<void()>& f) { return tessera::testing::error_of(f); }

namespace {

bool float_close(double got, double want, Tolerance t) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= t.abs + t.rel * std::fabs(want);
}

}  // namespace

::testing::AssertionResult close(const Literal& got, const Literal& want) {
  if (got.type() != want.type())
    return ::testing::AssertionFailure() << "type " << to_string(got.type()) << ", expected "
                                         << to_string(want.type());
  ElementType e = got.element();
  Tolerance t = tolerance_for(e);
  std::vector<std::string> bad;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    bool ok;
    if (ir::is_float(e) || ir::is_complex(e)) {
      auto g = got.get_complex(i), w = want.get_complex(i);
      ok = float_close(g.real(), w.real(), t) && float_close(g.imag(), w.imag(), t);
    } else if (ir::is_unsigned_integer(e)) {
      ok = got.get_uint(i) == want.get_uint(i);
    } else {
      ok = got.get_int(i) == want.get_int(i);
    }
    if (!ok) bad.push_back(std::to_string(i));
  }
  if (bad.empty()) return ::testing::AssertionSuccess();
  if (bad.size() > 8) bad.resize(8);
  return ::testing::AssertionFailure() << "elements [" << support::join(bad, ", ") << "] differ\n  got:  "
                                       << describe(got) << "\n  want: " << describe(want);
}

::testing::AssertionResult same(const Literal& got, const Literal& want) {
  if (got == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\n  got:  " << describe(got) << "\n  want: " << describe(want);
}

}  // namespace tessera::interp::testing
