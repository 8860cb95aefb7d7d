// The partitioner's driver (see partition.h): inline calls, propagate, then walk the function
// making each value's local piece; values keep each layout made of them, and constants are made
// again where they are needed rather than moved.
#include "spmd/partitioner.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include "ir/builder.h"
#include "ir/clone.h"
#include "spmd/assign.h"
#include "spmd/combine.h"
#include "spmd/factor_rule.h"
#include "spmd/identities.h"
#include "spmd/mesh_math.h"
#include "spmd/propagate.h"
#include "spmd/reshard.h"
#include "spmd/split_reads.h"
#include "support/error.h"

namespace tessera::spmd::partition_detail {

namespace {

bool all_zero(const ir::Literal& value) {
  return std::all_of(value.bytes().begin(), value.bytes().end(), [](std::byte x) { return x == std::byte{0}; });
}

// A piece of `shape` of a splat constant: every device makes its own, nothing moves.
ir::Literal splat_piece(const ir::Literal& value, const std::vector<int64_t>& shape) {
  ir::Literal piece(Type(value.element(), shape));
  auto n = static_cast<size_t>(ir::info(value.element()).bytes);
  for (int64_t i = 0; i < piece.num_elements(); ++i)
    std::copy_n(value.bytes().data(), n, piece.bytes().data() + static_cast<size_t>(i) * n);
  return piece;
}

}  // namespace

void Partitioner::run() {
  ir::Function& lf = out_.add_function(info_.function);
  lf.is_public = gf_.is_public;
  ir::FunctionBuilder fb(out_, lf);
  for (size_t i = 0; i < gf_.num_parameters(); ++i) {
    const Value* p = gf_.parameter(i);
    // The layout the piece has, normalized as for results: an unreduced axis that also splits a
    // dimension is dropped, so no device is handed zeros for a piece that is not partial.
    const Sharding s = normalized(sm_.at(p), static_cast<size_t>(p->type().rank()));
    Type local = local_type(p->type(), s);
    local_.insert_or_assign(p, fb.param(local));
    info_.parameter_types.push_back(p->type());
    info_.parameter_shardings.push_back(s);
    info_.report.parameters.push_back({p->type(), local.shape, byte_size(local), s});
  }
  block(gf_.body(), fb);
  const Op* ret = gf_.body().terminator();
  std::vector<Value*> results;
  for (size_t i = 0; i < ret->operands().size(); ++i) {
    const Value* v = ret->operand(i);
    Sharding want = gf_.result_sharding(i).value_or(sm_.at(v));
    ctx_.origin = fmt::format("result {} of @{}", i, gf_.name());
    ctx_.forced_by.clear();
    results.push_back(get(v, want).value());
    info_.result_types.push_back(v->type());
    // The layout the piece has: normalized as get() made it (an unreduced axis that also splits
    // a dimension is dropped), so the runtime never sums pieces that are not partial.
    info_.result_shardings.push_back(normalized(want, static_cast<size_t>(v->type().rank())));
  }
  lf.set_results(results);
}

// v's local piece in layout `want`; each layout of a value is made once and reused (it is made
// in v's own block, so it is in scope wherever v is).
Tensor Partitioner::get(const Value* v, const Sharding& want) {
  Sharding key = normalized(want, static_cast<size_t>(v->type().rank()));
  if (key == normalized(sm_.at(v), key.dims.size())) return local_.at(v);
  for (auto& [s, t] : made_[v])
    if (s == key) return t;
  if (std::optional<Tensor> t = remake(v, key)) {
    made_[v].push_back({key, *t});
    return *t;
  }
  Tensor t = reshard(ctx_, local_.at(v), v->type(), sm_.at(v), want);
  made_[v].push_back({key, t});
  return t;
}

// A value every piece of which is known without its neighbours (a splat constant, a broadcast
// of a scalar) is made again in the wanted layout instead of moved: constants never travel.
std::optional<Tensor> Partitioner::remake(const Value* v, const Sharding& want) {
  const Op* def = v->defining_op();
  if (!def || def->parent != &gf_.body() || is_maximal(gm_.mesh(want.mesh))) return std::nullopt;
  std::vector<int64_t> shape = shape_of(v->type(), want);
  Tensor anchor = local_.at(v);
  if (def->kind() == OpKind::Constant) {
    const ir::Literal& value = def->attrs().get<ir::Literal>("value");
    if (!value.is_splat()) return std::nullopt;
    if (!want.unreduced.empty() && !all_zero(value)) return std::nullopt;  // a partial copy must sum to the value
    return anchor.builder().constant(splat_piece(value, shape));
  }
  auto zero_constant = [](const Value* x) {
    const Op* d = x->defining_op();
    return d && d->kind() == OpKind::Constant && all_zero(d->attrs().get<ir::Literal>("value"));
  };
  if (def->kind() == OpKind::BroadcastInDim && def->operand(0)->type().rank() == 0 &&
      (want.unreduced.empty() || zero_constant(def->operand(0)))) {
    Tensor scalar = local_.at(def->operand(0));
    return ir::broadcast_in_dim(scalar, shape, {});
  }
  return std::nullopt;
}

void Partitioner::block(const ir::Block& blk, Builder& b) {
  for (const auto& op : blk.ops()) {
    if (op.get() == blk.terminator()) break;
    ctx_.origin = describe(*op);
    ctx_.forced_by.clear();
    const size_t first = b.block().ops().size();
    switch (op->kind()) {
      case OpKind::ShardingConstraint: case OpKind::Reshard: layout_op(*op); break;
      case OpKind::PropagationBarrier: case OpKind::DataFlowEdge: identity(*op); break;
      case OpKind::ShardingGroup: break;  // it only steered propagation
      case OpKind::Constant: case OpKind::SdyConstant: constant(*op, b); break;
      case OpKind::SdyAllGather: case OpKind::SdyAllSlice: case OpKind::SdyAllToAll:
      case OpKind::SdyCollectivePermute: case OpKind::SdyAllReduce: case OpKind::SdyReduceScatter:
        explicit_collective(*op);
        break;
      case OpKind::While: while_op(*op, b); break;
      case OpKind::If: case OpKind::Case: branches(*op, b); break;
      case OpKind::ManualComputation: manual(*op, b); break;
      case OpKind::Call: support::fail("{}: calls are inlined before partitioning", describe(*op));
      default: generic(*op, b); break;
    }
    // The local ops made for this op (its collectives included) carry its place in the source, so
    // a device's runtime refusal names the line the user wrote.
    const auto& made = b.block().ops();
    for (size_t k = first; k < made.size(); ++k)
      if (made[k]->loc.line == 0) made[k]->loc = op->loc;
  }
}

void Partitioner::layout_op(const Op& op) {
  const Value* x = op.operand(0);
  ctx_.forced_by = "operand 0";
  Tensor t = get(x, op.attrs().get<Sharding>("sharding"));
  local_.insert_or_assign(op.result(0), reshard(ctx_, t, x->type(), op.attrs().get<Sharding>("sharding"), sm_.at(op.result(0))));
}

// Shardy's propagation ops are identities: the operand's pieces, moved to the result's layout where
// propagation gave the two different ones.
void Partitioner::identity(const Op& op) {
  const Value* x = op.operand(0);
  ctx_.forced_by = "operand 0";
  local_.insert_or_assign(op.result(0), reshard(ctx_, local_.at(x), x->type(), sm_.at(x), sm_.at(op.result(0))));
}

// Shardy's explicit collectives: the operand goes to the output's layout. On the global values
// each is an identity (as the interpreter runs them), all_reduce and reduce_scatter too: where
// propagation computed their operand as partial sums along the reduced axes, the reshard to the
// output sums them; an operand laid out otherwise (an argument, a value with its own written
// layout) is already whole, and summing its copies would multiply it by the group's size.
void Partitioner::explicit_collective(const Op& op) {
  const Value* x = op.operand(0);
  Sharding out = op.attrs().get<Sharding>("out_sharding");
  // A result a later reduction sums further stays partial along those axes (propagate.cpp).
  if (const Sharding& r = sm_.at(op.result(0)); !r.unreduced.empty() && out.unreduced.empty()) {
    out.unreduced = r.unreduced;
    out.unreduced_kind = r.unreduced_kind;
  }
  Tensor t = reshard(ctx_, local_.at(x), x->type(), sm_.at(x), out);
  local_.insert_or_assign(op.result(0), reshard(ctx_, t, x->type(), out, sm_.at(op.result(0))));
}

// A constant is made whole on every device and sliced: no communication.
void Partitioner::constant(const Op& op, Builder& b) {
  const ir::Literal& value = op.attrs().get<ir::Literal>("value");
  const Sharding& s = sm_.at(op.result(0));
  // Every piece is the same: make it locally (not a partial layout's, unless zero: the pieces
  // of one must sum to the value, which reshard makes below).
  if (value.is_splat() && (s.unreduced.empty() || all_zero(value))) {
    local_.insert_or_assign(op.result(0), b.constant(splat_piece(value, shape_of(value.type(), s))));
    return;
  }
  Tensor t = b.constant(value);
  local_.insert_or_assign(op.result(0), reshard(ctx_, t, op.result(0)->type(), replicated(s.mesh, static_cast<size_t>(t.rank())), s));
}

}  // namespace tessera::spmd::partition_detail

