// Reference kernels of stablehlo.batch_norm_inference, batch_norm_training and batch_norm_grad: each
// runs the op's decomposition (ir/batch_norm.h, the spec's reference definition) on its operands,
// so the interpreter, autodiff and the partitioner share one definition of the op.
#include "interp/kernels.h"
#include "ir/batch_norm.h"

namespace tessera::interp {

namespace {

Results run_decomposition(const EvalContext& ctx) {
  ir::Module m("batch_norm");
  const ir::Function& fn = ir::batch_norm_function(m, ctx.op, "decomposition");
  std::vector<ir::Literal> args;
  for (size_t i = 0; i < ctx.num_operands(); ++i) args.push_back(ctx.operand(i));
  Options nested = *ctx.state.options;
  nested.process = ctx.state.process;
  nested.collectives = ctx.state.collectives;
  nested.module = &m;
  return evaluate(fn, std::move(args), nested);
}

}  // namespace

Results eval_BatchNormInference(const EvalContext& ctx) { return run_decomposition(ctx); }
Results eval_BatchNormTraining(const EvalContext& ctx) { return run_decomposition(ctx); }
Results eval_BatchNormGrad(const EvalContext& ctx) { return run_decomposition(ctx); }

}  // namespace tessera::interp
