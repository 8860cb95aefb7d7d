// stablehlo.batch_norm_inference, batch_norm_training and batch_norm_grad: their attributes
// (epsilon, an f32; feature_index, an i64), their builders, and their decomposition into other
// StableHLO ops as the spec's reference definitions write it (XLA's batchnorm_expander). The ops
// are kDecomposable: the interpreter runs the decomposition, autodiff differentiates and batches
// through it, and the partitioner expands them before propagation (spmd/inline.cpp), so one
// definition serves every layer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/builder.h"

namespace tessera::ir {

struct BatchNormAttrs {
  float epsilon = 0;
  int64_t feature_index = 0;
};

// nullopt when an attribute is absent or of another kind.
std::optional<BatchNormAttrs> batch_norm_attrs_of(const AttrMap& attrs);
AttrMap batch_norm_attrs(BatchNormAttrs a);
bool is_batch_norm(OpKind k);

// The ops, built (their result types from the shape rule).
Tensor batch_norm_inference(const Tensor& operand, const Tensor& scale, const Tensor& offset, const Tensor& mean,
                            const Tensor& variance, BatchNormAttrs a);
// output, batch_mean, batch_var
std::vector<Tensor> batch_norm_training(const Tensor& operand, const Tensor& scale, const Tensor& offset,
                                        BatchNormAttrs a);
// grad_operand, grad_scale, grad_offset
std::vector<Tensor> batch_norm_grad(const Tensor& operand, const Tensor& scale, const Tensor& mean,
                                    const Tensor& variance, const Tensor& grad_output, BatchNormAttrs a);

// The op's results computed by other ops, built with the operands' builder: `kind` is one of the
// three, `operands` its operands (already checked by its shape rule).
std::vector<Tensor> decompose_batch_norm(OpKind kind, const std::vector<Tensor>& operands, BatchNormAttrs a);
// @name(operand types...) = decompose_batch_norm(op), added to `m`.
Function& batch_norm_function(Module& m, const Op& op, const std::string& name);

}  // namespace tessera::ir
