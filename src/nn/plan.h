// ShardingPlan: how a training step is laid out over a mesh, as functions giving the sharding of
// each data input (tokens, targets), of each parameter and, optionally, of each parameter's
// optimizer state. Optimizer moments are held like their parameter unless the plan says otherwise,
// and each gradient is constrained to its optimizer state's sharding (autodiff::reverse does that),
// so the plan says everything the partitioner needs.
//
// Presets (DESIGN.md §2 "Sharding plans"):
//   data_parallel(mesh, axis)   inputs split along the batch; parameters whole on every device
//   fsdp(mesh, axis)            inputs split along the batch; each parameter split along its largest
//                               dimension divisible by the axis size (whole if none is)
//   zero1(mesh, axis)           data parallel with the weight update sharded (ZeRO stage 1; XLA's
//                               weight-update sharding): parameters whole on every device, AdamW's
//                               moments and the gradients split as fsdp splits the parameters. Each
//                               device sums its share of the gradients (a reduce-scatter where data
//                               parallelism all-reduces), updates its share of the parameters and
//                               moments, and the new parameters are all-gathered: the same bytes
//                               moved as data parallel, a 1/n share of the update's work and moments
//   tensor_parallel(mesh, model_axis, data_axis)
//                               attn.q/k/v, mlp.gate/up and head split by column (output features,
//                               the head by vocabulary); attn.o and mlp.down by row; embed and norms
//                               whole; inputs split along the batch over data_axis when given
//   context_parallel(mesh, axis)
//                               the residual stream split along the sequence (in the load-balanced
//                               layout, ring_attention.h), attention as ring attention over the axis;
//                               parameters and inputs whole
//   expert_parallel(mesh, expert_axis, data_axis)
//                               inputs split along the batch over data_axis (when given) and
//                               expert_axis; the MoE layers' expert weights (moe.gate/up/down) split
//                               along the experts over expert_axis; every other parameter whole
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "ir/sharding.h"
#include "nn/config.h"
#include "nn/ring_attention.h"

namespace tessera::nn {

// A data input of the training step ("tokens" or "targets") and its global type.
struct DataInput {
  std::string name;
  ir::Type type;
};

struct ShardingPlan {
  std::string name = {};  // "dp", "fsdp", "zero1", "tp", "dp,tp", "ep", "dp,ep"
  ir::Mesh mesh = {};
  std::function<ir::Sharding(const DataInput&)> input = nullptr;
  std::function<ir::Sharding(const ParamSpec&)> parameter = nullptr;
  // Set by context_parallel: the model's sequence is split over this axis (CausalLM::context_parallel).
  std::optional<ContextParallel> context = std::nullopt;
  // The mesh axis that splits the experts of MoE layers (expert_parallel), empty when none.
  std::string expert_axis = {};
  // The sharding of a parameter's optimizer state (AdamW's moments) and of its gradient; empty:
  // the parameter's.
  std::function<ir::Sharding(const ParamSpec&)> state = nullptr;
};

ShardingPlan data_parallel(ir::Mesh mesh, std::string axis);
ShardingPlan fsdp(ir::Mesh mesh, std::string axis);
ShardingPlan zero1(ir::Mesh mesh, std::string axis);
ShardingPlan tensor_parallel(ir::Mesh mesh, std::string model_axis,
                             std::optional<std::string> data_axis = std::nullopt);
ShardingPlan context_parallel(ir::Mesh mesh, std::string axis);
ShardingPlan expert_parallel(ir::Mesh mesh, std::string expert_axis,
                             std::optional<std::string> data_axis = std::nullopt);

// A closed sharding of a rank-`rank` tensor on `mesh` with dimension `dim` split over `axis` (no
// dimension split when axis is empty).
ir::Sharding split_dim(const ir::Mesh& mesh, int64_t rank, int64_t dim, const std::string& axis);

// The sharding of `spec`'s optimizer state and gradient under `plan`: plan.state's, or the parameter's.
ir::Sharding state_sharding(const ShardingPlan& plan, const ParamSpec& spec);

// The elements of `spec` each device holds under `plan` (the plan's splits are even: a split that
// does not divide is refused with the parameter, dimension and axis named).
int64_t elements_per_device(const ShardingPlan& plan, const ParamSpec& spec);
// The fraction of the model's parameters each device holds: sum of elements_per_device / count.
double parameter_share(const ShardingPlan& plan, const Config& config);

}  // namespace tessera::nn
