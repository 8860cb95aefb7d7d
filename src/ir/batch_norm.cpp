// The batch-norm ops (batch_norm.h): shape rules with the spec's constraints (C1, C2, ...), builders,
// and the decomposition of each op into broadcast_in_dim, reduce, arithmetic and sqrt, written as the
// spec's reference definitions (which follow XLA's batchnorm_expander). The arithmetic stays in the
// operand's element type, as XLA's expansion does; epsilon is an f32 attribute converted to it.
// Quantized operands are refused by the element checks (the spec's dequantize -> op -> quantize
// form is not applied to these ops).
#include "ir/batch_norm.h"

#include "ir/shape_rules.h"

namespace tessera::ir {

std::optional<BatchNormAttrs> batch_norm_attrs_of(const AttrMap& attrs) {
  const double* eps = attrs.find<double>("epsilon");
  const int64_t* fi = attrs.find<int64_t>("feature_index");
  if (eps == nullptr || fi == nullptr) return std::nullopt;
  return BatchNormAttrs{static_cast<float>(*eps), *fi};
}

AttrMap batch_norm_attrs(BatchNormAttrs a) {
  AttrMap m;
  m.set("epsilon", static_cast<double>(a.epsilon));
  m.set("feature_index", a.feature_index);
  return m;
}

bool is_batch_norm(OpKind k) {
  return k == OpKind::BatchNormInference || k == OpKind::BatchNormTraining || k == OpKind::BatchNormGrad;
}

Tensor batch_norm_inference(const Tensor& operand, const Tensor& scale, const Tensor& offset, const Tensor& mean,
                            const Tensor& variance, BatchNormAttrs a) {
  return operand.builder().emit1(OpKind::BatchNormInference, {operand, scale, offset, mean, variance},
                                 batch_norm_attrs(a));
}

std::vector<Tensor> batch_norm_training(const Tensor& operand, const Tensor& scale, const Tensor& offset,
                                        BatchNormAttrs a) {
  return operand.builder().emit(OpKind::BatchNormTraining, {operand, scale, offset}, batch_norm_attrs(a));
}

std::vector<Tensor> batch_norm_grad(const Tensor& operand, const Tensor& scale, const Tensor& mean,
                                    const Tensor& variance, const Tensor& grad_output, BatchNormAttrs a) {
  return operand.builder().emit(OpKind::BatchNormGrad, {operand, scale, mean, variance, grad_output},
                                batch_norm_attrs(a));
}

namespace {

// The spec's helpers, on `x` with features along `fi`.
struct Norm {
  const Tensor& x;
  int64_t fi;

  std::vector<int64_t> reduced() const {
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < x.rank(); ++d)
      if (d != fi) dims.push_back(d);
    return dims;
  }
  Tensor bcast(const Tensor& feature) const { return broadcast_in_dim(feature, x.shape(), {fi}); }
  Tensor full(double v) const { return broadcast_in_dim(x.builder().scalar(x.element(), v), x.shape(), {}); }
  Tensor sum(const Tensor& y) const { return reduce_sum(y, reduced()); }
  // size(operand) / dim(operand, feature_index), as the spec computes the divisor
  double per_feature() const {
    int64_t n = x.shape()[static_cast<size_t>(fi)];
    return n == 0 ? 0.0 : static_cast<double>(x.type().num_elements() / n);
  }
  Tensor mean(const Tensor& y) const {
    Tensor s = sum(y);
    return s / broadcast_in_dim(x.builder().scalar(x.element(), per_feature()), s.shape(), {});
  }
};

Tensor inference(const Norm& n, const Tensor& scale, const Tensor& offset, const Tensor& mean,
                 const Tensor& variance, float epsilon) {
  Tensor centered = n.x - n.bcast(mean);
  Tensor stddev = sqrt(n.bcast(variance) + n.full(epsilon));
  return n.bcast(scale) * (centered / stddev) + n.bcast(offset);
}

}  // namespace