namespace tessera::spmd {

using partition_detail::Partitioner;

namespace {

void copy_meshes(const ir::Module& from, ir::Module& into) {
  for (const auto& m : from.meshes)
    if (!into.find_mesh(m.name)) into.add_mesh(m);
}

}  // namespace

namespace {
// The first value of `b` (regions included) whose type has a '?' dimension.
const ir::Value* dynamic_value(const ir::Block& b) {
  for (const auto& a : b.arguments())
    if (!a->type().is_static()) return a.get();
  for (const auto& op : b.ops()) {
    for (const ir::Value* r : op->results())
      if (!r->type().is_static()) return r;
    for (const auto& r : op->regions())
      if (const ir::Value* v = dynamic_value(*r)) return v;
  }
  return nullptr;
}
}  // namespace

Partitioned partition(const ir::Module& module, const ir::Function& fn, ir::Module& into,
                      const PartitionOptions& options) {
  // Pieces are cut from static shapes: a shape-polymorphic program is refined first
  // (transforms/refine_shapes.h, for its arguments' types).
  if (const ir::Value* v = dynamic_value(fn.body()); v || std::any_of(fn.result_types.begin(), fn.result_types.end(), [](const ir::Type& t) { return !t.is_static(); })) {
    const ir::Op* def = v ? v->defining_op() : nullptr;
    support::fail("@{}: {} has a dynamic ('?') dimension; partitioning needs static shapes (refine them for "
                  "concrete argument types first, as `tessera run` does with its --input)",
                  fn.name(), def ? fmt::format("{} at line {}", def->name(), def->loc.line)
                                 : v ? std::string("an argument") : std::string("a result"));
  }
  Partitioned info;
  info.function = options.name.empty() ? fn.name() : options.name;
  // A scratch module holds the inlined copy that propagation annotates.
  ir::Module scratch;
  copy_meshes(module, scratch);
  const ir::Function& flat = inline_calls(module, fn, scratch, fn.name());
  info.mesh = function_mesh(scratch, flat);
  if (info.mesh.empty()) {
    info.num_devices = 1;
    ir::Mesh one{"__tessera_single", {}, {}};
    scratch.add_mesh(one);
    info.mesh = one.name;
  }
  info.num_devices = std::max(info.num_devices, devices_needed(scratch, flat));
  // An argument is handed to the devices of its layout's mesh: one over fewer devices than the
  // function runs on (an argument on 3 devices, a result on 6) leaves the others without it (an
  // internal error, or a collective's 60 s wait). JAX refuses shardings on other device sets. A
  // mesh without axes splits nothing and goes with any.
  for (size_t i = 0; i < flat.num_parameters(); ++i)
    if (auto s = flat.arg_sharding(i))
      if (const ir::Mesh* m = scratch.find_mesh(s->mesh); m && !is_maximal(*m) && !m->axes.empty() &&
                                                          m->num_devices() < info.num_devices)
        support::fail("@{}: argument {} is laid out on mesh @{} of {} devices, but the function runs on {} (an "
                      "argument's mesh must span every device)", fn.name(), i, s->mesh, m->num_devices(), info.num_devices);
  ShardingMap sm = propagate(scratch, flat);
  copy_meshes(scratch, into);
  Partitioner(scratch, flat, sm, into, info, options).run();
  if (options.combine_all_reduces) combine_all_reduces(into, *into.find_function(info.function), info.report);
  return info;
}

}  // namespace tessera::spmd

