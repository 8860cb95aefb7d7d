// Reference kernels of the streaming ops: stablehlo.infeed reads its payload values, one at a time
// and in result order, from the caller's Options::infeed (given each value's type), and
// stablehlo.outfeed hands its values to Options::outfeed. The spec leaves the other end of both
// streams to the implementation: tessera check feeds them from interpreter.run_parallel's infeed
// functions and prints what is written. Without a hook the op is refused by name; the order of
// reads and writes is the order the interpreter runs ops in, which follows the tokens.
#include "interp/kernels.h"

namespace tessera::interp {

using ir::Literal;

Results eval_Infeed(const EvalContext& ctx) {
  static const Options kNoHooks;
  const auto& infeed = (ctx.state.options ? *ctx.state.options : kNoHooks).infeed;
  if (!infeed)
    ctx.fail("no infeed to read from (interp::Options::infeed; tessera check fills one from "
             "interpreter.run_parallel's infeed functions)");
  Results out;
  for (size_t i = 0; i + 1 < ctx.op.num_results(); ++i) {
    const ir::Type& want = ctx.result_type(i);
    Literal v = infeed(want);
    if (v.type() != want)
      ctx.fail("the infeed gave a {} value for result {}, which is {}", ir::to_string(v.type()), i,
               ir::to_string(want));
    out.push_back(std::move(v));
  }
  out.push_back(Literal::token());
  return out;
}

Results eval_Outfeed(const EvalContext& ctx) {
  static const Options kNoHooks;
  const auto& outfeed = (ctx.state.options ? *ctx.state.options : kNoHooks).outfeed;
  if (!outfeed)
    ctx.fail("no outfeed to write to (interp::Options::outfeed; tessera check prints what is written)");
  std::vector<Literal> values;
  for (size_t i = 0; i + 1 < ctx.num_operands(); ++i) values.push_back(ctx.operand(i));
  outfeed(std::move(values));
  return one(Literal::token());
}

}  // namespace tessera::interp
