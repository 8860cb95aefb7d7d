// The refusals shared by the VJP rules (reverse.h) and the JVP rules (forward.h): what neither mode
// differentiates, and the words each uses to say so. Keeping them here means a user asking for a
// gradient and one asking for a tangent of the same program read the same message.
#include "autodiff/rules.h"

namespace tessera::autodiff {

using ir::OpKind;

void refuse(const ir::Op& op, std::string_view why) {
  support::fail("cannot differentiate {}: {}", op.name(), why);
}

void refuse_outright(const ir::Op& op) {
  switch (op.kind()) {
    // A loop needs its iterations saved (or a known trip count) to run backwards.
    case OpKind::While:
      refuse(op, "loops are not differentiated yet (the reverse pass would need every iteration's "
                 "values); unroll the loop, or keep its results out of the loss");
    // The callee (or custom target) has no rule here.
    case OpKind::Call:
      refuse(op, fmt::format("calls are not differentiated yet; inline @{} into the caller first",
                             op.attrs().get_or<std::string>("callee", "?")));
    case OpKind::CustomCall:
      refuse(op, fmt::format("the derivative of custom call target '{}' is unknown",
                             op.attrs().get_or<std::string>("call_target_name", "?")));
    case OpKind::RunParallel:
      refuse(op, "a parallel run of programs is a test harness op, not a differentiable computation");
    default:
      refuse(op, "it has no rule");
  }
}

OpKind require_combiner(const ir::Op& op) {
  const ir::Block& body = op.region(0);
  std::optional<OpKind> k;
  switch (op.kind()) {
    case OpKind::Reduce:
      if (op.operands().size() != 2)
        refuse(op, fmt::format("a reduce of {} inputs at once (e.g. an argmax) is not differentiated yet",
                               op.operands().size() / 2));
      k = body_combiner(body);
      if (k != OpKind::Add && k != OpKind::Maximum && k != OpKind::Minimum)
        refuse(op, fmt::format("a reduce whose body is {} has no gradient rule; only add, maximum and "
                               "minimum do", describe_body(body)));
      return *k;
    case OpKind::Scatter:
      if (op.operands().size() != 3)
        refuse(op, fmt::format("a scatter of {} inputs is not differentiated yet", (op.operands().size() - 1) / 2));
      k = body_combiner(body);
      if (k != OpKind::Add && k != OpKind::Return)
        refuse(op, fmt::format("a scatter whose update computation is {} has no gradient rule; only add "
                               "and replace do", describe_body(body)));
      return *k;
    default:  // all_reduce, reduce_scatter, collective_reduce
      if (body_combiner(body) != OpKind::Add)
        refuse(op, fmt::format("a reduction body of {} has no gradient rule; only add (a sum) does",
                               describe_body(body)));
      return OpKind::Add;
  }
}

void require_real(const ir::Op& op) {
  bool complex = false;
  for (const ir::Value* v : op.operands()) complex = complex || ir::is_complex(v->type().element);
  for (const ir::Value* v : op.results()) complex = complex || ir::is_complex(v->type().element);
  if (complex) refuse(op, "complex values are not differentiated (their cotangents need conjugation)");
}

}  // namespace tessera::autodiff
