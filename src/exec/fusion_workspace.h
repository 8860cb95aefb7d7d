// What fusion.cpp's fused loops run in (internal to exec): how a loop splits into chunks for the
// free threads, its registers, and the workspace a loop's program is built in, kept in the run's
// cache (support/run_cache.h) so that a steady-state step allocates nothing for them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "exec/fold.h"
#include "exec/fused_kernels.h"
#include "ir/module.h"
#include "support/run_cache.h"
#include "support/threads.h"

namespace tessera::exec::fusion_workspace {

using fused::Instr;
using fused::kBlock;
using ir::Value;

// The elements in each chunk of a fused loop over `total` elements: a multiple of `unit` (itself a
// multiple of kBlock), or `total` (one chunk, run on this thread). A chunk of less than kMinChunk
// elements (128 KiB of f32) costs a good share of its time in being handed to another thread;
// about four chunks per free thread even out threads that the machine slows down.
inline constexpr int64_t kMinChunk = 64 * kBlock;

inline int64_t chunk_elements(int64_t total, int64_t unit = kBlock) {
  if (total < 2 * kMinChunk || unit > total / 2) return total;
  int64_t threads = support::available_threads();
  if (threads <= 1) return total;
  int64_t chunk = std::max(kMinChunk, (total + 4 * threads - 1) / (4 * threads));
  return (chunk + unit - 1) / unit * unit;
}

// A register of a loop: a value read where it lies, or a block of the per-thread scratch.
struct Reg {
  bool in_place = false;  // a value read where it lies
  const std::byte* src = nullptr;
  int64_t width = 0, offset = 0;  // element bytes; scratch offset
};

// What a Program is built in, kept in the run's cache (support/run_cache.h) from one fused loop to
// the next: each run builds its loop's program in vectors that already have their capacity, so a
// steady-state step allocates nothing for it. Instrs past `used` are left over from earlier programs, kept for their vectors.
struct Workspace {
  std::vector<std::pair<const Value*, int>> regs;  // a tree has a few dozen values: searched in order
  std::vector<const Value*> in_place;
  std::vector<Reg> kinds;
  std::vector<Instr> instrs;
  size_t used = 0;
  FoldShape fold;
  bool busy = false;
  // Program::seal's liveness: per register the first and last instruction touching it; the
  // places in the scratch freed so far, as (bytes, offset).
  std::vector<int64_t> live_from, live_to;
  std::vector<std::pair<int64_t, int64_t>> free_places;
};

// The registers of a loop's chunk, in the run's cache on the thread that runs the program and in
// the thread's own on a worker running its chunks (kept between loops: a chunk allocates nothing).
// One chunk runs on a thread at a time: chunks never nest.
struct RegisterStorage {
  std::unique_ptr<std::byte[]> scratch;
  int64_t bytes = 0;
  std::vector<std::byte*> regs;
};

inline std::byte** registers(size_t count, int64_t scratch_bytes, std::byte*& scratch) {
  RegisterStorage& s = support::run_local<RegisterStorage>();
  if (s.bytes < scratch_bytes) {
    s.scratch.reset();
    s.scratch.reset(new std::byte[static_cast<size_t>(scratch_bytes)]);  // uninitialized: written before read
    s.bytes = scratch_bytes;
  }
  if (s.regs.size() < count) s.regs.resize(count);
  scratch = s.scratch.get();
  return s.regs.data();
}

}  // namespace tessera::exec::fusion_workspace
