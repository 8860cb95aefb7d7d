// The C++ builder: programs that read like the math.
//
//   Module m("sharded_loss");
//   m.add_mesh({"m", {{"data", 4}}});
//   build_function(m, "sharded_loss", [](FunctionBuilder& f) {
//     Tensor x = f.param(f32({8, 4}), Sharding{"m", {{"data"}, {}}});
//     Tensor w = f.param(f32({4, 3}));
//     Tensor y = tanh(matmul(x, w));
//     return sum(y * y);
//   });
//
// A Tensor is a Value plus the Builder that appends ops to its block. Every op goes through
// Builder::emit, which computes result types with the op's shape rule, so a bad program fails
// where it is written. Binary arithmetic broadcasts like NumPy (inserting broadcast_in_dim) and
// accepts plain numbers as scalars of the other operand's element type.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/module.h"
#include "ir/shape_rules.h"

namespace tessera::ir {

class Builder;

class Tensor {
 public:
  Tensor(Value* v, Builder* b) : value_(v), builder_(b) {}
  Value* value() const { return value_; }
  const Type& type() const { return value_->type(); }
  const std::vector<int64_t>& shape() const { return value_->type().shape; }
  int64_t rank() const { return value_->type().rank(); }
  ElementType element() const { return value_->type().element; }
  Builder& builder() const { return *builder_; }

 private:
  Value* value_;
  Builder* builder_;
};

class Builder {
 public:
  Builder(Module& module, Block& block) : module_(&module), block_(&block) {}

  Module& module() const { return *module_; }
  Block& block() const { return *block_; }

  // Appends an op whose result types come from its shape rule (`declared` for the ops that need
  // them written out); returns its results.
  std::vector<Tensor> emit(OpKind kind, const std::vector<Tensor>& operands, AttrMap attrs = {},
                           std::vector<Type> declared = {});
  Tensor emit1(OpKind kind, const std::vector<Tensor>& operands, AttrMap attrs = {},
               std::vector<Type> declared = {});
  // As emit, with regions filled by `fill(op)` before the op is appended.
  std::vector<Tensor> emit_with_regions(OpKind kind, const std::vector<Tensor>& operands,
                                        AttrMap attrs, std::vector<Type> declared,
                                        const std::function<void(Op&)>& fill);

  Tensor wrap(Value* v) { return Tensor(v, this); }
  Tensor constant(Literal value);
  Tensor scalar(ElementType e, double v);
  Tensor iota(Type type, int64_t dimension);
  Tensor replica_id();
  Tensor partition_id();

  // Channel ids are unique in the module, as JAX numbers them.
  int64_t next_channel_id() { return ++module_->channel_ids; }

 private:
  Module* module_;
  Block* block_;
};

// Builds a function's parameters; the lambda given to build_function receives one.
class FunctionBuilder : public Builder {
 public:
  FunctionBuilder(Module& module, Function& fn) : Builder(module, fn.body()), fn_(&fn) {}
  Tensor param(Type type, std::optional<Sharding> sharding = std::nullopt);
  Function& function() const { return *fn_; }

