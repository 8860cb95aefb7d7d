// Factor rules of the window ops and sort (see factor_rule.h).
//
// convolution is a contraction: the input batch passes to the output batch, the kernel's output
// features to the output features (both like a dot's free dimensions) and the input features are
// a reduction shared with the kernel's input features. Feature groups tie the input and output
// features together, and batch groups the batch to the output features, so those factors are left
// out when groups are used (the dimensions stay whole). Spatial dimensions are whole in the rule: a
// window reads its neighbours; the partitioner keeps a split one split by a halo exchange where
// cheaper (halo_conv.cpp).
// reduce_window and select_and_scatter pass through every dimension whose window is trivial
// (size, stride and dilations 1, no padding); window dimensions are whole in the rule, and the
// partitioner keeps a reduce_window's or select_and_scatter's split by a halo exchange where
// cheaper (split_reads.h). sort passes through every dimension but
// the sorted one, and chlo.top_k every dimension but the last. cholesky and triangular_solve pass
// their batch dimensions through and keep the matrices whole, except triangular_solve's b and
// result columns (left side; rows on the right side), each of which is solved alone. The LAPACK
// and BLAS custom calls of JAX's CPU lowering (`lapack_*`, `blas_*`) do likewise: each factors or
// solves the matrices in the last two dimensions of its operands one by one, so their batch
// dimensions pass through to every operand and result that starts with them (tau, eigenvalues,
// singular values, info) and the matrices stay whole; other custom calls are opaque (no factors).
#include <algorithm>
#include <string>

#include "ir/effects.h"
#include "ir/window.h"
#include "spmd/factor_rule.h"

namespace tessera::spmd::factor_rules {

namespace {

using ir::Op;

FactorRule blank_rule(const Op& op) {
  FactorRule r;
  for (ir::Value* v : op.operands()) r.operands.emplace_back(static_cast<size_t>(v->type().rank()));
  for (ir::Value* v : op.results()) r.results.emplace_back(static_cast<size_t>(v->type().rank()));
  return r;
}

// Every trivial window dimension d of size > 1 one factor, shared by `operands` and every result.
FactorRule trivial_window_dims(const Op& op, const ir::Window& w, std::initializer_list<size_t> operands) {
  FactorRule r = blank_rule(op);
  const auto& shape = op.operand(0)->type().shape;
  for (size_t d = 0; d < shape.size() && d < w.rank(); ++d) {
    if (!w.trivial(d) || shape[d] == 1) continue;
    int f = r.add(shape[d]);
    for (size_t i : operands) r.operands[i][d] = {f};
    for (auto& t : r.results) t[d] = {f};
  }
  return r;
}

}  // namespace

FactorRule rule_Convolution(const Op& op) {
  FactorRule r = blank_rule(op);
  const auto& d = op.attrs().get<ir::ConvDims>("dimension_numbers");
  int64_t groups = op.attrs().get_or<int64_t>("feature_group_count", 1);
  int64_t batch_groups = op.attrs().get_or<int64_t>("batch_group_count", 1);
  const auto& lhs = op.operand(0)->type().shape;
  const auto& rhs = op.operand(1)->type().shape;
  auto at = [](const std::vector<int64_t>& s, int64_t dim) { return s[static_cast<size_t>(dim)]; };
  if (batch_groups == 1 && at(lhs, d.input_batch) != 1) {
    int f = r.add(at(lhs, d.input_batch));
    r.operands[0][static_cast<size_t>(d.input_batch)] = {f};
    r.results[0][static_cast<size_t>(d.output_batch)] = {f};
  }
  if (groups == 1 && batch_groups == 1) {
    if (at(rhs, d.kernel_output_feature) != 1) {
      int f = r.add(at(rhs, d.kernel_output_feature));
      r.operands[1][static_cast<size_t>(d.kernel_output_feature)] = {f};
      r.results[0][static_cast<size_t>(d.output_feature)] = {f};
    }
    if (at(lhs, d.input_feature) != 1) {
      int f = r.add(at(lhs, d.input_feature), FactorKind::kReduction);
      r.operands[0][static_cast<size_t>(d.input_feature)] = {f};
      r.operands[1][static_cast<size_t>(d.kernel_input_feature)] = {f};
    }
  }
  return r;
}

FactorRule rule_ReduceWindow(const Op& op) {
  size_t n = op.num_results();
  ir::Window w = ir::read_window(op.attrs(), ir::kReduceWindow, static_cast<size_t>(op.operand(0)->type().rank()));
  FactorRule r = blank_rule(op);
  const auto& shape = op.operand(0)->type().shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!w.trivial(d) || shape[d] == 1) continue;
    int f = r.add(shape[d]);
    for (size_t k = 0; k < n; ++k) {
      r.operands[k][d] = {f};
      r.results[k][d] = {f};
    }
  }
  return r;
}

