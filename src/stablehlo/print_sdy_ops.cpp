// Pretty forms of Shardy's ops: sharding constraints and reshards, the explicit collectives
// (`sdy.all_gather [{"x"}, {}] %a out_sharding=<@m, [{}, {}]> : t`) and manual_computation, each
// falling back to the generic form when an attribute its form spells is missing or cannot be
// spelled.
#include <algorithm>

#include "stablehlo/print_internal.h"
#include "stablehlo/printer.h"

namespace tessera::stablehlo::print_impl {

using ir::Op;

void sharding_op(Printer& p, const Op& op) {
  const auto* sharding = op.attrs().find<ir::Sharding>("sharding");
  if (!sharding || op.operands().size() != 1) return generic(p, op);
  p << op.name() << " ";
  p.value(op.operand(0));
  p << " " << sharding_body(*sharding) << except(op, {"sharding"}) << " : ";
  p << ir::to_string(op.result()->type());
}

namespace {

// Shardy's explicit collectives, as Shardy prints them: `sdy.all_gather [{"x"}, {}] %a
// out_sharding=<@m, [{}, {}]> {attrs} : t`. Their axes are held as an ir::Sharding on
// out_sharding's mesh; axes the pretty form cannot spell (another mesh, open dimensions,
// priorities, replicated or unreduced axes) send the op to the generic form.
bool plain_axes(const ir::Sharding& axes, const ir::Sharding& out) {
  if (axes.mesh != out.mesh || !axes.replicated.empty() || !axes.unreduced.empty()) return false;
  return std::all_of(axes.dims.begin(), axes.dims.end(),
                     [](const ir::DimSharding& d) { return !d.open && !d.priority; });
}

// The axes of a collective, or null when its pretty form cannot be printed.
const ir::Sharding* collective_axes(const Op& op, const char* name) {
  const auto* out = op.attrs().find<ir::Sharding>("out_sharding");
  const auto* axes = op.attrs().find<ir::Sharding>(name);
  if (!out || !axes || op.operands().size() != 1 || !plain_axes(*axes, *out)) return nullptr;
  return axes;
}

// ` %x out_sharding=<...>{attrs} : t`
void operand_and_out_sharding(Printer& p, const Op& op, std::initializer_list<std::string_view> elided) {
  p << " ";
  p.value(op.operand(0));
  p << " out_sharding=" << sharding_body(op.attrs().get<ir::Sharding>("out_sharding"));
  std::vector<std::string_view> all(elided);
  all.push_back("out_sharding");
  p << attr_dict(op.attrs(), [&](const std::string& name) {
    return std::find(all.begin(), all.end(), name) == all.end();
  }) << " : ";
  p << ir::to_string(op.result()->type());
}

template <const char* Attribute>
void per_dim_collective(Printer& p, const Op& op) {
  const ir::Sharding* axes = collective_axes(op, Attribute);
  if (!axes) return generic(p, op);
  std::string lists;
  for (const ir::DimSharding& d : axes->dims)
    lists += (lists.empty() ? "" : ", ") + axis_ref_list(d.axes);
  p << op.name() << " [" << lists << "]";
  operand_and_out_sharding(p, op, {Attribute});
}
constexpr char kGatheringAxes[] = "gathering_axes", kSlicingAxes[] = "slicing_axes",
               kReductionAxes[] = "reduction_axes", kParams[] = "params";

}  // namespace

void sdy_all_gather(Printer& p, const Op& op) { per_dim_collective<kGatheringAxes>(p, op); }
void sdy_all_slice(Printer& p, const Op& op) { per_dim_collective<kSlicingAxes>(p, op); }
void sdy_reduce_scatter(Printer& p, const Op& op) { per_dim_collective<kReductionAxes>(p, op); }

void sdy_all_reduce(Printer& p, const Op& op) {
  const ir::Sharding* axes = collective_axes(op, kReductionAxes);
  if (!axes || axes->dims.size() != 1) return generic(p, op);
  p << op.name() << " ";
  if (const auto* kind = op.attrs().find<std::string>("reduction_kind")) p << *kind << " ";
  p << axis_ref_list(axes->dims[0].axes);
  operand_and_out_sharding(p, op, {kReductionAxes, "reduction_kind"});
}

void sdy_all_to_all(Printer& p, const Op& op) {
  const ir::Sharding* params = collective_axes(op, kParams);
  const auto* dims = op.attrs().find<ir::IntMatrix>("param_dims");
  if (!params || !dims || params->dims.empty() || dims->cols != 2 ||
      dims->rows != static_cast<int64_t>(params->dims.size()))
    return generic(p, op);
  std::string list;
  for (size_t i = 0; i < params->dims.size(); ++i)
    list += fmt::format("{}{}: {}->{}", i == 0 ? "" : ", ", axis_ref_list(params->dims[i].axes),
                        dims->values[2 * i], dims->values[2 * i + 1]);
  p << op.name() << " [" << list << "]";
  operand_and_out_sharding(p, op, {kParams, "param_dims"});
}

void sdy_collective_permute(Printer& p, const Op& op) {
  if (!op.attrs().find<ir::Sharding>("out_sharding") || op.operands().size() != 1)
    return generic(p, op);
  p << op.name();
  operand_and_out_sharding(p, op, {});
}

void manual_computation(Printer& p, const Op& op) {
  const auto* in = op.attrs().find<ir::ShardingList>("in_shardings");
  const auto* out = op.attrs().find<ir::ShardingList>("out_shardings");
  const auto* axes = op.attrs().find<ir::AxisNames>("manual_axes");
  if (!in || !out || !axes || op.regions().size() != 1) return generic(p, op);
  const ir::Block& body = op.region(0);
  p << op.name() << "(";
  p.values(op.operands());
  p << ") in_shardings=" << sharding_list(*in) << " out_shardings=" << sharding_list(*out)
    << " manual_axes=" << axis_names(*axes) << " (";
  for (size_t i = 0; i < body.arguments().size(); ++i) {
    p << (i ? ", " : "");
    p.block_argument(body.argument(i));
  }
  p << ") ";
  p.region(body, /*entry_arguments=*/false);
  p << except(op, {"in_shardings", "out_shardings", "manual_axes"}) << " : ";
  p.functional_type(op);
}

// `sdy.propagation_barrier %x allowed_direction=BACKWARD : t`
void propagation_barrier(Printer& p, const Op& op) {
  const auto* dir = op.attrs().find<std::string>("allowed_direction");
  if (!dir || op.operands().size() != 1) return generic(p, op);
  p << op.name() << " ";
  p.value(op.operand(0));
  p << " allowed_direction=" << *dir << except(op, {"allowed_direction"}) << " : ";
  p << ir::to_string(op.result()->type());
}

// `sdy.data_flow_edge %x sharding=<@m, [...]> : t`, the sharding optional
void data_flow_edge(Printer& p, const Op& op) {
  if (op.operands().size() != 1) return generic(p, op);
  p << op.name() << " ";
  p.value(op.operand(0));
  if (const auto* s = op.attrs().find<ir::Sharding>("sharding")) p << " sharding=" << sharding_body(*s);
  p << except(op, {"sharding"}) << " : " << ir::to_string(op.result()->type());
}

// `sdy.sharding_group %x group_id=0 : t`, t the operand's type (the op has no result)
void sharding_group(Printer& p, const Op& op) {
  const auto* id = op.attrs().find<int64_t>("group_id");
  if (!id || op.operands().size() != 1) return generic(p, op);
  p << op.name() << " ";
  p.value(op.operand(0));
  p << " group_id=" << std::to_string(*id) << except(op, {"group_id"}) << " : " << ir::to_string(op.operand(0)->type());
}

}  // namespace tessera::stablehlo::print_impl
