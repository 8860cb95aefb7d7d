// The partitioner's class, private to src/spmd: its driver and value bookkeeping are in
// partition.cpp, the per-op rule application (factor assignment, cost model, halo and local-gather
// choices) in partition_generic.cpp, partial sums kept through add, subtract and negate in
// partition_linear.cpp, and the ops with regions (while, if/case, manual_computation)
// in partition_control.cpp.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/builder.h"
#include "spmd/assign.h"
#include "spmd/factor_rule.h"
#include "spmd/mesh_math.h"
#include "spmd/partition.h"
#include "spmd/propagate.h"
#include "spmd/reshard.h"
#include "spmd/split_reads.h"

namespace tessera::spmd::partition_detail {

using ir::AxisRef;
using ir::Builder;
using ir::Mesh;
using ir::Op;
using ir::OpKind;
using ir::Sharding;
using ir::Tensor;
using ir::Type;
using ir::Value;

inline std::string describe(const Op& op) {
  return op.loc.line > 0 ? fmt::format("{} at {}:{}", op.name(), op.loc.line, op.loc.column)
                         : std::string(op.name());
}

// Walks the global function once, making each value's local piece (see partition.cpp).
class Partitioner {
 public:
  Partitioner(const ir::Module& gm, const ir::Function& gf, const ShardingMap& sm, ir::Module& out,
              Partitioned& info, const PartitionOptions& options)
      : gm_(gm), gf_(gf), sm_(sm), out_(out), info_(info), replicate_operands_(options.replicate_operands),
        local_gathers_(options.local_gathers),
        ctx_{gm, info.num_devices, info.report, "", {}, options.devices_are_replicas, ""} {}

  void run();

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
  Tensor get(const Value* v, const Sharding& want);

  // A value every piece of which is known without its neighbours (a splat constant, a broadcast
  // of a scalar) is made again in the wanted layout instead of moved: constants never travel.
  std::optional<Tensor> remake(const Value* v, const Sharding& want);

  void block(const ir::Block& blk, Builder& b);

  void layout_op(const Op& op);
  void identity(const Op& op);  // propagation_barrier, data_flow_edge

  // Shardy's explicit collectives: identities on the global values; the operand goes to the
  // output's layout (all_reduce and reduce_scatter sum an operand computed as partial sums).
  void explicit_collective(const Op& op);

  // A constant is made whole on every device and sliced: no communication.
  void constant(const Op& op, Builder& b);

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

  void generic(const Op& op, Builder& b);
  // Whether element-wise `op`'s operands and results share one layout without partial axes.
  bool in_place(const Op& op) const;
  // top_k along a split last dimension: each device's top k, the candidates gathered, the top k of
  // those (where that moves less than gathering the operand).
  bool top_k_by_pieces(const Op& op, Builder& b);
  // A reduce no all_reduce combines (argmax, argmin) split along its major-most reduced dimension:
  // the split factor, where it may run by pieces (partition_reduce.cpp).
  std::optional<size_t> pieces_factor(const Op& op, const FactorRule& rule, const FactorAxes& assign) const;
  // Each device's piece reduced from the order's identity, the partial results all-gathered in
  // device order along the split factor's axes and reduced again from the reduce's inits.
  void reduce_by_pieces(const Op& op, const FactorRule& rule, const FactorAxes& assign, size_t factor,
                        const Mesh& mesh, Builder& b);
  // The bytes per device of that all_gather of result i's partial results, laid out as `s`.
  int64_t partials_bytes(const Op& op, size_t i, const Sharding& s, const std::vector<AxisRef>& axes, const Mesh& mesh);
  // add, subtract or negate whose result stays partial where an operand is a partial
  // sum (partition_linear.cpp), where that moves fewer bytes than `standard`, the generic path's
  // best; false where it does not, and nothing is made.
  bool partial_linear(const Op& op, Builder& b, int64_t standard);
  // The bytes per device of bringing v to `want`: nothing when that layout is v's or made already.
  int64_t bring_bytes(const Value* v, const Sharding& want);

  // The cheapest of the candidate assignments (the results' layout `assign`, each operand's, each
  // tensor's put first with sub-axes of conflicting axes, a factor left whole), into `assign`.
  int64_t choose_assignment(const Op& op, const FactorRule& rule, const Mesh& mesh, FactorAxes& assign);

