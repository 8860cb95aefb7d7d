#include "autodiff/verify_grad.h"

#include <map>

#include "support/error.h"

namespace tessera::autodiff {
namespace {

using ir::OpKind;

void count(const ir::Block& b, std::map<OpKind, int>& out) {
  for (const auto& op : b.ops()) {
    if (ir::has_trait(op->kind(), ir::kCollective)) ++out[op->kind()];
    for (const auto& r : op->regions()) count(*r, out);
  }
}

OpKind adjoint(OpKind k) {
  switch (k) {
    case OpKind::AllGather: return OpKind::ReduceScatter;
    case OpKind::ReduceScatter: return OpKind::AllGather;
    default: return k;  // all_reduce, all_to_all, collective_permute, ...
  }
}

}  // namespace

void verify_gradient_shardings(const ir::Function& f, const ir::Function& grad,
                               const std::vector<size_t>& wrt) {
  const ir::Op* ret = grad.body().terminator();
  if (ret == nullptr || ret->operands().size() < wrt.size())
    support::fail("@{} does not return the {} gradients of @{}", grad.name(), wrt.size(), f.name());
  size_t first = ret->operands().size() - wrt.size();
  for (size_t k = 0; k < wrt.size(); ++k) {
    auto sharding = f.arg_sharding(wrt[k]);
    if (!sharding) continue;
    const ir::Op* def = ret->operand(first + k)->defining_op();
    const ir::Sharding* got =
        def && def->kind() == OpKind::ShardingConstraint ? def->attrs().find<ir::Sharding>("sharding")
                                                         : nullptr;
    if (got == nullptr || !(*got == *sharding))
      support::fail("@{}: the gradient of parameter {} of @{} is not constrained to the "
                    "parameter's sharding",
                    grad.name(), wrt[k], f.name());
  }
  std::map<OpKind, int> in_f, in_grad, want;
  count(f.body(), in_f);
  count(grad.body(), in_grad);
  for (auto [kind, n] : in_f) {
    want[kind] += n;           // the forward copy
    want[adjoint(kind)] += n;  // and its adjoint
  }
  for (auto [kind, n] : want)
    if (in_grad[kind] < n)
      support::fail("@{} has {} {}, expected at least {}: the forward collectives of @{} and the "
                    "adjoints of its {}",
                    grad.name(), in_grad[kind], ir::spelling(kind), n, f.name(),
                    ir::spelling(adjoint(kind)));
}

}  // namespace tessera::autodiff
