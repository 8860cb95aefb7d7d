// FragmentPipeline::memory_plan (fragment_pipeline.h): a stage's instruction list replayed with the
// bytes of each value on one of its devices, the way the run keeps and drops them
// (fragment_pipeline_run.cpp), plus the run contexts of its programs. For `tessera train --plan
// pp=... --dry-run` and the check that refuses a pipeline that cannot fit.
#include <algorithm>

#include "exec/executable.h"
#include "mpmd/fragment_store.h"
#include "spmd/report.h"

namespace tessera::mpmd {

StoreReaders store_readers(const FragmentPlan& plan, const std::vector<FragmentRole>& roles,
                           const std::vector<Instruction>& list) {
  StoreReaders out;
  for (const Instruction& in : list) {
    if (in.kind == Instruction::Kind::kPost && !plan.values[in.value].parameter) out.readers[in.value]++;
    if (in.kind != Instruction::Kind::kRun) continue;
    const FragmentRole::Kind kind = roles.at(in.fragment).kind;
    const bool backward = kind == FragmentRole::Kind::kBackward || kind == FragmentRole::Kind::kWeight;
    for (const Binding& b : plan.fragments[in.fragment].inputs) {
      if (b.kind != Binding::Kind::kValue) continue;
      out.readers[b.index]++;
      const PlanValue& v = plan.values[b.index];
      if (backward && !v.parameter && roles.at(v.producer).kind == FragmentRole::Kind::kForward)
        out.saved.insert(b.index);
    }
  }
  return out;
}

std::vector<FragmentPipeline::StageMemory> FragmentPipeline::memory_plan(const CompiledSchedule& compiled) const {
  const Compiled& c = *compiled_;
  const FragmentPlan& plan = plan_;
  std::vector<StageMemory> out(static_cast<size_t>(stages_));
  // A value's bytes on one device of a stage: as its producer's program returns it there, or, for
  // a value received, as its first reader there takes it (the layout it arrives in).
  std::map<std::pair<size_t, size_t>, int64_t> bytes;  // (value, stage)
  std::set<const StageProgram*> counted;
  for (size_t f = 0; f < plan.fragments.size(); ++f) {
    const Fragment& fr = plan.fragments[f];
    const StageProgram& program = *c.programs[f];
    const ir::Function& local = program.local_function();
    for (size_t k = 0; k < fr.outputs.size(); ++k)
      bytes[{fr.outputs[k], fr.mesh}] = spmd::byte_size(local.result_types.at(k));
    for (size_t k = 0; k < fr.inputs.size(); ++k)
      if (fr.inputs[k].kind == Binding::Kind::kValue)
        bytes.try_emplace({fr.inputs[k].index, fr.mesh}, spmd::byte_size(local.parameter(k)->type()));
    if (counted.insert(&program).second) out[fr.mesh].programs += program.context_bytes();
  }
  for (size_t st = 0; st < compiled.stages.size(); ++st) {
    const std::vector<Instruction>& list = compiled.stages[st];
    StoreReaders kept = store_readers(plan, roles_, list);
    StoreBytes count;
    auto size = [&](size_t id) { return bytes.at({id, st}); };
    auto keep = [&](size_t id) { count.keep(size(id), kept.saved.count(id) > 0); };
    auto read_done = [&](size_t id) {
      if (--kept.readers[id] > 0) return;
      count.drop(size(id), kept.saved.count(id) > 0);
    };
    for (const Instruction& in : list) {
      if (in.kind == Instruction::Kind::kWait) keep(in.value);
      if (in.kind == Instruction::Kind::kPost && !plan.values[in.value].parameter) read_done(in.value);
      if (in.kind != Instruction::Kind::kRun) continue;
      const Fragment& f = plan.fragments[in.fragment];
      // While it runs, its inputs are still held and its results are being written.
      int64_t results = 0;
      for (size_t id : f.outputs) results += size(id);
      count.peak = std::max(count.peak, count.held + results);
      for (const Binding& b : f.inputs)
        if (b.kind == Binding::Kind::kValue) read_done(b.index);
      for (size_t id : f.outputs)
        if (kept.readers.count(id) && kept.readers[id] > 0) keep(id);
    }
    out[st].store = count.peak;
    out[st].saved = count.peak_saved;
  }
  return out;
}

}  // namespace tessera::mpmd
