// Reference kernels of get_dimension_size and the dynamic ops. In the interpreter every operand
// value is known, so a dynamic op runs as its static form (ir/dynamic_shapes.h): the static op's
// kernel on a temporary op whose attributes are the shape operands' values. The declared result
// must be static here: programs with '?' dimensions are refined first (transforms/refine_shapes.h).
#include "interp/kernels.h"
#include "ir/dynamic_shapes.h"
#include "ir/module.h"

namespace tessera::interp {
namespace {

Results eval_static_form(const EvalContext& ctx) {
  const ir::Op& op = ctx.op;
  std::vector<ir::Type> types;
  for (const ir::Literal* x : ctx.operands()) types.push_back(x->type());
  std::optional<ir::StaticForm> f =
      ir::static_form(op.kind(), op.attrs(), types, ctx.result_type(), ctx.operands());
  TESSERA_CHECK(f.has_value(), "{}: every operand is known in the interpreter", op.name());
  // The static op over stand-in values of the operands' types: kernels read operands from the context.
  std::vector<std::unique_ptr<ir::Value>> stand_ins;
  std::vector<ir::Value*> operands;
  std::vector<const ir::Literal*> values;
  for (size_t i : f->operands) {
    stand_ins.push_back(std::make_unique<ir::Value>(types[i], nullptr, nullptr, static_cast<int>(i)));
    operands.push_back(stand_ins.back().get());
    values.push_back(&ctx.operand(i));
  }
  ir::Op static_op(f->kind, operands, {f->result}, f->attrs);
  Scope none;  // the static ops have no regions
  Results r = kernel(f->kind)(EvalContext(static_op, values, none, ctx.state));
  if (r.size() != 1 || !(r[0].type() == ctx.result_type()))
    ctx.fail("gives {} where {} is declared: refine shapes first (run with concrete input shapes)",
             r.empty() ? "nothing" : ir::to_string(r[0].type()), ir::to_string(ctx.result_type()));
  return r;
}

}  // namespace

Results eval_GetDimensionSize(const EvalContext& ctx) {
  int64_t d = ctx.op.attrs().get<int64_t>("dimension");
  return one(ir::Literal::scalar(ir::ElementType::i32, static_cast<double>(ctx.operand(0).type().dim(d))));
}

Results eval_DynamicBroadcastInDim(const EvalContext& ctx) { return eval_static_form(ctx); }
Results eval_DynamicConv(const EvalContext& ctx) { return eval_static_form(ctx); }
Results eval_DynamicGather(const EvalContext& ctx) { return eval_static_form(ctx); }
Results eval_DynamicIota(const EvalContext& ctx) { return eval_static_form(ctx); }
Results eval_DynamicPad(const EvalContext& ctx) { return eval_static_form(ctx); }
Results eval_DynamicReshape(const EvalContext& ctx) { return eval_static_form(ctx); }
Results eval_RealDynamicSlice(const EvalContext& ctx) { return eval_static_form(ctx); }

}  // namespace tessera::interp
