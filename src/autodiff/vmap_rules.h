// The vmap rule table: one batching rule per row of ops.def (vmap_<Op>), so an op without a rule
// does not link. Inside the batched program every batched value carries the batch at dimension 0
// (vmap() moves parameters there and results out to their out_axes), so a rule only ever meets
// "batched at 0" or "shared by every example". A rule reads the op's operands (already in the
// batched program) and sets each result, batched or not. Rules run only for ops that see a batched
// value; every other op is copied as it is. Each rule carries its math as a one-line comment, with
// B the batch size and x[b] example b of a batched x.
#pragma once

#include <optional>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "autodiff/rules.h"
#include "ir/clone.h"

namespace tessera::autodiff {

// A value of the batched program and whether it holds the batch at dimension 0.
struct BValue {
  Tensor value;
  bool batched = false;
};

// The state of one vmap transform, shared by the function body and every region in it (values are
// unique, so one map serves all blocks): f's values to their batched-program counterparts, and
// which of f's values are batched.
struct VmapEnv {
  int64_t batch = 0;
  ir::ValueMap map;
  std::unordered_set<const ir::Value*> batched;
};

// "cannot vmap <op>: <why>", a user error.
[[noreturn]] void refuse_vmap(const ir::Op& op, std::string_view why);

class VmapContext {
 public:
  VmapContext(ir::Builder& b, const ir::Op& op, VmapEnv& env, std::vector<BValue> operands,
              std::vector<std::optional<BValue>>& results)
      : b(b), op(op), env(env), operands_(std::move(operands)), out_(results) {}

  ir::Builder& b;
  const ir::Op& op;  // the op as written in f
  VmapEnv& env;

  int64_t batch() const { return env.batch; }
  size_t num_operands() const { return operands_.size(); }
  const Tensor& x(size_t i = 0) const { return operands_.at(i).value; }  // as in the batched program
  bool batched(size_t i = 0) const { return operands_.at(i).batched; }
  // Operand i batched at 0; a shared operand is broadcast along a new dimension 0.
  Tensor bx(size_t i = 0) const;
  const ir::Type& result_type(size_t k = 0) const { return op.result(k)->type(); }  // per example
  ir::Type batched_type(const ir::Type& t) const;  // t with dimension 0 of size B in front

  // Sets result k (batched: its per-example type with B in front; else its per-example type).
  void set(size_t k, const Tensor& value, bool batched = true);
  // The op again on `operands`, with `attrs` (default: the op's) and result types `results`
  // (default: every result batched), its regions copied (refused if they read a batched value
  // from outside) and fresh channel ids.
  std::vector<Tensor> again(const std::vector<Tensor>& operands, std::optional<ir::AttrMap> attrs = {},
                            std::optional<std::vector<ir::Type>> results = {});

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    refuse_vmap(op, fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  std::vector<BValue> operands_;
  std::vector<std::optional<BValue>>& out_;
};

#define OP(e, spelling, arity, traits) void vmap_##e(VmapContext& c);
#include "ir/ops.def"
#undef OP

// Shared by the rule files (vmap.cpp).
// t broadcast along a new dimension 0 of size `batch`: [B, ...t's shape].
Tensor batch_broadcast(const Tensor& t, int64_t batch);
// t with dimension `from` moved to position `to` (a transpose; t itself when from == to).
Tensor move_axis(const Tensor& t, int64_t from, int64_t to);
// dims + 1 each (their positions once a batch dimension is in front), with `front` first if given.
std::vector<int64_t> shifted(const std::vector<int64_t>& dims, std::optional<int64_t> front = std::nullopt);
// s with a dimension inserted at `at`: open (`{?}`) or closed and replicated (`{}`).
ir::Sharding with_batch_dim(ir::Sharding s, int64_t at, bool open);
// Whether a region of op reads a batched value defined outside it.
bool captures_batched(const ir::Op& op, const VmapEnv& env);
// For elementwise ops: shared operands broadcast to the batch (a shared scalar predicate or bound
// of select and clamp stays scalar), batched scalars broadcast to the result's shape.
void elementwise(VmapContext& c);
// For ops that act on each operand alone, shape preserved (all_reduce, collective_permute,
// optimization_barrier, ...): the op on the operands as they are; result k batched like operand k.
void each_operand(VmapContext& c);

// Copies `from` (but its return) into `into`'s block, batching the ops that see a batched value,
// with from's arguments read as `args`; returns the returned values. vmap() runs it on f's body;
// the while, manual_computation and call rules on their regions.
std::vector<BValue> vmap_block(ir::Builder& into, const ir::Block& from, VmapEnv& env,
                               const std::vector<BValue>& args);

}  // namespace tessera::autodiff