  // The cost model's price, in bytes per device, of running `op` with `assign` (and `halo`):
  // each operand brought to the layout it needs (nothing when that layout is made already), the
  // halo exchanged, each result brought from the layout the op leaves to its propagated one.
  int64_t cost(const Op& op, const FactorRule& rule, const FactorAxes& assign, const Mesh& mesh,
               const std::vector<HaloDim>& halo = {});

  // A gather whose operand keeps its split indexed dimensions gathers locally and sums partial
  // results; gathering the operand whole is kept where that moves no more.
  void choose_local_gather(const Op& op, const FactorRule& rule, const std::vector<IndexedDim>& indexed,
                           FactorAxes& assign, const Mesh& mesh, std::vector<size_t>& judged);

  // A slice, reverse, pad, concatenate or reduce_window along dimensions its operands arrive split on (by axes
  // no factor uses) is a halo exchange where that moves less than gathering them.
  std::vector<HaloDim> choose_halo(const Op& op, const FactorRule& rule, const FactorAxes& assign, const Mesh& mesh,
                                   std::vector<size_t>& judged);

  // The gathers just made for operand i (report entries from `first` on) that gather a dimension
  // the op's rule cannot split while the operand arrives split: a silent full gather, where
  // Shardy moves only a halo (slice, pad, concatenate, reverse), gathers locally (gather's indexed
  // dimensions) or combines partial results (a reduce Tessera cannot combine).
  void flag_full_gathers(const Op& op, size_t i, const FactorRule& rule, size_t first, const std::vector<size_t>& judged);

  // Padding of an uneven split read by a reduction is set to the reduction's identity.
  Tensor mask_padding(const Op& op, size_t i, Tensor t, const Type& global, const Sharding& s, Builder& b);

  // iota along a split dimension counts from this device's offset.
  void fix_iota(const Op& op, std::vector<Tensor>& results, const FactorRule& rule, const FactorAxes& assign,
                const Mesh& mesh, Builder& b);

  // The op again on local operands with local result types; attributes that hold sizes of split
  // dimensions are rewritten to the local sizes.
  std::vector<Tensor> emit(const Op& op, Builder& b, const std::vector<Tensor>& operands,
                           const std::vector<Type>& types, const FactorAxes* assign,
                           const ir::AttrMap* attrs = nullptr);  // (op's attributes, unless given)

  // while: every loop-carried value keeps its propagated layout through the loop.
  void while_op(const Op& op, Builder& b);

  // if and case: the predicate or index is whole on every device, so every device runs the same
  // branch; each branch is partitioned where it stands and returns its values in the results'
  // layouts (collectives inside a branch then run on all devices or none).
  void branches(const Op& op, Builder& b);

  // manual_computation: the body is written for pieces split by the manual axes; a free axis in
  // an in or out sharding is Shardy's to partition automatically in the body. Here the body runs
  // on pieces whole along the free axes (the inputs are brought to in_shardings less the free
  // axes, the results read as out_shardings less them): every device of a free group computes the
  // same piece, which is correct for any body, and the results are then resharded to their layouts.
  void manual(const Op& op, Builder& b);

  const ir::Module& gm_;
  const ir::Function& gf_;
  const ShardingMap& sm_;
  ir::Module& out_;
  Partitioned& info_;
  bool replicate_operands_, local_gathers_;
  // reshard_bytes per (value, from, to) while choose_assignment costs its candidates, which share
  // most of their operands' and results' layouts (a plan on a large mesh takes milliseconds).
  std::vector<std::tuple<const Value*, Sharding, Sharding, int64_t>> bytes_memo_;
  bool memoizing_ = false;
  int64_t memo_reshard_bytes(const Value* v, const Sharding& from, const Sharding& to);
  std::string cheaper_gather_;  // why the gather just made is avoidable, when local gathers are off
  bool pieces_refused_ = false;  // the reduce being partitioned splits reduced dimensions it cannot run by pieces
  LocalContext ctx_;
  std::unordered_map<const Value*, Tensor> local_;
  std::unordered_map<const Value*, std::vector<std::pair<Sharding, Tensor>>> made_;
};

}  // namespace tessera::spmd::partition_detail
