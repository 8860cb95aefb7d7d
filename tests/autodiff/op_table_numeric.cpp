// Rows of the op table (op_table.h) for issue #17's numeric ops with a gradient: the batch-norm
// ops (differentiated through their decomposition), features in the middle dimension (ops with
// several results return them flattened and joined, so every result reaches the loss); digamma
// (through polygamma(1, x)), and polygamma and zeta in x and q with constant orders.
#include "ir/batch_norm.h"
#include "ir/builder_numeric.h"
#include "op_table.h"

namespace tessera::autodiff::testing {

using ir::FunctionBuilder;

namespace {

using P = const std::vector<Tensor>&;

const ir::BatchNormAttrs kBn{1e-3f, 1};

Tensor joined(const std::vector<Tensor>& ys) {
  std::vector<Tensor> flat;
  for (const Tensor& y : ys) flat.push_back(ir::reshape(y, {y.type().num_elements()}));
  return ir::concatenate(flat, 0);
}

}  // namespace

std::vector<Row> numeric_rows() {
  return {
      {"digamma", {OpKind::Digamma}, {{{3, 4}, 0.5, 3}}, [](FunctionBuilder&, P p) { return ir::digamma(p[0]); }},
      {"polygamma", {OpKind::Polygamma}, {{{2, 3}, 0.5, 3}},
       [](FunctionBuilder& f, P p) {
         Tensor n = f.constant(Literal::from<double>(ir::f64({2, 3}), {0, 1, 2, 3, 1, 2}));
         return ir::polygamma(n, p[0]);
       }},
      {"zeta", {OpKind::Zeta}, {{{2, 3}, 0.5, 3}},
       [](FunctionBuilder& f, P p) {
         Tensor s = ir::broadcast_to(f.constant(Literal::from<double>(ir::f64({3}), {2, 3.5, 5})), {2, 3});
         return ir::zeta(s, p[0]);
       }},
      {"batch_norm_inference", {OpKind::BatchNormInference},
       {{{3, 4, 2}}, {{4}}, {{4}}, {{4}}, {{4}, 0.5, 2}},
       [](FunctionBuilder&, P p) { return ir::batch_norm_inference(p[0], p[1], p[2], p[3], p[4], kBn); }},
      {"batch_norm_training", {OpKind::BatchNormTraining}, {{{3, 4, 2}}, {{4}}, {{4}}},
       [](FunctionBuilder&, P p) { return joined(ir::batch_norm_training(p[0], p[1], p[2], kBn)); }},
      {"batch_norm_grad", {OpKind::BatchNormGrad}, {{{3, 4, 2}}, {{4}}, {{4}}, {{4}, 0.5, 2}, {{3, 4, 2}}},
       [](FunctionBuilder&, P p) { return joined(ir::batch_norm_grad(p[0], p[1], p[2], p[3], p[4], kBn)); }},
  };
}

}  // namespace tessera::autodiff::testing