FactorRule rule_SelectAndScatter(const Op& op) {
  ir::Window w = ir::read_window(op.attrs(), ir::kSelectAndScatterWindow,
                                 static_cast<size_t>(op.operand(0)->type().rank()));
  return trivial_window_dims(op, w, {0, 1});
}

FactorRule rule_Sort(const Op& op) {
  FactorRule r = blank_rule(op);
  const auto& shape = op.operand(0)->type().shape;
  int64_t dim = op.attrs().get_or<int64_t>("dimension", 0);
  if (dim < 0) dim += static_cast<int64_t>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int64_t>(d) == dim || shape[d] == 1) continue;
    int f = r.add(shape[d]);
    for (auto& t : r.operands) t[d] = {f};
    for (auto& t : r.results) t[d] = {f};
  }
  return r;
}

FactorRule rule_TopK(const Op& op) {
  FactorRule r = blank_rule(op);
  const auto& shape = op.operand(0)->type().shape;
  for (size_t d = 0; d + 1 < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    int f = r.add(shape[d]);
    r.operands[0][d] = {f};
    for (auto& t : r.results) t[d] = {f};
  }
  return r;
}

FactorRule rule_Cholesky(const Op& op) {
  FactorRule r = blank_rule(op);
  const auto& shape = op.operand(0)->type().shape;
  for (size_t d = 0; d + 2 < shape.size(); ++d)
    if (shape[d] != 1) r.operands[0][d] = r.results[0][d] = {r.add(shape[d])};
  return r;
}

FactorRule rule_TriangularSolve(const Op& op) {
  FactorRule r = blank_rule(op);
  const auto& shape = op.operand(1)->type().shape;
  size_t rank = shape.size();
  for (size_t d = 0; d + 2 < rank; ++d)
    if (shape[d] != 1) r.operands[0][d] = r.operands[1][d] = r.results[0][d] = {r.add(shape[d])};
  size_t free = op.attrs().get_or<bool>("left_side", true) ? rank - 1 : rank - 2;
  if (shape[free] != 1) r.operands[1][free] = r.results[0][free] = {r.add(shape[free])};
  return r;
}

FactorRule rule_CustomCall(const Op& op) {
  FactorRule r = blank_rule(op);
  std::string target = op.attrs().get_or<std::string>("call_target_name", "");
  // @Sharding (GSPMD's annotation) is the identity: each dimension one factor, like an element-wise op.
  if (ir::is_identity_call(op)) {
    const auto& shape = op.result(0)->type().shape;
    if (op.operand(0)->type().shape != shape) return r;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != 1) r.operands[0][d] = r.results[0][d] = {r.add(shape[d])};
    return r;
  }
  if (target.rfind("lapack_", 0) != 0 && target.rfind("blas_", 0) != 0) return r;
  // The batch dimensions: those of the first matrix operand (api_version 2's scalar descriptors
  // come first). A tuple result (api_version 2) has no dimensions to share: left opaque.
  std::vector<int64_t> batch;
  for (ir::Value* v : op.operands())
    if (v->type().is_tensor() && v->type().rank() >= 2) {
      batch.assign(v->type().shape.begin(), v->type().shape.end() - 2);
      break;
    }
  for (ir::Value* v : op.results())
    if (!v->type().is_tensor()) return r;
  // A tensor shares the batch when it starts with it and has at most a matrix after it (a
  // workspace's one dimension, rarely equal to the batch, is not read by the kernels).
  auto shares = [&](const ir::Type& t) {
    return t.is_tensor() && t.rank() >= static_cast<int64_t>(batch.size()) &&
           t.rank() <= static_cast<int64_t>(batch.size()) + 2 &&
           std::equal(batch.begin(), batch.end(), t.shape.begin());
  };
  for (size_t d = 0; d < batch.size(); ++d) {
    if (batch[d] == 1) continue;
    int f = r.add(batch[d]);
    for (size_t i = 0; i < op.operands().size(); ++i)
      if (shares(op.operand(i)->type())) r.operands[i][d] = {f};
    for (size_t i = 0; i < op.num_results(); ++i)
      if (shares(op.result(i)->type())) r.results[i][d] = {f};
  }
  return r;
}

}  // namespace tessera::spmd::factor_rules