std::vector<Tensor> decompose_batch_norm(OpKind kind, const std::vector<Tensor>& ops, BatchNormAttrs a) {
  Norm n{ops.at(0), a.feature_index};
  switch (kind) {
    case OpKind::BatchNormInference: return {inference(n, ops.at(1), ops.at(2), ops.at(3), ops.at(4), a.epsilon)};
    case OpKind::BatchNormTraining: {
      Tensor mean = n.mean(n.x);
      Tensor centered = n.x - n.bcast(mean);
      Tensor variance = n.mean(centered * centered);
      return {inference(n, ops.at(1), ops.at(2), mean, variance, a.epsilon), mean, variance};
    }
    case OpKind::BatchNormGrad: {
      const Tensor &scale = ops.at(1), &mean = ops.at(2), &variance = ops.at(3), &dy = ops.at(4);
      Tensor var_eps = n.bcast(variance) + n.full(a.epsilon);
      Tensor centered = n.x - n.bcast(mean);
      Tensor stddev = sqrt(var_eps);
      Tensor normalized = centered / stddev;
      // batchnorm_expander.cc's temporaries, by their names there
      Tensor elements_per_feature = n.full(n.per_feature());
      Tensor i1 = dy * elements_per_feature;
      Tensor i2 = n.bcast(n.sum(dy));
      Tensor i3 = n.bcast(n.sum(dy * centered));
      Tensor i4 = i3 * centered;
      Tensor i5 = i4 / var_eps;
      Tensor i6 = (i1 - i2) - i5;
      Tensor grad_operand = ((n.bcast(scale) / stddev) / elements_per_feature) * i6;
      return {grad_operand, n.sum(dy * normalized), n.sum(dy)};
    }
    default: support::fail("{} is not a batch-norm op", spelling(kind));
  }
}

Function& batch_norm_function(Module& m, const Op& op, const std::string& name) {
  auto a = batch_norm_attrs_of(op.attrs());
  if (!a) support::fail("{}: epsilon (f32) and feature_index (i64) attributes are required", op.name());
  return build_function(m, name, [&](FunctionBuilder& f) {
    std::vector<Tensor> xs;
    for (const Value* v : op.operands()) xs.push_back(f.param(v->type()));
    return decompose_batch_norm(op.kind(), xs, *a);
  });
}

namespace shape_rules {

namespace {

// The checks the three ops share: attributes, C1, floating element types (C2), and each 1-D
// operand's size against the feature dimension. `features` names the 1-D operands and the
// constraint each one's size is (nullptr: the shape of the first one, C4 of batch_norm_grad).
std::vector<Type> batch_norm_types(const ShapeQuery& q, std::span<const std::pair<const char*, const char*>> features,
                                   const char* same_element_c) {
  auto a = batch_norm_attrs_of(q.attrs);
  if (!a) reject(q, "needs an f32 attribute epsilon and an i64 attribute feature_index");
  const Type& x = q.operands[0];
  int64_t fi = a->feature_index;
  if (fi < 0 || fi >= x.rank())
    reject(q, "feature_index {} is outside [0, {}) of operand {} (C1)", fi, x.rank(), to_string(x));
  for (size_t i = 0; i < q.operands.size(); ++i) {
    if (!q.operands[i].is_tensor() || !is_float(q.operands[i].element))
      reject(q, "operand {} is {}, must be a tensor of a floating-point type", i, to_string(q.operands[i]));
    if (q.operands[i].element != x.element)
      reject(q, "operand {} is {}, but the operand is {}: element types must be the same ({})", i,
             to_string(q.operands[i]), to_string(x), same_element_c);
  }
  int64_t n = x.shape[static_cast<size_t>(fi)];
  for (size_t k = 0; k < features.size(); ++k) {
    const Type& t = q.operands[k + 1];
    auto [name, c] = features[k];
    if (t.rank() != 1) reject(q, "{} is {}, must be 1-dimensional", name, to_string(t));
    if (t.shape[0] != n && t.shape[0] != kDynamic && n != kDynamic)
      reject(q, "{} has {} entries, but dimension {} (feature_index) of operand {} is {} ({})", name, t.shape[0], fi,
             to_string(x), n, c);
  }
  Type feature(x.element, {n});
  return {x, feature, feature};
}

}  // namespace

std::vector<Type> infer_BatchNormInference(const ShapeQuery& q) {
  static constexpr std::pair<const char*, const char*> kFeatures[] = {
      {"scale", "C3"}, {"offset", "C4"}, {"mean", "C5"}, {"variance", "C6"}};
  return {batch_norm_types(q, kFeatures, "C2")[0]};
}

std::vector<Type> infer_BatchNormTraining(const ShapeQuery& q) {
  static constexpr std::pair<const char*, const char*> kFeatures[] = {{"scale", "C3"}, {"offset", "C4"}};
  return batch_norm_types(q, kFeatures, "C2");
}

std::vector<Type> infer_BatchNormGrad(const ShapeQuery& q) {
  static constexpr std::pair<const char*, const char*> kFeatures[] = {
      {"scale", "C5"}, {"mean", "C4"}, {"variance", "C4"}};
  std::vector<Type> r = batch_norm_types(q, kFeatures, "C2");
  const Type& x = q.operands[0];
  if (q.operands[4].shape != x.shape)
    reject(q, "grad_output is {}, but the operand is {}: shapes must be the same (C3)", to_string(q.operands[4]),
           to_string(x));
  return r;
}

}  // namespace shape_rules
}  // namespace tessera::ir
