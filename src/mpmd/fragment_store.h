// What FragmentPipeline's run (fragment_pipeline_run.cpp) and its memory plan before a run
// (fragment_memory.cpp) share: the compiled fragments, and which values a stage's instruction list
// keeps and until when. Internal to mpmd.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mpmd/fragment_pipeline.h"

namespace tessera::mpmd {

struct FragmentPipeline::Compiled {
  // Per stage (null: one device): a stage this rank runs over several ranks has a session over
  // those ranks (Ranks::stage_session), every other one host devices (the latter only compile, for
  // the layouts, where another rank runs the stage).
  std::vector<std::unique_ptr<runtime::Session>> sessions;
  int64_t spanning_stage = -1;  // the stage this rank runs with other ranks, if any
  // Per fragment; fragments of a stage that are one program (the forward of every microbatch, say)
  // share it: one compile, one arena per device. A stage runs its list one instruction at a time,
  // so a shared program's run context never serves two runs at once.
  std::vector<std::shared_ptr<StageProgram>> programs;
  size_t distinct = 0;  // programs compiled
  // The layout a value posted to a mesh takes there: that of its first reader on the mesh.
  std::map<std::pair<size_t, size_t>, ir::Sharding> arrival_layouts;
};

// A stage keeps a value while a later instruction of its list reads it: `readers` counts, per
// value, its posts and the fragment inputs that read it there (the run drops the value at its last
// one); `saved` are the forward values a backward on the stage reads (saved activations).
struct StoreReaders {
  std::unordered_map<size_t, int64_t> readers;
  std::set<size_t> saved;
};
StoreReaders store_readers(const FragmentPlan& plan, const std::vector<FragmentRole>& roles,
                           const std::vector<Instruction>& list);

// The bytes a stage's store holds as values come and go, and the most it has held: in all, and of
// saved activations. The run counts the buffers it keeps, memory_plan the bytes it expects them to
// have, so that the estimate is the run's own count.
struct StoreBytes {
  int64_t held = 0, held_saved = 0, peak = 0, peak_saved = 0;
  void keep(int64_t bytes, bool saved) {
    held += bytes;
    if (saved) held_saved += bytes;
    peak = std::max(peak, held);
    peak_saved = std::max(peak_saved, held_saved);
  }
  void drop(int64_t bytes, bool saved) {
    held -= bytes;
    if (saved) held_saved -= bytes;
  }
};

}  // namespace tessera::mpmd
