// Pretty forms of the check dialect's ops (the StableHLO interpreter's test files):
//   check.expect_eq_const %x, dense<...> : t [, tolerance = 1.0e-12] {attrs}
//   check.expect_almost_eq %a, %b, tolerance = 0.1 : t
//   check.expect_close %a, %b, min_ulp_difference = 1, max_ulp_difference = 3 : t, t
#include <cmath>
#include <cstdlib>

#include "stablehlo/parser_impl.h"

namespace tessera::stablehlo {

namespace {

// The check dialect's keyword arguments after the operands, as its assembly formats write them:
// `check.expect_almost_eq %a, %b, tolerance = 0.1 : t`, `check.expect_close %a, %b,
// min_ulp_difference = 1, max_ulp_difference = 3 : t, t` and `check.expect_almost_eq_const %a,
// dense<...> : t, tolerance = 1.0e-12`. The same values read from an attribute dictionary too.
void check_keywords(Parser& p, OpText& op) {
  while (true) {
    Location at = p.lx.location();
    p.lx.try_consume(",");  // use_values has eaten the comma after the last operand
    if (p.lx.try_consume("tolerance")) {
      p.lx.expect("=");
      Location number = p.lx.location();
      std::string t = p.lx.number_text();
      char* end = nullptr;
      double v = std::strtod(t.c_str(), &end);
      if (end != t.c_str() + t.size() || !std::isfinite(v))
        p.lx.error_at(number, fmt::format("expected a finite tolerance, found '{}'", t));
      op.attrs.set("tolerance", v);
    } else if (p.lx.try_consume("min_ulp_difference")) {
      p.lx.expect("=");
      op.attrs.set("min_ulp_difference", p.lx.integer());
    } else if (p.lx.try_consume("max_ulp_difference")) {
      p.lx.expect("=");
      op.attrs.set("max_ulp_difference", p.lx.integer());
    } else {
      p.lx.reset(at);
      return;
    }
  }
}

}  // namespace

// check.expect_eq_const %x, dense<...> : tensor<...> {attrs}
void parse_expect_const(Parser& p, OpText& op) {
  op.operands = {p.use_value()};
  p.lx.expect(",");
  p.lx.expect("dense");
  op.attrs.set("value", parse_dense(p.lx));
  check_keywords(p, op);
  p.parse_optional_attrs(op);
}

// check.expect_eq %a, %b : t (and almost_eq, close), keyword arguments included.
void parse_check_form(Parser& p, OpText& op) {
  op.operands = p.use_values();
  check_keywords(p, op);
  p.parse_optional_attrs(op);
  p.parse_trailing_types(op);
}

}  // namespace tessera::stablehlo
