// VJP rules of reduce and dot_general, and the reading of reduction bodies shared by the rules of
// reduce, scatter and the reducing collectives.
//
// reduce with a sum body broadcasts dy back over the reduced dimensions. reduce with a max or min
// body sends dy to the positions equal to the result and splits it evenly between ties, which is
// JAX's convention (lax.py, _reduce_chooser_jvp_rule: the tangent is sum(g * at_max) / count, whose
// transpose is dy * at_max / count); the init value counts as one more candidate. dot_general's
// rule is the usual pair of contractions of dy with the other operand, transposed back to the
// operand's dimension order.
#include <algorithm>

#include "autodiff/rules.h"

namespace tessera::autodiff {

using ir::ComparisonDirection;
using ir::OpKind;

std::optional<OpKind> body_combiner(const ir::Block& body) {
  if (body.arguments().size() != 2) return std::nullopt;
  const ir::Op* ret = body.terminator();
  if (ret == nullptr || ret->kind() != OpKind::Return || ret->operands().size() != 1) return std::nullopt;
  const ir::Value* lhs = body.argument(0);
  const ir::Value* rhs = body.argument(1);
  const ir::Value* out = ret->operand(0);
  if (body.ops().size() == 1) return out == rhs ? std::optional(OpKind::Return) : std::nullopt;
  if (body.ops().size() != 2) return std::nullopt;
  const ir::Op& op = *body.ops().front();
  if (op.result(0) != out || op.operands().size() != 2) return std::nullopt;
  bool in_order = op.operand(0) == lhs && op.operand(1) == rhs;
  bool swapped = op.operand(0) == rhs && op.operand(1) == lhs;
  if (in_order || (swapped && ir::has_trait(op.kind(), ir::kCommutative))) return op.kind();
  return std::nullopt;
}

std::string describe_body(const ir::Block& body) {
  std::optional<OpKind> k = body_combiner(body);
  if (k == OpKind::Return) return "replace";
  if (k) return std::string(ir::spelling(*k));
  return fmt::format("a body of {} ops", body.ops().size());
}

std::vector<int64_t> kept_dims(int64_t rank, const std::vector<int64_t>& reduced) {
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) kept.push_back(d);
  return kept;
}

namespace {

// The dimensions of t not in a or b, in order.
std::vector<int64_t> free_dims(const Tensor& t, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out;
  for (int64_t d : kept_dims(t.rank(), a))
    if (std::find(b.begin(), b.end(), d) == b.end()) out.push_back(d);
  return out;
}

std::vector<int64_t> range(int64_t from, size_t n) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < n; ++i) out.push_back(from + static_cast<int64_t>(i));
  return out;
}

// The cotangent of one dot_general operand ("this", with batch dims tb, contracting dims tc) from
// dy and the other operand (ob, oc): contract dy's dimensions of the other operand's free ones with
// them, batch over the batch dimensions, and transpose the result, ordered
// [batch, this operand's free dims, other's contracting dims in increasing order], back to this
// operand's order. `other_first`: the other operand's free dims come first in dy.
Tensor dot_cotangent(const Tensor& dy, const Tensor& self, const Tensor& other,
                     const std::vector<int64_t>& tb, const std::vector<int64_t>& tc,
                     const std::vector<int64_t>& ob, const std::vector<int64_t>& oc, bool other_first) {
  size_t nb = tb.size();
  std::vector<int64_t> self_free = free_dims(self, tb, tc), other_free = free_dims(other, ob, oc);
  ir::DotDims d;
  d.lhs_batch = range(0, nb);
  d.rhs_batch = ob;
  d.lhs_contracting = range(static_cast<int64_t>(nb + (other_first ? 0 : self_free.size())), other_free.size());
  d.rhs_contracting = other_free;
  Tensor g = ir::dot_general(dy, other, d);
  // Position in g of each dimension of self.
  std::vector<int64_t> sorted_oc = oc;
  std::sort(sorted_oc.begin(), sorted_oc.end());
  std::vector<int64_t> perm(static_cast<size_t>(self.rank()));
  for (size_t i = 0; i < nb; ++i) perm[static_cast<size_t>(tb[i])] = static_cast<int64_t>(i);
  for (size_t j = 0; j < self_free.size(); ++j)
    perm[static_cast<size_t>(self_free[j])] = static_cast<int64_t>(nb + j);
  for (size_t k = 0; k < tc.size(); ++k) {
    auto at = std::find(sorted_oc.begin(), sorted_oc.end(), oc[k]) - sorted_oc.begin();
    perm[static_cast<size_t>(tc[k])] = static_cast<int64_t>(nb + self_free.size()) + at;
  }
  return ir::transpose(g, perm);
}

void reduce_chooser(VjpContext& c) {
  const Tensor &x = c.x(0), &init = c.x(1), &y = c.y();
  const auto& dims = c.op.attrs().get<std::vector<int64_t>>("dimensions");
  std::vector<int64_t> kept = kept_dims(x.rank(), dims);
  Tensor zero = zeros_like(c.b, x.type()), one = full_like(c.b, x.type(), 1);
  Tensor at = ir::select(ir::compare(x, ir::broadcast_in_dim(y, x.shape(), kept), ComparisonDirection::EQ),
                         one, zero);
  Tensor init_at = ir::select(ir::compare(ir::broadcast_to(init, y.shape()), y, ComparisonDirection::EQ),
                              full_like(c.b, y.type(), 1), zeros_like(c.b, y.type()));
  Tensor share = c.dy() / (ir::reduce_sum(at, dims) + init_at);  // dy over the number of ties
  c.add(0, at * ir::broadcast_in_dim(share, x.shape(), kept));
  c.add(1, ir::sum(share * init_at));
}

}  // namespace

// reduce(x, init; +): dx = broadcast of dy over the reduced dims; dinit = sum(dy) (init counted once)
// reduce(x, init; max or min): dx = dy / ties at the positions equal to the result; likewise init
void vjp_Reduce(VjpContext& c) {
  OpKind combiner = require_combiner(c.op);
  if (combiner == OpKind::Maximum || combiner == OpKind::Minimum) return reduce_chooser(c);
  const auto& dims = c.op.attrs().get<std::vector<int64_t>>("dimensions");
  c.add(0, ir::broadcast_in_dim(c.dy(), c.x().shape(), kept_dims(c.x().rank(), dims)));
  c.add(1, ir::sum(c.dy()));
}

// dot_general(a, b): da = dot_general(dy, b) over b's free dims, db = dot_general(dy, a) over a's
// free dims, batched alike, each transposed back to its operand's order (computed in dy's type)
void vjp_DotGeneral(VjpContext& c) {
  const Tensor &a = c.x(0), &b = c.x(1);
  require_real(c.op);
  const auto& d = c.op.attrs().get<ir::DotDims>("dot_dimension_numbers");
  Tensor dy = c.dy();
  auto in_dy_type = [&](const Tensor& t) { return t.element() == dy.element() ? t : ir::convert(t, dy.element()); };
  auto back_to = [&](const Tensor& g, const Tensor& t) { return g.element() == t.element() ? g : ir::convert(g, t.element()); };
  if (is_differentiable(a.type()))
    c.add(0, back_to(dot_cotangent(dy, a, in_dy_type(b), d.lhs_batch, d.lhs_contracting, d.rhs_batch,
                                   d.rhs_contracting, false), a));
  if (is_differentiable(b.type()))
    c.add(1, back_to(dot_cotangent(dy, b, in_dy_type(a), d.rhs_batch, d.rhs_contracting, d.lhs_batch,
                                   d.lhs_contracting, true), b));
}

}  // namespace tessera::autodiff
