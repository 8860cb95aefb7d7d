// Reference kernels of tokens, tuples and the ops that call a function or region: after_all and
// create_token make a token (it holds nothing: the order of effects is the order the interpreter
// runs ops in), tuple and get_tuple_element build and take apart tuple values, composite calls its
// decomposition as func.call calls its callee, and map runs its computation once per element.
#include "interp/kernels.h"
#include "ir/effects.h"

namespace tessera::interp {

using ir::Literal;

Results eval_AfterAll(const EvalContext&) { return one(Literal::token()); }
Results eval_CreateToken(const EvalContext&) { return one(Literal::token()); }

Results eval_Tuple(const EvalContext& ctx) {
  std::vector<Literal> members;
  for (size_t i = 0; i < ctx.num_operands(); ++i) members.push_back(ctx.operand(i));
  return one(Literal::tuple(std::move(members)));
}

// async_start runs its body at once (the spec lets a backend run it synchronously) and keeps the
// results in the future; async_done hands them out.
Results eval_AsyncStart(const EvalContext& ctx) {
  std::vector<Literal> args;
  if (!ctx.op.region(0).arguments().empty())
    for (size_t i = 0; i < ctx.num_operands(); ++i) args.push_back(ctx.operand(i));
  return one(Literal::future(ctx.run_region(0, std::move(args))));
}

Results eval_AsyncDone(const EvalContext& ctx) { return ctx.operand(0).members(); }

Results eval_GetTupleElement(const EvalContext& ctx) {
  const Literal& t = ctx.operand(0);
  int64_t index = ctx.op.attrs().get<int64_t>("index");
  if (index < 0 || static_cast<size_t>(index) >= t.members().size())
    ctx.fail("index {} is outside the {} members of the tuple", index, t.members().size());
  return one(t.members()[static_cast<size_t>(index)]);
}

// The decomposition runs as a call would: same process, collectives and hooks.
Results eval_Composite(const EvalContext& ctx) {
  std::optional<std::string> name = ir::decomposition_of(ctx.op.attrs());
  if (!name) ctx.fail("has no decomposition function");
  return call_function(ctx, *name, "has decomposition");
}

// result[i] = computation(inputs[0][i], ..., inputs[N-1][i])
Results eval_Map(const EvalContext& ctx) {
  Literal out(ctx.result_type());
  std::vector<Literal> scalars;
  for (size_t k = 0; k < ctx.num_operands(); ++k) scalars.emplace_back(ir::Type(ctx.operand(k).element(), {}));
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    for (size_t k = 0; k < ctx.num_operands(); ++k) copy_element(ctx.operand(k), i, scalars[k], 0);
    std::vector<Literal> r = ctx.run_region(0, scalars);
    if (r.size() != 1 || r[0].type() != ir::Type(out.element(), {}))
      ctx.fail("its computation returned {} values, not one {} scalar (C4)", r.size(), ir::spelling(out.element()));
    copy_element(r[0], 0, out, i);
  }
  return one(std::move(out));
}

}  // namespace tessera::interp
