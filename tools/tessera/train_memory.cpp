// The memory estimate of a training step (train_memory.h).
#include "tools/tessera/train_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "comm/host_communicator.h"
#include "exec/executable.h"
#include "spmd/report.h"
#include "support/error.h"
#include "support/memory.h"

namespace tessera::tools {

std::string MemoryEstimate::table() const {
  auto line = [](const char* what, int64_t bytes) { return fmt::format("  {:<34}{:>12}\n", what, support::format_bytes(bytes)); };
  std::string out = "memory per device (estimated before running):\n";
  out += line("parameters", parameters);
  out += line("optimizer state", optimizer);
  out += line("batch and step inputs", inputs);
  out += line("activations and temporaries (plan)", temporaries);
  out += line("collective buffers", collectives);
  if (evaluation > 0) out += line("evaluation (--eval-every)", evaluation);
  out += line("total per device", per_device());
  out += fmt::format("  {:<34}{:>12}  ({} device{} in this process)\n", "total in this process",
                     support::format_bytes(process()), devices_here, devices_here == 1 ? "" : "s");
  return out;
}

MemoryEstimate estimate_memory(const ir::Module& module, const ir::Function& local, const spmd::Report& report,
                               size_t parameters, size_t state, int64_t devices_here) {
  MemoryEstimate e;
  e.devices_here = devices_here;
  const std::vector<spmd::ParameterPiece>& pieces = report.parameters;
  const size_t np = parameters, nstate = parameters + state;
  int64_t arguments = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    int64_t b = pieces[i].bytes_per_device;
    arguments += b;
    (i < np ? e.parameters : i < nstate ? e.optimizer : e.inputs) += b;
  }
  // The plan's peak holds the arguments, the arenas and the fresh results: what is beyond the
  // arguments is the step's own.
  auto exe = exec::Executable::compile(local, exec::CompileOptions{&module});
  e.temporaries = std::max<int64_t>(0, exe->peak_bytes() - arguments);
  // A collective's result is a value of the plan; the host communicator works on the members' own
  // buffers and copies only small inputs (comm/host_communicator.h): at most that copy per device.
  std::function<void(const ir::Block&)> walk = [&](const ir::Block& block) {
    for (const auto& op : block.ops()) {
      for (const auto& region : op->regions()) walk(*region);
      if (!ir::has_trait(op->kind(), ir::kCollective)) continue;
      int64_t bytes = 0;
      for (const ir::Value* v : op->operands()) bytes += spmd::byte_size(v->type());
      e.collectives = std::max(e.collectives, std::min<int64_t>(bytes, comm::HostWorld::kSmallBytes));
    }
  };
  walk(local.body());
  return e;
}

MemoryEstimate estimate_training_memory(const runtime::CompiledProgram& step, const nn::Programs& programs,
                                        int64_t devices_here) {
  return estimate_memory(*step.module, step.local_function(), step.report(), programs.num_parameters(),
                         programs.num_parameters() * programs.state_per_parameter, devices_here);
}

void add_evaluation(MemoryEstimate& e, const runtime::CompiledProgram& loss, const nn::Programs& programs,
                    int64_t batches) {
  MemoryEstimate l = estimate_memory(*loss.module, loss.local_function(), loss.report(), programs.num_parameters(), 0,
                                     e.devices_here);
  e.evaluation = l.temporaries + l.inputs * batches;
  e.collectives = std::max(e.collectives, l.collectives);  // one program runs at a time
}

namespace {

void check_process_fits(int64_t process, const std::string& table, const std::string& what) {
  int64_t limit = support::memory_limit();
  if (process <= limit) return;
  support::fail("{} needs about {} in this process, more than the limit of {} (this machine's memory, TESSERA_MAX_BYTES "
                "or --max-bytes); not started.\n{}",
                what, support::format_bytes(process), support::format_bytes(limit), table);
}

}  // namespace

void check_fits(const MemoryEstimate& e, const std::string& what) { check_process_fits(e.process(), e.table(), what); }

std::string estimate_against(int64_t estimate, int64_t measured) {
  return fmt::format("estimated before running {} ({:+.1f} %)", support::format_bytes(estimate),
                     100.0 * (double(estimate) - double(measured)) / double(std::max<int64_t>(1, measured)));
}

int64_t PipelineMemory::process() const {
  int64_t in_step = 0, resident = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    const mpmd::FragmentTrainer::StageBytes& x = stages[s];
    in_step += x.total() * devices_here[s];
    resident += (x.parameters + x.optimizer + x.programs) * devices_here[s];
  }
  return once + std::max(in_step, resident + between);
}

std::string PipelineMemory::table() const {
  auto b = [](int64_t x) { return support::format_bytes(x); };
  std::string out = "memory per device of each stage (estimated before running):\n";
  out += fmt::format("  {:>5}  {:>12}  {:>15}  {:>12}  {:>12}  {:>22}  {:>12}\n", "stage", "parameters", "optimizer state",
                     "gradients", "programs", "store (saved act.)", "total");
  for (size_t s = 0; s < stages.size(); ++s) {
    const mpmd::FragmentTrainer::StageBytes& x = stages[s];
    out += fmt::format("  {:>5}  {:>12}  {:>15}  {:>12}  {:>12}  {:>22}  {:>12}\n", s, b(x.parameters), b(x.optimizer),
                       b(x.gradients), b(x.programs), fmt::format("{} ({})", b(x.store), b(x.saved)), b(x.total()));
  }
  int64_t devices = 0;
  for (int64_t d : devices_here) devices += d;
  out += fmt::format("  {:<34}{:>12}\n", "batches", b(once));
  if (between > 0) out += fmt::format("  {:<34}{:>12}\n", "evaluation between steps", b(between));
  out += fmt::format("  {:<34}{:>12}  ({} device{} in this process)\n", "total in this process", b(process()), devices,
                     devices == 1 ? "" : "s");
  return out;
}

PipelineMemory estimate_pipeline_memory(const mpmd::FragmentTrainer& trainer, int64_t devices_per_stage_here,
                                        int64_t once, int64_t between) {
  PipelineMemory e;
  e.between = between;
  e.stages = trainer.memory_plan();
  for (size_t s = 0; s < e.stages.size(); ++s)
    e.devices_here.push_back(trainer.pipeline().runs_here(static_cast<int64_t>(s)) ? devices_per_stage_here : 0);
  e.once = once;
  return e;
}

void check_fits(const PipelineMemory& e, const std::string& what) { check_process_fits(e.process(), e.table(), what); }

}  // namespace tessera::tools
