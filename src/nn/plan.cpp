// The sharding plan presets and the per-device parameter share (plan.h).
#include "nn/plan.h"

#include <algorithm>

#include "support/error.h"

namespace tessera::nn {

namespace {

const ir::MeshAxis& axis_of(const ir::Mesh& mesh, const std::string& axis, const char* plan) {
  const ir::MeshAxis* a = mesh.find_axis(axis);
  if (a == nullptr) support::fail("nn::{}: mesh '{}' has no axis '{}'", plan, mesh.name, axis);
  return *a;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Inputs split along the batch (dimension 0) over `axis`, or whole when there is none.
std::function<ir::Sharding(const DataInput&)> batch_over(const ir::Mesh& mesh, std::optional<std::string> axis) {
  return [mesh, axis](const DataInput& in) {
    return split_dim(mesh, in.type.rank(), 0, axis.value_or(""));
  };
}

// Each parameter split along its largest dimension divisible by the size of `axis` (the first of
// equals, so [64, 64] splits by row), whole if none is.
std::function<ir::Sharding(const ParamSpec&)> split_largest(const ir::Mesh& mesh, const std::string& axis, int64_t n) {
  return [mesh, axis, n](const ParamSpec& p) {
    int64_t best = -1;
    for (size_t d = 0; d < p.shape.size(); ++d)
      if (p.shape[d] % n == 0 && (best < 0 || p.shape[d] > p.shape[static_cast<size_t>(best)]))
        best = static_cast<int64_t>(d);
    return split_dim(mesh, int64_t(p.shape.size()), std::max<int64_t>(best, 0), best < 0 ? "" : axis);
  };
}

}  // namespace

ir::Sharding split_dim(const ir::Mesh& mesh, int64_t rank, int64_t dim, const std::string& axis) {
  ir::Sharding s{mesh.name, std::vector<ir::DimSharding>(static_cast<size_t>(rank)), {}, {}};
  if (!axis.empty()) s.dims.at(static_cast<size_t>(dim)) = ir::DimSharding{ir::AxisRef(axis)};
  return s;
}

ShardingPlan data_parallel(ir::Mesh mesh, std::string axis) {
  ir::validate(mesh);
  axis_of(mesh, axis, "data_parallel");
  ShardingPlan plan{.name = "dp", .mesh = mesh, .input = batch_over(mesh, axis)};
  plan.parameter = [mesh](const ParamSpec& p) { return split_dim(mesh, int64_t(p.shape.size()), 0, ""); };
  return plan;
}

ShardingPlan fsdp(ir::Mesh mesh, std::string axis) {
  ir::validate(mesh);
  int64_t n = axis_of(mesh, axis, "fsdp").size;
  ShardingPlan plan{.name = "fsdp", .mesh = mesh, .input = batch_over(mesh, axis)};
  plan.parameter = split_largest(mesh, axis, n);
  return plan;
}

ShardingPlan zero1(ir::Mesh mesh, std::string axis) {
  ir::validate(mesh);
  int64_t n = axis_of(mesh, axis, "zero1").size;
  ShardingPlan plan = data_parallel(mesh, axis);
  plan.name = "zero1";
  plan.state = split_largest(mesh, axis, n);
  return plan;
}

ShardingPlan tensor_parallel(ir::Mesh mesh, std::string model_axis, std::optional<std::string> data_axis) {
  ir::validate(mesh);
  axis_of(mesh, model_axis, "tensor_parallel");
  if (data_axis) axis_of(mesh, *data_axis, "tensor_parallel");
  ShardingPlan plan{.name = data_axis ? "dp,tp" : "tp", .mesh = mesh, .input = batch_over(mesh, data_axis)};
  plan.parameter = [mesh, model_axis](const ParamSpec& p) {
    auto rank = int64_t(p.shape.size());
    for (const char* column : {".attn.q", ".attn.k", ".attn.v", ".mlp.gate", ".mlp.up"})
      if (ends_with(p.name, column)) return split_dim(mesh, rank, 1, model_axis);
    for (const char* row : {".attn.o", ".mlp.down"})
      if (ends_with(p.name, row)) return split_dim(mesh, rank, 0, model_axis);
    if (p.name == "head") return split_dim(mesh, rank, 1, model_axis);  // by vocabulary
    return split_dim(mesh, rank, 0, "");                                 // embed and norms whole
  };
  return plan;
}

ShardingPlan context_parallel(ir::Mesh mesh, std::string axis) {
  ir::validate(mesh);
  axis_of(mesh, axis, "context_parallel");
  ShardingPlan plan{.name = "ctx", .mesh = mesh, .context = ContextParallel{mesh, axis}};
  // Tokens and targets come whole to every device, which cuts its slots of the load-balanced
  // layout from them without moving anything (a sequence split in natural order would need the
  // other devices' chunks); the residual stream is split along the sequence (capture.cpp).
  plan.input = [mesh](const DataInput& in) { return split_dim(mesh, in.type.rank(), 0, ""); };
  plan.parameter = [mesh](const ParamSpec& p) { return split_dim(mesh, int64_t(p.shape.size()), 0, ""); };
  return plan;
}

ShardingPlan expert_parallel(ir::Mesh mesh, std::string expert_axis, std::optional<std::string> data_axis) {
  ir::validate(mesh);
  axis_of(mesh, expert_axis, "expert_parallel");
  if (data_axis) axis_of(mesh, *data_axis, "expert_parallel");
  ShardingPlan plan{.name = data_axis ? "dp,ep" : "ep", .mesh = mesh};
  plan.expert_axis = expert_axis;
  // The batch over the data axis (major) and the expert axis (minor): each device its own rows.
  ir::DimSharding batch;
  if (data_axis) batch.axes.emplace_back(*data_axis);
  batch.axes.emplace_back(expert_axis);
  plan.input = [mesh, batch](const DataInput& in) {
    ir::Sharding s = split_dim(mesh, in.type.rank(), 0, "");
    s.dims.at(0) = batch;
    return s;
  };
  plan.parameter = [mesh, expert_axis](const ParamSpec& p) {
    auto rank = int64_t(p.shape.size());
    for (const char* expert : {".moe.gate", ".moe.up", ".moe.down"})
      if (ends_with(p.name, expert)) return split_dim(mesh, rank, 0, expert_axis);
    return split_dim(mesh, rank, 0, "");
  };
  return plan;
}

ir::Sharding state_sharding(const ShardingPlan& plan, const ParamSpec& spec) {
  return plan.state ? plan.state(spec) : plan.parameter(spec);
}

int64_t elements_per_device(const ShardingPlan& plan, const ParamSpec& spec) {
  ir::Sharding s = plan.parameter(spec);
  ir::Type t(ir::ElementType::f32, spec.shape);
  ir::validate(s, plan.mesh, t, "parameter '" + spec.name + "'");
  int64_t n = 1;
  for (size_t d = 0; d < spec.shape.size(); ++d) {
    int64_t shards = ir::dim_shards(s, static_cast<int64_t>(d), plan.mesh);
    if (spec.shape[d] % shards != 0)
      support::fail("nn: plan '{}' splits dimension {} (size {}) of parameter '{}' into {} pieces, which does not divide",
                    plan.name, d, spec.shape[d], spec.name, shards);
    n *= spec.shape[d] / shards;
  }
  return n;
}

double parameter_share(const ShardingPlan& plan, const Config& config) {
  int64_t local = 0, total = 0;
  for (const ParamSpec& p : parameter_specs(config)) {
    local += elements_per_device(plan, p);
    total += p.num_elements();
  }
  return double(local) / double(total);
}

}  // namespace tessera::nn
