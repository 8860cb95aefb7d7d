// Rows of the op table (op_table.h) for stablehlo.if and stablehlo.case: branches that read the
// parameters from around the op (their gradients flow to those values), the predicate or index
// computed from the parameters (vmap then runs every branch and selects) or constant (vmap batches
// the branches), an index out of range (the last branch runs), and an if nested in a case branch.
#include "op_table.h"

namespace tessera::autodiff::testing {

using ir::ComparisonDirection;
using ir::ElementType;
using ir::FunctionBuilder;

namespace {

using P = const std::vector<Tensor>&;

// sum(x) > bound: true for bound -100 and false for 100 on the rows' inputs (|x| <= 2).
Tensor sum_above(const Tensor& x, double bound) {
  Tensor s = ir::sum(x);
  return ir::compare(s, s.builder().scalar(s.element(), bound), ComparisonDirection::GT);
}

std::vector<Tensor> one(Tensor t) { return {t}; }

}  // namespace

std::vector<Row> branch_rows() {
  return {
      {"if_true_branch", {OpKind::If}, {{{3, 2}}, {{3, 2}}},
       [](FunctionBuilder&, P p) {
         return ir::if_op(
             sum_above(p[0], -100), [&](ir::Builder&) { return one(ir::tanh(p[0]) * p[1]); },
             [&](ir::Builder&) { return one(p[0] - p[1]); })[0];
       }},
      {"if_false_branch_two_results", {OpKind::If}, {{{4}}, {{4}}},
       [](FunctionBuilder&, P p) {
         std::vector<Tensor> r = ir::if_op(
             sum_above(p[1], 100), [&](ir::Builder&) { return std::vector<Tensor>{p[0], p[1]}; },
             [&](ir::Builder&) { return std::vector<Tensor>{ir::exp(p[0]) * p[1], ir::sin(p[1])}; });
         return r[0] + r[1] * 2.0;
       }},
      {"case_constant_index", {OpKind::Case}, {{{2, 3}}, {{2, 3}}},
       [](FunctionBuilder& b, P p) {
         Tensor index = b.scalar(ElementType::i32, 1);
         return ir::case_op(index, {[&](ir::Builder&) { return one(p[0]); },
                                    [&](ir::Builder&) { return one(p[0] * p[1] * p[1]); },
                                    [&](ir::Builder&) { return one(p[1]); }})[0];
       }},
      {"case_index_out_of_range_with_nested_if", {OpKind::Case, OpKind::If}, {{{3}}, {{3}}},
       [](FunctionBuilder&, P p) {
         // index = 4 + (sum(p0) > -100) = 5: the last of three branches.
         Tensor index = ir::convert(sum_above(p[0], -100), ElementType::i32);
         index = index + index.builder().scalar(ElementType::i32, 4);
         return ir::case_op(index, {[&](ir::Builder&) { return one(p[0]); },
                                    [&](ir::Builder&) { return one(p[1]); },
                                    [&](ir::Builder&) {
                                      return ir::if_op(
                                          sum_above(p[1], -100),
                                          [&](ir::Builder&) { return one(ir::tanh(p[0] * p[1])); },
                                          [&](ir::Builder&) { return one(p[0]); });
                                    }})[0];
       }},
  };
}

}  // namespace tessera::autodiff::testing
