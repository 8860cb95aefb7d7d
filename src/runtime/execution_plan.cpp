// The execution plan of a ShardedProgram on host devices (see execution_plan.h).
#include "runtime/execution_plan.h"

#include <algorithm>

#include "exec/accelerate.h"
#include "runtime/executables.h"

namespace tessera::runtime {

using ir::Literal;

interp::Options device_options(const SessionOptions& options) {
  interp::Options o;
  if (options.fast_kernels) o.accelerate = exec::accelerate;
  o.profile = options.profile;
  o.trace = options.trace;
  o.max_while_iterations = options.max_while_iterations;
  return o;
}

ExecutionPlan::ExecutionPlan(const SessionOptions& options, int64_t num_devices, const CompiledProgram& program,
                             const std::vector<std::pair<size_t, size_t>>& aliases)
    : options_(options),
      devices_(static_cast<size_t>(num_devices)),
      program_(program),
      module_(program.module),
      fn_(&program.local_function()) {
  const auto& info = program_.info;
  size_t inputs = info.parameter_types.size(), outputs = info.result_types.size();
  donated_.assign(inputs, 0);
  output_source_.assign(outputs, -1);
  for (auto [in, out] : aliases) {
    donated_[in] = 1;
    // The input's buffer becomes the output's only when it describes the output exactly.
    if (info.parameter_types[in] == info.result_types[out] && info.parameter_shardings[in] == info.result_shardings[out])
      output_source_[out] = static_cast<int64_t>(in);
  }
  args_.resize(devices_);
  results_.resize(devices_);
  for (size_t d = 0; d < devices_; ++d) {
    args_[d].resize(inputs);
    results_[d].resize(outputs);
  }
  lent_.assign(inputs, 0);
  first_.assign(inputs, 0);
  moved_.assign(inputs, 0);
}

ExecutionPlan::~ExecutionPlan() = default;

void ExecutionPlan::execute(std::vector<ShardedBuffer>& inputs, std::vector<ShardedBuffer>& outputs) {
  const auto& info = program_.info;
  const size_t n = devices_, count = inputs.size(), results = info.result_types.size();
  if (!run_) {
    std::vector<const ir::Function*> fns(n, fn_);
    run_ = std::make_unique<comm::ParallelRun>(*module_, fns, static_cast<uint32_t>(n), options_.timeout,
                                               device_options(options_), options_.traffic);
  }
  // The arguments. An input whose pieces an earlier input already passes gets a view (lent) or a
  // copy (donated) of them; otherwise donated pieces that no other buffer shares move in for good,
  // shared ones are copied, and the rest are lent: moved in and moved back after the run.
  for (size_t i = 0; i < count; ++i) {
    const ShardedBuffer& b = inputs[i];
    first_[i] = i;
    for (size_t j = 0; j < i; ++j)
      if (inputs[j].pieces == b.pieces) {
        first_[i] = j;
        break;
      }
    bool donated = donated_[i] != 0;
    bool repeat = first_[i] != i;
    moved_[i] = !repeat && (!donated || b.pieces.use_count() == 1);
    lent_[i] = !repeat && !donated;
    for (size_t d = 0; d < n; ++d) {
      Literal& arg = args_[d][i];
      Literal& piece = (*b.pieces)[d];
      if (repeat) {
        const size_t j = first_[i];
        Literal& source = moved_[j] ? args_[d][j] : (*inputs[j].pieces)[d];
        if (donated) arg = source;
        else arg = Literal::view(source.type(), source.bytes().data());
      } else if (moved_[i]) {
        arg = std::move(piece);
      } else {
        arg = piece;
      }
    }
  }
  // The outputs: a donated input's buffer, else the output's own pieces to refill, else new ones.
  outputs.resize(results);
  for (size_t r = 0; r < results; ++r) {
    int64_t source = output_source_[r];
    ShardedBuffer& out = outputs[r];
    if (source >= 0 && moved_[static_cast<size_t>(source)]) {
      std::swap(out, inputs[static_cast<size_t>(source)]);
      for (size_t d = 0; d < n; ++d) results_[d][r] = Literal();  // the executable's donor fills it
      continue;
    }
    if (out.pieces && out.pieces.use_count() == 1 && out.type == info.result_types[r] &&
        out.sharding == info.result_shardings[r]) {
      for (size_t d = 0; d < n; ++d) results_[d][r] = std::move((*out.pieces)[d]);
      continue;
    }
    out = ShardedBuffer{info.result_types[r], info.result_shardings[r], std::make_shared<std::vector<Literal>>(n)};
    for (size_t d = 0; d < n; ++d) results_[d][r] = Literal();
  }
  for (size_t i = 0; i < count; ++i)
    if (donated_[i]) inputs[i].pieces.reset();

  // The run. The body captures one pointer (its std::function allocates nothing).
  std::exception_ptr failed;
  try {
    run_->run([plan = this](size_t d, const interp::Options& o) {
      plan->program_.executables->run_into(plan->module_, *plan->fn_, static_cast<int64_t>(d),
                                           plan->options_.fast_kernels, plan->args_[d], plan->lent_,
                                           plan->results_[d], o);
    });
  } catch (...) {
    failed = std::current_exception();
  }
  // Lent pieces go back to their buffers (the executables handed them back, also on failure).
  for (size_t i = 0; i < count; ++i)
    if (lent_[i])
      for (size_t d = 0; d < n; ++d) (*inputs[i].pieces)[d] = std::move(args_[d][i]);
  if (failed) std::rethrow_exception(failed);
  for (size_t r = 0; r < results; ++r)
    for (size_t d = 0; d < n; ++d) (*outputs[r].pieces)[d] = std::move(results_[d][r]);
}

}  // namespace tessera::runtime
