// The reverse-mode rule table: one VJP rule per row of ops.def (vjp_<Op>), so an op without a rule
// does not link. A rule reads the op's primal operands and results (already rebuilt in the
// gradient function) and the cotangents of its results, and adds a cotangent to each operand it
// flows into. Rules for ops that carry no gradient (comparisons, integer ops, iota, constants) add
// nothing. Each rule carries its math as a one-line comment.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "ir/builder.h"

namespace tessera::autodiff {

using ir::Tensor;

// The refusals that reverse and forward mode share (refusals.cpp), so that both name an op and say
// why in the same words: the user error "cannot differentiate <op>: <why>".
[[noreturn]] void refuse(const ir::Op& op, std::string_view why);
// while, func.call, custom_call and run_parallel have no rule in either mode.
[[noreturn]] void refuse_outright(const ir::Op& op);
// The combiner of a reduce (add, maximum, minimum), a scatter (add, replace) or a reducing
// collective (add) whose inputs and body have a rule; refuses any other.
ir::OpKind require_combiner(const ir::Op& op);
// Refuses complex operands and results (their derivatives need conjugation).
void require_real(const ir::Op& op);

class VjpContext {
 public:
  VjpContext(ir::Builder& b, const ir::Op& op, std::vector<Tensor> operands,
             std::vector<Tensor> results, std::vector<std::optional<Tensor>> cotangents,
             std::vector<std::optional<Tensor>>& operand_cotangents)
      : b(b), op(op), operands_(std::move(operands)), results_(std::move(results)),
        cotangents_(std::move(cotangents)), out_(operand_cotangents) {}

  ir::Builder& b;
  const ir::Op& op;  // the forward op, as written in f

  size_t num_operands() const { return operands_.size(); }
  size_t num_results() const { return results_.size(); }
  const Tensor& x(size_t i = 0) const { return operands_.at(i); }   // primal operand
  const Tensor& y(size_t i = 0) const { return results_.at(i); }    // primal result
  bool has_cotangent(size_t i = 0) const { return cotangents_.at(i).has_value(); }
  // The cotangent of result i (zeros when nothing flowed into it).
  Tensor dy(size_t i = 0) const;

  // Adds `cotangent` to operand i's cotangent (nothing for operands that are not float).
  void add(size_t i, const Tensor& cotangent);

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    refuse(op, fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  std::vector<Tensor> operands_, results_;
  std::vector<std::optional<Tensor>> cotangents_;
  std::vector<std::optional<Tensor>>& out_;
};

#define OP(e, spelling, arity, traits) void vjp_##e(VjpContext& c);
#include "ir/ops.def"
#undef OP

// Whether op k's VJP, JVP or vmap rule is still pending (it refuses by name; rules_pending.cpp).
bool vjp_pending(ir::OpKind k);
bool jvp_pending(ir::OpKind k);
bool vmap_pending(ir::OpKind k);

// Shared by the rule files.
Tensor zeros_like(ir::Builder& b, const ir::Type& t);
Tensor full_like(ir::Builder& b, const ir::Type& t, double v);
bool is_differentiable(const ir::Type& t);  // float element types
// The binary op that a reduction body (two scalar arguments lhs, rhs) applies to (lhs, rhs), or
// Return for a body that returns rhs (scatter's "replace"); nullopt for any other body. Used by
// reduce, scatter and the reducing collectives (rules_reduce.cpp).
std::optional<ir::OpKind> body_combiner(const ir::Block& body);
// How a message names a body: "stablehlo.multiply", "replace" or "a body of 3 ops".
std::string describe_body(const ir::Block& body);
// The dimensions of a rank-`rank` array that a reduction over `reduced` keeps, in order
// (rules_reduce.cpp).
std::vector<int64_t> kept_dims(int64_t rank, const std::vector<int64_t>& reduced);
// The values an op reads besides its operands, which the transforms treat as operands after them:
// for if and case, the values their branches read from around them (rules_branches.cpp); nothing
// for any other op.
std::vector<const ir::Value*> implicit_operands(const ir::Op& op);
// Gives the collectives in `op` (regions included) channel ids of their own, as a copy of an op
// needs: ids are unique in a module (reverse.cpp).
void renumber_channels(ir::Module& module, ir::Op& op);

}  // namespace tessera::autodiff
