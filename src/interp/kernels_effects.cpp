// Reference kernels of tokens, tuples and the ops that call a function or region: after_all and
// create_token make a token (it holds nothing: the order of effects is the order the interpreter
// runs ops in), tuple and get_tuple_element build and take apart tuple values, composite calls its
// decomposition as func.call calls its callee, map runs its computation once per element, and
// chlo.scan runs its body once per position of the scanned dimension, in order.
#include "interp/kernels.h"
#include "ir/effects.h"
#include "ir/scan.h"

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

// outputs[k][..., p, ...], carries = body(inputs[..., p, ...]..., carries) for p = 0, 1, ... (or from
// the end when is_reverse)
Results eval_Scan(const EvalContext& ctx) {
  std::vector<ir::Type> types;
  for (size_t i = 0; i < ctx.num_operands(); ++i) types.push_back(ctx.operand(i).type());
  auto layout = ir::scan_layout(ctx.op.attrs(), types, ctx.op.num_results());
  if (const auto* why = std::get_if<std::string>(&layout)) ctx.fail("{}", *why);
  const ir::ScanLayout& l = std::get<ir::ScanLayout>(layout);
  // A value of shape [outer..., n, inner...] holds position p's slice element (o, e) at
  // (o·n + p)·inner + e.
  auto extent = [&](const ir::Type& t, int64_t& outer, int64_t& inner) {
    outer = inner = 1;
    for (int64_t d = 0; d < t.rank(); ++d) (d < l.dimension ? outer : inner) *= d == l.dimension ? 1 : t.shape[static_cast<size_t>(d)];
  };
  std::vector<Literal> outputs, carries;
  for (size_t k = 0; k < l.outputs; ++k) outputs.emplace_back(ctx.result_type(k));
  for (size_t c = 0; c < l.inits; ++c) carries.push_back(ctx.operand(l.inputs + c));
  for (int64_t step = 0; step < l.length; ++step) {
    int64_t p = l.reverse ? l.length - 1 - step : step;
    std::vector<Literal> args;
    for (size_t i = 0; i < l.inputs; ++i) {
      const Literal& x = ctx.operand(i);
      Literal slice(ir::erase_dim(x.type(), l.dimension));
      int64_t outer = 0, inner = 0;
      extent(x.type(), outer, inner);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t e = 0; e < inner; ++e) copy_element(x, (o * l.length + p) * inner + e, slice, o * inner + e);
      args.push_back(std::move(slice));
    }
    for (Literal& c : carries) args.push_back(std::move(c));
    std::vector<Literal> r = ctx.run_region(0, std::move(args));
    if (r.size() != l.outputs + l.inits)
      ctx.fail("its body returned {} values, not {} output slices and {} carries", r.size(), l.outputs, l.inits);
    for (size_t k = 0; k < l.outputs; ++k) {
      int64_t outer = 0, inner = 0;
      extent(outputs[k].type(), outer, inner);
      if (r[k].num_elements() != outer * inner)
        ctx.fail("its body returned {} for output {}, whose slices have {} elements", to_string(r[k].type()), k,
                 outer * inner);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t e = 0; e < inner; ++e) copy_element(r[k], o * inner + e, outputs[k], (o * l.length + p) * inner + e);
    }
    carries.assign(std::make_move_iterator(r.begin() + static_cast<std::ptrdiff_t>(l.outputs)),
                   std::make_move_iterator(r.end()));
  }
  Results out = std::move(outputs);
  for (Literal& c : carries) out.push_back(std::move(c));
  return out;
}

}  // namespace tessera::interp
