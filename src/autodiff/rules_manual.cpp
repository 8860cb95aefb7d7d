// VJP rule of sdy.manual_computation: the gradient is another manual computation, over the same
// manual axes, whose body is the reverse of the forward body on each device's local pieces.
//
// The body is differentiated as a function of its own: @local(xs, ws) = sum_k sum(body(xs)_k * w_k),
// reversed with respect to xs (each device's loss is its pieces of the results weighted by its
// pieces of the cotangents), then copied into the new manual computation's region, which takes
// (xs, dys) split like (in_shardings, out_shardings) and returns dxs split like in_shardings. The
// helper functions are removed from the module afterwards.
//
// This is exact when every float input and every result with a cotangent is split over all the
// manual axes, so that each device holds a distinct piece and the global loss is the sum of the
// devices' local losses (DESIGN.md §2, under which the collectives of the body have their adjoint
// rules). A value replicated along a manual axis would need more: its cotangent summed over that
// axis (JAX's shard_map transpose inserts a psum for inputs and divides results' cotangents), so
// such programs are refused by name.
#include <algorithm>

#include "autodiff/reverse.h"
#include "autodiff/rules.h"
#include "ir/clone.h"

namespace tessera::autodiff {

namespace {

// Into how many distinct pieces the manual axes split a value laid out by s.
int64_t manual_pieces(const ir::Sharding& s, const std::vector<std::string>& axes, const ir::Mesh& mesh) {
  int64_t n = 1;
  for (const ir::DimSharding& d : s.dims)
    for (const ir::AxisRef& r : d.axes)
      if (std::find(axes.begin(), axes.end(), r.name) != axes.end()) n *= ir::axis_ref_size(r, mesh);
  return n;
}

void require_split(VjpContext& c, const ir::Sharding& s, std::string_view what, size_t i,
                   const std::vector<std::string>& axes) {
  const ir::Mesh& mesh = c.b.module().mesh(s.mesh);
  int64_t devices = 1;
  for (const std::string& a : axes) devices *= mesh.find_axis(a)->size;
  if (manual_pieces(s, axes, mesh) != devices)
    c.fail("{} {} is not split over every manual axis, so its cotangent would need a sum over the "
           "devices that share it; not differentiated yet", what, i);
}

// Copies `from` (but its return) into `into`'s block with from's arguments read as `args`; returns
// the copies of the returned values.
std::vector<Tensor> copy_block(ir::Builder& into, const ir::Block& from, const std::vector<Tensor>& args) {
  ir::ValueMap map;
  for (size_t i = 0; i < args.size(); ++i) map[from.argument(i)] = args[i].value();
  const ir::Op* ret = from.terminator();
  for (const auto& op : from.ops())
    if (op.get() != ret) ir::clone_op(into.block(), *op, map);
  std::vector<Tensor> out;
  for (ir::Value* v : ret->operands()) out.push_back(into.wrap(map.count(v) ? map.at(v) : v));
  return out;
}

// Removes the helper functions (by name) from the module when the rule is done, or fails.
struct Helpers {
  ir::Module& m;
  std::vector<std::string> names;
  ~Helpers() {
    auto& fs = m.functions;
    fs.erase(std::remove_if(fs.begin(), fs.end(),
                            [&](const auto& p) {
                              return std::find(names.begin(), names.end(), p->name()) != names.end();
                            }),
             fs.end());
  }
};

}  // namespace

// manual_computation(xs) { body }: dxs = manual_computation(xs, dys) { VJP of body on local pieces }
void vjp_ManualComputation(VjpContext& c) {
  const auto& in = c.op.attrs().get<ir::ShardingList>("in_shardings");
  const auto& out = c.op.attrs().get<ir::ShardingList>("out_shardings");
  const auto& axes = c.op.attrs().get<ir::AxisNames>("manual_axes");
  const ir::Block& body = c.op.region(0);
  std::vector<size_t> inputs, results;
  for (size_t i = 0; i < c.num_operands(); ++i)
    if (is_differentiable(c.x(i).type())) inputs.push_back(i);
  for (size_t k = 0; k < c.num_results(); ++k)
    if (c.has_cotangent(k)) results.push_back(k);
  if (inputs.empty() || results.empty()) return;
  for (size_t i : inputs) require_split(c, in[i], "input", i, axes);
  for (size_t k : results) require_split(c, out[k], "result", k, axes);

  // @local(xs, ws) = sum_k sum(body(xs)_k * w_k), on local pieces.
  ir::Module& m = c.b.module();
  std::string name;
  for (size_t k = m.functions.size(); name.empty() || m.find_function(name) || m.find_function(name + "_grad"); ++k)
    name = fmt::format("manual_computation_vjp_{}", k);
  Helpers helpers{m, {name, name + "_grad"}};  // names no function had before
  ir::Function& local = m.add_function(name);
  ir::FunctionBuilder lb(m, local);
  std::vector<Tensor> args;
  for (const auto& a : body.arguments()) args.push_back(lb.param(a->type()));
  std::vector<Tensor> ys = copy_block(lb, body, args);
  std::optional<Tensor> loss;
  for (size_t k : results) {
    Tensor w = lb.param(ys[k].type());
    Tensor term = ir::sum(ys[k] * w);
    if (loss && term.element() != loss->element()) term = ir::convert(term, loss->element());
    loss = loss ? *loss + term : term;
  }
  local.set_results({loss->value()});
  ReverseOptions options;
  options.wrt = inputs;
  options.name = name + "_grad";
  ir::Function& grad = reverse(m, local, options);

  // The gradient's manual computation: (xs, dys) in, dxs out.
  std::vector<Tensor> operands;
  ir::ShardingList in_shardings = in, out_shardings;
  for (size_t i = 0; i < c.num_operands(); ++i) operands.push_back(c.x(i));
  for (size_t k : results) {
    operands.push_back(c.dy(k));
    in_shardings.push_back(out[k]);
  }
  for (size_t i : inputs) out_shardings.push_back(in[i]);
  std::vector<Tensor> dxs = ir::manual(operands, in_shardings, out_shardings, axes,
                                       [&](ir::Builder& rb, const std::vector<Tensor>& locals) {
                                         return copy_block(rb, grad.body(), locals);
                                       });
  for (size_t j = 0; j < inputs.size(); ++j) c.add(inputs[j], dxs[j]);
}

}  // namespace tessera::autodiff
