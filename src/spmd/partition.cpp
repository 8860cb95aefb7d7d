// The partitioner's driver and its per-op handlers (see partition.h).
#include "spmd/partition.h"

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

namespace tessera::spmd {

using ir::AxisRef;
using ir::Builder;
using ir::Mesh;
using ir::Op;
using ir::OpKind;
using ir::Sharding;
using ir::Tensor;
using ir::Type;
using ir::Value;

namespace {

std::string describe(const Op& op) {
  return op.loc.line > 0 ? fmt::format("{} at {}:{}", op.name(), op.loc.line, op.loc.column)
                         : std::string(op.name());
}

class Partitioner {
 public:
  Partitioner(const ir::Module& gm, const ir::Function& gf, const ShardingMap& sm, ir::Module& out,
              Partitioned& info, const PartitionOptions& options)
      : gm_(gm), gf_(gf), sm_(sm), out_(out), info_(info), replicate_operands_(options.replicate_operands),
        local_gathers_(options.local_gathers),
        ctx_{gm, info.num_devices, info.report, "", {}, options.devices_are_replicas, ""} {}

  void run() {
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

 private:
  // A tensor's local piece; tokens and tuples have no dimensions to split and pass as they are.
  Type local_type(const Type& t, const Sharding& s) const { return t.is_tensor() ? t.with_shape(shape_of(t, s)) : t; }

  std::vector<int64_t> shape_of(const Type& t, const Sharding& s) const {
    const Mesh& mesh = gm_.mesh(s.mesh);
    if (is_maximal(mesh)) return t.shape;
    return local_shape(t.shape, normalized(s, static_cast<size_t>(t.rank())), mesh);
  }

  // v's local piece in layout `want`; each layout of a value is made once and reused (it is made
  // in v's own block, so it is in scope wherever v is).
  Tensor get(const Value* v, const Sharding& want) {
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
  std::optional<Tensor> remake(const Value* v, const Sharding& want) {
    const Op* def = v->defining_op();
    if (!def || def->parent != &gf_.body() || is_maximal(gm_.mesh(want.mesh))) return std::nullopt;
    std::vector<int64_t> shape = shape_of(v->type(), want);
    Tensor anchor = local_.at(v);
    if (def->kind() == OpKind::Constant) {
      const ir::Literal& value = def->attrs().get<ir::Literal>("value");
      if (!value.is_splat()) return std::nullopt;
      bool zero = std::all_of(value.bytes().begin(), value.bytes().end(), [](std::byte x) { return x == std::byte{0}; });
      if (!want.unreduced.empty() && !zero) return std::nullopt;  // a partial copy must sum to the value
      ir::Literal piece(Type(value.element(), shape));
      size_t n = static_cast<size_t>(ir::info(value.element()).bytes);
      for (int64_t i = 0; i < piece.num_elements(); ++i)
        std::copy_n(value.bytes().data(), n, piece.bytes().data() + static_cast<size_t>(i) * n);
      return anchor.builder().constant(std::move(piece));
    }
    auto zero_constant = [](const Value* x) {
      const Op* d = x->defining_op();
      if (!d || d->kind() != OpKind::Constant) return false;
      auto b = d->attrs().get<ir::Literal>("value").bytes();
      return std::all_of(b.begin(), b.end(), [](std::byte c) { return c == std::byte{0}; });
    };
    if (def->kind() == OpKind::BroadcastInDim && def->operand(0)->type().rank() == 0 &&
        (want.unreduced.empty() || zero_constant(def->operand(0)))) {
      Tensor scalar = local_.at(def->operand(0));
      return ir::broadcast_in_dim(scalar, shape, {});
    }
    return std::nullopt;
  }

  void block(const ir::Block& blk, Builder& b) {
    for (const auto& op : blk.ops()) {
      if (op.get() == blk.terminator()) break;
      ctx_.origin = describe(*op);
      ctx_.forced_by.clear();
      switch (op->kind()) {
        case OpKind::ShardingConstraint: case OpKind::Reshard: layout_op(*op); break;
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
    }
  }

  void layout_op(const Op& op) {
    const Value* x = op.operand(0);
    ctx_.forced_by = "operand 0";
    Tensor t = get(x, op.attrs().get<Sharding>("sharding"));
    local_.insert_or_assign(op.result(0), reshard(ctx_, t, x->type(), op.attrs().get<Sharding>("sharding"), sm_.at(op.result(0))));
  }

  // Shardy's explicit collectives: the operand goes to the output's layout. The operand of
  // all_reduce and reduce_scatter is read as partial along the reduced axes, whatever it was
  // annotated (their local meaning: sum the devices' values).
  void explicit_collective(const Op& op) {
    const Value* x = op.operand(0);
    Sharding from = sm_.at(x);
    if (op.kind() == OpKind::SdyAllReduce || op.kind() == OpKind::SdyReduceScatter) {
      Sharding partial = partial_operand(op);
      Tensor t = reshard(ctx_, local_.at(x), x->type(), from, replicated_like(partial, from));
      from = partial;
      local_.insert_or_assign(x, t);  // the operand's pieces as the op reads them
      const_cast<ShardingMap&>(sm_).values[x] = from;
    }
    const Sharding& out = op.attrs().get<Sharding>("out_sharding");
    Tensor t = reshard(ctx_, local_.at(x), x->type(), from, out);
    local_.insert_or_assign(op.result(0), reshard(ctx_, t, x->type(), out, sm_.at(op.result(0))));
  }

  // `partial`'s dimension layout with `from`'s unreduced axes: what a value laid out as `from` must
  // become before it is read as partial (its dimensions brought to partial's, nothing summed).
  static Sharding replicated_like(const Sharding& partial, const Sharding& from) {
    Sharding s = partial;
    s.unreduced = from.unreduced;
    return s;
  }

  // A constant is made whole on every device and sliced: no communication.
  void constant(const Op& op, Builder& b) {
    const ir::Literal& value = op.attrs().get<ir::Literal>("value");
    const Sharding& s = sm_.at(op.result(0));
    // Every piece is the same: make it locally (not a partial layout's, unless zero: the pieces
    // of one must sum to the value, which reshard makes below).
    bool zero = std::all_of(value.bytes().begin(), value.bytes().end(), [](std::byte x) { return x == std::byte{0}; });
    if (value.is_splat() && (s.unreduced.empty() || zero)) {
      Type local(value.element(), shape_of(value.type(), s));
      ir::Literal piece(local);
      size_t n = static_cast<size_t>(ir::info(value.element()).bytes);
      for (int64_t i = 0; i < piece.num_elements(); ++i)
        std::copy_n(value.bytes().data(), n, piece.bytes().data() + static_cast<size_t>(i) * n);
      local_.insert_or_assign(op.result(0), b.constant(std::move(piece)));
      return;
    }
    Tensor t = b.constant(value);
    local_.insert_or_assign(op.result(0), reshard(ctx_, t, op.result(0)->type(), replicated(s.mesh, static_cast<size_t>(t.rank())), s));
  }

  // The mesh an op runs on: its first result's, else its first operand's.
  std::string op_mesh(const Op& op) const {
    for (Value* r : op.results()) return sm_.at(r).mesh;
    for (Value* v : op.operands()) return sm_.at(v).mesh;
    return function_mesh(gm_, gf_);
  }

  FactorAxes assignment(const Op& op, const FactorRule& rule, const Mesh& mesh) const {
    return assign_factors(op, rule, mesh, sm_);
  }

  Sharding compose(const TensorFactors& tf, const FactorRule& rule, const FactorAxes& assign, const Mesh& mesh) const {
    Sharding s = replicated(mesh.name, tf.size());
    for (size_t d = 0; d < tf.size(); ++d) s.dims[d].axes = compose_dim(tf[d], rule, assign, mesh);
    return s;
  }

  void generic(const Op& op, Builder& b) {
    std::string mesh_name = op_mesh(op);
    const Mesh& mesh = gm_.mesh(mesh_name);
    FactorRule rule = factor_rule(op);
    if (is_maximal(mesh) || replicate_operands_) {
      // The whole op on every device; only the maximal mesh's device's result counts.
      std::vector<Tensor> operands;
      for (size_t i = 0; i < op.operands().size(); ++i) {
        const Value* v = op.operand(i);
        ctx_.forced_by = fmt::format("operand {}", i);
        operands.push_back(get(v, replicated(mesh_name, static_cast<size_t>(v->type().rank()))));
      }
      std::vector<Type> types = op.result_types();
      std::vector<Tensor> results = emit(op, b, operands, types, nullptr);
      for (size_t i = 0; i < results.size(); ++i) {
        ctx_.forced_by = fmt::format("result {}", i);
        Sharding have = replicated(mesh_name, static_cast<size_t>(op.result(i)->type().rank()));
        local_.insert_or_assign(op.result(i), reshard(ctx_, results[i], op.result(i)->type(), have, sm_.at(op.result(i))));
      }
      return;
    }
    // A gather's split indexed dimensions and a slice's or reverse's split dimensions may stay
    // split (a local gather, a halo exchange) where the cost model finds that cheaper than gathering them.
    std::vector<IndexedDim> indexed;
    if (op.kind() == OpKind::Gather) indexed = add_indexed_factors(op, rule);
    FactorAxes assign = assignment(op, rule, mesh);
    std::vector<size_t> judged;  // operand 0's dimensions whose gather is the cost model's choice
    cheaper_gather_.clear();
    if (!indexed.empty()) choose_local_gather(op, rule, indexed, assign, mesh, judged);
    std::vector<HaloDim> halo;
    if (op.kind() == OpKind::Slice || op.kind() == OpKind::Reverse) halo = choose_halo(op, rule, assign, mesh, judged);
    std::optional<OpKind> combiner = OpKind::Add;
    if (op.kind() == OpKind::Reduce) combiner = op.num_results() == 1 ? combiner_of(op) : std::nullopt;
    std::vector<AxisRef> partial;
    bool uneven_reduction = false;
    for (size_t f = 0; f < rule.num_factors(); ++f) {
      if (rule.kinds[f] != FactorKind::kReduction || assign[f].empty()) continue;
      if (!combiner) {
        assign[f].clear();  // a reduction Tessera cannot combine across devices runs whole
        continue;
      }
      partial.insert(partial.end(), assign[f].begin(), assign[f].end());
      uneven_reduction |= rule.sizes[f] % shard_count(mesh, assign[f]) != 0;
    }
    // A reduce split along its reduced dimension reduces each piece from the combiner's identity
    // (its padding holds the identity too) and folds the init in once, below: the init is a
    // runtime value, counted once as unsharded however many devices and padding rows there are.
    // (An init that is a constant equal to the identity, the usual case, needs none of this.)
    bool fold_init = op.kind() == OpKind::Reduce && !partial.empty() && !identity_constant(*combiner, op.operand(1));
    std::vector<Tensor> operands;
    for (size_t i = 0; i < op.operands().size(); ++i) {
      Value* v = op.operand(i);
      if (fold_init && i >= op.num_results()) {
        operands.push_back(identity_of(*combiner, get(v, replicated(mesh_name, 0)), b));
        continue;
      }
      Sharding want = compose(rule.operands[i], rule, assign, mesh);
      if (i == 0)
        for (const HaloDim& h : halo) want.dims[h.dim].axes = h.axes;
      // A scatter whose updates are split adds into the operand on every device: it must count
      // once in the sum, so it is made partial (whole on the first device, zeros elsewhere).
      if (op.kind() == OpKind::Scatter && i < op.num_results()) want.unreduced = partial;
      ctx_.forced_by = fmt::format("operand {}", i);
      size_t first = info_.report.collectives.size();
      Tensor t = get(v, want);
      flag_full_gathers(op, i, rule, first, judged);
      for (size_t k = first; i == 0 && !cheaper_gather_.empty() && k < info_.report.collectives.size(); ++k)
        if (info_.report.collectives[k].kind == "all_gather") info_.report.collectives[k].avoidable = cheaper_gather_;
      if (uneven_reduction) t = mask_padding(op, i, t, v->type(), want, b);
      operands.push_back(t);
    }
    std::vector<Type> types;
    std::vector<Sharding> have;
    for (size_t i = 0; i < op.num_results(); ++i) {
      Sharding s = compose(rule.results[i], rule, assign, mesh);
      for (const HaloDim& h : halo) s.dims[h.dim].axes = h.axes;
      s.unreduced = partial;
      const Type& t = op.result(i)->type();
      types.push_back(t.is_tensor() ? t.with_shape(local_shape(t.shape, s, mesh)) : t);
      have.push_back(std::move(s));
    }
    std::optional<LocalIndices> rows;
    if (std::any_of(indexed.begin(), indexed.end(), [&](const IndexedDim& d) { return !assign[static_cast<size_t>(d.factor)].empty(); })) {
      rows = local_indices(ctx_, b, op, operands[1], indexed, assign, operands[0].shape(), mesh);
      operands[1] = rows->indices;
    }
    std::vector<Tensor> results;
    if (!halo.empty()) {
      Tensor x = operands[0];
      std::vector<size_t> done;
      for (const HaloDim& h : halo) {
        ctx_.forced_by = "operand 0";
        x = halo_slice(ctx_, x, static_cast<int64_t>(h.dim), h.plan, mesh, h.axes);
        done.push_back(h.dim);
      }
      results.push_back(rest_of(op, x, done));
    } else {
      results = emit(op, b, operands, types, &assign);
    }
    if (rows) results[0] = zero_outside(op, results[0], rows->in_piece);
    for (size_t i = 0; i < results.size(); ++i)
      TESSERA_CHECK(results[i].type() == types[i], "{}: local result {} is {}, expected {}", describe(op), i,
                    ir::to_string(results[i].type()), ir::to_string(types[i]));
    fix_iota(op, results, rule, assign, mesh, b);
    if (fold_init) {
      Tensor index = piece_offset(ctx_, b, mesh, partial, 1);
      Tensor first = ir::compare(index, b.scalar(ir::ElementType::i32, 0), ir::ComparisonDirection::EQ);
      Tensor init = get(op.operand(1), replicated(mesh_name, 0));
      Tensor& r = results[0];
      Tensor folded = b.emit1(*combiner, {r, ir::broadcast_to(init, r.shape())});
      r = ir::select(ir::broadcast_to(first, r.shape()), folded, r);
    }
    for (size_t i = 0; i < results.size(); ++i) {
      ctx_.forced_by = fmt::format("result {}", i);
      local_.insert_or_assign(op.result(i), reshard(ctx_, results[i], op.result(i)->type(), have[i], sm_.at(op.result(i)),
                                     combiner.value_or(OpKind::Add)));
    }
  }

  // The cost model's price, in bytes per device, of running `op` with `assign` (and `halo`):
  // each operand brought to the layout it needs (nothing when that layout is made already), the
  // halo exchanged, each result brought from the layout the op leaves to its propagated one.
  int64_t cost(const Op& op, const FactorRule& rule, const FactorAxes& assign, const Mesh& mesh,
               const std::vector<HaloDim>& halo = {}) {
    std::vector<AxisRef> partial;
    for (size_t f = 0; f < rule.num_factors(); ++f)
      if (rule.kinds[f] == FactorKind::kReduction) partial.insert(partial.end(), assign[f].begin(), assign[f].end());
    int64_t bytes = 0;
    for (size_t i = 0; i < op.operands().size(); ++i) {
      const Value* v = op.operand(i);
      auto rank = static_cast<size_t>(v->type().rank());
      Sharding want = normalized(compose(rule.operands[i], rule, assign, mesh), rank);
      if (i == 0)
        for (const HaloDim& h : halo) want.dims[h.dim].axes = h.axes;
      auto made = made_.find(v);
      bool have = want == normalized(sm_.at(v), rank) ||
                  (made != made_.end() && std::any_of(made->second.begin(), made->second.end(), [&](const auto& m) { return m.first == want; }));
      if (!have) bytes += reshard_bytes(ctx_, v->type(), sm_.at(v), want);
      if (i == 0) bytes += halo_bytes(halo, shape_of(v->type(), want), ir::info(v->type().element).bytes);
    }
    for (size_t i = 0; i < op.num_results(); ++i) {
      Sharding s = compose(rule.results[i], rule, assign, mesh);
      for (const HaloDim& h : halo) s.dims[h.dim].axes = h.axes;
      s.unreduced = partial;
      bytes += reshard_bytes(ctx_, op.result(i)->type(), s, sm_.at(op.result(i)));
    }
    return bytes;
  }

  // A gather whose operand keeps its split indexed dimensions gathers locally and sums partial
  // results; gathering the operand whole is kept where that moves no more.
  void choose_local_gather(const Op& op, const FactorRule& rule, const std::vector<IndexedDim>& indexed,
                           FactorAxes& assign, const Mesh& mesh, std::vector<size_t>& judged) {
    for (const IndexedDim& d : indexed)
      if (!assign[static_cast<size_t>(d.factor)].empty()) judged.push_back(d.dim);
    if (judged.empty()) return;
    FactorAxes whole = assignment(op, factor_rule(op), mesh);
    whole.resize(rule.num_factors());
    int64_t gathered = cost(op, rule, whole, mesh), local = cost(op, rule, assign, mesh);
    if (gathered <= local || !local_gathers_) assign = std::move(whole);
    if (gathered > local && !local_gathers_) {
      judged.clear();
      cheaper_gather_ = fmt::format("a local gather summed after would move {} bytes per device, not {} "
                                    "(PartitionOptions::local_gathers)", local, gathered);
    }
  }

  // A slice or reverse along dimensions its operand arrives split on (by axes no factor uses) is
  // a halo exchange where that moves less than gathering them.
  std::vector<HaloDim> choose_halo(const Op& op, const FactorRule& rule, const FactorAxes& assign, const Mesh& mesh,
                                   std::vector<size_t>& judged) {
    const Value* v = op.operand(0);
    std::vector<HaloDim> halo = halo_dims(op, rule, assign, normalized(sm_.at(v), static_cast<size_t>(v->type().rank())), mesh);
    for (const HaloDim& h : halo) judged.push_back(h.dim);
    if (halo.empty() || cost(op, rule, assign, mesh, halo) >= cost(op, rule, assign, mesh)) return {};
    return halo;
  }

  // The gathers just made for operand i (report entries from `first` on) that gather a dimension
  // the op's rule cannot split while the operand arrives split: a silent full gather, where
  // Shardy moves only a halo (slice, pad, concatenate, reverse), gathers locally (gather's indexed
  // dimensions) or combines partial results (a reduce Tessera cannot combine).
  void flag_full_gathers(const Op& op, size_t i, const FactorRule& rule, size_t first, const std::vector<size_t>& judged) {
    const Value* v = op.operand(i);
    const Sharding have = normalized(sm_.at(v), static_cast<size_t>(v->type().rank()));
    for (size_t k = first; k < info_.report.collectives.size(); ++k) {
      CollectiveRecord& r = info_.report.collectives[k];
      if (r.kind != "all_gather" || !r.avoidable.empty() || r.op == nullptr) continue;
      auto d = static_cast<size_t>(r.op->attrs().get<int64_t>("all_gather_dim"));
      if (d >= have.dims.size() || have.dims[d].axes.empty()) continue;
      if (i == 0 && std::find(judged.begin(), judged.end(), d) != judged.end()) continue;  // the cheaper way
      const std::vector<int>& factors = rule.operands[i][d];
      bool splittable = std::any_of(factors.begin(), factors.end(), [&](int f) {
        return rule.kinds[static_cast<size_t>(f)] == FactorKind::kPassThrough ||
               (op.kind() != OpKind::Reduce || (op.num_results() == 1 && combiner_of(op)));
      });
      if (splittable) continue;
      r.avoidable = fmt::format("silent full gather: {} reads dimension {} of operand {} whole (no rule splits it), "
                                "where a halo exchange, a local gather or combining partial results would move less",
                                op.name(), d, i);
    }
  }

  // Padding of an uneven split read by a reduction is set to the reduction's identity.
  Tensor mask_padding(const Op& op, size_t i, Tensor t, const Type& global, const Sharding& s, Builder& b) {
    bool is_reduce_input = op.kind() == OpKind::Reduce && i < op.num_results();
    // (a scatter-add's updates: padding rows, whatever they hold, must add nothing)
    bool is_updates = op.kind() == OpKind::Scatter && i > op.num_results();
    if (op.kind() != OpKind::DotGeneral && op.kind() != OpKind::Convolution && !is_reduce_input && !is_updates)
      return t;
    auto mask = valid_mask(ctx_, b, global, s);
    if (!mask) return t;
    // (a reduce split along a reduced dimension is partial: its identity, see generic)
    Tensor fill = is_reduce_input ? identity_of(*combiner_of(op), t, b) : b.scalar(t.element(), 0);
    return ir::select(*mask, t, ir::broadcast_to(fill, t.shape()));
  }

  // iota along a split dimension counts from this device's offset.
  void fix_iota(const Op& op, std::vector<Tensor>& results, const FactorRule& rule, const FactorAxes& assign,
                const Mesh& mesh, Builder& b) {
    if (op.kind() != OpKind::Iota) return;
    int64_t d = op.attrs().get<int64_t>("iota_dimension");
    const auto& fs = rule.results[0][static_cast<size_t>(d)];
    if (fs.empty() || assign[static_cast<size_t>(fs[0])].empty()) return;
    Tensor& r = results[0];
    Tensor off = piece_offset(ctx_, b, mesh, assign[static_cast<size_t>(fs[0])], r.shape()[static_cast<size_t>(d)]);
    r = r + ir::broadcast_to(ir::convert(off, r.element()), r.shape());
  }

  // The op again on local operands with local result types; attributes that hold sizes of split
  // dimensions are rewritten to the local sizes.
  std::vector<Tensor> emit(const Op& op, Builder& b, const std::vector<Tensor>& operands,
                           const std::vector<Type>& types, const FactorAxes* assign) {
    ir::AttrMap attrs = op.attrs();
    attrs.erase("sdy.sharding");
    if (assign) {
      const auto& in = operands.empty() ? std::vector<int64_t>{} : operands[0].shape();
      auto localize = [&](const std::string& name) {
        if (const auto* v = attrs.find<std::vector<int64_t>>(name)) {
          std::vector<int64_t> w = *v;
          for (size_t d = 0; d < w.size() && d < in.size(); ++d)
            if (w[d] == op.operand(0)->type().shape[d]) w[d] = in[d];
          attrs.set(name, w);
        }
      };
      if (op.kind() == OpKind::Slice) localize("limit_indices");
      if (op.kind() == OpKind::DynamicSlice || op.kind() == OpKind::Gather) localize("slice_sizes");
    }
    auto fill = [&](Op& copy) {
      ir::ValueMap map;
      for (const auto& region : op.regions()) {
        ir::Block& blk = copy.add_region();
        for (const auto& arg : region->arguments()) map[arg.get()] = blk.add_argument(arg->type());
        for (const auto& inner : region->ops()) ir::clone_op(blk, *inner, map);
      }
    };
    return b.emit_with_regions(op.kind(), operands, std::move(attrs), types, fill);
  }

  // while: every loop-carried value keeps its propagated layout through the loop.
  void while_op(const Op& op, Builder& b) {
    std::vector<Tensor> init;
    std::vector<Type> types;
    for (size_t i = 0; i < op.num_results(); ++i) {
      const Sharding& s = sm_.at(op.result(i));
      init.push_back(get(op.operand(i), s));
      types.push_back(init.back().type());
    }
    std::vector<Tensor> results = b.emit_with_regions(OpKind::While, init, {}, types, [&](Op& copy) {
      for (size_t r = 0; r < 2; ++r) {
        const ir::Block& from = op.region(r);
        ir::Block& into = copy.add_region();
        Builder rb(out_, into);
        for (size_t i = 0; i < from.arguments().size(); ++i) {
          Value* a = into.add_argument(types[i]);
          local_.insert_or_assign(from.argument(i), rb.wrap(a));
          const_cast<ShardingMap&>(sm_).values[from.argument(i)] = sm_.at(op.result(i));
        }
        block(from, rb);
        const Op* ret = from.terminator();
        std::vector<Value*> vals;
        for (size_t i = 0; i < ret->operands().size(); ++i) {
          const Value* v = ret->operand(i);
          Sharding want = r == 0 ? replicated(sm_.at(v).mesh, 0) : sm_.at(op.result(i));
          vals.push_back(get(v, want).value());
        }
        into.append(std::make_unique<Op>(OpKind::Return, vals, std::vector<Type>{}));
      }
    });
    for (size_t i = 0; i < results.size(); ++i) local_.insert_or_assign(op.result(i), results[i]);
  }

  // if and case: the predicate or index is whole on every device, so every device runs the same
  // branch; each branch is partitioned where it stands and returns its values in the results'
  // layouts (collectives inside a branch then run on all devices or none).
  void branches(const Op& op, Builder& b) {
    Tensor selector = get(op.operand(0), replicated(sm_.at(op.operand(0)).mesh, 0));
    std::vector<Type> types;
    for (size_t i = 0; i < op.num_results(); ++i) {
      const Value* r = op.result(i);
      types.push_back(local_type(r->type(), sm_.at(r)));
    }
    std::vector<Tensor> results = b.emit_with_regions(op.kind(), {selector}, {}, types, [&](Op& copy) {
      for (const auto& from : op.regions()) {
        ir::Block& into = copy.add_region();
        Builder rb(out_, into);
        block(*from, rb);
        const Op* ret = from->terminator();
        std::vector<Value*> vals;
        for (size_t i = 0; i < ret->operands().size(); ++i) vals.push_back(get(ret->operand(i), sm_.at(op.result(i))).value());
        into.append(std::make_unique<Op>(OpKind::Return, vals, std::vector<Type>{}));
      }
    });
    for (size_t i = 0; i < results.size(); ++i) local_.insert_or_assign(op.result(i), results[i]);
  }

  // manual_computation: the body is written for pieces split by the manual axes; a free axis in
  // an in or out sharding is Shardy's to partition automatically in the body. Here the body runs
  // on pieces whole along the free axes (the inputs are brought to in_shardings less the free
  // axes, the results read as out_shardings less them): every device of a free group computes the
  // same piece, which is correct for any body, and the results are then resharded to their layouts.
  void manual(const Op& op, Builder& b) {
    const auto& in = op.attrs().get<ir::ShardingList>("in_shardings");
    const auto& out = op.attrs().get<ir::ShardingList>("out_shardings");
    const auto& axes = op.attrs().get<ir::AxisNames>("manual_axes");
    auto is_manual = [&](const AxisRef& a) { return std::find(axes.begin(), axes.end(), a.name) != axes.end(); };
    auto manual_part = [&](const Sharding& s, std::string_view what, size_t i) {
      Sharding m = s;
      for (auto& d : m.dims) {
        auto free = std::find_if(d.axes.begin(), d.axes.end(), [&](const AxisRef& a) { return !is_manual(a); });
        if (std::any_of(free, d.axes.end(), is_manual))
          support::fail("{}: {} {}: axis \"{}\" is free (not manual) and comes before a manual axis in a dimension; "
                        "manual axes come first",
                        describe(op), what, i, free->name);
        d.axes.erase(free, d.axes.end());
      }
      return m;
    };
    std::vector<Tensor> operands;
    for (size_t i = 0; i < op.operands().size(); ++i) operands.push_back(get(op.operand(i), manual_part(in.at(i), "input", i)));
    const ir::Block& body = op.region(0);
    ir::ValueMap map;
    for (size_t i = 0; i < body.arguments().size(); ++i) map[body.argument(i)] = operands[i].value();
    for (const auto& inner : body.ops()) {
      if (inner.get() == body.terminator()) break;
      const Op* copy = ir::clone_op(b.block(), *inner, map);
      record_written(info_.report, *copy, ctx_.origin + " (written)");
    }
    const Op* ret = body.terminator();
    for (size_t i = 0; i < op.num_results(); ++i) {
      auto it = map.find(ret->operand(i));
      Tensor t = b.wrap(it == map.end() ? ret->operand(i) : it->second);
      local_.insert_or_assign(op.result(i), reshard(ctx_, t, op.result(i)->type(), manual_part(out.at(i), "result", i),
                                                    sm_.at(op.result(i))));
    }
  }

  const ir::Module& gm_;
  const ir::Function& gf_;
  const ShardingMap& sm_;
  ir::Module& out_;
  Partitioned& info_;
  bool replicate_operands_, local_gathers_;
  std::string cheaper_gather_;  // why the gather just made is avoidable, when local gathers are off
  LocalContext ctx_;
  std::unordered_map<const Value*, Tensor> local_;
  std::unordered_map<const Value*, std::vector<std::pair<Sharding, Tensor>>> made_;
};

void copy_meshes(const ir::Module& from, ir::Module& into) {
  for (const auto& m : from.meshes)
    if (!into.find_mesh(m.name)) into.add_mesh(m);
}

}  // namespace

Partitioned partition(const ir::Module& module, const ir::Function& fn, ir::Module& into,
                      const PartitionOptions& options) {
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
  for (const auto& m : scratch.meshes)
    if (!is_maximal(m)) info.num_devices = std::max(info.num_devices, m.num_devices());
  ShardingMap sm = propagate(scratch, flat);
  copy_meshes(scratch, into);
  Partitioner(scratch, flat, sm, into, info, options).run();
  if (options.combine_all_reduces) combine_all_reduces(into, *into.find_function(info.function), info.report);
  return info;
}

}  // namespace tessera::spmd
