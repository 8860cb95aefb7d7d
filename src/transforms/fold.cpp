// Constant folding: a replaceable op (pure, not pinned) whose operands are all constants and
// whose results have at most kMaxFoldedElements elements together is replaced by constants of its
// results.
//
// The results are computed by the reference interpreter, on a temporary function that holds copies
// of the operand constants and of the op (its regions included) and returns the op's results. So
// the folded constants are bit for bit what evaluating the program would have produced, and the
// op's meaning is written once, in its kernel. Sound because a pure op's results depend on its
// operands and attributes only, and these are all known here. Ops without operands (constant,
// iota) are left as they are: folding them would only make them longer to read. An op whose
// regions use values from outside it is left alone, and so is one the interpreter refuses.
#include "interp/interpreter.h"
#include "ir/clone.h"
#include "transforms/constants.h"
#include "transforms/rewrite.h"
#include "transforms/simplify.h"

namespace tessera::transforms {
namespace {

using ir::Op;

bool self_contained(const Op& op, const Op& root) {
  for (const auto& region : op.regions())
    for (const auto& inner : region->ops()) {
      for (const ir::Value* v : inner->operands())
        if (!defined_inside(v, root)) return false;
      if (!self_contained(*inner, root)) return false;
    }
  return true;
}

bool foldable(const Op& op) {
  if (!replaceable(op) || op.operands().empty() || op.num_results() == 0) return false;
  for (const ir::Value* v : op.operands())
    if (v->defining_op() == nullptr || v->defining_op()->kind() != ir::OpKind::Constant) return false;
  int64_t elements = 0;
  for (const ir::Type& t : op.result_types()) elements += t.num_elements();
  return elements <= kMaxFoldedElements && self_contained(op, op);
}

// The op's results on its constant operands, by the interpreter; empty when it refuses.
std::vector<ir::Literal> evaluate_on_constants(const Op& op) {
  ir::Function scratch("fold");
  ir::ValueMap map;
  for (const ir::Value* v : op.operands())
    if (!map.count(v)) ir::clone_op(scratch.body(), *v->defining_op(), map);
  const Op* copy = ir::clone_op(scratch.body(), op, map);
  scratch.set_results(copy->results());
  try {
    return interp::evaluate(scratch, {});
  } catch (const support::UserError&) {
    return {};
  }
}

}  // namespace

bool fold_constants(ir::Function& f) {
  return walk_renaming(f, [&](Op& op, Renamer& renamer) {
    if (!foldable(op)) return;
    std::vector<ir::Literal> values = evaluate_on_constants(op);
    if (values.size() != op.num_results()) return;
    for (size_t k = 0; k < values.size(); ++k) {
      if (values[k].type() != op.result(k)->type()) return;
    }
    for (size_t k = 0; k < values.size(); ++k)
      renamer.replace(op.result(k), insert_constant(op, std::move(values[k])));
  });
}

}  // namespace tessera::transforms
