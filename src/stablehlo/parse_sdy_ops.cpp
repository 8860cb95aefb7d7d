// Pretty forms of the sdy ops (after the op name): sharding_constraint and reshard, the explicit
// collectives, the propagation ops and manual_computation, each filling in the attributes the
// generic form would carry; and named_computation, read as the call of a function it makes.
#include <fmt/format.h>

#include <optional>

#include "ir/shape_rules.h"
#include "stablehlo/parse_attrs.h"
#include "stablehlo/parser_impl.h"

namespace tessera::stablehlo {

namespace {

// Shardy's explicit collectives: `[axes per dimension] %x out_sharding=<@m, [...]> {attrs} : t`
// (all_reduce: `{axes}`; all_to_all: `[{axes}: src->tgt, ...]`; collective_permute: no axes). The
// axes are kept as an ir::Sharding on out_sharding's mesh: one dimension per tensor dimension, or
// (all_reduce, all_to_all) one per list.
void out_sharding(Parser& p, OpText& op, const char* axes_attr = nullptr,
                  std::optional<ir::Sharding> axes = std::nullopt) {
  op.operands = {p.use_value()};
  p.lx.expect("out_sharding");
  p.lx.expect("=");
  p.lx.expect("<");
  ir::Sharding out = parse_sharding_body(p.lx);
  if (axes) {
    axes->mesh = out.mesh;
    op.attrs.set(axes_attr, std::move(*axes));
  }
  op.attrs.set("out_sharding", std::move(out));
  finish(p, op);
}

ir::DimSharding axis_list(Parser& p) {
  ir::DimSharding d;
  d.axes = parse_axis_ref_list(p.lx);
  return d;
}

template <const char* Attribute>
void per_dim_collective(Parser& p, OpText& op) {
  ir::Sharding axes;
  p.lx.expect("[");
  if (!p.lx.try_consume("]")) {
    do axes.dims.push_back(axis_list(p));
    while (p.lx.try_consume(","));
    p.lx.expect("]");
  }
  out_sharding(p, op, Attribute, std::move(axes));
}
constexpr char kGatheringAxes[] = "gathering_axes", kSlicingAxes[] = "slicing_axes",
               kReductionAxes[] = "reduction_axes";

}  // namespace

void parse_sdy_all_gather(Parser& p, OpText& op) { per_dim_collective<kGatheringAxes>(p, op); }
void parse_sdy_all_slice(Parser& p, OpText& op) { per_dim_collective<kSlicingAxes>(p, op); }
void parse_sdy_reduce_scatter(Parser& p, OpText& op) { per_dim_collective<kReductionAxes>(p, op); }

void parse_sharded_value(Parser& p, OpText& op) {
  op.operands = {p.use_value()};
  p.lx.expect("<");
  op.attrs.set("sharding", parse_sharding_body(p.lx));
  finish(p, op);
}

// sdy.all_reduce [max|min|sum] {"x"} %v out_sharding=<...>: the kind, when not a sum, is kept
// as the string attribute `reduction_kind`.
void parse_sdy_all_reduce(Parser& p, OpText& op) {
  ir::Sharding axes;
  if (p.lx.peek() != '{') {
    Location at = p.lx.location();
    std::string word = p.lx.identifier();
    auto kind = ir::reduction_kind(word);
    if (!kind) p.lx.error_at(at, fmt::format("sdy.all_reduce: unknown reduction kind '{}' (sum, max or min)", word));
    if (*kind != ir::ReductionKind::kSum) op.attrs.set("reduction_kind", std::string(ir::to_string(*kind)));
  }
  axes.dims.push_back(axis_list(p));
  out_sharding(p, op, kReductionAxes, std::move(axes));
}

void parse_sdy_all_to_all(Parser& p, OpText& op) {
  ir::Sharding params;
  std::vector<std::vector<int64_t>> dims;
  p.lx.expect("[");
  do {
    params.dims.push_back(axis_list(p));
    p.lx.expect(":");
    int64_t src = p.lx.integer();
    p.lx.expect("->");
    dims.push_back({src, p.lx.integer()});
  } while (p.lx.try_consume(","));
  p.lx.expect("]");
  ir::IntMatrix m = ir::IntMatrix::from_rows(dims);
  m.cols = 2;
  op.attrs.set("param_dims", m);
  out_sharding(p, op, "params", std::move(params));
}

void parse_sdy_collective_permute(Parser& p, OpText& op) { out_sharding(p, op); }

// sdy.propagation_barrier %x allowed_direction=FORWARD {attrs} : t
void parse_propagation_barrier(Parser& p, OpText& op) {
  values_and_keyword(p, op, "allowed_direction");
  op.attrs.set("allowed_direction", p.lx.identifier());
  finish(p, op);
}

// sdy.data_flow_edge %x [sharding=<@m, [...]>] {attrs} : t
void parse_data_flow_edge(Parser& p, OpText& op) {
  op.operands = {p.use_value()};
  if (p.lx.try_consume("sharding")) {
    p.lx.expect("=");
    p.lx.expect("<");
    op.attrs.set("sharding", parse_sharding_body(p.lx));
  }
  finish(p, op);
}

// sdy.sharding_group %x group_id=0 {attrs} : t, t the operand's type (there is no result)
void parse_sharding_group(Parser& p, OpText& op) {
  values_and_keyword(p, op, "group_id");
  op.attrs.set("group_id", p.lx.integer());
  finish(p, op);
  op.result_types.clear();
}

// sdy.manual_computation(%a) in_shardings=[...] out_shardings=[...] manual_axes={...}
//     (%arg: local type) { ... sdy.return ... } : (global types) -> (global types)
void parse_manual_computation(Parser& p, OpText& op) {
  p.lx.expect("(");
  op.operands = p.use_values();
  p.lx.expect(")");
  p.lx.expect("in_shardings");
  p.lx.expect("=");
  op.attrs.set("in_shardings", parse_sharding_list(p.lx));
  p.lx.expect("out_shardings");
  p.lx.expect("=");
  op.attrs.set("out_shardings", parse_sharding_list(p.lx));
  p.lx.expect("manual_axes");
  p.lx.expect("=");
  op.attrs.set("manual_axes", parse_axis_names(p.lx));
  auto args = p.parse_arg_decls();
  p.parse_region(op, &args);
  p.parse_trailing_types(op);
}

// sdy.named_computation<"name">(%a) [in_shardings=[...]] [out_shardings=[...]] (%arg: t) {
//     ... sdy.return ... } {attrs} : (types) -> (types)
// Shardy groups a callee's copied body under its name, isolated from above, and propagates
// through it as if it were inlined. It is read as what XLA's export makes of it: a call of a
// private function holding the body, whose arguments and results carry the in and out
// shardings (spmd::inline_calls keeps those as sharding constraints). It prints as that call.
void parse_named_computation(Parser& p, OpText& op) {
  p.lx.expect("<");
  std::string name = p.lx.string_literal();
  p.lx.expect(">");
  p.lx.expect("(");
  op.operands = p.use_values();
  p.lx.expect(")");
  std::optional<ir::ShardingList> ins, outs;
  p.lx.skip_space();
  Location shardings_at = p.lx.location();
  if (p.lx.try_consume("in_shardings")) {
    p.lx.expect("=");
    ins = parse_sharding_list(p.lx);
  }
  if (p.lx.try_consume("out_shardings")) {
    p.lx.expect("=");
    outs = parse_sharding_list(p.lx);
  }
  p.lx.skip_space();
  Location args_at = p.lx.location();
  auto args = p.parse_arg_decls();
  ir::Function& fn = p.parse_outlined_body(name, op.loc, args);
  op.attrs.set("callee", fn.name());
  finish(p, op);
  auto where = [&](Location at, const std::string& what) {
    p.lx.error_at(at, fmt::format("sdy.named_computation<\"{}\">: {}", name, what));
  };
  if (args.size() != op.operands.size())
    where(args_at, fmt::format("its body takes {} arguments for {} operands", args.size(), op.operands.size()));
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].second != op.operands[i]->type())
      where(args_at, fmt::format("argument {} of its body is {}, but operand {} is {}", i, ir::to_string(args[i].second), i,
                                 ir::to_string(op.operands[i]->type())));
  const ir::Op* ret = fn.body().terminator();
  if (ret->operand_types() != op.result_types)
    where(args_at, fmt::format("its body returns ({}) where the op gives ({})",
                               ir::shape_rules::types_string(ret->operand_types()),
                               ir::shape_rules::types_string(op.result_types)));
  fn.result_types = op.result_types;
  fn.result_attrs.assign(op.result_types.size(), {});
  if (ins && ins->size() != op.operands.size())
    where(shardings_at, fmt::format("{} in_shardings for {} operands", ins->size(), op.operands.size()));
  if (outs && outs->size() != op.result_types.size())
    where(shardings_at, fmt::format("{} out_shardings for {} results", outs->size(), op.result_types.size()));
  // Each layout must fit its value and name a mesh of the module (checked here, at the op, rather
  // than by the verifier at the function the op becomes).
  auto fits = [&](const ir::Sharding& s, const ir::Type& t, const std::string& what) {
    const ir::Mesh* mesh = p.module.find_mesh(s.mesh);
    if (mesh == nullptr) where(shardings_at, fmt::format("{} names mesh @{}, which the module does not declare", what, s.mesh));
    try {
      ir::validate(s, *mesh, t, what);
    } catch (const support::UserError& e) {
      where(shardings_at, e.what());
    }
  };
  for (size_t i = 0; ins && i < ins->size(); ++i) {
    fits((*ins)[i], op.operands[i]->type(), fmt::format("in_shardings[{}]", i));
    fn.arg_attrs[i].set("sdy.sharding", (*ins)[i]);
  }
  for (size_t i = 0; outs && i < outs->size(); ++i) {
    fits((*outs)[i], op.result_types[i], fmt::format("out_shardings[{}]", i));
    fn.result_attrs[i].set("sdy.sharding", (*outs)[i]);
  }
}

}  // namespace tessera::stablehlo
