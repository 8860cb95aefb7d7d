// The forward-mode rule table: one JVP rule per row of ops.def (jvp_<Op>), so an op without a rule
// does not link. A rule reads the op's primal operands and results (already copied into the JVP
// function) and the tangents of its operands, and sets the tangent of each result it reaches. An
// absent tangent is zero: rules leave terms out rather than build zeros, and materialize zeros only
// where an op needs every operand. Each rule carries its math as a one-line comment.
#pragma once

#include <optional>
#include <vector>

#include "autodiff/rules.h"

namespace tessera::autodiff {

class JvpContext {
 public:
  JvpContext(ir::Builder& b, const ir::Op& op, std::vector<Tensor> operands,
             std::vector<Tensor> results, std::vector<std::optional<Tensor>> tangents,
             std::vector<std::optional<Tensor>>& result_tangents)
      : b(b), op(op), operands_(std::move(operands)), results_(std::move(results)),
        tangents_(std::move(tangents)), out_(result_tangents) {}

  ir::Builder& b;
  const ir::Op& op;  // the op as written in f

  size_t num_operands() const { return operands_.size(); }
  size_t num_results() const { return results_.size(); }
  const Tensor& x(size_t i = 0) const { return operands_.at(i); }  // primal operand
  const Tensor& y(size_t i = 0) const { return results_.at(i); }   // primal result
  bool has_tangent(size_t i = 0) const { return tangents_.at(i).has_value(); }
  const std::optional<Tensor>& tangent(size_t i = 0) const { return tangents_.at(i); }
  // The tangent of operand i, zeros when none flowed into it.
  Tensor dx(size_t i = 0) const;
  // f(tangent of operand i) when it has one; nothing otherwise (a zero term).
  template <typename F>
  std::optional<Tensor> term(size_t i, F f) const {
    return has_tangent(i) ? std::optional<Tensor>(f(*tangent(i))) : std::nullopt;
  }

  // Sets result i's tangent (ignored for results that are not float; nothing: zero).
  void set(size_t i, const std::optional<Tensor>& tangent);

  // The op again, on `operands` (tangents, or primal operands where the op is not linear in them),
  // its regions copied and a fresh channel id where it had one, with result types `results`
  // (default: the primal results').
  std::vector<Tensor> again(const std::vector<Tensor>& operands, std::vector<ir::Type> results = {});

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    refuse(op, fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  std::vector<Tensor> operands_, results_;
  std::vector<std::optional<Tensor>> tangents_;
  std::vector<std::optional<Tensor>>& out_;
};

#define OP(e, spelling, arity, traits) void jvp_##e(JvpContext& c);
#include "ir/ops.def"
#undef OP

// The sum of the terms present; nothing (zero) when none is.
std::optional<Tensor> sum_of(std::initializer_list<std::optional<Tensor>> terms);
// y = f(x) with dy = dx * scale(c): the unary rules.
template <typename F>
void scaled(JvpContext& c, F scale) {
  c.set(0, c.term(0, [&](const Tensor& d) { return d * scale(c); }));
}
// 1 where `mask`, else 0, in `type` (the choosers' masks).
Tensor indicator(const Tensor& mask, const ir::Type& type);
// For an op linear in its float operands together (movement ops, gather, scatter, a sum, the
// layout ops): dy = op(dx of each float operand, zeros where absent; x of the others, e.g. indices).
void linear(JvpContext& c);
// For an op whose result i is a linear function of operand i alone (the variadic collectives,
// optimization_barrier): dy_i = op(dx_i), the op emitted once on the tangents present.
void map_tangents(JvpContext& c);

// A block's values and their tangents (nothing: zero, or not float).
struct JvpValues {
  std::vector<Tensor> primals;
  std::vector<std::optional<Tensor>> tangents;
};

// Copies `from` (but its return) into `into`'s block, each op followed by its JVP, with from's
// arguments read as `args` and their tangents as `arg_tangents`; returns the returned values and
// their tangents. forward() runs it on f's body, the manual_computation rule on its region.
JvpValues jvp_block(ir::Builder& into, const ir::Block& from, const std::vector<Tensor>& args,
                    const std::vector<std::optional<Tensor>>& arg_tangents);

}  // namespace tessera::autodiff