 private:
  Function* fn_;
};

// Builds @name in `module` from `body`, which returns a Tensor or a std::vector<Tensor>.
Function& build_function(Module& module, std::string name,
                         const std::function<std::vector<Tensor>(FunctionBuilder&)>& body);
template <typename F>
  requires std::is_same_v<std::invoke_result_t<F, FunctionBuilder&>, Tensor>
Function& build_function(Module& module, std::string name, F&& body) {
  return build_function(module, std::move(name),
                        [&](FunctionBuilder& f) { return std::vector<Tensor>{body(f)}; });
}

// ---- Elementwise (builder_math.cpp) ----
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator!(const Tensor& a);

Tensor negate(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor logistic(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round_nearest_even(const Tensor& x);
Tensor round_nearest_afz(const Tensor& x);
Tensor is_finite(const Tensor& x);
Tensor convert(const Tensor& x, ElementType to);
Tensor bitcast_convert(const Tensor& x, Type to);

Tensor remainder(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor atan2(const Tensor& a, const Tensor& b);
Tensor shift_left(const Tensor& a, const Tensor& b);
Tensor shift_right_logical(const Tensor& a, const Tensor& b);
Tensor shift_right_arithmetic(const Tensor& a, const Tensor& b);
Tensor compare(const Tensor& a, const Tensor& b, ComparisonDirection direction);
Tensor select(const Tensor& pred, const Tensor& on_true, const Tensor& on_false);
Tensor clamp(const Tensor& lo, const Tensor& x, const Tensor& hi);

// ---- More elementwise ops, StableHLO's and CHLO's (builder_more.cpp, #17) ----
Tensor tan(const Tensor& x);
Tensor cbrt(const Tensor& x);
Tensor popcnt(const Tensor& x);
Tensor count_leading_zeros(const Tensor& x);
Tensor reduce_precision(const Tensor& x, int64_t exponent_bits, int64_t mantissa_bits);
Tensor complex(const Tensor& re, const Tensor& im);
Tensor real(const Tensor& x);
Tensor imag(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor erfc(const Tensor& x);
Tensor erf_inv(const Tensor& x);
Tensor lgamma(const Tensor& x);
Tensor digamma(const Tensor& x);
Tensor bessel_i1e(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor asinh(const Tensor& x);
Tensor acosh(const Tensor& x);
Tensor atanh(const Tensor& x);
Tensor square(const Tensor& x);
Tensor conj(const Tensor& x);
Tensor is_inf(const Tensor& x);
Tensor is_pos_inf(const Tensor& x);
Tensor is_neg_inf(const Tensor& x);
Tensor next_after(const Tensor& x, const Tensor& toward);

// NumPy broadcasting of a to `shape` (no-op when equal).
Tensor broadcast_to(const Tensor& a, const std::vector<int64_t>& shape);

// ---- Structure (builder_structure.cpp) ----
Tensor broadcast_in_dim(const Tensor& x, const std::vector<int64_t>& shape,
                        const std::vector<int64_t>& dims);
Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape);
Tensor transpose(const Tensor& x, const std::vector<int64_t>& permutation);
Tensor slice(const Tensor& x, const std::vector<int64_t>& start, const std::vector<int64_t>& limit,
             std::vector<int64_t> strides = {});
Tensor dynamic_slice(const Tensor& x, const std::vector<Tensor>& start,
                     const std::vector<int64_t>& sizes);
Tensor dynamic_update_slice(const Tensor& x, const Tensor& update, const std::vector<Tensor>& start);
Tensor concatenate(const std::vector<Tensor>& xs, int64_t dimension);
Tensor pad(const Tensor& x, const Tensor& value, const std::vector<int64_t>& low,
           const std::vector<int64_t>& high, std::vector<int64_t> interior = {});
Tensor reverse(const Tensor& x, const std::vector<int64_t>& dims);
Tensor gather(const Tensor& x, const Tensor& indices, const GatherDims& dims,
              const std::vector<int64_t>& slice_sizes);
// Scatter with an update computation that combines (old, new) by `combiner` (Add, or Return for
// "replace by the update").
Tensor scatter(const Tensor& x, const Tensor& indices, const Tensor& updates,
               const ScatterDims& dims, OpKind combiner);

// Reduce with a body that applies the binary op `combiner` (Add, Maximum, ...).
Tensor reduce(const Tensor& x, const Tensor& init, const std::vector<int64_t>& dims, OpKind combiner);
Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& dims);
Tensor reduce_max(const Tensor& x, const std::vector<int64_t>& dims);
Tensor reduce_min(const Tensor& x, const std::vector<int64_t>& dims);
Tensor sum(const Tensor& x);  // over every dimension

// JAX's lax.stop_gradient for a value none of whose uses takes a gradient (a softmax's row
// maximum, which the shift-invariant softmax does not depend on): marks x's defining op with
// kStopGradient, so differentiation (autodiff's reverse and forward modes) treats its results as
// constants. x must be an op's result; every reader of it then sees a constant.
Tensor stop_gradient(const Tensor& x);

Tensor dot_general(const Tensor& a, const Tensor& b, const DotDims& dims);
// x @ w: contracts x's last dimension with w's second-to-last (or only) one; leading dimensions
// of a rank>2 w are batch dimensions shared with x.
Tensor matmul(const Tensor& x, const Tensor& w);

// cond and body receive the loop-carried values.
std::vector<Tensor> while_loop(const std::vector<Tensor>& init,
                               const std::function<Tensor(Builder&, const std::vector<Tensor>&)>& cond,
                               const std::function<std::vector<Tensor>(Builder&, const std::vector<Tensor>&)>& body);
std::vector<Tensor> optimization_barrier(const std::vector<Tensor>& xs);
// chlo.top_k: the k largest entries along the last dimension, in descending order (ties: the
// lower index first), and their indices (i32) (builder_linalg.cpp).
std::vector<Tensor> top_k(const Tensor& x, int64_t k);
// stablehlo.cholesky of the last two dimensions (the others batch); the other triangle is zero.
Tensor cholesky(const Tensor& a, bool lower);
// stablehlo.triangular_solve: x with op(a)·x = b (left_side) or x·op(a) = b.
Tensor triangular_solve(const Tensor& a, const Tensor& b, bool left_side, bool lower, bool unit_diagonal,
                        Transpose transpose_a);
// stablehlo.if and stablehlo.case: each branch builds its results (of one list of types) in its
// own region; a branch may read any value of the enclosing blocks.
using Branch = std::function<std::vector<Tensor>(Builder&)>;
std::vector<Tensor> if_op(const Tensor& pred, const Branch& on_true, const Branch& on_false);
std::vector<Tensor> case_op(const Tensor& index, const std::vector<Branch>& branches);
// func.call of `callee` (a function of the same module).
std::vector<Tensor> call(Builder& b, const Function& callee, const std::vector<Tensor>& args);

// ---- Collectives and Shardy (builder_structure.cpp) ----
using Groups = std::vector<std::vector<int64_t>>;
// all_reduce is emitted with a channel handle and global device ids, as JAX's shard_map does.
Tensor all_reduce(const Tensor& x, const Groups& groups, OpKind combiner = OpKind::Add);
Tensor all_gather(const Tensor& x, int64_t dim, const Groups& groups);
Tensor reduce_scatter(const Tensor& x, int64_t dim, const Groups& groups, OpKind combiner = OpKind::Add);
Tensor all_to_all(const Tensor& x, int64_t split_dim, int64_t concat_dim, const Groups& groups);
Tensor collective_permute(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& pairs);
Tensor collective_broadcast(const Tensor& x, const Groups& groups);
Tensor collective_reduce(const Tensor& x, const Groups& groups, OpKind combiner = OpKind::Add);

Tensor constrain(const Tensor& x, Sharding sharding);  // sdy.sharding_constraint
Tensor reshard(const Tensor& x, Sharding sharding);    // sdy.reshard
// Shardy's propagation ops: x itself, with layouts let through one way only (`allowed` is
// "FORWARD", "BACKWARD" or "NONE"), or an edge holding a layout, or x put in sharding group `id`.
Tensor propagation_barrier(const Tensor& x, const std::string& allowed);
Tensor data_flow_edge(const Tensor& x, std::optional<Sharding> sharding = std::nullopt);
void sharding_group(const Tensor& x, int64_t id);
// Shardy's explicit collectives: identities on the global value that move x to the layout
// `out` (checked against its mesh and x's type). The axes are per dimension (all_gather,
// all_slice, reduce_scatter), one list (all_reduce), or per all_to_all parameter with the
// dimensions it moves them between; they are kept as an ir::Sharding on out's mesh.
using AxisLists = std::vector<std::vector<AxisRef>>;
struct AllToAllParam {
  std::vector<AxisRef> axes;
  int64_t src_dim = 0, tgt_dim = 0;
};
Tensor sdy_all_gather(const Tensor& x, const AxisLists& gathering_axes, Sharding out);
Tensor sdy_all_slice(const Tensor& x, const AxisLists& slicing_axes, Sharding out);
Tensor sdy_all_reduce(const Tensor& x, const std::vector<AxisRef>& reduction_axes, Sharding out);
Tensor sdy_reduce_scatter(const Tensor& x, const AxisLists& reduction_axes, Sharding out);
Tensor sdy_all_to_all(const Tensor& x, const std::vector<AllToAllParam>& params, Sharding out);
Tensor sdy_collective_permute(const Tensor& x, Sharding out);
// sdy.constant (optionally with its result's sdy.sharding).
Tensor sdy_constant(Builder& b, Literal value, std::optional<Sharding> sharding = std::nullopt);
// sdy.manual_computation: the body sees each device's local pieces (split along `manual_axes`
// by in_shardings) and returns local results, which out_shardings put back together.
std::vector<Tensor> manual(const std::vector<Tensor>& inputs, std::vector<Sharding> in_shardings,
                           std::vector<Sharding> out_shardings, std::vector<std::string> manual_axes,
                           const std::function<std::vector<Tensor>(Builder&, const std::vector<Tensor>&)>& body);

}  // namespace tessera::ir
